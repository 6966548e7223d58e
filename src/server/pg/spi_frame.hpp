/*-------------------------------------------------------------------------
 *
 * spi_frame.hpp
 *	  The SPI frame of a call on one of the extension's tables (leases,
 *	  queue jobs, idempotency keys): the session's prepared statements,
 *	  SPI_connect, and the switch to the table's owner for the call.
 *
 * Callers get no privilege on fence.* tables; a SQL function runs its
 * statements as the table's owner (SECURITY_LOCAL_USERID_CHANGE |
 * SECURITY_RESTRICTED_OPERATION, as PostgreSQL's own maintenance commands
 * do: src/backend/commands/vacuum.c), after checking the caller's rights
 * itself.  Every statement is prepared once per session (SPI_keepplan) and
 * run on the latest snapshot, so a call that waited for a lock sees the
 * commit of the transaction it waited for.
 *
 * Errors between SpiBeginAsOwner and SpiEndAsOwner abort the
 * (sub)transaction, which restores the user ID and ends SPI: callers need
 * not catch them.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/spi_frame.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "executor/spi.h"
}

namespace fence {

/* Most parameters of one statement. */
constexpr int kSpiMaxArgs = 10;

/* One statement of a table's set: its text, parameter count and types. */
struct SpiStmt
{
	const char *sql;
	int         nargs;
	Oid         argtypes[kSpiMaxArgs];
};

/* A table's statements (n of them) and the session's plans of them. */
struct SpiStmtSet
{
	const SpiStmt *stmts;
	SPIPlanPtr    *plans; /* n entries, NULL until prepared */
	int            n;
};

/* The caller's identity while a call runs as the table's owner. */
struct SpiOwnerSwitch
{
	Oid save_userid;
	int save_sec_context;
};

/*
 * SPI_connect, prepare (and keep for the session) every statement of set
 * not yet prepared, then switch to owner.  Raises on failure.
 */
void SpiBeginAsOwner(SpiOwnerSwitch *sw, const SpiStmtSet &set, Oid owner);

/* Undo SpiBeginAsOwner: back to the caller, SPI_finish. */
void SpiEndAsOwner(const SpiOwnerSwitch *sw);

/*
 * Run statement i of set on the latest snapshot; raises unless SPI returns
 * expected (SPI_OK_SELECT, ...).  Returns SPI_processed.
 */
uint64 SpiExecLatest(const SpiStmtSet &set, int i, Datum *values, const char *nulls, int expected);

} /* namespace fence */
