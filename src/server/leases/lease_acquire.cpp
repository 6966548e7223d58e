/*-------------------------------------------------------------------------
 *
 * lease_acquire.cpp
 *	  The acquire path of leases and semaphore permits: one try
 *	  (TryAcquire) and the wait in the server (WaitAndAcquire), behind
 *	  fence.lease_acquire (leases.cpp) and fence.semaphore_acquire
 *	  (semaphores.cpp) through AcquireLeaseSlot (leases.hpp).
 *
 * A try reads every row of the name (one index range scan, on the latest
 * snapshot, under the name's advisory lock: design notes 1 and 2 of
 * leases.cpp) and grants iff fewer than the caller's permits (1 for a
 * lease) are unexpired: it takes over the lowest expired slot (and
 * deletes the name's other expired rows), else inserts the lowest unused
 * slot number, with a token drawn only then (note 3).  A lease's row has
 * permits NULL; while a name has an unexpired row of the other kind the
 * try raises 42809 (semaphores.cpp says why).
 *
 * Waiting joins the name's queue (lease_wait.hpp), one queue for leases
 * and semaphores alike: the head tries, and sleeps until the earliest
 * expiry among the holders, a wake-up (a release's commit, any change of
 * the name's rows at its transaction's end, the previous head leaving
 * after its grant, so that several freed permits reach several waiters),
 * or the end of the wait.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_acquire.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "leases/leases.hpp"

#include "pg/args.hpp"
#include "leases/lease_notify.hpp"
#include "leases/lease_table.hpp"
#include "leases/lease_wait.hpp"
#include "observability/stats.hpp"
#include "tokens/tokens.hpp"

extern "C" {
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
}

namespace fence {

namespace {

/* What is being acquired: a lease (permits 0) or a semaphore permit. */
struct AcquireSpec
{
	int64 ttl;        /* microseconds */
	int32 permits;    /* 0 for lease_acquire, else semaphore_acquire's permits */
	int   holder_arg; /* argument number of holder text */
	bool  elected;    /* fence.campaign: the holder text is the candidate */
};

/*
 * Parameters $2..$9 shared by kInsert and kTakeover: token, holder (may be
 * NULL), owner role, granted_at, expires_at, slot, permits (NULL for a
 * lease), elected.  $1 (the name) is set by the caller.
 */
void
SetGrantParams(FunctionCallInfo fcinfo, const AcquireSpec *spec, Datum *values, char *nulls,
			   int64 token, Oid caller, TimestampTz now, TimestampTz expires, int32 slot)
{
	int h = spec->holder_arg;

	values[1] = Int64GetDatum(token);
	values[2] = PG_ARGISNULL(h) ? (Datum) 0 : PG_GETARG_DATUM(h);
	nulls[2] = PG_ARGISNULL(h) ? 'n' : ' ';
	values[3] = ObjectIdGetDatum(caller);
	values[4] = TimestampTzGetDatum(now);
	values[5] = TimestampTzGetDatum(expires);
	values[6] = Int32GetDatum(slot);
	values[7] = Int32GetDatum(spec->permits);
	nulls[7] = spec->permits == 0 ? 'n' : ' ';
	values[8] = BoolGetDatum(spec->elected);
}

/* The holder the call grants, for its NOTIFY. */
HolderInfo
GrantedHolder(FunctionCallInfo fcinfo, const AcquireSpec *spec, int64 token, TimestampTz expires,
			  int32 slot)
{
	HolderInfo info;
	int        h = spec->holder_arg;
	text      *holder = PG_ARGISNULL(h) ? nullptr : PG_GETARG_TEXT_PP(h);

	info.kind = spec->permits != 0 ? HolderKind::kSemaphore
								   : (spec->elected ? HolderKind::kLeader : HolderKind::kLease);
	info.token = token;
	info.holder = holder == nullptr ? nullptr : VARDATA_ANY(holder);
	info.holder_len = holder == nullptr ? 0 : (int) VARSIZE_ANY_EXHDR(holder);
	info.expires_at = expires;
	info.slot = slot;
	return info;
}

/* Does a row's holder text (SQL NULL: isnull) equal the call's holder argument? */
bool
SameHolder(FunctionCallInfo fcinfo, const AcquireSpec *spec, Datum row_holder, bool isnull)
{
	int h = spec->holder_arg;

	if (isnull || PG_ARGISNULL(h))
		return false;

	text *a = DatumGetTextPP(row_holder);
	text *b = PG_GETARG_TEXT_PP(h);

	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		   memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/*
 * A campaign by the current leader: the same candidate, the same role, and
 * a lease granted by fence.campaign.  Extends it to expire at `expires`
 * (a renewal, counted as one) and returns true; the caller gets the term
 * back.
 */
bool
RenewOwnLeadership(Datum name, int64 token, Oid caller, TimestampTz now, TimestampTz expires)
{
	Datum      values[6];
	const char nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = name;
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(caller);
	values[3] = TimestampTzGetDatum(now);
	values[4] = TimestampTzGetDatum(expires);
	values[5] = BoolGetDatum(false); /* only the leader's own role, not fence_admin */
	return LeaseExec(kRenew, values, nulls, SPI_OK_UPDATE) == 1;
}

/*
 * A takeover of one expired slot (`slot`) removes the name's other expired
 * rows (permits of a semaphore that nobody took again, a lease's row beside
 * expired permits), so that after a takeover every row of the name is a
 * holder.  Under the name's lock, like every change of its rows.
 */
void
PurgeOtherExpired(Datum name, TimestampTz now, int32 slot)
{
	Datum      values[3] = {name, TimestampTzGetDatum(now), Int32GetDatum(slot)};
	const char nulls[3] = {' ', ' ', ' '};

	(void) LeaseExec(kPurge, values, nulls, SPI_OK_DELETE);
}

/* What one try of lease_acquire found. */
enum class Attempt
{
	kGranted, /* *token is the new lease's */
	kHeld,    /* an unexpired lease: *held_until is its expiry */
	kBusy     /* another transaction is changing the name right now */
};

/*
 * Kind mismatch: the name is held (unexpired) as the other kind.  Leases and
 * semaphores share one namespace, but a name is one or the other while held:
 * a semaphore_acquire beside a lease would silently break the lease
 * holder's exclusivity.
 */
void
RefuseMixedKinds(NameArg name, bool held_as_semaphore)
{
	ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
					errmsg(held_as_semaphore ? "\"%s\" is held as a semaphore, not a lease"
											 : "\"%s\" is held as a lease, not a semaphore",
						   NameCString(name)),
					errdetail("Leases and semaphores share one namespace; a name is used as one "
							  "kind at a time while any of its holders is unexpired."),
					errhint(held_as_semaphore
								? "Use fence.semaphore_acquire for this name, or another name."
								: "Use fence.lease_acquire for this name, or another name.")));
}

/*
 * One try.  A grant happens iff fewer than the caller's permits (1 for a
 * lease) unexpired holders of the name exist; it takes over the lowest
 * expired slot, else inserts the lowest unused slot number.  When permits
 * differ between callers, each call counts against its own permits: holders
 * beyond a lowered count keep their permits until they release or expire.
 */
Attempt
TryAcquire(FunctionCallInfo fcinfo, NameArg name, const AcquireSpec *spec, int64 *token,
		   TimestampTz *held_until)
{
	LeaseCall call;

	if (!LeaseBegin(&call, name, false))
		return Attempt::kBusy;

	TimestampTz now = GetCurrentTimestamp();
	TimestampTz expires = LeaseExpiresAt(now, spec->ttl);
	int32       limit = spec->permits == 0 ? 1 : spec->permits;
	Datum       values[10];
	char        nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	uint64      n;
	int32       live = 0;
	TimestampTz first_expiry = 0;
	int32       n_expired = 0; /* expired rows of the name */
	HolderInfo  expired = {};
	int64       own_term = 0;  /* a campaign by the current leader: its term */
	int32       free_slot = 0; /* lowest slot number not in use */

	values[0] = PG_GETARG_DATUM(0);
	n = LeaseExec(kSelect, values, nulls, SPI_OK_SELECT);
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple   tup = SPI_tuptable->vals[i];
		TupleDesc   desc = SPI_tuptable->tupdesc;
		bool        isnull;
		int64       row_token = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		TimestampTz row_expires = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
		Oid         row_owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		int32       row_slot = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		bool        row_is_lease;
		bool        holder_null;
		Datum       row_holder = SPI_getbinval(tup, desc, 6, &holder_null);
		bool        row_elected = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));

		(void) SPI_getbinval(tup, desc, 5, &row_is_lease); /* permits NULL: a lease */
		if (row_slot == free_slot)
			free_slot++;
		if (row_expires > now)
		{
			if (row_is_lease != (spec->permits == 0))
			{
				LeaseEnd(&call, false);
				RefuseMixedKinds(name, !row_is_lease);
			}
			if (live == 0 || row_expires < first_expiry)
				first_expiry = row_expires;
			live++;
			if (spec->elected && row_elected && row_owner == call.caller &&
				SameHolder(fcinfo, spec, row_holder, holder_null))
				own_term = row_token;
		}
		else if (n_expired++ == 0)
		{
			text *h = holder_null ? nullptr : DatumGetTextPP(row_holder);

			expired.kind = RowKind(row_is_lease, row_elected);
			expired.token = row_token;
			expired.holder = h == nullptr ? nullptr : VARDATA_ANY(h);
			expired.holder_len = h == nullptr ? 0 : (int) VARSIZE_ANY_EXHDR(h);
			expired.expires_at = row_expires;
			expired.slot = row_slot;
		}
	}

	if (own_term != 0)
	{
		bool renewed = RenewOwnLeadership(values[0], own_term, call.caller, now, expires);

		LeaseEnd(&call, renewed);
		if (!renewed)
			elog(ERROR, "lease \"%s\" changed while locked", NameCString(name));
		WakeLeaseWaitersAtEnd(LeaseWaitKey(NameHash(name))); /* the head's timer moves */
		StatsCount(StatKind::kRenewals);
		*token = own_term;
		return Attempt::kGranted;
	}

	if (live >= limit)
	{
		/* all held (maybe by this very caller: leases do not nest) */
		LeaseEnd(&call, false);
		*held_until = first_expiry;
		return Attempt::kHeld;
	}

	*token = IssueToken();
	if (n_expired > 0)
	{
		HolderInfo granted = GrantedHolder(fcinfo, spec, *token, expires, expired.slot);

		SetGrantParams(fcinfo, spec, values, nulls, *token, call.caller, now, expires,
					   expired.slot);
		values[9] = Int64GetDatum(expired.token);
		if (LeaseExec(kTakeover, values, nulls, SPI_OK_UPDATE) != 1)
			elog(ERROR, "lease \"%s\" changed while locked", NameCString(name));
		/* expired.holder points into the SPI tuple: before LeaseEnd */
		NotifyHolderChange(name, HolderEvent::kTakenOver, &granted, &expired, now);
		if (n_expired > 1)
			PurgeOtherExpired(values[0], now, expired.slot);
		LeaseEnd(&call, true);
		ReportLeaseTakeover(NameCString(name), expired.token, *token, now - expired.expires_at);
	}
	else
	{
		HolderInfo granted = GrantedHolder(fcinfo, spec, *token, expires, free_slot);

		SetGrantParams(fcinfo, spec, values, nulls, *token, call.caller, now, expires, free_slot);
		(void) LeaseExec(kInsert, values, nulls, SPI_OK_INSERT);
		NotifyHolderChange(name, HolderEvent::kAcquired, &granted, nullptr, now);
		LeaseEnd(&call, true);
	}
	WakeLeaseWaitersAtEnd(LeaseWaitKey(NameHash(name)));
	StatsCount(StatKind::kAcquiredLease);
	return Attempt::kGranted;
}

/* now + wait; a wait past the end of time waits until then (no error). */
TimestampTz
WaitDeadline(TimestampTz now, int64 wait)
{
	TimestampTz result;

	if (pg_add_s64_overflow(now, wait, &result) || !IS_VALID_TIMESTAMP(result))
		return END_TIMESTAMP - 1;
	return result;
}

/*
 * lease_acquire with `wait`: joins the name's queue of waiters
 * (lease_wait.hpp) and, whenever it is the head, tries; sleeps until the
 * holder's expiry, a wake-up (a release, or any change of the lease,
 * visible at its transaction's end; the previous head leaving), or the end
 * of the wait.  A call in flight on the name (kBusy: its change not yet
 * visible, or its transaction's locks not yet released, as right after
 * the release that woke us) is waited for in the lock manager, which
 * wakes us the moment that transaction's locks go (WaitForLeaseLock).
 * Without shared memory (15/16 without the preload) there is no
 * queue and nobody to wake us: we look again at the holder's expiry or
 * after a backoff (10 ms doubling to 1 s), whichever comes first.
 * Returns the token, or 0 when the wait ended without the lease.
 */
/*
 * The loop of WaitAndAcquire, outside its PG_TRY so that no variable of
 * the frame that calls setjmp changes after it (gcc's -Wclobbered).
 * Sets *waited once it sleeps.
 */
pg_noinline int64
WaitLoop(FunctionCallInfo fcinfo, const NameArg *name, const AcquireSpec *spec,
		 TimestampTz deadline, int slot, volatile bool *waited)
{
	int64 backoff = 10 * 1000; /* us, without a queue */

	for (;;)
	{
		ResetLatch(MyLatch);

		TimestampTz wake = deadline;

		if (IsLeaseQueueHead(slot))
		{
			int64       token = 0;
			TimestampTz held_until = 0;
			Attempt     a = TryAcquire(fcinfo, *name, spec, &token, &held_until);

			if (a == Attempt::kGranted)
				return token;

			if (a == Attempt::kBusy)
			{
				/* a call in flight: wait in the lock manager for its transaction to end */
				WaitForLeaseLock(NameHash(*name), deadline);
				if (GetCurrentTimestamp() < deadline)
					continue;
			}

			TimestampTz now = GetCurrentTimestamp();

			if (a == Attempt::kHeld)
				wake = Min(wake, held_until);
			if (slot < 0)
			{
				wake = Min(wake, now + backoff);
				backoff = Min(backoff * 2, (int64) USECS_PER_SEC);
			}
		}

		TimestampTz now = GetCurrentTimestamp();

		if (now >= deadline)
			return 0;

		/* at most an hour at a time (WaitLatch's timeout is an int inside) */
		long ms = (long) Min((Max(wake - now, (int64) 0) + 999) / 1000, (int64) 3600 * 1000);

		*waited = true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Max(ms, 1L),
						 LeaseWaitEvent());
		CHECK_FOR_INTERRUPTS();
	}
}

int64
WaitAndAcquire(FunctionCallInfo fcinfo, NameArg name, const AcquireSpec *spec, int64 wait)
{
	/* everything the PG_TRY block reads is set before it and never changed */
	const NameArg *const     name_p = &name;
	const TimestampTz        deadline = WaitDeadline(GetCurrentTimestamp(), wait);
	const TimestampTz        started = GetCurrentTimestamp();
	const volatile int       slot = JoinLeaseQueue(LeaseWaitKey(NameHash(name)));
	volatile int64           result = 0;
	volatile bool            waited = false; /* slept at least once: a wait for fence.stats() */
	FunctionCallInfo const   fc = fcinfo;
	const AcquireSpec *const sp = spec;

	PG_TRY();
	{
		result = WaitLoop(fc, name_p, sp, deadline, slot, &waited);
	}
	PG_FINALLY();
	{
		LeaveLeaseQueue(slot);
		if (waited)
			StatsCountWait(GetCurrentTimestamp() - started);
	}
	PG_END_TRY();
	return result;
}

/*
 * The transaction changing the name right now (invalid if none): the holder
 * of its lease lock.  Not in hot standby (where GetLockConflicts' result is
 * not ours to free): lease writes are refused there before any try.
 */
VirtualTransactionId
NameChanger(NameArg name)
{
	LOCKTAG              tag;
	int                  n = 0;
	VirtualTransactionId changer;

	SetLockTag(&tag, kLeaseLockTagClass, NameHash(name));
	VirtualTransactionId *held = GetLockConflicts(&tag, ExclusiveLock, &n);

	if (n > 0)
		changer = held[0];
	else
		SetInvalidVirtualTransactionId(changer);
	pfree(held);
	return changer;
}

/*
 * One try without `wait`.  A lease finds another acquire of its name in
 * flight (kBusy) only when someone else is getting it: NULL at once.  A
 * semaphore may still have a permit left then, and concurrent acquirers of
 * one semaphore are its normal use, so a semaphore permit tries again (1 ms,
 * doubling to 16 ms apart) for as long as the calls in flight make
 * progress: it gives up when one transaction has held the name for
 * kBusyRetry (100 ms) without ending, and after kBusyCap (5 s) in all.  An
 * autocommit grant holds the name for a few milliseconds; a queue of
 * concurrent acquirers, each a few milliseconds, is progress however long
 * it is on a loaded machine.  A name held longer by one transaction (a
 * grant, renewal or release in a transaction still open) reads as busy:
 * NULL.
 */
Attempt
TryAgainWhileBusy(FunctionCallInfo fcinfo, NameArg name, const AcquireSpec *spec, int64 *token)
{
	constexpr int64      kBusyRetry = 100 * 1000;    /* us, one transaction */
	constexpr int64      kBusyCap = 5 * 1000 * 1000; /* us, in all */
	const TimestampTz    start = GetCurrentTimestamp();
	TimestampTz          give_up = start + kBusyRetry;
	long                 pause_ms = 1;
	VirtualTransactionId last;

	SetInvalidVirtualTransactionId(last);
	for (;;)
	{
		TimestampTz held_until;
		Attempt     a = TryAcquire(fcinfo, name, spec, token, &held_until);

		if (a != Attempt::kBusy || (spec->permits == 0 && !spec->elected))
			return a;

		TimestampTz          now = GetCurrentTimestamp();
		VirtualTransactionId changer = NameChanger(name);

		if (!VirtualTransactionIdIsValid(changer) || !VirtualTransactionIdEquals(changer, last))
		{
			/* another call than last time, or none any more: progress */
			last = changer;
			give_up = Min(now + kBusyRetry, start + kBusyCap);
			pause_ms = 1;
		}
		if (now >= give_up)
			return a;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, pause_ms,
						 LeaseWaitEvent());
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pause_ms = Min(pause_ms * 2, 16L);
	}
}

} /* namespace */

/* See leases.hpp. */
Datum
AcquireLeaseSlot(FunctionCallInfo fcinfo, NameArg name, int64 ttl, int32 permits, int holder_arg,
				 int64 wait, bool elected)
{
	AcquireSpec spec = {ttl, permits, holder_arg, elected};

	(void) LeaseExpiresAt(GetCurrentTimestamp(), ttl); /* validate before anything */
	if (elected)
		CheckLeaseWritable("campaign for", "leadership", name);
	else
		CheckLeaseWritable("acquire", permits == 0 ? "lease" : "semaphore", name);

	int64 token = 0;

	if (wait > 0)
		token = WaitAndAcquire(fcinfo, name, &spec, wait);
	else if (TryAgainWhileBusy(fcinfo, name, &spec, &token) != Attempt::kGranted)
		token = 0;
	if (token == 0)
	{
		StatsCount(StatKind::kBusy);
		PG_RETURN_NULL();
	}
	PG_RETURN_INT64(token);
}

} /* namespace fence */
