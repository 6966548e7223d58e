/*-------------------------------------------------------------------------
 *
 * locks.cpp
 *	  Connection-bound named locks with fencing tokens:
 *	  fence.try_lock, fence.lock, fence.try_xact_lock, fence.xact_lock,
 *	  fence.try_lock_shared, fence.lock_shared, fence.unlock, fence.unlock_all.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals, so PostgreSQL errors may longjmp through them; the
 * SQL entry points run it through fence::Entry (see boundary.hpp).  The
 * table of the names this backend holds, and the transaction callbacks that
 * keep it in step with the lock manager, are held_locks.cpp's.
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
#include "locks/held_locks.hpp"
#include "locks/lock_wait.hpp"
#include "pg/shared_block.hpp"
#include "observability/stats.hpp"
#include "tokens/tokens.hpp"

namespace fence {

namespace {

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
	 * row in the registry: undo them before the error propagates
	 * (docs/guarantees.md, guarantee 8).
	 */
	volatile bool entered = false;
	volatile bool recorded = false;
	MemoryContext oldcxt = CurrentMemoryContext;

	PG_TRY();
	{
		int64 t = IssueToken();

		lock = EnterHeld(key);
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
			ForgetPartialHold(key);
		LockRelease(&tag, lmode, session);
		PG_RE_THROW();
	}
	PG_END_TRY();

	StatsCount(session ? StatKind::kAcquiredSession : StatKind::kAcquiredXact);
	return true;
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
	HASH_SEQ_STATUS status;
	HeldLock       *lock;
	int32           released = 0;

	if (!StartHeldScan(&status))
		return 0;
	while ((lock = NextHeld(&status)) != nullptr)
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
