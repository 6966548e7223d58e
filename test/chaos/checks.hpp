/*-------------------------------------------------------------------------
 *
 * checks.hpp
 *	  The properties the chaos checker proves over a recorded run
 *	  (checks.cpp), each one a test that passes or fails with examples.
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
	std::vector<LeaseAuditRow> lease_audit; /* lease changes */
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

/* Lease holdings per (name, token), in server time. */
struct Holding
{
	std::string name, worker;
	int64_t     token = 0, start = -1, end = -1;
	bool        audited = false; /* known to the final primary */
	bool        client = false;  /* seen granted by a client */
};

std::vector<Holding> LeaseHoldings(const Run &run, bool with_client_view);

std::vector<CheckResult> CheckAll(const Run &run);

} // namespace chaos

#endif /* PG_FENCE_CHAOS_CHECKS_HPP */
