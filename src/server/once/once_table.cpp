/*-------------------------------------------------------------------------
 *
 * once_table.cpp
 *	  The statements on fence.once_entries and the frame of every
 *	  idempotency-key call (once_table.hpp): the key's advisory lock, SPI
 *	  with the session's prepared plans, the switch to the table's owner,
 *	  the owner check and the recovery check.
 *
 * The frame is the leases' (src/server/leases/leases.cpp, design notes 1,
 * 2 and 4): a transaction-scoped advisory lock per key (kOnceLockTagClass)
 * serializes the calls on one key, statements run on the latest snapshot
 * under it, and as the owner of the extension's tables (the user switch
 * amcheck uses, with SECURITY_RESTRICTED_OPERATION), so that callers need
 * no privilege on fence.once_entries.
 *
 * PostgreSQL-style code (only trivially destructible locals).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/once/once_table.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "once/once_table.hpp"

#include "pg/extension_table.hpp"
#include "pg/lock_tag.hpp"
#include "pg/shared_block.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
}

namespace fence {

namespace {

/*
 * Every operator is pg_catalog's and every relation qualified; parameter
 * types come from the OIDs, so no name here depends on search_path.  The
 * conflict target of kOnceInsert names a column, not a type or operator.
 */
const SpiStmt kStmts[kNumOnceStmts] = {
	/* kOnceInsert */
	{"INSERT INTO fence.once_entries (key, state, token, owner, fingerprint, created_at, "
	 "expires_at) VALUES ($1, 'in_progress', $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING",
	 6,
	 {TEXTOID, INT8OID, OIDOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID}},
	/* kOnceSelect */
	{"SELECT state, token, owner, fingerprint, step, response, expires_at "
	 "FROM fence.once_entries WHERE key OPERATOR(pg_catalog.=) $1",
	 1,
	 {TEXTOID}},
	/* kOnceTakeover */
	{"UPDATE fence.once_entries SET state = 'in_progress', token = $3, expires_at = $4, "
	 "fingerprint = COALESCE(fingerprint, $5) "
	 "WHERE key OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2",
	 5,
	 {TEXTOID, INT8OID, INT8OID, TIMESTAMPTZOID, TEXTOID}},
	/* kOnceStep */
	{"UPDATE fence.once_entries SET step = $3 "
	 "WHERE key OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'in_progress' RETURNING owner",
	 3,
	 {TEXTOID, INT8OID, TEXTOID}},
	/* kOnceFinish */
	{"UPDATE fence.once_entries SET state = 'done', response = $3, finished_at = $4 "
	 "WHERE key OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'in_progress' RETURNING owner",
	 4,
	 {TEXTOID, INT8OID, JSONBOID, TIMESTAMPTZOID}},
	/* kOnceRelease */
	{"UPDATE fence.once_entries SET state = 'released', expires_at = $3 "
	 "WHERE key OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'in_progress' RETURNING owner",
	 3,
	 {TEXTOID, INT8OID, TIMESTAMPTZOID}},
	/* kOnceRenew: only an unexpired owner, like fence.lease_renew */
	{"UPDATE fence.once_entries SET expires_at = $4 "
	 "WHERE key OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'in_progress' AND expires_at OPERATOR(pg_catalog.>) $3 "
	 "RETURNING owner",
	 4,
	 {TEXTOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID}},
	/* kOncePurge: done keys by finished_at, the others (given up) by expires_at */
	{"DELETE FROM fence.once_entries WHERE CASE WHEN state OPERATOR(pg_catalog.=) 'done' "
	 "THEN finished_at OPERATOR(pg_catalog.<=) $1 ELSE expires_at OPERATOR(pg_catalog.<=) $1 END",
	 1,
	 {TIMESTAMPTZOID}},
};

SPIPlanPtr       plans[kNumOnceStmts];
const SpiStmtSet kSet = {kStmts, plans, kNumOnceStmts};

/*
 * The role the statements run as: the owner of the extension's tables
 * (fence.once_entries is created by the same CREATE EXTENSION or ALTER
 * EXTENSION UPDATE as fence.leases, whose owner is looked up once per
 * backend by extension_table.cpp).
 */
Oid
OnceTableOwner()
{
	ExtensionTable t = FindExtensionTable(ExtensionTableId::kLeases);

	if (!OidIsValid(t.relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_fence 0.3.0 or later is not installed in this database"),
				 errhint("Run CREATE EXTENSION pg_fence, or ALTER EXTENSION pg_fence UPDATE.")));
	return t.owner;
}

} /* namespace */

/* See once_table.hpp. */
void
CheckOnceWritable(const char *what)
{
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot %s during recovery", what),
						errdetail("Idempotency keys are rows of the table fence.once_entries, "
								  "written only by the primary.")));
	if (XactReadOnly)
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot %s in a read-only transaction", what),
						errdetail("Idempotency keys are rows of the table fence.once_entries.")));
}

/* See once_table.hpp. */
void
CheckOnceOwner(Oid caller, Oid owner, NameArg key, const char *what)
{
	if (caller == owner || has_privs_of_role(caller, owner))
		return;

	Oid admin = get_role_oid("fence_admin", true);

	if (OidIsValid(admin) && has_privs_of_role(caller, admin))
		return;
	const char *owner_name = GetUserNameFromId(owner, true);

	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for idempotency key \"%s\"", NameCString(key)),
			 owner_name != nullptr
				 ? errdetail("The key belongs to role \"%s\"; %s may act on it only for a role "
							 "that has the privileges of that role or of fence_admin.",
							 owner_name, what)
				 : errdetail("The key belongs to a role that was dropped (OID %u); %s may act on "
							 "it only for fence_admin or a superuser.",
							 owner, what),
			 errhint("Scope keys by tenant or user inside the key text, or grant the role "
					 "membership in the key's owner role.")));
}

/* See once_table.hpp. */
bool
OnceBegin(OnceCall *call, const NameArg *key, bool wait)
{
	bool granted = true;

	call->caller = GetUserId();
	call->locked = false;

	Oid owner = OnceTableOwner();

	if (key != nullptr)
	{
		SetLockTag(&call->tag, kOnceLockTagClass, NameHash(*key));
		granted = LockAcquire(&call->tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
		call->locked = granted;
	}

	/*
	 * Errors from here on abort the (sub)transaction, which restores the
	 * user ID and releases the advisory lock: no need to catch them.
	 */
	SpiBeginAsOwner(&call->owner_switch, kSet, owner);
	return granted;
}

/* See once_table.hpp. */
void
OnceEnd(OnceCall *call, bool changed)
{
	SpiEndAsOwner(&call->owner_switch);
	if (call->locked && !changed)
		LockRelease(&call->tag, ExclusiveLock, false);
}

/* See once_table.hpp. */
uint64
OnceExec(OnceStmt stmt, Datum *values, const char *nulls, int expected)
{
	return SpiExecLatest(kSet, stmt, values, nulls, expected);
}

} /* namespace fence */
