/*-------------------------------------------------------------------------
 *
 * locks.hpp
 *	  Connection-bound named locks (session and transaction scope).
 *
 * A pg_fence lock is a PostgreSQL advisory lock (USER_LOCKMETHOD,
 * ExclusiveLock) whose tag no pg_advisory_lock* call can produce:
 *
 *	 field1 = MyDatabaseId               (names are per database)
 *	 field2 = high 32 bits of the name's 64-bit hash
 *	 field3 = low 32 bits of the name's 64-bit hash
 *	 field4 = kLockTagClass (pg_advisory_* use only 1 and 2)
 *
 * so waiting, cancellation, statement_timeout, deadlock detection (40P01)
 * and release at session or transaction end all come from PostgreSQL's lock
 * manager (PostgreSQL docs, "Advisory Locks", section 13.3.5).  The hash is
 * hash_bytes_extended() with a pg_fence seed: 64 bits, not the 32 of
 * hashtext(), so distinct names do not share a lock in practice (a collision
 * between two names a backend holds at once is detected and refused).
 *
 * Each backend keeps, per name it holds, the grant's fencing token and its
 * hold counts: session holds (released by unlock) and transaction holds
 * (released at the end of the (sub)transaction that took them).  A name's
 * token is drawn when its first hold is granted and stays until its last
 * hold is released, so re-entrant grants return the same token.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/locks.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "ext/args.hpp"

namespace fence {

/* locktag_field4 of every pg_fence lock; "fe" in ASCII. */
constexpr uint16 kLockTagClass = 0x6665;

/* Seed of the name hash (any fixed value; "pg_fence" in ASCII). */
constexpr uint64 kNameHashSeed = UINT64CONST(0x70675f66656e6365);

enum class Scope
{
	kSession,
	kTransaction
};

/* 64-bit hash of a name, as used in the lock tag. */
uint64		NameHash(NameArg name);

/* The lock tag of a name in the current database. */
void		SetNameLockTag(LOCKTAG *tag, uint64 hash);

/*
 * Acquire one hold of name in scope.  wait_usecs: 0 = do not wait,
 * -1 = wait without limit, > 0 = wait at most that long (then 55P03).
 * Returns true and sets *token when granted, false when busy (only when
 * wait_usecs == 0).  PostgreSQL-style: raises ERROR.
 */
bool		AcquireLock(NameArg name, Scope scope, int64 wait_usecs, int64 *token);

/* Install the transaction callbacks (from _PG_init). */
void		InitLocks();

}							/* namespace fence */
