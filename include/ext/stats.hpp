/*-------------------------------------------------------------------------
 *
 * stats.hpp
 *	  Counters for fence.stats() and the registry of held locks behind the
 *	  view fence.locks.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/stats.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "ext/pg.hpp"

namespace fence {

enum class StatKind
{
	kAcquired,       /* grants of locks and leases */
	kBusy,           /* try_* / lease_acquire that found it held */
	kTimeouts,       /* lock / xact_lock that timed out */
	kLeaseTakeovers, /* expired leases taken over */
	kStaleWrites,    /* writes rejected for a stale token */
	kCount
};

/* Count one event (no-op without shared memory). */
void StatsCount(StatKind kind);

/*
 * Record that this backend now holds name (first hold) under token;
 * kind is 's' (session) or 'x' (transaction).
 */
void StatsRecordGrant(uint64 key, const char *name, int name_len, int64 token, char kind,
					  TimestampTz granted_at);

/* Record that this backend no longer holds the name with this key. */
void StatsRecordRelease(uint64 key);

/*
 * A write was rejected (or not applied) because its fencing token was stale:
 * counts it and writes the LOG line
 *	 pg_fence: stale write rejected: <where> <resource>: token <presented>, current fence <current>
 * where is "fenced_update", "guard" or "advance"; resource names the table
 * row or resource (quoted up to 256 bytes, then "...").  These lines are
 * the signal that a holder outlived its
 * lock: timing assumptions are wrong somewhere.
 */
void ReportStaleWrite(const char *where, const char *resource, int64 presented, int64 current);

/*
 * A lease that had expired was taken over: counts it and writes the LOG line
 *	 pg_fence: lease taken over after expiry: "<name>" token <old> -> <new>, expired <n> ms ago
 */
void ReportLeaseTakeover(const char *name, int64 old_token, int64 new_token, int64 expired_usecs);

} /* namespace fence */
