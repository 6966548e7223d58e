/*-------------------------------------------------------------------------
 *
 * reports.cpp
 *	  The LOG signals of stale writes, stale completions of jobs, lease and
 *	  idempotency-key takeovers (stats.hpp), each also counted in
 *	  fence.stats(), and of job claims taken over.  The lines are written
 *	  with or without shared memory.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/reports.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "observability/stats.hpp"

#include "pg/messages.hpp"

namespace fence {

void
ReportStaleWrite(const char *where, const char *resource, int64 presented, int64 current)
{
	StatsCountRejected(StatKind::kStaleWrites);
	ereport(LOG, (errmsg("pg_fence: stale write rejected: %s %s: token " INT64_FORMAT
						 ", current fence " INT64_FORMAT,
						 where, ClipForMessage(resource), presented, current),
				  errhidestmt(true)));
}

void
ReportStaleCompletion(int64 job_id, int64 presented, int64 current, const char *state)
{
	StatsCountRejected(StatKind::kStaleWrites);
	ereport(LOG, (errmsg("pg_fence: stale completion rejected: job " INT64_FORMAT
						 " token " INT64_FORMAT ", current token " INT64_FORMAT " (%s)",
						 job_id, presented, current, state),
				  errhidestmt(true)));
}

void
ReportJobTakeover(int64 job_id, int64 old_token, int64 new_token, int64 ended_usecs)
{
	ereport(LOG, (errmsg("pg_fence: job claim taken over: job " INT64_FORMAT " token " INT64_FORMAT
						 " -> " INT64_FORMAT ", claim ended " INT64_FORMAT " ms ago",
						 job_id, old_token, new_token, ended_usecs / 1000),
				  errhidestmt(true)));
}

void
ReportJobsRescued(uint64 jobs)
{
	ereport(
		LOG,
		(errmsg("pg_fence: job claims rescued after the claimant's session ended: " UINT64_FORMAT
				" job(s)",
				jobs),
		 errhidestmt(true)));
}

void
ReportLeaseTakeover(const char *name, int64 old_token, int64 new_token, int64 expired_usecs)
{
	StatsCount(StatKind::kLeaseTakeovers);
	ereport(LOG, (errmsg("pg_fence: lease taken over after expiry: \"%s\" token " INT64_FORMAT
						 " -> " INT64_FORMAT ", expired " INT64_FORMAT " ms ago",
						 name, old_token, new_token, expired_usecs / 1000),
				  errhidestmt(true)));
}

void
ReportOnceTakeover(const char *key, int key_len, int64 old_token, int64 new_token,
				   int64 expired_usecs)
{
	StatsCount(StatKind::kLeaseTakeovers);
	ereport(LOG,
			(errmsg("pg_fence: idempotency key taken over after expiry: \"%s\" token " INT64_FORMAT
					" -> " INT64_FORMAT ", expired " INT64_FORMAT " ms ago",
					ClipForMessage(key, key_len), old_token, new_token, expired_usecs / 1000),
			 errhidestmt(true)));
}

} /* namespace fence */
