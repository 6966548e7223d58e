/*-------------------------------------------------------------------------
 *
 * lock_wait.cpp
 *	  Waiting for a connection-bound lock in PostgreSQL's lock manager, with
 *	  pg_fence's timeout, wait event and clean-up (see lock_wait.hpp).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/locks/lock_wait.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "locks/lock_wait.hpp"

#include "pg/compat.hpp"
#include "observability/stats.hpp"

namespace fence {

namespace {

/* pg_stat_activity.wait_event of a waiting fence.lock / xact_lock / lock_shared (17+). */
constexpr const char *kLockWaitEvent = "PgFenceLock";

} /* namespace */

LockAcquireResult
WaitForLock(const LOCKTAG *tag, LOCKMODE mode, bool session, int64 wait_usecs, NameArg name)
{
	const int   saved_timeout = LockTimeout;
	const int64 wait_ms =
		wait_usecs <= 0 ? 0
						: Min(wait_usecs / 1000 + (wait_usecs % 1000 != 0), (int64) PG_INT32_MAX);
	const bool ours = wait_ms > 0 && (saved_timeout <= 0 || wait_ms < saved_timeout);
	volatile LockAcquireResult res = LOCKACQUIRE_NOT_AVAIL;
	MemoryContext              oldcxt = CurrentMemoryContext;

	static uint32 wait_event = 0;

	if (wait_event == 0)
		wait_event = compat::CustomWaitEvent(kLockWaitEvent);

	/*
	 * Free (or already ours)?  Then there is no wait to count.  A request
	 * that does not wait still queues behind waiters (the lock manager checks
	 * the wait mask first), so this changes no one's turn.
	 */
	res = LockAcquire(tag, mode, session, true);
	if (res != LOCKACQUIRE_NOT_AVAIL)
		return res;

	const TimestampTz wait_start = GetCurrentTimestamp();

	if (ours)
		LockTimeout = (int) wait_ms;

	PG_TRY();
	{
		compat::BeginCustomWait(wait_event);
		res = LockAcquire(tag, mode, session, false);
		compat::EndCustomWait(wait_event);
	}
	PG_CATCH();
	{
		compat::EndCustomWait(wait_event);
		LockTimeout = saved_timeout;
		/* out of the wait queue, or granted after all: then give it back */
		LockErrorCleanup();
		if (compat::HoldsLock(tag, mode))
			LockRelease(tag, mode, session);
		MemoryContextSwitchTo(oldcxt);
		StatsCountWait(GetCurrentTimestamp() - wait_start);

		ErrorData *edata = CopyErrorData();

		if (ours && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		{
			Interval iv;

			FlushErrorState();
			StatsCount(StatKind::kTimeouts);
			memset(&iv, 0, sizeof(iv));
			iv.time = wait_ms * 1000;
			ereport(
				ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not obtain lock \"%s\" within %s", NameCString(name),
						DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(&iv)))),
				 errhint("Another session holds it; see the view fence.locks.")));
		}
		FreeErrorData(edata);
		PG_RE_THROW();
	}
	PG_END_TRY();

	LockTimeout = saved_timeout;
	StatsCountWait(GetCurrentTimestamp() - wait_start);
	return res;
}

} /* namespace fence */
