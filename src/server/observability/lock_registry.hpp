/*-------------------------------------------------------------------------
 *
 * observability.hpp
 *	  Shared memory behind fence.stats() and the view fence.locks (the
 *	  side of src/server/observability/stats.cpp that src/server/observability/stats.hpp does not show).
 *
 * Both live in the shared block (shmem.hpp):
 *	 - per-database counters in DbShared, claimed by database OID
 *	   (lock-free) on first use;
 *	 - the registry of held connection-bound locks: a fixed-size table
 *	   (fence.max_locks entries, PGC_POSTMASTER, default 4096) keyed by
 *	   (pid, database, 64-bit name hash) holding the whole name (up to
 *	   kMaxNameBytes), token, kind and grant time, under one LWLock.
 * Without the block (15/16 without the preload) every counter and registry
 * call is a no-op.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/observability.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "observability/stats.hpp"

namespace fence {

/*
 * Counters of database dbid since it began counting (its first use after
 * server start, or fence.stats_reset()), and that time in *stats_reset (0
 * when it has not begun); false without shared memory.
 */
bool StatsRead(Oid dbid, uint64 counters[(int) StatKind::kCount], TimestampTz *stats_reset);

/* One registry entry, copied out of shared memory (palloc'd name). */
struct RegisteredLock
{
	int32       pid;
	uint64      key;
	int64       token;
	TimestampTz granted_at;
	char        kind; /* 's' or 'x' */
	char       *name;
};

/* The registry entries of database dbid (palloc'd array); returns the count. */
int RegistrySnapshot(Oid dbid, RegisteredLock **out);

} /* namespace fence */
