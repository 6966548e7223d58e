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

}							/* namespace fence */
