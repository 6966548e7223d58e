/*-------------------------------------------------------------------------
 *
 * held_locks.cpp
 *	  The names this backend holds, with their tokens and hold counts, and
 *	  the transaction callbacks that keep them in step with the lock
 *	  manager (see held_locks.hpp).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/locks/held_locks.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "locks/held_locks.hpp"

#include "pg/compat.hpp"
#include "observability/stats.hpp"

namespace fence {

namespace {

/* A transaction hold, with the nesting level of the subtransaction that took it. */
struct XactHold
{
	HeldLock *lock;
	int       level;
};

HTAB *held_locks = nullptr;

/* Transaction holds, oldest first; levels never decrease towards the top. */
XactHold *xact_holds = nullptr;
int       n_xact_holds = 0;
int       max_xact_holds = 0;

} /* namespace */

void
EnsureHeldLocks()
{
	if (held_locks != nullptr)
		return;

	HASHCTL ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(HeldLock);
	ctl.hcxt = TopMemoryContext;
	held_locks =
		hash_create("pg_fence held locks", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Does this backend hold the lock manager's lock on tag in mode (in any scope)? */
bool
HeldByMe(const LOCKTAG *tag, LOCKMODE mode)
{
	return compat::HoldsLock(tag, mode);
}

/* Make room for one more transaction hold (may raise out of memory). */
void
ReserveXactHold()
{
	if (n_xact_holds < max_xact_holds)
		return;

	int newmax = max_xact_holds == 0 ? 16 : max_xact_holds * 2;

	if (xact_holds == nullptr)
		xact_holds = static_cast<XactHold *>(
			MemoryContextAlloc(TopMemoryContext, newmax * sizeof(XactHold)));
	else
		xact_holds = static_cast<XactHold *>(repalloc(xact_holds, newmax * sizeof(XactHold)));
	max_xact_holds = newmax;
}

/* Record one transaction hold of lock (after ReserveXactHold: cannot fail). */
void
PushXactHold(HeldLock *lock)
{
	Assert(n_xact_holds < max_xact_holds);
	xact_holds[n_xact_holds].lock = lock;
	xact_holds[n_xact_holds].level = GetCurrentTransactionNestLevel();
	n_xact_holds++;
}

/* Forget a name once nothing holds it any more. */
void
ForgetIfUnheld(HeldLock *lock)
{
	if (lock->session_holds > 0 || lock->xact_holds > 0)
		return;
	StatsRecordRelease(lock->key);
	pfree(lock->name);
	uint64 key = lock->key;

	hash_search(held_locks, &key, HASH_REMOVE, nullptr);
}

/* The lock manager's mode of a held name. */
LOCKMODE
ModeOf(const HeldLock *lock)
{
	return LockModeFor(lock->shared ? HoldMode::kShared : HoldMode::kExclusive);
}

/*
 * The registry's kind of a held name: 'S' shared (session), else 's' when a
 * session hold exists, else 'x' (transaction holds only).
 */
char
GrantKind(const HeldLock *lock)
{
	if (lock->shared)
		return 'S';
	return lock->session_holds > 0 ? 's' : 'x';
}

/*
 * Tell the registry behind fence.locks which scope holds the name now: a
 * session hold, if any, else transaction holds.
 */
void
RecordKind(const HeldLock *lock)
{
	StatsRecordGrant(lock->key, lock->name, lock->name_len, lock->token, GrantKind(lock),
					 lock->granted_at);
}

namespace {

/*
 * The session hold of a lock can vanish behind our back: pg_advisory_unlock_all()
 * and DISCARD ALL release every USER_LOCKMETHOD session lock, ours included.
 * While a transaction hold exists the lock is held anyway; otherwise ask the
 * lock manager (a backend-local hash lookup) and forget the stale session
 * holds, so that a later grant gets a fresh token instead of a stale one.
 */
void
CheckSessionHolds(HeldLock *lock)
{
	if (lock->session_holds == 0 || lock->xact_holds > 0)
		return;

	LOCKTAG tag;

	SetLockTag(&tag, kLockTagClass, lock->key);
	if (!HeldByMe(&tag, ModeOf(lock)))
	{
		lock->session_holds = 0;
		ForgetIfUnheld(lock);
	}
}

} /* namespace */

/*
 * Find the held entry for name, or nullptr.  Another name with the same
 * 64-bit hash held by this backend is refused with an error, or, when
 * collision_ok, reported as "not held" (nullptr).
 */
HeldLock *
FindHeld(NameArg name, uint64 key, bool collision_ok)
{
	if (held_locks == nullptr)
		return nullptr;

	HeldLock *lock = static_cast<HeldLock *>(hash_search(held_locks, &key, HASH_FIND, nullptr));

	if (lock == nullptr)
		return nullptr;
	/* a stale entry is forgotten first: it must neither match nor collide */
	CheckSessionHolds(lock);
	lock = static_cast<HeldLock *>(hash_search(held_locks, &key, HASH_FIND, nullptr));
	if (lock == nullptr)
		return nullptr;
	if (lock->name_len != name.len || memcmp(lock->name, name.data, name.len) != 0)
	{
		if (collision_ok)
			return nullptr;
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
						errmsg("lock name \"%s\" has the same 64-bit hash as held lock \"%s\"",
							   NameCString(name), lock->name),
						errhint("Release \"%s\" first, or use another name.", lock->name)));
	}
	return lock;
}

HeldLock *
EnterHeld(uint64 key)
{
	bool      found;
	HeldLock *lock = static_cast<HeldLock *>(hash_search(held_locks, &key, HASH_ENTER, &found));

	Assert(!found);
	return lock;
}

void
ForgetPartialHold(uint64 key)
{
	HeldLock *partial = static_cast<HeldLock *>(hash_search(held_locks, &key, HASH_FIND, nullptr));

	if (partial == nullptr)
		return;
	if (partial->xact_holds > 0 && n_xact_holds > 0 && xact_holds[n_xact_holds - 1].lock == partial)
		n_xact_holds--;
	if (partial->name != nullptr)
		pfree(partial->name);
	hash_search(held_locks, &key, HASH_REMOVE, nullptr);
}

bool
StartHeldScan(HASH_SEQ_STATUS *status)
{
	if (held_locks == nullptr)
		return false;
	hash_seq_init(status, held_locks);
	return true;
}

HeldLock *
NextHeld(HASH_SEQ_STATUS *status)
{
	return static_cast<HeldLock *>(hash_seq_search(status));
}

namespace {

void
XactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:

			/*
			 * The lock manager releases (or, PREPARE, hands over) the
			 * transaction locks.  Each array element is one of its lock's
			 * xact_holds, so the count reaches 0 at the lock's last element,
			 * and only then may the entry be forgotten.
			 */
			for (int i = 0; i < n_xact_holds; i++)
			{
				HeldLock *lock = xact_holds[i].lock;

				if (--lock->xact_holds == 0)
					ForgetIfUnheld(lock);
			}
			n_xact_holds = 0;
			break;
		default:
			break;
	}
}

void
SubXactCallback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
				void *arg)
{
	int level = GetCurrentTransactionNestLevel();

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			/* ROLLBACK TO SAVEPOINT: the lock manager releases the holds taken since */
			while (n_xact_holds > 0 && xact_holds[n_xact_holds - 1].level >= level)
			{
				HeldLock *lock = xact_holds[--n_xact_holds].lock;

				lock->xact_holds--;
				ForgetIfUnheld(lock);
			}
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			/* RELEASE SAVEPOINT: the parent now owns these holds */
			for (int i = n_xact_holds - 1; i >= 0 && xact_holds[i].level >= level; i--)
				xact_holds[i].level = level - 1;
			break;
		default:
			break;
	}
}

} /* namespace */

void
InitLocks()
{
	RegisterXactCallback(XactCallback, nullptr);
	RegisterSubXactCallback(SubXactCallback, nullptr);
}

} /* namespace fence */
