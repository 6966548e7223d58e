/*-------------------------------------------------------------------------
 *
 * stats.hpp
 *	  Counters for fence.stats() and the registry of held locks behind the
 *	  view fence.locks, as the other wings use them: counting
 *	  (counters.cpp), recording grants and releases (lock_registry.cpp), and
 *	  the LOG signals (reports.cpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/stats.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/*
 * The counters of fence.stats(), in its column order (observability.cpp
 * maps them to columns).  Every one only ever grows until
 * fence.stats_reset() or a server restart (shared memory).
 */
enum class StatKind
{
	kAcquiredSession,  /* grants of session locks, shared ones and re-entrant ones included */
	kAcquiredXact,     /* grants of transaction locks (re-entrant ones included) */
	kAcquiredLease,    /* lease grants (takeovers included) */
	kBusy,             /* try_* / lease_acquire that found it held */
	kTimeouts,         /* lock / xact_lock that timed out */
	kWaits,            /* lock / xact_lock / lease_acquire(wait) that found it held and waited */
	kWaitTimeUsecs,    /* total time those waits took, in microseconds */
	kMaxWaitUsecs,     /* the longest of them (a maximum, not a sum) */
	kRenewals,         /* lease_renew that returned true */
	kReleases,         /* unlock / lease_release true, names freed by unlock_all */
	kLeaseExpirations, /* lease_renew / lease_release by a holder too late */
	kLeaseTakeovers,   /* expired leases taken over */
	kStaleWrites,      /* writes rejected for a stale token (FN001 and friends) */
	kMissingTokens,    /* guarded writes that presented no token (FN003) */
	kCount
};

/* Count one event (no-op without shared memory). */
void StatsCount(StatKind kind);

/*
 * Count a rejected write (FN001, FN003) just before its error is raised:
 * attaches this backend to the shared block first, so that on 17+ without
 * the preload a new connection that has not used the block yet still
 * counts it.  May raise ERROR only where attaching does (the named DSM
 * segment cannot be created), which replaces the error about to be raised.
 */
void StatsCountRejected(StatKind kind);

/* Count n events at once (unlock_all). */
void StatsCountN(StatKind kind, uint64 n);

/*
 * A wait for a lock ended (granted or not) after usecs microseconds: counts
 * it in kWaits, kWaitTimeUsecs and kMaxWaitUsecs.  Never raises.
 */
void StatsCountWait(int64 usecs);

/*
 * Zero this database's counters and set its stats_reset time to now
 * (fence.stats_reset()).  Returns false without shared memory.
 */
bool StatsReset();

/*
 * Record that this backend now holds name (first hold) under token;
 * kind is 's' (session), 'x' (transaction) or 'S' (shared session hold;
 * fence.locks shows it as "shared").
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
 * fence.complete was refused (FN001) because its token is not the job's
 * current claim's: counts it as a stale write and writes the LOG line
 *	 pg_fence: stale completion rejected: job <id> token <presented>, current token <current> (<state>)
 */
void ReportStaleCompletion(int64 job_id, int64 presented, int64 current, const char *state);

/*
 * fence.claim took a running job whose claim had ended (expired, or its
 * claiming session ended) with a new token: writes the LOG line
 *	 pg_fence: job claim taken over: job <id> token <old> -> <new>, claim ended <n> ms ago
 */
void ReportJobTakeover(int64 job_id, int64 old_token, int64 new_token, int64 ended_usecs);

/*
 * A claim made the running jobs of a claimant whose session ended
 * claimable at once: writes the LOG line
 *	 pg_fence: job claims rescued after the claimant's session ended: <n> job(s)
 */
void ReportJobsRescued(uint64 jobs);

/*
 * A lease that had expired was taken over: counts it and writes the LOG line
 *	 pg_fence: lease taken over after expiry: "<name>" token <old> -> <new>, expired <n> ms ago
 */
void ReportLeaseTakeover(const char *name, int64 old_token, int64 new_token, int64 expired_usecs);

/*
 * An idempotency key whose owner's lease had expired was taken over
 * (src/server/once/once.cpp): counts it in lease_takeovers and writes the LOG line
 *	 pg_fence: idempotency key taken over after expiry: "<key>" token <old> -> <new>, expired <n> ms ago
 * (the key quoted up to 256 bytes, then "...").
 */
void ReportOnceTakeover(const char *key, int key_len, int64 old_token, int64 new_token,
						int64 expired_usecs);

} /* namespace fence */
