/*-------------------------------------------------------------------------
 *
 * observability.cpp
 *	  fence.stats() and fence.held_locks(), the registry rows behind the
 *	  view fence.locks.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; the SQL entry points run it through fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/observability.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/boundary.hpp"
#include "ext/observability.hpp"

extern "C" {
#include "utils/tuplestore.h"
}

namespace fence {

namespace {

/* fence.held_locks(): one row per registered hold in this database. */
Datum
HeldLocks(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	InitMaterializedSRF(fcinfo, 0);

	RegisteredLock *locks;
	int			n = RegistrySnapshot(MyDatabaseId, &locks);

	for (int i = 0; i < n; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = Int32GetDatum(locks[i].pid);
		values[1] = Int64GetDatum((int64) locks[i].key);
		values[2] = CStringGetTextDatum(locks[i].name);
		values[3] = Int64GetDatum(locks[i].token);
		values[4] = CStringGetTextDatum(locks[i].kind == 'x' ? "xact" : "session");
		values[5] = TimestampTzGetDatum(locks[i].granted_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* fence.stats(): one row, this database's counters (NULLs without shmem). */
Datum
Stats(FunctionCallInfo fcinfo)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	constexpr int n = (int) StatKind::kCount;
	uint64		counters[n];
	Datum		values[n];
	bool		nulls[n];
	bool		available = StatsRead(MyDatabaseId, counters);

	for (int c = 0; c < n; c++)
	{
		values[c] = available ? Int64GetDatum((int64) counters[c]) : (Datum) 0;
		nulls[c] = !available;
	}
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

}							/* namespace */

}							/* namespace fence */

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
 * fence.stats() RETURNS TABLE(acquired bigint, busy bigint, timeouts bigint,
 *		lease_takeovers bigint, stale_writes_rejected bigint)
 *	 This database's counters since server start; one row of NULLs without
 *	 shared_preload_libraries.  Takes no locks.
 */
FENCE_SQL_FUNCTION(fence_stats)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Stats(fc); });
}
