/*-------------------------------------------------------------------------
 *
 * once_table.hpp
 *	  The statements on fence.once_entries and the frame of every
 *	  idempotency-key call (src/server/once/once_table.cpp), shared by
 *	  once_begin / once_step / once_finish / once_release / once_renew
 *	  (src/server/once/once.cpp) and once_purge (src/server/once/once_purge.cpp).
 *	  Internal to the extension; the design is at the top of
 *	  src/server/once/once.cpp, the reference in docs/once.md.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/once/once_table.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/pg.hpp"
#include "pg/spi_frame.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace fence {

/* The SPI statements on fence.once_entries, prepared once per session. */
enum OnceStmt
{
	kOnceInsert,   /* ($1 key, $2 token, $3 owner, $4 fingerprint, $5 now, $6 expires_at):
					* INSERT ... ON CONFLICT (key) DO NOTHING */
	kOnceSelect,   /* ($1 key): state, token, owner, fingerprint, step, response,
					* expires_at */
	kOnceTakeover, /* ($1 key, $2 old token, $3 new token, $4 expires_at, $5 fingerprint) */
	kOnceStep,     /* ($1 key, $2 token, $3 step): RETURNING owner */
	kOnceFinish,   /* ($1 key, $2 token, $3 response, $4 now): RETURNING owner */
	kOnceRelease,  /* ($1 key, $2 token, $3 now): RETURNING owner */
	kOnceRenew,    /* ($1 key, $2 token, $3 now, $4 expires_at): RETURNING owner */
	kOncePurge,    /* ($1 cutoff): deletes the keys finished (or given up) before it */
	kNumOnceStmts
};

/* Columns of kOnceSelect, 1-based as SPI_getbinval wants them. */
enum OnceCol
{
	kColState = 1,
	kColToken,
	kColOwner,
	kColFingerprint,
	kColStep,
	kColResponse,
	kColExpiresAt
};

/* State of one call between OnceBegin and OnceEnd. */
struct OnceCall
{
	LOCKTAG        tag;    /* the key's advisory lock (kOnceLockTagClass) */
	bool           locked; /* false: no lock taken (purge) or not granted */
	Oid            caller; /* current_user at entry */
	SpiOwnerSwitch owner_switch;
};

/*
 * Take the key's advisory lock (wait or not), connect SPI and switch to the
 * table's owner.  With !wait and the lock busy, still connects and switches
 * (the caller reads the committed row) but returns false, holding no lock.
 * key NULL: no lock at all (once_purge).
 */
bool OnceBegin(OnceCall *call, const NameArg *key, bool wait);

/* Undo OnceBegin; keep the advisory lock iff the row was changed. */
void OnceEnd(OnceCall *call, bool changed);

/* Run a prepared statement on a fresh snapshot; returns SPI_processed. */
uint64 OnceExec(OnceStmt stmt, Datum *values, const char *nulls, int expected);

/*
 * Raise 42501 unless the caller has the privileges of the key's owner role
 * (or of fence_admin, or is a superuser).  what: the function's name.
 */
void CheckOnceOwner(Oid caller, Oid owner, NameArg key, const char *what);

/* 25006 during recovery or in a read-only transaction: "cannot <what> ...". */
void CheckOnceWritable(const char *what);

/* fence.once_retention in seconds (once_purge.cpp). */
extern int once_retention_s;

} /* namespace fence */
