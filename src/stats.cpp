/*-------------------------------------------------------------------------
 *
 * stats.cpp
 *	  Counters and held-lock registry (placeholder until shared memory
 *	  support lands: every call is a no-op).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/stats.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/stats.hpp"

namespace fence {

void
StatsCount(StatKind kind)
{
}

void
StatsRecordGrant(uint64 key, const char *name, int name_len, int64 token, char kind,
				 TimestampTz granted_at)
{
}

void
StatsRecordRelease(uint64 key)
{
}

void
ReportStaleWrite(const char *where, const char *resource, int64 presented, int64 current)
{
	StatsCount(StatKind::kStaleWrites);
	ereport(LOG,
			(errmsg("pg_fence: stale write rejected: %s %s: token " INT64_FORMAT " < current " INT64_FORMAT,
					where, resource, presented, current),
			 errhidestmt(true)));
}

void
ReportLeaseTakeover(const char *name, int64 old_token, int64 new_token, int64 expired_usecs)
{
	StatsCount(StatKind::kLeaseTakeovers);
	ereport(LOG,
			(errmsg("pg_fence: lease taken over after expiry: \"%s\" token " INT64_FORMAT " -> " INT64_FORMAT ", expired " INT64_FORMAT " ms ago",
					name, old_token, new_token, expired_usecs / 1000),
			 errhidestmt(true)));
}

}							/* namespace fence */
