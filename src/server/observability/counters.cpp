/*-------------------------------------------------------------------------
 *
 * counters.cpp
 *	  The counters of fence.stats(): counting, reading and resetting them
 *	  (see counters.hpp and stats.hpp).
 *
 * Nothing here writes to a table or raises an ERROR, except attaching the
 * shared block where stats.hpp says so: counters are counted by locks.cpp
 * while a lock is held.
 *
 * This file is PostgreSQL-style code (plain structs, no C++ objects).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/counters.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "observability/counters.hpp"

#include "pg/db_slots.hpp"
#include "pg/shared_block.hpp"

extern "C" {
#include "port/atomics.h"
}

namespace fence {

namespace {

/* One database's counters. */
struct DbCounters
{
	pg_atomic_uint64 counters[(int) StatKind::kCount];
	pg_atomic_uint64 stats_reset; /* TimestampTz of the last reset; 0: none, since the claim */
};

DbCounters *all_counters = nullptr; /* kDbSlots of them */

/* The counters of slot, or nullptr (no block, not attached, no slot). */
DbCounters *
CountersOf(int slot)
{
	return all_counters != nullptr && slot >= 0 ? &all_counters[slot] : nullptr;
}

} /* namespace */

Size
CountersShmemSize()
{
	return mul_size(sizeof(DbCounters), kDbSlots);
}

void
CountersShmemInit(void *ptr, int tranche_id)
{
	DbCounters *all = static_cast<DbCounters *>(ptr);

	for (int i = 0; i < kDbSlots; i++)
	{
		for (int c = 0; c < (int) StatKind::kCount; c++)
			pg_atomic_init_u64(&all[i].counters[c], 0);
		pg_atomic_init_u64(&all[i].stats_reset, 0);
	}
}

void
CountersShmemAttach(void *ptr)
{
	all_counters = static_cast<DbCounters *>(ptr);
}

bool
StatsRead(Oid dbid, uint64 counters[(int) StatKind::kCount], TimestampTz *stats_reset)
{
	*stats_reset = 0;
	if (!AttachShared())
		return false;

	int         slot = FindDbSlot(dbid);
	DbCounters *db = CountersOf(slot);

	for (int c = 0; c < (int) StatKind::kCount; c++)
		counters[c] = db != nullptr ? pg_atomic_read_u64(&db->counters[c]) : 0;
	if (db != nullptr)
	{
		/* counting began at the last reset, or else when the slot was claimed */
		*stats_reset = (TimestampTz) pg_atomic_read_u64(&db->stats_reset);
		if (*stats_reset == 0)
			*stats_reset = DbSlotClaimedAt(slot);
	}
	return true;
}

void
StatsCount(StatKind kind)
{
	StatsCountN(kind, 1);
}

void
StatsCountRejected(StatKind kind)
{
	AttachShared();
	StatsCountN(kind, 1);
}

void
StatsCountN(StatKind kind, uint64 n)
{
	DbCounters *db = CountersOf(MyDbSlot());

	if (db != nullptr && n > 0)
		pg_atomic_fetch_add_u64(&db->counters[(int) kind], n);
}

void
StatsCountWait(int64 usecs)
{
	DbCounters *db = CountersOf(MyDbSlot());

	if (db == nullptr)
		return;

	uint64            waited = (uint64) Max(usecs, (int64) 0);
	pg_atomic_uint64 *max = &db->counters[(int) StatKind::kMaxWaitUsecs];
	uint64            seen = pg_atomic_read_u64(max);

	pg_atomic_fetch_add_u64(&db->counters[(int) StatKind::kWaits], 1);
	pg_atomic_fetch_add_u64(&db->counters[(int) StatKind::kWaitTimeUsecs], waited);
	/* raise the maximum unless another backend raised it past ours */
	while (waited > seen && !pg_atomic_compare_exchange_u64(max, &seen, waited))
		;
}

bool
StatsReset()
{
	if (!AttachShared())
		return false;

	DbCounters *db = CountersOf(MyDbSlot());

	if (db == nullptr)
		return true; /* no share (all taken): nothing is counted to reset */

	/*
	 * Counter by counter, like pg_stat_reset(): an event counted while the
	 * reset runs lands before or after it, never half in a counter.
	 */
	for (int c = 0; c < (int) StatKind::kCount; c++)
		pg_atomic_write_u64(&db->counters[c], 0);
	pg_atomic_write_u64(&db->stats_reset, (uint64) GetCurrentTimestamp());
	return true;
}

} /* namespace fence */
