/*-------------------------------------------------------------------------
 *
 * leases.cpp
 *	  Lease locks: fence.lease_acquire, fence.lease_renew, fence.lease_release.
 *
 * A lease is one row of fence.leases (name, token, holder, owner,
 * granted_at, expires_at, slot, permits NULL); a semaphore permit
 * (semaphores.cpp) is a row too, one per holder of the name, told apart by
 * slot, and goes through the same acquire path (AcquireLeaseSlot, in
 * lease_acquire.cpp, with the wait in the server) and the same
 * lease_renew / lease_release.  This file holds the statements and the
 * frame of every call (lease_table.hpp) and renew / release.
 *
 * Time is always the server clock at the moment of
 * the call (GetCurrentTimestamp(), i.e. clock_timestamp()), never the
 * transaction start, so a lease taken in a transaction that began minutes ago
 * still gets its full TTL.
 *
 * Design, and why:
 *
 * 1. Never block an acquirer.  Every call first takes a transaction-scoped
 *	  advisory lock on the name (tag class kLeaseLockTagClass and the 64-bit
 *	  name hash, lock_tag.hpp, like the connection-bound locks).
 *	  lease_acquire asks for it with dontWait: if another transaction holds
 *	  it, that transaction is acquiring, renewing or releasing this name
 *	  right now, or has changed its row and not yet committed; either way the
 *	  lease is held or being acquired, and we return NULL at once.  A call that changes the
 *	  row keeps the advisory lock until its transaction ends, which is exactly
 *	  as long as the row lock it took, so nobody ever reaches a row lock held
 *	  by someone else.  A call that changes nothing releases the advisory lock
 *	  before returning, so a busy acquire (or a wrong-token release) inside a
 *	  long open transaction does not stand in the holder's way.
 *	  lease_renew and lease_release are owner operations and wait for the
 *	  advisory lock (a caller's lock_timeout / statement_timeout apply): a
 *	  holder's renewal must not fail merely because someone else's acquire
 *	  was in flight.
 *
 * 2. Read the latest committed state.  With the advisory lock held nobody
 *	  else can be changing the row, so each statement runs on a fresh
 *	  snapshot (SPI_execute_snapshot with GetLatestSnapshot()).  That makes
 *	  the functions behave the same in READ COMMITTED and REPEATABLE READ
 *	  (with the transaction snapshot a REPEATABLE READ caller would not see a
 *	  lease granted after its snapshot and would collide with it).
 *
 * 3. No token burnt on a busy call.  lease_acquire reads the row first
 *	  (one index lookup) and draws a token (fence::IssueToken, durable before
 *	  use) only when it will grant: INSERT for a free name, UPDATE for an
 *	  expired lease (a takeover, reported with its LOG line; the name's
 *	  other expired rows are deleted with it).  An expired row that nobody
 *	  takes over stays until fence.lease_purge (lease_purge.cpp) deletes it.
 *
 * 4. Rights.  The functions are SECURITY INVOKER C functions that switch
 *	  to the owner of fence.leases around their SPI statements (the user
 *	  switch amcheck uses, with SECURITY_RESTRICTED_OPERATION), rather than
 *	  SECURITY DEFINER with SET search_path:
 *	  - the owner check needs the caller's role (current_user), which a
 *		SECURITY DEFINER C function cannot see (fmgr hides it);
 *	  - a SET clause would save and restore a GUC on every call;
 *	  - the statements are fully qualified (fence.leases,
 *		OPERATOR(pg_catalog.=), pg_catalog.min), contain no type names
 *		(parameter types are given by OID), so search_path plays no part:
 *		CONTRIBUTING.md, "Security hardening of the installed SQL".
 *	  Nobody else can write the table (REVOKE ALL FROM PUBLIC).
 *
 * 5. Durability.  An acquisition is durable: its token is flushed by
 *	  IssueToken and its row by the commit (synchronous_commit as configured,
 *	  normally on).  A renewal is committed like any write (losing one could
 *	  shorten a lease its holder believes renewed, so it is never weakened).
 *	  A release is different: losing it in a crash only makes the next holder
 *	  wait for the TTL, as if the holder had vanished.  So when a transaction
 *	  consists of nothing but one successful lease_release (no XID and no WAL
 *	  before the call, no WAL after it up to commit), its commit is made
 *	  asynchronous: see src/server/pg/commit.hpp.  Everything else commits as
 *	  the caller configured it.
 *
 * This file is PostgreSQL-style code (only trivially destructible locals),
 * run through fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/leases.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "leases/leases.hpp"

#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/commit.hpp"
#include "pg/extension_table.hpp"
#include "leases/lease_notify.hpp"
#include "leases/lease_table.hpp"
#include "leases/lease_wait.hpp"
#include "pg/shared_block.hpp"
#include "observability/stats.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/syscache.h"
}

namespace fence {

namespace {

/*
 * Every operator and function is pg_catalog's and every relation is
 * qualified; parameter types come from the OIDs, so no name here depends on
 * search_path.
 */
const SpiStmt kStmts[kNumStmts] = {
	/* kSelect($1 name): every slot of the name, lowest first */
	{"SELECT token, expires_at, owner, slot, permits, holder, elected FROM fence.leases "
	 "WHERE name OPERATOR(pg_catalog.=) $1 ORDER BY slot",
	 1,
	 {TEXTOID}},
	/* kSelectToken($1 name, $2 token) */
	{"SELECT token, expires_at, owner FROM fence.leases "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2",
	 2,
	 {TEXTOID, INT8OID}},
	/* kInsert($1 name, $2 token, $3 holder, $4 owner, $5 granted_at, $6 expires_at,
	 *		   $7 slot, $8 permits: NULL for a lease, $9 elected) */
	{"INSERT INTO fence.leases (name, token, holder, owner, granted_at, expires_at, slot, "
	 "permits, elected) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
	 9,
	 {TEXTOID, INT8OID, TEXTOID, OIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, INT4OID,
	  BOOLOID}},
	/* kTakeover(... as kInsert ..., $10 old token) */
	{"UPDATE fence.leases SET token = $2, holder = $3, owner = $4, granted_at = $5, "
	 "expires_at = $6, permits = $8, elected = $9 "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND slot OPERATOR(pg_catalog.=) $7 "
	 "AND token OPERATOR(pg_catalog.=) $10",
	 10,
	 {TEXTOID, INT8OID, TEXTOID, OIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID, INT4OID, BOOLOID,
	  INT8OID}},
	/* kRenew($1 name, $2 token, $3 caller, $4 now, $5 new expires_at, $6 admin) */
	{"UPDATE fence.leases SET expires_at = $5 "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND expires_at OPERATOR(pg_catalog.>) $4 "
	 "AND (owner OPERATOR(pg_catalog.=) $3 OR $6)",
	 6,
	 {TEXTOID, INT8OID, OIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID, BOOLOID}},
	/* kRelease($1 name, $2 token, $3 caller, $4 now, $5 admin) */
	{"DELETE FROM fence.leases "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND expires_at OPERATOR(pg_catalog.>) $4 "
	 "AND (owner OPERATOR(pg_catalog.=) $3 OR $5) "
	 "RETURNING holder, permits, elected, slot",
	 5,
	 {TEXTOID, INT8OID, OIDOID, TIMESTAMPTZOID, BOOLOID}},
	/* kResign: as kRelease, for a lease (not a semaphore permit) only */
	{"DELETE FROM fence.leases "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND expires_at OPERATOR(pg_catalog.>) $4 "
	 "AND (owner OPERATOR(pg_catalog.=) $3 OR $5) AND permits IS NULL "
	 "RETURNING holder, permits, elected, slot",
	 5,
	 {TEXTOID, INT8OID, OIDOID, TIMESTAMPTZOID, BOOLOID}},
	/* kLeader($1 name, $2 now): the unexpired holders of the name */
	{"SELECT holder, token, granted_at, expires_at, permits FROM fence.leases "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND expires_at OPERATOR(pg_catalog.>) $2 "
	 "ORDER BY slot",
	 2,
	 {TEXTOID, TIMESTAMPTZOID}},
	/* kPurge($1 name, $2 cutoff, $3 slot kept: -1 for none) */
	{"DELETE FROM fence.leases "
	 "WHERE name OPERATOR(pg_catalog.=) $1 AND expires_at OPERATOR(pg_catalog.<=) $2 "
	 "AND slot OPERATOR(pg_catalog.<>) $3",
	 3,
	 {TEXTOID, TIMESTAMPTZOID, INT4OID}},
	/* kExpired($1 cutoff, $2 limit): oldest expiry first */
	{"SELECT name FROM fence.leases WHERE expires_at OPERATOR(pg_catalog.<=) $1 "
	 "GROUP BY name ORDER BY pg_catalog.min(expires_at), name LIMIT $2",
	 2,
	 {TIMESTAMPTZOID, INT8OID}},
};

SPIPlanPtr       plans[kNumStmts];
const SpiStmtSet kSet = {kStmts, plans, kNumStmts};

} /* namespace */

void
CheckLeaseWritable(const char *what, const char *kind, NameArg name)
{
	if (RecoveryInProgress())
		ereport(
			ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot %s %s \"%s\" during recovery", what, kind, NameCString(name)),
			 errdetail(
				 "A standby's lock space is its own; leases are granted only by the primary.")));
	if (XactReadOnly)
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot %s %s \"%s\" in a read-only transaction", what, kind,
							   NameCString(name)),
						errdetail("Leases are rows of the table fence.leases.")));
}

/* The owner of fence.leases (the role the statements run as). */
static Oid
LeaseTableOwner()
{
	ExtensionTable t = FindExtensionTable(ExtensionTableId::kLeases);

	if (!OidIsValid(t.relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_fence 0.2.0 or later is not installed in this database"),
				 errhint("Run CREATE EXTENSION pg_fence, or ALTER EXTENSION pg_fence UPDATE.")));
	return t.owner;
}

/* See lease_table.hpp. */
bool
LeaseBegin(LeaseCall *call, NameArg name, bool wait)
{
	SetLockTag(&call->tag, kLeaseLockTagClass, NameHash(name));
	call->caller = GetUserId();
	call->locked = true;

	Oid owner = LeaseTableOwner();

	(void) AttachShared(); /* may raise: before anything is held */
	if (LockAcquire(&call->tag, ExclusiveLock, false, !wait) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	/*
	 * Errors from here on abort the (sub)transaction, which restores the
	 * user ID and releases the advisory lock: no need to catch them.
	 */
	SpiBeginAsOwner(&call->owner_switch, kSet, owner);
	return true;
}

/* See lease_table.hpp. */
void
LeaseBeginRead(LeaseCall *call)
{
	call->caller = GetUserId();
	call->locked = false;
	SpiBeginAsOwner(&call->owner_switch, kSet, LeaseTableOwner());
}

/* See lease_table.hpp. */
void
LeaseEnd(LeaseCall *call, bool changed)
{
	SpiEndAsOwner(&call->owner_switch);
	if (call->locked && !changed)
		LockRelease(&call->tag, ExclusiveLock, false);
}

/* See lease_table.hpp. */
uint64
LeaseExec(LeaseStmt stmt, Datum *values, const char *nulls, int expected)
{
	return SpiExecLatest(kSet, stmt, values, nulls, expected);
}

namespace {

/* fence.max_lease_ttl, in seconds (lease_table.hpp). */
int max_lease_ttl_s = kDefaultMaxLeaseTtlS;

/* A duration in microseconds as interval text ("10 days 02:00:00"), for messages. */
char *
DurationText(int64 usecs)
{
	Interval *iv = static_cast<Interval *>(palloc0(sizeof(Interval)));

	iv->day = (int32) (usecs / USECS_PER_DAY);
	iv->time = usecs % USECS_PER_DAY;
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(iv)));
}

} /* namespace */

/* See lease_table.hpp. */
void
InitLeaseSettings()
{
	DefineCustomIntVariable(
		"fence.max_lease_ttl",
		"Longest ttl a lease or semaphore permit may be acquired or renewed for.",
		"Bounds how long a holder that stopped renewing keeps others out: "
		"a larger ttl argument is refused (22023).",
		&max_lease_ttl_s, kDefaultMaxLeaseTtlS, 1, INT_MAX, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr,
		nullptr);
}

/* See lease_table.hpp. */
TimestampTz
LeaseExpiresAt(TimestampTz now, int64 ttl)
{
	TimestampTz result;

	if (ttl > (int64) max_lease_ttl_s * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"ttl\" exceeds fence.max_lease_ttl"),
				 errdetail("The ttl given is %s; the longest allowed is %s.", DurationText(ttl),
						   DurationText((int64) max_lease_ttl_s * USECS_PER_SEC)),
				 errhint("Use a shorter ttl and renew before it expires; a superuser can raise "
						 "the setting fence.max_lease_ttl.")));
	if (pg_add_s64_overflow(now, ttl, &result) || !IS_VALID_TIMESTAMP(result))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("argument \"ttl\" is too large"),
				 errdetail("The lease would expire after the end of the timestamp range.")));
	return result;
}

namespace {

/*
 * After a refused renew or release: was it the lease's holder coming back
 * too late?  Counts a lease expiration when the lease is still current
 * under token, has expired by now, and the caller may act on it (the
 * acquiring role, or admin).  One more index lookup, on refusals only.
 * Call between LeaseBegin and LeaseEnd.
 */
void
CountIfExpired(Datum name, int64 token, Oid caller, bool admin, TimestampTz now)
{
	Datum      values[2] = {name, Int64GetDatum(token)};
	const char nulls[2] = {' ', ' '};

	if (LeaseExec(kSelectToken, values, nulls, SPI_OK_SELECT) == 0)
		return;

	HeapTuple   tup = SPI_tuptable->vals[0];
	TupleDesc   desc = SPI_tuptable->tupdesc;
	bool        isnull;
	int64       current = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	TimestampTz expires = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
	Oid         owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));

	if (current == token && expires <= now && (owner == caller || admin))
		StatsCount(StatKind::kLeaseExpirations);
}

/* May the caller renew or release other roles' leases? */
bool
CallerIsAdmin(Oid caller)
{
	Oid admin = get_role_oid("fence_admin", true);

	return OidIsValid(admin) && has_privs_of_role(caller, admin);
}

Datum
LeaseAcquire(FunctionCallInfo fcinfo)
{
	NameArg name = GetNameArg(fcinfo, 0, "name");
	int64   ttl = GetDurationArg(fcinfo, 1, "ttl", false);

	CheckHolderArg(fcinfo, 2, "holder");

	int64 wait = PG_NARGS() > 3 ? GetDurationArg(fcinfo, 3, "wait", true) : -1;

	return AcquireLeaseSlot(fcinfo, name, ttl, 0, 2, wait, false);
}

Datum
LeaseRenew(FunctionCallInfo fcinfo)
{
	NameArg name = GetNameArg(fcinfo, 0, "name");
	int64   token = GetInt64Arg(fcinfo, 1, "token");
	int64   ttl = GetDurationArg(fcinfo, 2, "ttl", false);

	(void) LeaseExpiresAt(GetCurrentTimestamp(), ttl);
	CheckLeaseWritable("renew", "lease", name);

	LeaseCall call;

	(void) LeaseBegin(&call, name, true);

	/* the clock is read after any wait for the lock */
	TimestampTz now = GetCurrentTimestamp();
	Datum       values[6];
	const char  nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = PG_GETARG_DATUM(0);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(call.caller);
	values[3] = TimestampTzGetDatum(now);
	values[4] = TimestampTzGetDatum(LeaseExpiresAt(now, ttl));
	values[5] = BoolGetDatum(CallerIsAdmin(call.caller));

	bool renewed = LeaseExec(kRenew, values, nulls, SPI_OK_UPDATE) > 0;

	if (renewed)
		StatsCount(StatKind::kRenewals);
	else
		CountIfExpired(values[0], token, call.caller, DatumGetBool(values[5]), now);
	LeaseEnd(&call, renewed);
	if (renewed)
		WakeLeaseWaitersAtEnd(LeaseWaitKey(NameHash(name))); /* the head's timer moves */
	PG_RETURN_BOOL(renewed);
}

Datum
LeaseRelease(FunctionCallInfo fcinfo)
{
	return ReleaseHolder(fcinfo, false);
}

} /* namespace */

/* See leases.hpp. */
Datum
ReleaseHolder(FunctionCallInfo fcinfo, bool resign)
{
	NameArg name = GetNameArg(fcinfo, 0, "name");
	int64   token = GetInt64Arg(fcinfo, 1, resign ? "term" : "token");

	if (resign)
		CheckLeaseWritable("resign", "leadership", name);
	else
		CheckLeaseWritable("release", "lease", name);

	/* design note 5: where its WAL stood before the release */
	WalMark   before = WalMarkNow();
	LeaseCall call;

	(void) LeaseBegin(&call, name, true);

	TimestampTz now = GetCurrentTimestamp();
	Datum       values[5];
	const char  nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = PG_GETARG_DATUM(0);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(call.caller);
	values[3] = TimestampTzGetDatum(now);
	values[4] = BoolGetDatum(CallerIsAdmin(call.caller));

	bool released =
		LeaseExec(resign ? kResign : kRelease, values, nulls, SPI_OK_DELETE_RETURNING) > 0;

	if (released)
	{
		HeapTuple  tup = SPI_tuptable->vals[0];
		TupleDesc  desc = SPI_tuptable->tupdesc;
		bool       holder_null;
		bool       permits_null;
		bool       isnull;
		Datum      holder = SPI_getbinval(tup, desc, 1, &holder_null);
		text      *holder_text = holder_null ? nullptr : DatumGetTextPP(holder);
		HolderInfo gone;

		(void) SPI_getbinval(tup, desc, 2, &permits_null);
		gone.kind = RowKind(permits_null, DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)));
		gone.token = token;
		gone.holder = holder_null ? nullptr : VARDATA_ANY(holder_text);
		gone.holder_len = holder_null ? 0 : (int) VARSIZE_ANY_EXHDR(holder_text);
		gone.expires_at = 0;
		gone.slot = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		NotifyHolderChange(name, resign ? HolderEvent::kResigned : HolderEvent::kReleased, &gone,
						   nullptr, now);
		StatsCount(StatKind::kReleases);
	}
	else
		CountIfExpired(values[0], token, call.caller, DatumGetBool(values[4]), now);
	LeaseEnd(&call, released);
	if (released)
		WakeLeaseWaitersAtEnd(LeaseWaitKey(NameHash(name))); /* hand it to the head waiter */

	if (released)
		AllowAsyncCommitSince(before);
	PG_RETURN_BOOL(released);
}

} /* namespace fence */

/*
 * fence.lease_acquire(name text, ttl interval, holder text DEFAULT NULL,
 *					   wait interval DEFAULT NULL) RETURNS bigint
 *	 Grants the lease "name" for ttl from now (server clock at the grant) and
 *	 returns its new fencing token, or NULL when an unexpired lease of that
 *	 name is held or being acquired by anyone (leases do not nest): at once
 *	 without wait, else after waiting in the server up to wait for a release
 *	 or the expiry (WaitAndAcquire; cancellable, nothing held then).
 *	 Takes over an expired lease (new, larger token; LOG line).
 *	 Locks: advisory ExclusiveLock (class 0x6666) on the name, without
 *	 waiting; kept to transaction end when granted; a row lock on the lease.
 *	 Errors: 22023 invalid name / holder (over 1024 bytes) / ttl / wait;
 *	 42809 the name is held as a semaphore (semaphores.cpp); 25006 in
 *	 recovery or a read-only transaction; 57014 cancel or statement_timeout
 *	 while waiting.
 */
FENCE_SQL_FUNCTION(fence_lease_acquire)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::LeaseAcquire(fc); });
}

/*
 * fence.lease_renew(name text, token bigint, ttl interval) RETURNS boolean
 *	 true, and the lease now expires ttl from now, iff "name" is currently
 *	 leased under token, unexpired, and the caller is the role that acquired
 *	 it or has the privileges of fence_admin; false otherwise (no error).
 *	 Locks: advisory ExclusiveLock (class 0x6666) on the name, waiting; kept
 *	 to transaction end when renewed.  Errors: 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_lease_renew)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::LeaseRenew(fc); });
}

/*
 * fence.lease_release(name text, token bigint) RETURNS boolean
 *	 true iff "name" was currently leased under token, unexpired, by the
 *	 caller's role (or the caller has the privileges of fence_admin), and is
 *	 now released; false otherwise (no error).
 *	 Locks: as lease_renew.  Errors: 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_lease_release)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::LeaseRelease(fc); });
}
