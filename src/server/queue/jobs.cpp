/*-------------------------------------------------------------------------
 *
 * jobs.cpp
 *	  Putting jobs in and taking them out: fence.enqueue, the operator
 *	  actions fence.cancel and fence.retry, fence.queue_purge, and
 *	  fence.queue_stats.
 *
 * enqueue inserts the row in the caller's transaction (a rollback takes it
 * back: it never runs) and wakes waiting claimers of the queue at commit
 * (queue_wait.hpp).  A unique_key deduplicates through the partial unique
 * index on (queue, unique_key) of unfinished jobs: INSERT ... ON CONFLICT
 * DO NOTHING waits for a concurrent insert of the same key to end, so two
 * enqueues racing for one key get one job; the loser reads the winner's id
 * (again if that job finished in between).
 *
 * PostgreSQL-style code (only trivially destructible locals), run through
 * fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/jobs.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "queue/queue_table.hpp"
#include "queue/queue_wait.hpp"

extern "C" {
#include "common/int.h"
#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

namespace fence {

namespace {

/* Default of queue_purge's max_jobs (also in the SQL declaration). */
constexpr int32 kDefaultPurgeJobs = 10000;

int32
GetInt32Arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	RequireArg(fcinfo, argno, argname);
	return PG_GETARG_INT32(argno);
}

Datum
Enqueue(FunctionCallInfo fcinfo)
{
	(void) GetNameArg(fcinfo, 0, "queue");
	RequireArg(fcinfo, 1, "payload");

	TimestampTz now = GetCurrentTimestamp();
	TimestampTz run_at = PG_ARGISNULL(2) ? now : PG_GETARG_TIMESTAMPTZ(2);

	if (TIMESTAMP_NOT_FINITE(run_at))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"run_at\" must be finite")));

	int32 priority = GetInt32Arg(fcinfo, 3, "priority");
	int32 max_attempts = GetInt32Arg(fcinfo, 4, "max_attempts");

	if (max_attempts < 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"max_attempts\" must be at least 1"),
						errdetail("The value given was %d.", max_attempts)));

	bool has_key = !PG_ARGISNULL(5);

	if (has_key)
		(void) GetNameArg(fcinfo, 5, "unique_key");
	CheckQueueWritable("enqueue a job");

	QueueCall  call;
	Datum      values[8];
	char       nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int64      id = 0;
	bool       inserted = false;
	const char key_nulls[2] = {' ', ' '};

	QueueBegin(&call);
	values[0] = PG_GETARG_DATUM(0);
	values[1] = Int32GetDatum(priority);
	values[2] = TimestampTzGetDatum(run_at);
	values[3] = Int32GetDatum(max_attempts);
	values[4] = has_key ? PG_GETARG_DATUM(5) : (Datum) 0;
	nulls[4] = has_key ? ' ' : 'n';
	values[5] = PG_GETARG_DATUM(1);
	values[6] = ObjectIdGetDatum(call.caller);
	values[7] = TimestampTzGetDatum(now);

	for (int tries = 0; id == 0; tries++)
	{
		bool isnull;

		if (QueueExec(kQInsert, values, nulls, SPI_OK_INSERT_RETURNING) == 1)
		{
			id = DatumGetInt64(QueueValue(0, 1, &isnull));
			inserted = true;
			break;
		}
		/* a unique_key conflict: the unfinished job's id (it may have finished meanwhile) */
		Datum kv[2] = {values[0], values[4]};

		if (QueueExec(kQUniqueId, kv, key_nulls, SPI_OK_SELECT) == 1)
			id = DatumGetInt64(QueueValue(0, 1, &isnull));
		if (tries > 100)
			elog(ERROR, "could not enqueue a job of unique_key conflicting with a finishing job");
		CHECK_FOR_INTERRUPTS();
	}
	QueueEnd(&call);
	if (inserted)
		WakeQueueWaitersAtCommit(QueueKeyOfDatum(PG_GETARG_DATUM(0)), 1);
	PG_RETURN_INT64(id);
}

/* cancel (retry false) or retry: ($1 id, $2 caller, $3 admin, $4 now) */
Datum
OperatorAction(FunctionCallInfo fcinfo, bool retry)
{
	int64 id = GetInt64Arg(fcinfo, 0, "job_id");

	CheckQueueWritable(retry ? "retry a job" : "cancel a job");

	QueueCall  call;
	Datum      values[4];
	const char nulls[4] = {' ', ' ', ' ', ' '};
	bool       isnull;

	QueueBegin(&call);
	values[0] = Int64GetDatum(id);
	values[1] = ObjectIdGetDatum(call.caller);
	values[2] = BoolGetDatum(call.admin);
	values[3] = TimestampTzGetDatum(GetCurrentTimestamp());

	bool done = QueueExec(retry ? kQRetry : kQCancel, values, nulls, SPI_OK_UPDATE_RETURNING) == 1;
	uint64 key = 0;

	if (done)
		key = QueueKeyOfDatum(QueueValue(0, 1, &isnull));
	else if (QueueExec(kQLookup, values, nulls, SPI_OK_SELECT) == 0)
	{
		QueueEnd(&call);
		RaiseNoSuchJob(id);
	}
	QueueEnd(&call);
	if (done && retry)
		WakeQueueWaitersAtCommit(key, 1);
	PG_RETURN_BOOL(done);
}

Datum
Cancel(FunctionCallInfo fcinfo)
{
	return OperatorAction(fcinfo, false);
}

Datum
Retry(FunctionCallInfo fcinfo)
{
	return OperatorAction(fcinfo, true);
}

Datum
QueuePurge(FunctionCallInfo fcinfo)
{
	int64 older_than = GetDurationArg(fcinfo, 0, "older_than", true);
	int32 max_jobs = kDefaultPurgeJobs;

	if (PG_NARGS() > 1)
	{
		max_jobs = GetInt32Arg(fcinfo, 1, "max_jobs");
		if (max_jobs < 1)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("argument \"max_jobs\" must be greater than zero"),
							errdetail("The value given was %d.", max_jobs)));
	}
	CheckQueueWritable("purge jobs");

	QueueCall call;

	QueueBegin(&call);
	if (!call.admin)
	{
		QueueEnd(&call);
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						errmsg("permission denied for function queue_purge"),
						errdetail("Only superusers and members of fence_admin may purge jobs.")));
	}
	if (older_than < 0)
		older_than = QueueRetention();

	TimestampTz now = GetCurrentTimestamp();
	TimestampTz cutoff;

	if (pg_sub_s64_overflow(now, older_than, &cutoff) || !IS_VALID_TIMESTAMP(cutoff))
	{
		QueueEnd(&call);
		PG_RETURN_INT64(0);
	}

	Datum      values[2] = {TimestampTzGetDatum(cutoff), Int32GetDatum(max_jobs)};
	const char nulls[2] = {' ', ' '};
	uint64     n = QueueExec(kQPurge, values, nulls, SPI_OK_DELETE);

	QueueEnd(&call);
	PG_RETURN_INT64((int64) n);
}

/*
 * Counts of every queue's jobs the caller may see; every job's for
 * superusers, members of fence_admin and roles with the privileges of
 * pg_read_all_stats (pg_monitor's members: the exporter's role), as
 * pg_stat_activity shows every session to them.  Counts only: the jobs
 * themselves (payloads, results) stay in fence.jobs, under its rules.
 */
Datum
QueueStats(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	QueueCall      call;

	InitMaterializedSRF(fcinfo, 0);
	QueueBegin(&call);

	bool       every = call.admin || has_privs_of_role(call.caller, ROLE_PG_READ_ALL_STATS);
	Datum      values[3] = {ObjectIdGetDatum(call.caller), BoolGetDatum(every),
							TimestampTzGetDatum(GetCurrentTimestamp())};
	const char nulls[3] = {' ', ' ', ' '};
	uint64     n = QueueExec(kQStats, values, nulls, SPI_OK_SELECT);

	for (uint64 i = 0; i < n; i++)
	{
		Datum row[8];
		bool  row_nulls[8];

		for (int c = 0; c < 8; c++)
			row[c] = QueueValue(i, c + 1, &row_nulls[c]);
		/* the tuplestore copies the values */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, row_nulls);
	}
	QueueEnd(&call);
	return (Datum) 0;
}

} /* namespace */

} /* namespace fence */

/*
 * fence.queue_stats() RETURNS TABLE(queue text, runnable bigint, scheduled
 *		bigint, running bigint, completed bigint, failed bigint, cancelled
 *		bigint, oldest_runnable_age interval)
 *	 Per queue, counts of the jobs the caller may see (every job for
 *	 superusers, fence_admin and pg_read_all_stats).  Takes no lock.
 */
FENCE_SQL_FUNCTION(fence_queue_stats)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::QueueStats(fc); });
}

/*
 * fence.enqueue(queue text, payload jsonb, run_at timestamptz DEFAULT now(),
 *				 priority integer DEFAULT 0, max_attempts integer DEFAULT 25,
 *				 unique_key text DEFAULT NULL) RETURNS bigint
 *	 Inserts a queued job owned by the caller and returns its id (or the id
 *	 of the unfinished job of the same unique_key); wakes the queue's
 *	 waiters at commit.  Errors: 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_enqueue)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Enqueue(fc); });
}

/*
 * fence.cancel(job_id bigint) RETURNS boolean
 *	 true iff the job was queued or running and is now cancelled.
 *	 Errors: P0002 no such job (visible to the caller), 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_cancel)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Cancel(fc); });
}

/*
 * fence.retry(job_id bigint) RETURNS boolean
 *	 true iff the job was failed, cancelled or queued and is now runnable.
 *	 Errors: P0002, 23505 (unique_key taken), 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_retry)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Retry(fc); });
}

/*
 * fence.queue_purge(older_than interval DEFAULT NULL, max_jobs integer
 *					 DEFAULT 10000) RETURNS bigint
 *	 Deletes finished jobs older than older_than (NULL: fence.queue_retention).
 *	 Errors: 42501 not superuser or fence_admin, 22023, 25006.
 */
FENCE_SQL_FUNCTION(fence_queue_purge)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::QueuePurge(fc); });
}
