/*-------------------------------------------------------------------------
 *
 * counters.hpp
 *	  The counters of fence.stats() in shared memory: the side of
 *	  counters.cpp that stats.hpp (the counting API the other wings use)
 *	  does not show.
 *
 * One set of counters per database slot (pg/db_slots.hpp), claimed by
 * database OID (lock-free) on first use; counting begins when the slot is
 * claimed, and again at fence.stats_reset().  Without the shared block
 * (15/16 without the preload) every counter call is a no-op.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/counters.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "observability/stats.hpp"

namespace fence {

/* The counters' part of the shared block (composed by src/server/shmem.cpp). */
Size CountersShmemSize();
void CountersShmemInit(void *ptr, int tranche_id);
void CountersShmemAttach(void *ptr);

/*
 * Counters of database dbid since it began counting (its first use after
 * server start, or fence.stats_reset()), and that time in *stats_reset (0
 * when it has not begun); false without shared memory.
 */
bool StatsRead(Oid dbid, uint64 counters[(int) StatKind::kCount], TimestampTz *stats_reset);

} /* namespace fence */
