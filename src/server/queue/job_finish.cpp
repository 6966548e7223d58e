/*-------------------------------------------------------------------------
 *
 * job_finish.cpp
 *	  The claimant's calls: fence.heartbeat, fence.complete, fence.fail.
 *
 * Each is one UPDATE that applies iff the job is running under the token
 * presented (and the caller may act on it): the token column always holds
 * the current claim's token, so a rescued claim's worker matches no row.
 * An expired claim that nobody has claimed again still matches: nobody
 * else ran the job (SPEC, fence.complete).  When the UPDATE matches
 * nothing, one lookup tells an unknown job (P0002) from a superseded token:
 * heartbeat and fail return false, complete raises FN001 (counted and
 * logged), so that the job's effects written in the caller's transaction
 * roll back with it (docs/guarantees.md, guarantee 13).  A second complete
 * with the token that completed the job returns false instead: the caller
 * is the job's claimant repeating itself, and nothing it wrote is stale.
 *
 * PostgreSQL-style code (only trivially destructible locals), run through
 * fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/job_finish.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/fence_errors.hpp"
#include "leases/lease_table.hpp"
#include "observability/stats.hpp"
#include "queue/queue_table.hpp"
#include "queue/queue_wait.hpp"

extern "C" {
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace fence {

namespace {

/*
 * After an UPDATE that matched nothing: raises P0002 when the caller may
 * act on no job `id`; else returns its state (palloc'd in the caller's
 * context) and current token (0 if none).
 */
char *
LookUpJob(QueueCall *call, int64 id, int64 *token)
{
	Datum      values[3] = {Int64GetDatum(id), ObjectIdGetDatum(call->caller),
							BoolGetDatum(call->admin)};
	const char nulls[3] = {' ', ' ', ' '};
	bool       isnull;

	if (QueueExec(kQLookup, values, nulls, SPI_OK_SELECT) == 0)
	{
		QueueEnd(call);
		RaiseNoSuchJob(id);
	}

	char *state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	Datum t = QueueValue(0, 2, &isnull);

	*token = isnull ? 0 : DatumGetInt64(t);
	return state;
}

Datum
Heartbeat(FunctionCallInfo fcinfo)
{
	int64 id = GetInt64Arg(fcinfo, 0, "job_id");
	int64 token = GetInt64Arg(fcinfo, 1, "token");
	int64 ttl = GetDurationArg(fcinfo, 2, "ttl", false);

	(void) LeaseExpiresAt(GetCurrentTimestamp(), ttl); /* the cap, before anything */
	CheckQueueWritable("heartbeat a job");

	QueueCall call;

	QueueBegin(&call);

	Datum      values[5];
	const char nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(id);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(call.caller);
	values[3] = BoolGetDatum(call.admin);
	values[4] = TimestampTzGetDatum(LeaseExpiresAt(GetCurrentTimestamp(), ttl));

	bool extended = QueueExec(kQHeartbeat, values, nulls, SPI_OK_UPDATE) == 1;

	if (!extended)
	{
		int64 current;

		(void) LookUpJob(&call, id, &current);
	}
	QueueEnd(&call);
	PG_RETURN_BOOL(extended);
}

Datum
Complete(FunctionCallInfo fcinfo)
{
	int64 id = GetInt64Arg(fcinfo, 0, "job_id");
	int64 token = GetInt64Arg(fcinfo, 1, "token");

	CheckQueueWritable("complete a job");

	QueueCall call;

	QueueBegin(&call);

	Datum values[6];
	char  nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(id);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(call.caller);
	values[3] = BoolGetDatum(call.admin);
	values[4] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[5] = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? PG_GETARG_DATUM(2) : (Datum) 0;
	nulls[5] = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? ' ' : 'n';

	if (QueueExec(kQComplete, values, nulls, SPI_OK_UPDATE) == 1)
	{
		QueueEnd(&call);
		PG_RETURN_BOOL(true);
	}

	int64 current;
	char *state = LookUpJob(&call, id, &current);

	/* SPI_getvalue's copy lives in SPI's context: keep one past SPI_finish */
	state = MemoryContextStrdup(CurTransactionContext, state);
	QueueEnd(&call);
	if (current == token && strcmp(state, "completed") == 0)
		PG_RETURN_BOOL(false); /* completed already, by this very claim */
	ReportStaleCompletion(id, token, current, state);
	RaiseStaleCompletion(id, token, current, state);
}

Datum
Fail(FunctionCallInfo fcinfo)
{
	int64 id = GetInt64Arg(fcinfo, 0, "job_id");
	int64 token = GetInt64Arg(fcinfo, 1, "token");
	bool  has_retry_at = PG_NARGS() > 3 && !PG_ARGISNULL(3);

	if (has_retry_at && TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(3)))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"retry_at\" must be finite")));
	CheckQueueWritable("fail a job");

	QueueCall call;

	QueueBegin(&call);

	Datum values[8];
	char  nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool  isnull;

	values[0] = Int64GetDatum(id);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(call.caller);
	values[3] = BoolGetDatum(call.admin);
	values[4] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[5] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	nulls[5] = PG_ARGISNULL(2) ? 'n' : ' ';
	values[6] = has_retry_at ? PG_GETARG_DATUM(3) : (Datum) 0;
	nulls[6] = has_retry_at ? ' ' : 'n';
	/* jitter: the backoff is 2^attempt s times a factor in [1, 1.25) */
	values[7] = Float8GetDatum(1.0 + pg_prng_double(&pg_global_prng_state) / 4.0);

	bool   failed = QueueExec(kQFail, values, nulls, SPI_OK_UPDATE_RETURNING) == 1;
	bool   requeued = false;
	uint64 key = 0;

	if (failed)
	{
		char *state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		requeued = strcmp(state, "queued") == 0;
		key = QueueKeyOfDatum(QueueValue(0, 2, &isnull));
	}
	else
	{
		int64 current;

		(void) LookUpJob(&call, id, &current);
	}
	QueueEnd(&call);
	if (requeued)
		WakeQueueWaitersAtCommit(key, 1);
	PG_RETURN_BOOL(failed);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.heartbeat(job_id bigint, token bigint, ttl interval) RETURNS boolean
 *	 true, and the claim now expires ttl from now, iff the job is running
 *	 under token; false otherwise.  Errors: P0002, 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_heartbeat)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Heartbeat(fc); });
}

/*
 * fence.complete(job_id bigint, token bigint, result jsonb DEFAULT NULL)
 *	 RETURNS boolean
 *	 true iff the job was running under token and is now completed; false
 *	 if that token had completed it already.  Errors: FN001 (a superseded
 *	 token: counted, logged), P0002, 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_complete)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Complete(fc); });
}

/*
 * fence.fail(job_id bigint, token bigint, error text, retry_at timestamptz
 *			  DEFAULT NULL) RETURNS boolean
 *	 true iff the job was running under token: queued again (retry_at, or
 *	 the backoff) with attempts left, failed for good otherwise.
 *	 Errors: P0002, 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_fail)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Fail(fc); });
}
