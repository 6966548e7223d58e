/*-------------------------------------------------------------------------
 *
 * lock_registry.hpp
 *	  The registry of held connection-bound locks behind the view
 *	  fence.locks: the side of lock_registry.cpp that stats.hpp (where
 *	  locks.cpp records grants and releases) does not show.
 *
 * The registry is a fixed-size table in the shared block (fence.max_locks
 * entries, PGC_POSTMASTER, default 4096) keyed by (pid, database, 64-bit
 * name hash) holding the whole name (up to kMaxNameBytes), token, kind and
 * grant time, under one LWLock.  Without the block (15/16 without the
 * preload) every registry call is a no-op.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/lock_registry.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "observability/stats.hpp"

namespace fence {

/* Default of fence.max_locks (registry entries); a named segment's size. */
constexpr int kDefaultMaxLocks = 4096;

/*
 * Define fence.max_locks: only while shared_preload_libraries is processed
 * (a PGC_POSTMASTER setting cannot be defined by a library loaded later).
 */
void DefineRegistrySettings();

/* The registry's part of the shared block (composed by src/server/shmem.cpp). */
Size RegistryShmemSize();
void RegistryShmemInit(void *ptr, int tranche_id);
void RegistryShmemAttach(void *ptr);

/* One registry entry, copied out of shared memory (palloc'd name). */
struct RegisteredLock
{
	int32       pid;
	uint64      key;
	int64       token;
	TimestampTz granted_at;
	char        kind; /* 's', 'x' or 'S' (see StatsRecordGrant) */
	char       *name;
};

/* The registry entries of database dbid (palloc'd array); returns the count. */
int RegistrySnapshot(Oid dbid, RegisteredLock **out);

} /* namespace fence */
