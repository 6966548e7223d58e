/*-------------------------------------------------------------------------
 *
 * checks.hpp
 *	  The properties the chaos checker proves over a recorded run
 *	  (checks.cpp, holdings.cpp), each one a test that passes or fails with
 *	  examples.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/checks.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_CHECKS_HPP
#define PG_FENCE_CHAOS_CHECKS_HPP

#include "history.hpp"

#include <string>
#include <vector>

namespace chaos {

/* Everything a run left: the clients' view and the final primary's audit. */
struct Run
{
	std::vector<Event>         events;      /* workers' and nemesis' */
	std::vector<AuditRow>      audit;       /* applied writes */
	std::vector<LeaseAuditRow> lease_audit; /* lease, permit and leadership changes */
	std::vector<HoldRow>       holds;       /* connection-bound locks, held */
	std::vector<JobRow>        jobs;        /* the queue's jobs after the drain */
	std::vector<EffectRow>     job_effects; /* applied job effects */
	std::vector<KeyRow>        keys;        /* idempotency keys at the end */
	std::vector<EffectRow>     key_effects; /* applied key effects */
	/*
	 * Asynchronous replication: a failover may lose commits the clients
	 * saw (a write, a lease grant or renewal), which is not a pg_fence
	 * guarantee.  The lease check then covers the surviving timeline's
	 * holdings, and lost acknowledged writes are counted, not failed.
	 */
	bool async = false;
	/* Nemesis faults that must appear in the history (pause, kill...). */
	std::vector<std::string> expected_faults;
};

struct CheckResult
{
	std::string              name;
	bool                     passed = true;
	std::string              summary;  /* what was checked, e.g. "1234 grants" */
	std::vector<std::string> problems; /* examples, the first few */
	size_t                   problem_count = 0;
};

/* A holding of one (name, token): a lease-table row or a connection-bound lock. */
struct Holding
{
	std::string name, worker;
	std::string kind; /* lease, election, semaphore; session, shared, xact */
	int64_t     token = 0, start = -1, end = -1;
	int64_t     permits = -1;    /* a semaphore's: asked for by its client, else the audit's */
	bool        audited = false; /* known to the final primary */
	bool        client = false;  /* seen granted (and, if connection-bound, released) by a client */
};

/*
 * Rows of fence.leases per (name, token), in server time: from the
 * server's granted_at to the release (the server's clock at the DELETE)
 * or the latest expiry; with_client_view adds what clients saw (grants
 * and renewals a failover may have lost).
 */
std::vector<Holding> LeaseHoldings(const Run &run, bool with_client_view);

/*
 * Connection-bound locks per (name, token): a span that lies inside the
 * real holding, from the rows the holding backend wrote (chaos.holds) and
 * from a client's grant (complete) to its release (invoke) when the
 * release said the lock was still held.
 */
std::vector<Holding> LockHoldings(const Run &run);

std::vector<CheckResult> CheckAll(const Run &run);

/* The checks of holdings.cpp. */
CheckResult CheckLeasesExclusive(const Run &run);
CheckResult CheckLocksExclusive(const Run &run);
CheckResult CheckSemaphores(const Run &run);
CheckResult CheckElections(const Run &run);

/* The checks of queue.cpp: the job queue and idempotency keys. */
CheckResult CheckJobEffectsOnce(const Run &run);
CheckResult CheckNoStaleCompletion(const Run &run);
CheckResult CheckNoJobLost(const Run &run);
CheckResult CheckEnqueuesDurable(const Run &run);
CheckResult CheckKeysFinishedOnce(const Run &run);
CheckResult CheckKeyEffects(const Run &run);

/* Shared by the checks: one problem found (the first few kept), a time. */
void        Problem(CheckResult &r, const std::string &what);
std::string Ms(int64_t us);

} // namespace chaos

#endif /* PG_FENCE_CHAOS_CHECKS_HPP */
