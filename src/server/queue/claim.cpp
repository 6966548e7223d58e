/*-------------------------------------------------------------------------
 *
 * claim.cpp
 *	  fence.claim: taking runnable jobs, each with a fresh fencing token and
 *	  a lease of ttl, and the wait in the server for one to become runnable.
 *
 * One try is two prepared statements per job at most: a SELECT ... FOR
 * UPDATE SKIP LOCKED of up to max_jobs claimable rows of the queue, in
 * priority order, through the partial index queue_jobs_claim (queue,
 * priority DESC, due_at, id) (claimers never block each other), then per
 * row a token from IssueToken() (tokens/tokens.hpp: the one allocator) and
 * an UPDATE by primary key.  A row is claimable when it is queued and its
 * run_at has come, or running and its claim is over: due_at is run_at for
 * a queued job and claimed_until for a running one (heartbeat moves both),
 * so an expired claim is claimable at its expiry instant by the same scan.
 * A claimed-again job that had used up its attempts fails for good instead.
 *
 * Claims of ended sessions (queue_wait.hpp): each claiming session holds
 * its claimant lock, and when one ends the shared count of ended claimants
 * moves; the next try of every backend then looks at the claimants of the
 * running jobs (a small partial index), and for each whose lock is free
 * makes its jobs due now, so that the scan above takes them (rows it finds
 * locked by another transaction keep the ended sessions pending: the next
 * claim looks again, and they are due at their expiry anyway).  Rows of other
 * queues made due this way wake their queues' waiters at commit.  Without
 * shared memory (15/16 without the preload) the look is made whenever a
 * try comes up short of max_jobs.
 *
 * Waiting (wait > 0) joins the queue's waiters and tries whenever woken
 * (an enqueue, a retry or a failed attempt queued again, committed; an
 * ended claimant), or when the queue's earliest due_at comes (a run_at, an
 * expiry), or when the wait ends.  Without shared memory it looks again
 * after a backoff (10 ms doubling to 1 s), or at the earliest due_at.
 *
 * PostgreSQL-style code (only trivially destructible locals), run through
 * fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/claim.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/commit.hpp"
#include "pg/lock_tag.hpp"
#include "leases/lease_table.hpp"
#include "observability/stats.hpp"
#include "queue/queue_table.hpp"
#include "queue/queue_wait.hpp"
#include "tokens/tokens.hpp"

extern "C" {
#include "common/int.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
}

namespace fence {

namespace {

/* Most jobs one claim takes. */
constexpr int32 kMaxClaimJobs = 1000;

/* What a claim asks for. */
struct ClaimSpec
{
	Datum          queue; /* text */
	uint64         key;   /* its wait key */
	int64          ttl;   /* microseconds */
	int32          max_jobs;
	Datum          holder; /* text, or (Datum) 0 */
	bool           holder_null;
	int64          claimant; /* this session's claimant key */
	ReturnSetInfo *rsinfo;
};

/*
 * Makes the running jobs of ended claimants due now (see the file's
 * header).  Between QueueBegin and QueueEnd.  Returns false when a row of
 * an ended claimant was locked by another transaction (SKIP LOCKED passed
 * it over): the ended sessions are then not done with, and the next claim
 * looks again (the row is claimable at its claim's expiry in any case).
 */
bool
RescueEndedClaims(const ClaimSpec *spec, TimestampTz now)
{
	bool complete = true;

	Datum      values[2] = {TimestampTzGetDatum(now), (Datum) 0};
	const char nulls[2] = {' ', ' '};
	uint64     n = QueueExec(kQRunningClaims, values, nulls, SPI_OK_SELECT);

	/* the next statements replace SPI_tuptable; this one lives until SPI_finish */
	SPITupleTable *claimants = SPI_tuptable;

	for (uint64 i = 0; i < n; i++)
	{
		bool  isnull;
		int64 claimant =
			DatumGetInt64(SPI_getbinval(claimants->vals[i], claimants->tupdesc, 1, &isnull));

		if (isnull || !ClaimantGone(claimant))
			continue;

		values[0] = Int64GetDatum(claimant);
		values[1] = TimestampTzGetDatum(now);

		uint64 rescued = QueueExec(kQRescue, values, nulls, SPI_OK_UPDATE_RETURNING);

		for (uint64 r = 0; r < rescued; r++)
		{
			uint64 key = QueueKeyOfDatum(QueueValue(r, 1, &isnull));

			if (key != spec->key)
				WakeQueueWaitersAtCommit(key, 1);
		}
		if (rescued > 0)
			ReportJobsRescued(rescued);

		/* rows still running under it (our own rescues are visible to us): skipped, locked */
		values[0] = Int64GetDatum(claimant);
		if (QueueExec(kQClaimantLeft, values, nulls, SPI_OK_SELECT) > 0)
			complete = false;
	}
	return complete;
}

/*
 * One scan and the claims of what it found: up to `limit` jobs, added to
 * the result.  Returns how many rows the scan locked (claimed or failed for
 * good), so that the caller knows whether the queue had more.
 */
uint64
ClaimBatch(QueueCall *call, const ClaimSpec *spec, TimestampTz now, int32 limit, int32 *claimed)
{
	Datum       values[6];
	char        nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool        isnull;
	TimestampTz expires = LeaseExpiresAt(now, spec->ttl);

	values[0] = spec->queue;
	values[1] = TimestampTzGetDatum(now);
	values[2] = Int32GetDatum(limit);
	values[3] = ObjectIdGetDatum(call->caller);
	values[4] = BoolGetDatum(call->admin);

	uint64         n = QueueExec(kQClaimSelect, values, nulls, SPI_OK_SELECT);
	SPITupleTable *found = SPI_tuptable;

	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple tup = found->vals[i];
		TupleDesc desc = found->tupdesc;
		int64     id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		char     *state = SPI_getvalue(tup, desc, 2);
		int32     attempt = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		int32     max_attempts = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		bool      rescue = strcmp(state, "running") == 0;

		if (rescue && attempt >= max_attempts)
		{
			/* the last attempt's claim ended without an outcome: failed for good */
			Datum fv[3] = {
				Int64GetDatum(id), TimestampTzGetDatum(now),
				CStringGetTextDatum(psprintf("attempt %d of %d: the claim ended (expired, or the "
											 "claiming session ended) without complete or fail",
											 attempt, max_attempts))};
			const char fn[3] = {' ', ' ', ' '};

			(void) QueueExec(kQFailExhausted, fv, fn, SPI_OK_UPDATE);
			continue;
		}

		int64 token = IssueToken();

		values[0] = Int64GetDatum(id);
		values[1] = Int64GetDatum(token);
		values[2] = spec->holder;
		nulls[2] = spec->holder_null ? 'n' : ' ';
		values[3] = Int64GetDatum(spec->claimant);
		values[4] = Int32GetDatum(MyProcPid);
		values[5] = TimestampTzGetDatum(expires);
		if (QueueExec(kQClaimUpdate, values, nulls, SPI_OK_UPDATE_RETURNING) != 1)
			elog(ERROR, "job " INT64_FORMAT " changed while locked", id);
		if (rescue)
		{
			bool        tn;
			bool        en;
			int64       old_token = DatumGetInt64(SPI_getbinval(tup, desc, 5, &tn));
			TimestampTz ended = DatumGetTimestampTz(SPI_getbinval(tup, desc, 6, &en));

			ReportJobTakeover(id, tn ? 0 : old_token, token, en ? 0 : now - ended);
		}

		Datum row[4];
		bool  row_nulls[4] = {false, false, false, false};

		row[0] = Int64GetDatum(id);
		row[1] = Int64GetDatum(token);
		row[2] = QueueValue(0, 1, &row_nulls[2]);
		row[3] = QueueValue(0, 2, &row_nulls[3]);
		/* the tuplestore copies the values */
		tuplestore_putvalues(spec->rsinfo->setResult, spec->rsinfo->setDesc, row, row_nulls);
		(*claimed)++;
	}
	return n;
}

/*
 * Claims up to max_jobs - *claimed jobs into the result: scans again while
 * a scan came back full but failed some of its rows for good (rescued last
 * attempts, which leave the claim index), so that such rows never use up
 * the places of runnable jobs behind them.  Returns when the claim is full
 * or a scan found fewer rows than it asked for (the queue has no more).
 */
void
ClaimUpTo(QueueCall *call, const ClaimSpec *spec, TimestampTz now, int32 *claimed)
{
	while (*claimed < spec->max_jobs)
	{
		int32  limit = spec->max_jobs - *claimed;
		uint64 locked = ClaimBatch(call, spec, now, limit, claimed);

		if (locked < (uint64) limit)
			return;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * One try: claims up to max_jobs jobs into the result and returns how many.
 * When it claims none and next_due is not null, sets *next_due to the
 * queue's earliest due_at (0: none).
 */
int32
TryClaim(const ClaimSpec *spec, TimestampTz *next_due)
{
	QueueCall call;
	int32     claimed = 0;

	QueueBegin(&call);

	TimestampTz now = GetCurrentTimestamp();

	if (RescueNeeded(false) && RescueEndedClaims(spec, now))
		RescueDone();
	ClaimUpTo(&call, spec, now, &claimed);

	/* short of jobs: without shared memory, look for ended claimants now */
	if (claimed < spec->max_jobs && RescueNeeded(true))
	{
		if (RescueEndedClaims(spec, now))
			RescueDone();
		ClaimUpTo(&call, spec, now, &claimed);
	}
	if (claimed == 0 && next_due != nullptr)
	{
		Datum values[3] = {spec->queue, ObjectIdGetDatum(call.caller), BoolGetDatum(call.admin)};
		const char nulls[3] = {' ', ' ', ' '};
		bool       isnull = true;

		*next_due = 0;
		if (QueueExec(kQNextDue, values, nulls, SPI_OK_SELECT) == 1)
		{
			Datum d = QueueValue(0, 1, &isnull);

			if (!isnull)
				*next_due = DatumGetTimestampTz(d);
		}
	}
	QueueEnd(&call);
	return claimed;
}

/*
 * now + wait; a wait whose end is past the last timestamp (year 294276)
 * waits until then, without an error.  A wait longer than int64
 * microseconds (about 292,271 years) never gets here: GetDurationArg
 * refuses it with 22023 "argument "wait" is too large" (docs/queue.md).
 */
TimestampTz
WaitDeadline(TimestampTz now, int64 wait)
{
	TimestampTz result;

	if (pg_add_s64_overflow(now, wait, &result) || !IS_VALID_TIMESTAMP(result))
		return END_TIMESTAMP - 1;
	return result;
}

/*
 * The loop of WaitAndClaim, outside its PG_TRY so that no variable of the
 * frame that calls setjmp changes after it (gcc's -Wclobbered).  Sets
 * *waited once it sleeps.
 */
pg_noinline int32
WaitLoop(const ClaimSpec *spec, TimestampTz deadline, int slot, volatile bool *waited)
{
	int64 backoff = 10 * 1000; /* us: without waiters' slots, or rows locked by a claim in flight */

	for (;;)
	{
		ResetLatch(MyLatch);
		QueueWaiterLook(slot);

		TimestampTz next_due = 0;
		int32       claimed = TryClaim(spec, &next_due);

		if (claimed > 0)
			return claimed;

		TimestampTz now = GetCurrentTimestamp();

		if (now >= deadline)
			return 0;

		TimestampTz wake = deadline;

		if (next_due != 0 && next_due <= now)
		{
			/* due rows locked by another claim in flight: look again shortly */
			wake = Min(wake, now + backoff);
			backoff = Min(backoff * 2, (int64) USECS_PER_SEC);
		}
		else
		{
			if (next_due != 0)
				wake = Min(wake, next_due);
			/* without waiters' slots, or ended claimants' rows found locked: poll */
			if (slot < 0 || RescueNeeded(false))
			{
				wake = Min(wake, now + backoff);
				backoff = Min(backoff * 2, (int64) USECS_PER_SEC);
			}
			else
				backoff = 10 * 1000;
		}

		/* at most an hour at a time (WaitLatch's timeout is an int inside) */
		long ms = (long) Min((Max(wake - now, (int64) 0) + 999) / 1000, (int64) 3600 * 1000);

		*waited = true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Max(ms, 1L),
						 QueueWaitEvent());
		CHECK_FOR_INTERRUPTS();
	}
}

int32
WaitAndClaim(const ClaimSpec *spec, int64 wait)
{
	/* everything the PG_TRY block reads is set before it and never changed */
	const TimestampTz      started = GetCurrentTimestamp();
	const TimestampTz      deadline = WaitDeadline(started, wait);
	const volatile int     slot = JoinQueueWaiters(spec->key);
	volatile int32         result = 0;
	volatile bool          waited = false;
	const ClaimSpec *const sp = spec;

	PG_TRY();
	{
		result = WaitLoop(sp, deadline, slot, &waited);
	}
	PG_FINALLY();
	{
		LeaveQueueWaiters(slot);
		if (waited)
			StatsCountWait(GetCurrentTimestamp() - started);
	}
	PG_END_TRY();
	return result;
}

Datum
Claim(FunctionCallInfo fcinfo)
{
	NameArg queue = GetNameArg(fcinfo, 0, "queue");
	int64   ttl = GetDurationArg(fcinfo, 1, "ttl", false);

	(void) LeaseExpiresAt(GetCurrentTimestamp(), ttl); /* the cap, before anything */
	RequireArg(fcinfo, 2, "max_jobs");

	int32 max_jobs = PG_GETARG_INT32(2);

	if (max_jobs < 1 || max_jobs > kMaxClaimJobs)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"max_jobs\" must be between 1 and %d", kMaxClaimJobs),
						errdetail("The value given was %d.", max_jobs)));

	int64 wait = GetDurationArg(fcinfo, 3, "wait", true);

	CheckHolderArg(fcinfo, 4, "holder");
	CheckQueueWritable("claim jobs");

	ClaimSpec spec;
	WalMark   before = WalMarkNow();

	spec.claimant = MyClaimantKey(); /* may raise: before anything is held */
	InitMaterializedSRF(fcinfo, 0);
	spec.queue = PG_GETARG_DATUM(0);
	spec.key = QueueWaitKey(NameHash(queue));
	spec.ttl = ttl;
	spec.max_jobs = max_jobs;
	spec.holder_null = PG_ARGISNULL(4);
	spec.holder = spec.holder_null ? (Datum) 0 : PG_GETARG_DATUM(4);
	spec.rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	if (wait > 0)
		(void) WaitAndClaim(&spec, wait);
	else
		(void) TryClaim(&spec, nullptr);

	/*
	 * A transaction that did nothing but this claim commits without waiting
	 * for its commit record's flush (pg/commit.hpp; docs/queue.md,
	 * "Durability").  What the claim wrote may be lost in a crash, and that
	 * is safe: a claimed job goes back to what it was (queued, or running
	 * under the earlier claim: rescued again, since no session survives a
	 * crash), a job failed for good or made due is found so again by the
	 * next claim, and the tokens drawn are durable on their own (IssueToken
	 * flushes them), so the next claim's token is still larger than the lost
	 * one's.  Whoever relies on the claim in a later durable commit (the
	 * job's effects, complete, fail) flushes the WAL up to that commit, the
	 * claim's commit record included.  Anything else the transaction wrote,
	 * before this call or after it (effects and complete in the claim's own
	 * transaction), commits as the caller configured.
	 */
	AllowAsyncCommitSince(before);
	return (Datum) 0;
}

} /* namespace */

} /* namespace fence */

/*
 * fence.claim(queue text, ttl interval, max_jobs integer DEFAULT 1,
 *			   wait interval DEFAULT NULL, holder text DEFAULT NULL)
 *	 RETURNS TABLE(job_id bigint, token bigint, attempt integer, payload jsonb)
 *	 Claims up to max_jobs runnable jobs of queue (SKIP LOCKED), each with
 *	 a new token and a lease of ttl; with wait, waits in the server for one.
 *	 Locks: row locks on the claimed jobs, to transaction end; this
 *	 session's claimant lock (advisory, class 0x6677, session-level).
 *	 Errors: 22023, 25006, 57014.
 */
FENCE_SQL_FUNCTION(fence_claim)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Claim(fc); });
}
