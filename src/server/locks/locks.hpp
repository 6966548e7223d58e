/*-------------------------------------------------------------------------
 *
 * locks.hpp
 *	  Connection-bound named locks (session and transaction scope).
 *
 * A pg_fence lock is a PostgreSQL advisory lock (USER_LOCKMETHOD,
 * ExclusiveLock) whose tag no pg_advisory_lock* call can produce: the name's
 * 64-bit hash in this database, tag class kLockTagClass (lock_tag.hpp).  So
 * waiting, cancellation, statement_timeout, deadlock detection (40P01) and
 * release at session or transaction end all come from PostgreSQL's lock
 * manager (PostgreSQL docs, "Advisory Locks", section 13.3.5).
 *
 * Each backend keeps, per name it holds, the grant's fencing token and its
 * hold counts: session holds (released by unlock) and transaction holds
 * (released at the end of the (sub)transaction that took them).  A name's
 * token is drawn when its first hold is granted and stays until its last
 * hold is released, so re-entrant grants return the same token.
 *
 * A shared lock (fence.try_lock_shared / fence.lock_shared) is a session
 * hold of the same tag in ShareLock: ShareLock does not conflict with
 * itself and conflicts with ExclusiveLock both ways, so any number of
 * sessions hold a name shared, or one holds it exclusive (PostgreSQL docs,
 * "Table-Level Lock Modes", the same table pg_advisory_lock_shared relies
 * on).  Each sharing session gets its own token; its re-entrant shared
 * grants return that token again.  A backend holds a name in one mode only:
 * asking for the other mode while holding it raises 55000 (an upgrade would
 * deadlock against any other sharer doing the same).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/locks/locks.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/lock_tag.hpp"

extern "C" {
#include "storage/lockdefs.h"
}

namespace fence {

enum class Scope
{
	kSession,
	kTransaction
};

enum class HoldMode
{
	kExclusive, /* fence.lock and friends: ExclusiveLock */
	kShared     /* fence.lock_shared: ShareLock (session scope only) */
};

/* The lock manager's mode for a pg_fence lock mode (the one place it is spelled). */
inline LOCKMODE
LockModeFor(HoldMode mode)
{
	return mode == HoldMode::kShared ? ShareLock : ExclusiveLock;
}

/*
 * Acquire one hold of name in scope and mode (kShared: session scope only).  wait_usecs: 0 = do not wait,
 * -1 = wait without limit, > 0 = wait at most that long (then 55P03).
 * Returns true and sets *token when granted, false when busy (only when
 * wait_usecs == 0).  PostgreSQL-style: raises ERROR.
 */
bool AcquireLock(NameArg name, Scope scope, HoldMode mode, int64 wait_usecs, int64 *token);

/* Install the transaction callbacks (from _PG_init). */
void InitLocks();

} /* namespace fence */
