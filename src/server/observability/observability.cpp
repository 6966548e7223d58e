/*-------------------------------------------------------------------------
 *
 * observability.cpp
 *	  fence.stats(), fence.shared_memory(), and what the views fence.locks
 *	  and fence.waiters are built from: fence.held_locks() (the registry
 *	  rows), fence.lock_tag_class() (which of pg_locks' advisory locks are
 *	  ours) and fence.lock_tag_key() (their name hash, the registry's key).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; the SQL entry points run it through fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/observability.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/boundary.hpp"
#include "pg/lock_tag.hpp"
#include "pg/shared_block.hpp"
#include "observability/counters.hpp"
#include "observability/lock_registry.hpp"

extern "C" {
#include "commands/extension.h"
#include "utils/tuplestore.h"
}

namespace fence {

namespace {

/*
 * Without the shared block (15/16 without the preload), say what is missing
 * and how to get it: a NOTICE, or a WARNING in CREATE / ALTER EXTENSION
 * (which runs its script with client_min_messages at least WARNING).
 */
void
NoticeIfNoSharedMemory(const char *what)
{
	if (SharedMode() != ShmemMode::kNone)
		return;
	ereport(
		creating_extension ? WARNING : NOTICE,
		(errmsg("pg_fence is not in shared_preload_libraries: %s", what),
		 errdetail(
			 "On PostgreSQL %d, pg_fence has shared memory only when it is preloaded; without it tokens come from the sequence directly, fence.stats() counts nothing and fence.locks shows no lock names.",
			 PG_VERSION_NUM / 10000),
		 errhint(
			 "Add pg_fence to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* fence.locks' kind of a registry entry's kind (see StatsRecordGrant). */
static const char *
LockKindName(char kind)
{
	switch (kind)
	{
		case 'x':
			return "xact";
		case 'S':
			return "shared";
		default:
			return "session";
	}
}

/* fence.held_locks(): one row per registered hold in this database. */
Datum
HeldLocks(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	InitMaterializedSRF(fcinfo, 0);
	NoticeIfNoSharedMemory("fence.locks shows no lock names");

	RegisteredLock *locks;
	int             n = RegistrySnapshot(MyDatabaseId, &locks);

	for (int i = 0; i < n; i++)
	{
		Datum values[6];
		bool  nulls[6] = {false, false, false, false, false, false};

		values[0] = Int32GetDatum(locks[i].pid);
		values[1] = Int64GetDatum((int64) locks[i].key);
		values[2] = CStringGetTextDatum(locks[i].name);
		values[3] = Int64GetDatum(locks[i].token);
		values[4] = CStringGetTextDatum(LockKindName(locks[i].kind));
		values[5] = TimestampTzGetDatum(locks[i].granted_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * fence.stats(): one row, this database's counters (NULLs without shmem).
 * Columns: acquired (the sum of the three kinds), then one per StatKind in
 * its order, the wait times in milliseconds (double precision, as
 * pg_stat_database's times), and stats_reset.
 */
Datum
Stats(FunctionCallInfo fcinfo)
{
	TupleDesc tupdesc;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	constexpr int n = (int) StatKind::kCount;
	constexpr int ncols = 1 + n + 1;
	uint64        counters[n];
	TimestampTz   reset_at;
	Datum         values[ncols];
	bool          nulls[ncols];
	bool          available = StatsRead(MyDatabaseId, counters, &reset_at);

	if (tupdesc->natts != ncols)
		elog(ERROR, "fence.stats() is declared with %d columns, the library has %d", tupdesc->natts,
			 ncols);
	NoticeIfNoSharedMemory("fence.stats() counts nothing");

	for (int c = 0; c < ncols; c++)
	{
		values[c] = (Datum) 0;
		nulls[c] = !available;
	}
	if (!available)
		return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));

	values[0] = Int64GetDatum((int64) (counters[(int) StatKind::kAcquiredSession] +
									   counters[(int) StatKind::kAcquiredXact] +
									   counters[(int) StatKind::kAcquiredLease]));
	for (int c = 0; c < n; c++)
	{
		if (c == (int) StatKind::kWaitTimeUsecs || c == (int) StatKind::kMaxWaitUsecs)
			values[1 + c] = Float8GetDatum((double) counters[c] / 1000.0);
		else
			values[1 + c] = Int64GetDatum((int64) counters[c]);
	}
	values[ncols - 1] = TimestampTzGetDatum(reset_at);
	nulls[ncols - 1] = reset_at == 0;
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/* fence.stats_reset(): zero this database's counters. */
Datum
StatsResetEntry(FunctionCallInfo fcinfo)
{
	if (!StatsReset())
		NoticeIfNoSharedMemory("fence.stats_reset() has no counters to reset");
	PG_RETURN_VOID();
}

/* fence.shared_memory(): where the shared block lives. */
Datum
SharedMemory(FunctionCallInfo fcinfo)
{
	const char *where = "none";

	switch (SharedMode())
	{
		case ShmemMode::kPreloaded:
			where = "preloaded";
			break;
		case ShmemMode::kNamedSegment:
			where = "dynamic";
			break;
		case ShmemMode::kNone:
			NoticeIfNoSharedMemory("locks and leases work, but slower and less visible");
			break;
	}
	return CStringGetTextDatum(where);
}

/* fence.lock_tag_key(classid, objid): the name hash of a pg_locks row of ours. */
Datum
LockTagKey(FunctionCallInfo fcinfo)
{
	return Int64GetDatum((int64) TagNameHash(PG_GETARG_OID(0), PG_GETARG_OID(1)));
}

} /* namespace */

} /* namespace fence */

/*
 * fence.held_locks() RETURNS TABLE(pid integer, key bigint, name text,
 *		token bigint, kind text, granted_at timestamptz)
 *	 The registry of connection-bound locks held in this database (empty
 *	 without shared_preload_libraries).  key is the name's 64-bit hash, as in
 *	 pg_locks (classid << 32 | objid).  Takes: the registry's LWLock, shared.
 */
FENCE_SQL_FUNCTION(fence_held_locks)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::HeldLocks(fc); });
}

/*
 * fence.stats() RETURNS TABLE(acquired bigint, acquired_session bigint,
 *		acquired_xact bigint, acquired_lease bigint, busy bigint, timeouts bigint,
 *		waits bigint, wait_time double precision, max_wait_time double precision,
 *		renewals bigint, releases bigint, lease_expirations bigint,
 *		lease_takeovers bigint, stale_writes_rejected bigint,
 *		missing_tokens bigint, stats_reset timestamptz)
 *	 This database's counters since it began counting (first use after server
 *	 start, or fence.stats_reset()); wait times in milliseconds.  One row of
 *	 NULLs without shared memory (15/16 without the preload).  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_stats)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Stats(fc); });
}

/*
 * fence.stats_reset() RETURNS void
 *	 Zeroes this database's counters and sets stats_reset to now.  EXECUTE is
 *	 granted to fence_admin only (superusers may always call it); without
 *	 shared memory it raises a NOTICE and does nothing.  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_stats_reset)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::StatsResetEntry(fc); });
}

/*
 * fence.shared_memory() RETURNS text
 *	 Where pg_fence's shared memory lives in this server: 'preloaded'
 *	 (shared_preload_libraries), 'dynamic' (a named DSM segment, PostgreSQL
 *	 17+ without the preload) or 'none' (15/16 without the preload; also
 *	 raises a NOTICE with a hint).  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_shared_memory)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::SharedMemory(fc); });
}

/*
 * fence.lock_tag_class() RETURNS smallint
 *	 Internal, used by the view fence.locks: kLockTagClass, the tag class of
 *	 the connection-bound locks, as pg_locks shows it (objsubid, a smallint
 *	 made from the lock tag's field4).  IMMUTABLE.  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_lock_tag_class)
{
	return fence::Entry(
		fcinfo, [](FunctionCallInfo fc) { return Int16GetDatum((int16) fence::kLockTagClass); });
}

/*
 * fence.lock_tag_key(classid oid, objid oid) RETURNS bigint
 *	 Internal, used by the views fence.locks and fence.waiters: the 64-bit
 *	 name hash of a connection-bound lock from its pg_locks row (classid and
 *	 objid, the lock tag's field2 and field3), as fence.held_locks() shows
 *	 it in key.  IMMUTABLE, STRICT.  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_lock_tag_key)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::LockTagKey(fc); });
}
