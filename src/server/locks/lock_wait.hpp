/*-------------------------------------------------------------------------
 *
 * lock_wait.hpp
 *	  Waiting for a connection-bound lock (fence.lock, fence.xact_lock).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/locks/lock_wait.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace fence {

/*
 * LockAcquire of tag in mode that waits: wait_usecs < 0 without a limit of our own, > 0 at
 * most that long (rounded up to whole milliseconds, and capped at INT_MAX
 * milliseconds, the largest lock_timeout), then 55P03 naming the lock.
 *
 * On 17+ the wait shows in pg_stat_activity as wait event "Extension:
 * PgFenceLock" (compat::BeginCustomWait).
 *
 * It first asks without waiting; only a lock that is busy then is waited
 * for, and that wait is counted in fence.stats() (waits, wait_time,
 * max_wait_time), however it ends.
 *
 * No GUC the caller can see changes: the lock manager reads the C variable
 * LockTimeout when it starts to sleep, so set it for the duration of the call
 * and restore it on every path.  A shorter lock_timeout of the caller's still
 * applies (with PostgreSQL's own 55P03 message).
 *
 * An error while waiting (cancel, statement_timeout, lock timeout, deadlock)
 * can race with the grant: the lock manager may have granted the lock just
 * before the error was raised, and the abort's LockErrorCleanup() would then
 * record it as held; a session lock would so outlive the failed call,
 * unknown to pg_fence.  Clean up the wait here instead, and release the lock
 * if it was granted, before the error propagates (docs/guarantees.md, guarantee 8).
 */
LockAcquireResult WaitForLock(const LOCKTAG *tag, LOCKMODE mode, bool session, int64 wait_usecs,
							  NameArg name);

} /* namespace fence */
