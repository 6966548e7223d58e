/*-------------------------------------------------------------------------
 *
 * held_locks.hpp
 *	  The names this backend holds (locks.hpp): a backend-local table of
 *	  HeldLock entries, the stack of transaction holds, and the transaction
 *	  callbacks that forget holds when the lock manager releases them
 *	  (src/server/locks/held_locks.cpp).  Internal to src/server/locks/.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/locks/held_locks.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "locks/locks.hpp"

namespace fence {

/*
 * One name this backend holds.  Lives in a dynahash keyed by the name's
 * 64-bit hash (entries never move while they exist).
 */
struct HeldLock
{
	uint64      key;  /* hash key: NameHash(name) */
	char       *name; /* NUL-terminated, in TopMemoryContext */
	int         name_len;
	int64       token;         /* fencing token of this grant */
	int32       session_holds; /* released by unlock / unlock_all */
	int32       xact_holds;    /* released at (sub)transaction end */
	bool        shared;        /* ShareLock (session only), else ExclusiveLock */
	TimestampTz granted_at;
};

/* Make the table if this backend has none yet (may raise out of memory). */
void EnsureHeldLocks();

/* Does this backend hold the lock manager's lock on tag in mode (in any scope)? */
bool HeldByMe(const LOCKTAG *tag, LOCKMODE mode);

/* Make room for one more transaction hold (may raise out of memory). */
void ReserveXactHold();

/* Record one transaction hold of lock (after ReserveXactHold: cannot fail). */
void PushXactHold(HeldLock *lock);

/* Forget a name once nothing holds it any more. */
void ForgetIfUnheld(HeldLock *lock);

/* The lock manager's mode of a held name. */
LOCKMODE ModeOf(const HeldLock *lock);

/*
 * The registry's kind of a held name: 'S' shared (session), else 's' when a
 * session hold exists, else 'x' (transaction holds only).
 */
char GrantKind(const HeldLock *lock);

/*
 * Tell the registry behind fence.locks which scope holds the name now: a
 * session hold, if any, else transaction holds.
 */
void RecordKind(const HeldLock *lock);

/*
 * Find the held entry for name, or nullptr.  Another name with the same
 * 64-bit hash held by this backend is refused with an error, or, when
 * collision_ok, reported as "not held" (nullptr).
 */
HeldLock *FindHeld(NameArg name, uint64 key, bool collision_ok);

/*
 * A new entry for key, which must not be held (EnsureHeldLocks first); the
 * caller fills it in.  May raise out of memory.
 */
HeldLock *EnterHeld(uint64 key);

/*
 * Undo a first grant that failed half-way: forget the entry of key, if it
 * was entered, and its transaction hold, if it was pushed.  Never raises.
 */
void ForgetPartialHold(uint64 key);

/* Scan every held entry: false when there is none to scan. */
bool StartHeldScan(HASH_SEQ_STATUS *status);

/* The next entry of the scan, or nullptr at its end; removing it is allowed. */
HeldLock *NextHeld(HASH_SEQ_STATUS *status);

} /* namespace fence */
