/*-------------------------------------------------------------------------
 *
 * locks.cpp
 *	  Connection-bound named locks with fencing tokens:
 *	  fence.try_lock, fence.lock, fence.try_xact_lock, fence.xact_lock,
 *	  fence.try_lock_shared, fence.lock_shared, fence.unlock, fence.unlock_all.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals, so PostgreSQL errors may longjmp through them; the
 * SQL entry points run it through fence::Entry (see boundary.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/locks/locks.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "locks/locks.hpp"

#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "locks/lock_wait.hpp"
#include "pg/shared_block.hpp"
#include "observability/stats.hpp"
#include "tokens/tokens.hpp"

namespace fence {

namespace {

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

/*
 * A backend holds a name in one mode at a time: refuse a request in the
 * other mode (55000), whether it would wait or not.  Upgrading a shared hold
 * would deadlock as soon as two sharers tried it; and a shared request under
 * an exclusive hold would need a second, differently counted hold of the
 * same name with its own token.
 */
void
CheckSameMode(const HeldLock *lock, HoldMode mode)
{
	if (lock->shared == (mode == HoldMode::kShared))
		return;
	if (lock->shared)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lock \"%s\" is held in shared mode by this session", lock->name),
				 errdetail("A shared hold cannot be upgraded to an exclusive one: two sessions "
						   "upgrading at once would deadlock."),
				 errhint("Release the shared hold with fence.unlock first.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("lock \"%s\" is held in exclusive mode by this session", lock->name),
			 errdetail("A session holds a lock in one mode at a time; its exclusive hold "
					   "already keeps every other session out."),
			 errhint("Take another exclusive hold, or release the lock with fence.unlock first.")));
}

} /* namespace */

bool
AcquireLock(NameArg name, Scope scope, HoldMode mode, int64 wait_usecs, int64 *token)
{
	const bool              session = scope == Scope::kSession;
	const volatile LOCKMODE lmode = LockModeFor(mode);

	Assert(session || mode == HoldMode::kExclusive);

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot acquire lock \"%s\" during recovery", NameCString(name)),
				 errdetail(
					 "A standby's lock space is its own; locks are granted only by the primary.")));
	if (XactReadOnly)
		ereport(
			ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot acquire lock \"%s\" in a read-only transaction", NameCString(name)),
			 errdetail(
				 "Granting a lock issues a fencing token, which writes to the token sequence.")));

	(void) AttachShared(); /* may raise: before anything is held */
	EnsureHeldLocks();
	if (!session)
		ReserveXactHold();

	uint64    key = NameHash(name);
	HeldLock *lock = FindHeld(name, key, false);
	LOCKTAG   tag;

	SetLockTag(&tag, kLockTagClass, key);

	if (lock != nullptr)
	{
		CheckSameMode(lock, mode);

		/*
		 * A cancel that arrived during the call fails it here, before it
		 * takes anything: nothing below checks for interrupts, so it would
		 * otherwise fail the statement after the call returned, with the
		 * extra hold taken.
		 */
		CHECK_FOR_INTERRUPTS();

		/*
		 * Re-entrant grant: same token, one more hold.  A first hold in the
		 * other scope takes the lock manager's lock for that scope too (it
		 * is granted at once: this backend already holds the tag).
		 */
		bool first_in_scope = session ? lock->session_holds == 0 : lock->xact_holds == 0;

		if (first_in_scope)
			(void) LockAcquire(&tag, lmode, session, true);
		if (session)
		{
			lock->session_holds++;
			if (first_in_scope)
				RecordKind(lock); /* transaction-only until now */
		}
		else
		{
			PushXactHold(lock);
			lock->xact_holds++;
		}
		StatsCount(session ? StatKind::kAcquiredSession : StatKind::kAcquiredXact);
		*token = lock->token;
		return true;
	}

	/* First hold: wait in PostgreSQL's lock manager. */
	LockAcquireResult res;

	if (wait_usecs == 0)
		res = LockAcquire(&tag, lmode, session, true);
	else
		res = WaitForLock(&tag, lmode, session, wait_usecs, name);

	if (res == LOCKACQUIRE_NOT_AVAIL)
	{
		StatsCount(StatKind::kBusy);
		return false;
	}

	/*
	 * Granted.  Whatever fails from here on (token issuance, cancel, out of
	 * memory) must not leave the lock held, nor an entry for it, nor its
	 * row in the registry: undo them before the error propagates (SPEC
	 * guarantee 8).
	 */
	volatile bool entered = false;
	volatile bool recorded = false;
	MemoryContext oldcxt = CurrentMemoryContext;

	PG_TRY();
	{
		int64 t = IssueToken();
		bool  found;

		lock = static_cast<HeldLock *>(hash_search(held_locks, &key, HASH_ENTER, &found));
		Assert(!found);
		lock->name = nullptr;
		lock->session_holds = 0;
		lock->xact_holds = 0;
		lock->shared = mode == HoldMode::kShared;
		entered = true;
		lock->name = static_cast<char *>(MemoryContextAlloc(TopMemoryContext, name.len + 1));
		memcpy(lock->name, name.data, name.len);
		lock->name[name.len] = '\0';
		lock->name_len = name.len;
		lock->token = t;
		lock->granted_at = GetCurrentTimestamp();
		if (session)
			lock->session_holds = 1;
		else
		{
			PushXactHold(lock);
			lock->xact_holds = 1;
		}
		StatsRecordGrant(key, lock->name, lock->name_len, t, GrantKind(lock), lock->granted_at);
		recorded = true;

		/*
		 * A cancel request or statement_timeout that arrived during the
		 * call is serviced here, so that it fails the call, which then
		 * holds nothing.  Nothing since the lock manager's last check (in
		 * its wait) has serviced one: token issuance waits with interrupts
		 * held off (LWLocks, WAL flush, the synchronous standbys), and a
		 * free lock is granted without any check.  Left pending, it would
		 * fail the statement just after the call returned, with the lock
		 * held under a token nobody saw.
		 */
		CHECK_FOR_INTERRUPTS();
		*token = t;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		if (recorded)
			StatsRecordRelease(key);
		if (entered)
		{
			HeldLock *partial =
				static_cast<HeldLock *>(hash_search(held_locks, &key, HASH_FIND, nullptr));

			if (partial != nullptr)
			{
				if (partial->xact_holds > 0 && n_xact_holds > 0 &&
					xact_holds[n_xact_holds - 1].lock == partial)
					n_xact_holds--;
				if (partial->name != nullptr)
					pfree(partial->name);
				hash_search(held_locks, &key, HASH_REMOVE, nullptr);
			}
		}
		LockRelease(&tag, lmode, session);
		PG_RE_THROW();
	}
	PG_END_TRY();

	StatsCount(session ? StatKind::kAcquiredSession : StatKind::kAcquiredXact);
	return true;
}

void
InitLocks()
{
	RegisterXactCallback(XactCallback, nullptr);
	RegisterSubXactCallback(SubXactCallback, nullptr);
}

/*
 * Release one session hold of name if this session holds it under token.
 * Returns false (no error) otherwise.
 */
static bool
ReleaseLock(NameArg name, int64 token)
{
	uint64    key = NameHash(name);
	HeldLock *lock = FindHeld(name, key, true);

	if (lock == nullptr || lock->session_holds == 0 || lock->token != token)
		return false;

	if (--lock->session_holds == 0)
	{
		LOCKTAG tag;

		SetLockTag(&tag, kLockTagClass, key);
		LockRelease(&tag, ModeOf(lock), true);
		if (lock->xact_holds > 0)
			RecordKind(lock); /* transaction holds remain */
		ForgetIfUnheld(lock);
	}
	StatsCount(StatKind::kReleases);
	return true;
}

/* Release every session hold of this session; returns the number of names. */
static int32
ReleaseAllSessionLocks()
{
	if (held_locks == nullptr)
		return 0;

	HASH_SEQ_STATUS status;
	HeldLock       *lock;
	int32           released = 0;

	hash_seq_init(&status, held_locks);
	while ((lock = static_cast<HeldLock *>(hash_seq_search(&status))) != nullptr)
	{
		if (lock->session_holds == 0)
			continue;

		LOCKTAG tag;

		SetLockTag(&tag, kLockTagClass, lock->key);
		/* skip holds that pg_advisory_unlock_all() / DISCARD ALL already ended */
		if (lock->xact_holds > 0 || HeldByMe(&tag, ModeOf(lock)))
		{
			LockRelease(&tag, ModeOf(lock), true);
			released++;
		}
		lock->session_holds = 0;
		if (lock->xact_holds > 0)
			RecordKind(lock); /* transaction holds remain */
		ForgetIfUnheld(lock); /* removing the current entry is allowed */
	}
	StatsCountN(StatKind::kReleases, (uint64) released);
	return released;
}

} /* namespace fence */

using fence::HoldMode;
using fence::NameArg;
using fence::Scope;

/* Common body of the six lock functions. */
static Datum
LockFunction(FunctionCallInfo fcinfo, Scope scope, HoldMode mode, bool wait)
{
	NameArg name = fence::GetNameArg(fcinfo, 0, "name");
	int64   wait_usecs = 0;

	if (wait)
		wait_usecs = fence::GetDurationArg(fcinfo, 1, "timeout", true);

	int64 token = 0;

	if (!fence::AcquireLock(name, scope, mode, wait_usecs, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * fence.try_lock(name text) RETURNS bigint
 *	 Session lock without waiting: the fencing token, or NULL when another
 *	 session holds name.  Takes: advisory ExclusiveLock (session).
 */
FENCE_SQL_FUNCTION(fence_try_lock)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return LockFunction(fc, Scope::kSession, HoldMode::kExclusive, false);
	});
}

/*
 * fence.lock(name text, timeout interval DEFAULT NULL) RETURNS bigint
 *	 Session lock, waiting at most timeout (NULL: no limit).  55P03 on
 *	 timeout; 40P01 on deadlock.  Takes: advisory ExclusiveLock (session).
 */
FENCE_SQL_FUNCTION(fence_lock)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return LockFunction(fc, Scope::kSession, HoldMode::kExclusive, true);
	});
}

/*
 * fence.try_xact_lock(name text) RETURNS bigint
 *	 Like try_lock, released at the end of the (sub)transaction.
 */
FENCE_SQL_FUNCTION(fence_try_xact_lock)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return LockFunction(fc, Scope::kTransaction, HoldMode::kExclusive, false);
	});
}

/*
 * fence.xact_lock(name text, timeout interval DEFAULT NULL) RETURNS bigint
 *	 Like lock, released at the end of the (sub)transaction.
 */
FENCE_SQL_FUNCTION(fence_xact_lock)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return LockFunction(fc, Scope::kTransaction, HoldMode::kExclusive, true);
	});
}

/*
 * fence.try_lock_shared(name text) RETURNS bigint
 *	 Shared session lock without waiting: the fencing token, or NULL when
 *	 another session holds name exclusive or waits for it exclusive.  55000
 *	 when this session holds name exclusive.  Takes: advisory ShareLock
 *	 (session).
 */
FENCE_SQL_FUNCTION(fence_try_lock_shared)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return LockFunction(fc, Scope::kSession, HoldMode::kShared, false);
	});
}

/*
 * fence.lock_shared(name text, timeout interval DEFAULT NULL) RETURNS bigint
 *	 Shared session lock, waiting at most timeout (NULL: no limit).  55P03
 *	 on timeout; 40P01 on deadlock; 55000 when this session holds name
 *	 exclusive.  Takes: advisory ShareLock (session).
 */
FENCE_SQL_FUNCTION(fence_lock_shared)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		return LockFunction(fc, Scope::kSession, HoldMode::kShared, true);
	});
}

/*
 * fence.unlock(name text, token bigint) RETURNS boolean
 *	 Releases one session hold of name, exclusive or shared, if this session
 *	 holds it under token; false otherwise (no error).
 */
FENCE_SQL_FUNCTION(fence_unlock)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) {
		NameArg name = fence::GetNameArg(fc, 0, "name");
		int64   token = fence::GetInt64Arg(fc, 1, "token");

		return BoolGetDatum(fence::ReleaseLock(name, token));
	});
}

/*
 * fence.unlock_all() RETURNS integer
 *	 Releases every session lock of this session, exclusive and shared
 *	 (transaction holds stay);
 *	 returns the number of names released.
 */
FENCE_SQL_FUNCTION(fence_unlock_all)
{
	return fence::Entry(
		fcinfo, [](FunctionCallInfo fc) { return Int32GetDatum(fence::ReleaseAllSessionLocks()); });
}
