/*-------------------------------------------------------------------------
 *
 * checks.cpp
 *	  The properties the chaos checker proves.  Each is one test:
 *
 *   history recorded      every lock kind was granted, writes applied and
 *                         every fault asked for injected, the server-side
 *                         records are there: a run that did nothing proves
 *                         nothing
 *   tokens unique         no token was handed out twice, across restarts
 *                         and failovers: counting every grant a client saw
 *                         completed and every grant the final primary's
 *                         audit holds (fence.leases rows, chaos.holds
 *                         grant rows; grants no client saw and no
 *                         surviving server recorded do not count)
 *   tokens increase       a grant asked for after another grant completed
 *                         has a larger token, across restarts and
 *                         failovers (a promoted server's epoch beats the
 *                         timeline it left, even a lagging async standby)
 *   fences increase       per row (guarded, fu) the audit trail is a chain
 *                         (each write replaced the fence the previous
 *                         applied write left) and the fence never went
 *                         down; per resource (ledger stream, advance) the
 *                         applied tokens never went down
 *   no stale write        no write was applied with a token lower than the
 *                         fence it replaced, and no write a client was told
 *                         was rejected (FN001, FN003, false, an error) was
 *                         applied after all
 *   acked writes durable  every write a client saw committed is in the
 *                         final primary's audit (synchronous replication;
 *                         with asynchronous replication a failover may lose
 *                         them, and they are only counted)
 *
 * and, over holdings (holdings.cpp):
 *
 *   leases exclusive      per name, lease and leadership holdings never
 *                         overlap in server time
 *   locks exclusive       per name, no holding of a session or xact lock
 *                         overlaps another holding, and no shared holding
 *                         an exclusive one
 *   permits respected     a semaphore never has more holders than permits
 *   one leader per term   ... and the terms of a name increase
 *
 * and, over the job queue and idempotency keys (queue.cpp): job effects at
 * most once, no stale completion accepted, no job lost, acknowledged
 * enqueues durable, no key finished twice, no key effect by a superseded
 * owner.  Job claims and key ownerships are grants too (kinds job and
 * once): their tokens are in "no token issued twice" and "tokens beat
 * every earlier grant".
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/checks.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "checks.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace chaos {

constexpr size_t kExamples = 8;

void
Problem(CheckResult &r, const std::string &what)
{
	r.passed = false;
	if (r.problems.size() < kExamples)
		r.problems.push_back(what);
	r.problem_count++;
}

std::string
Ms(int64_t us)
{
	std::ostringstream s;
	s.setf(std::ios::fixed);
	s.precision(3);
	s << (us % 100000000000LL) / 1e6 << "s";
	return s.str();
}

namespace {

const char *const kKinds[] = {"lease",  "election", "semaphore", "session",
							  "shared", "xact",     "job",       "once"};

bool
IsRowTarget(const std::string &target)
{
	return target == "guarded" || target == "fu";
}

/* Audit rows per (target, resource), each in the order it was applied. */
std::map<std::pair<std::string, std::string>, std::vector<const AuditRow *>>
AuditTrails(const Run &run)
{
	std::map<std::pair<std::string, std::string>, std::vector<const AuditRow *>> trails;
	for (auto &a : run.audit)
		trails[{a.target, a.resource}].push_back(&a);
	for (auto &t : trails)
		std::sort(t.second.begin(), t.second.end(), [](const AuditRow *x, const AuditRow *y) {
			return std::tie(x->at, x->seq) < std::tie(y->at, y->seq);
		});
	return trails;
}

CheckResult
CheckRecorded(const Run &run)
{
	CheckResult                r;
	std::map<std::string, int> grants, faults;
	int                        applied = 0;
	r.name = "history recorded";
	for (auto &e : run.events)
	{
		faults[e.type]++;
		if (e.type == "grant")
			grants[e.kind]++;
		if (e.type == "write" && e.outcome == "applied")
			applied++;
	}
	size_t total = 0;
	for (const char *kind : kKinds)
	{
		total += grants[kind];
		if (grants[kind] == 0)
			Problem(r, std::string("no ") + kind + " grant recorded");
	}
	if (applied == 0)
		Problem(r, "no write applied");
	for (auto &f : run.expected_faults)
		if (faults[f] == 0)
			Problem(r, "no " + f + " by the nemesis");
	if (run.audit.empty())
		Problem(r, "the server-side audit of writes is empty");
	if (run.lease_audit.empty())
		Problem(r, "the server-side audit of leases is empty");
	if (run.holds.empty())
		Problem(r, "the server-side record of lock holdings is empty");
	for (const char *t : {"enqueue", "complete", "effect", "finish"})
		if (faults[t] == 0)
			Problem(r, std::string("no ") + t + " recorded");
	if (run.jobs.empty())
		Problem(r, "the final primary's queue is empty");
	if (run.job_effects.empty())
		Problem(r, "no job effect on the final primary");
	if (run.keys.empty())
		Problem(r, "the final primary has no idempotency key");
	if (run.key_effects.empty())
		Problem(r, "no key effect on the final primary");
	r.summary = std::to_string(total) + " grants, " + std::to_string(applied) +
				" writes applied, " + std::to_string(run.audit.size()) + " audited";
	return r;
}

CheckResult
CheckTokensUnique(const Run &run)
{
	CheckResult r;
	r.name = "no token issued twice";
	struct Grant
	{
		std::string kind, name, worker, source;
	};
	std::map<int64_t, std::vector<Grant>>          by_token;
	std::multiset<std::pair<std::string, int64_t>> client_grants;
	/*
	 * fence.campaign by the sitting leader's candidate returns its term
	 * again (the same leadership: a worker restarted after kill -9 keeps its
	 * candidate id), so the same term to the same candidate of the same
	 * election is one grant, not a token issued twice.
	 */
	std::set<std::tuple<std::string, std::string, int64_t>> terms;
	for (auto &e : run.events)
		if (e.type == "grant" && e.token > 0)
		{
			if (e.kind == "election" && !terms.insert({e.name, e.worker, e.token}).second)
				continue;
			by_token[e.token].push_back({e.kind, e.name, e.worker, "client"});
			client_grants.insert({e.name, e.token});
		}
	size_t server_only = 0;
	auto   server = [&](const std::string &kind, const std::string &name, int64_t token,
                      const std::string &holder) {
        auto it = client_grants.find({name, token});
        if (it != client_grants.end())
        {
            client_grants.erase(it); /* the same grant, seen from both sides */
            return;
        }
        by_token[token].push_back({kind, name, holder, "final primary's audit"});
        server_only++;
	};
	for (auto &a : run.lease_audit)
		if (a.event == "grant")
			server(a.permits >= 0 ? "semaphore"
				   : a.elected    ? "election"
								  : "lease",
				   a.name, a.token, a.holder);
	for (auto &h : run.holds)
		if (h.event == "grant")
			server(h.scope == "xact"    ? "xact"
				   : h.mode == "shared" ? "shared"
										: "session",
				   h.name, h.token, h.worker);
	for (auto &t : by_token)
	{
		if (t.second.size() < 2)
			continue;
		std::string what = "token " + std::to_string(t.first) + " issued " +
						   std::to_string(t.second.size()) + " times:";
		for (auto &g : t.second)
			what += " [" + g.kind + " " + g.name + " to " + g.worker + ", " + g.source + "]";
		Problem(r, what);
	}
	r.summary = std::to_string(by_token.size()) + " tokens, " + std::to_string(server_only) +
				" grants known only to the server";
	return r;
}

CheckResult
CheckFencesIncrease(const Run &run)
{
	CheckResult r;
	r.name = "fences only increase";
	size_t n = 0;
	for (auto &t : AuditTrails(run))
	{
		bool    row = IsRowTarget(t.first.first);
		int64_t prev = 0;
		for (const AuditRow *a : t.second)
		{
			n++;
			std::string where = t.first.first + " " + t.first.second + " op " + a->op;
			if (row && a->old_fence != prev)
				Problem(r, where + ": replaced fence " + std::to_string(a->old_fence) +
							   " but the previous applied write left " + std::to_string(prev));
			if (a->token < prev)
				Problem(r, where + ": fence went down from " + std::to_string(prev) + " to " +
							   std::to_string(a->token));
			prev = std::max(prev, a->token);
		}
	}
	r.summary = std::to_string(n) + " applied writes on the audit trail";
	return r;
}

CheckResult
CheckNoStaleApplied(const Run &run)
{
	CheckResult r;
	r.name = "no stale write applied";
	std::map<std::string, const AuditRow *> by_op;
	size_t                                  n = 0, rejected = 0;
	for (auto &t : AuditTrails(run))
	{
		bool    row = IsRowTarget(t.first.first);
		int64_t mark = 0;
		for (const AuditRow *a : t.second)
		{
			by_op[a->op] = a;
			int64_t replaced = row ? a->old_fence : mark;
			if (a->token < replaced)
				Problem(r, t.first.first + " " + t.first.second + " op " + a->op +
							   " applied with token " + std::to_string(a->token) + " over fence " +
							   std::to_string(replaced));
			mark = std::max(mark, a->token);
			n++;
		}
	}
	for (auto &e : run.events)
	{
		if (e.type != "write" || e.outcome == "applied" || e.outcome == "unknown")
			continue;
		rejected++;
		auto it = by_op.find(e.op);
		if (it != by_op.end())
			Problem(r, e.kind + " " + e.name + " op " + e.op + " with token " +
						   std::to_string(e.token) + " was reported " + e.outcome + " to " +
						   e.worker + " but was applied");
	}
	r.summary = std::to_string(n) + " applied, " + std::to_string(rejected) +
				" not applied by the clients' account";
	return r;
}

CheckResult
CheckAckedDurable(const Run &run)
{
	CheckResult r;
	r.name = "acknowledged writes durable";
	std::set<std::string> audited;
	for (auto &a : run.audit)
		audited.insert(a.op);
	size_t acked = 0, lost = 0;
	for (auto &e : run.events)
	{
		if (e.type != "write" || e.outcome != "applied")
			continue;
		acked++;
		if (audited.count(e.op))
			continue;
		lost++;
		if (!run.async)
			Problem(r, e.kind + " " + e.name + " op " + e.op + " by " + e.worker +
						   " committed at " + Ms(e.complete) + " is not in the final primary");
	}
	r.summary = std::to_string(acked) + " acknowledged, " + std::to_string(lost) + " lost" +
				(run.async ? " (asynchronous replication: counted, not failed)" : "");
	return r;
}

/*
 * Every grant beats every grant that completed before it was asked for:
 * one counter per database, and after a failover a new epoch above the
 * timeline it left (docs/guarantees.md guarantees 2 and 3).  Over every grant a client
 * saw, in real time (client clock: invoke and complete bracket the
 * server's draw).
 */
CheckResult
CheckTokensIncrease(const Run &run)
{
	CheckResult r;
	r.name = "tokens beat every earlier grant";
	std::vector<const Event *> by_invoke, by_complete;
	/* A re-grant of a sitting leader's term (CheckTokensUnique) is not a new grant. */
	std::set<std::tuple<std::string, std::string, int64_t>> terms;
	for (auto &e : run.events)
		if (e.type == "grant" && e.token > 0)
		{
			if (e.kind == "election" && !terms.insert({e.name, e.worker, e.token}).second)
				continue;
			by_invoke.push_back(&e);
			by_complete.push_back(&e);
		}
	std::sort(by_invoke.begin(), by_invoke.end(),
			  [](const Event *a, const Event *b) { return a->invoke < b->invoke; });
	std::sort(by_complete.begin(), by_complete.end(),
			  [](const Event *a, const Event *b) { return a->complete < b->complete; });
	const Event *best = nullptr; /* the highest token completed so far */
	size_t       j = 0;
	for (const Event *g : by_invoke)
	{
		for (; j < by_complete.size() && by_complete[j]->complete < g->invoke; j++)
			if (!best || by_complete[j]->token > best->token)
				best = by_complete[j];
		if (best && g->token <= best->token)
			Problem(r, g->kind + " " + g->name + " to " + g->worker + " asked at " + Ms(g->invoke) +
						   " got token " + std::to_string(g->token) + ", not above token " +
						   std::to_string(best->token) + " (" + best->kind + " " + best->name +
						   " to " + best->worker + ", granted at " + Ms(best->complete) + ")");
	}
	r.summary = std::to_string(by_invoke.size()) + " grants in real-time order";
	return r;
}

} // namespace

std::vector<CheckResult>
CheckAll(const Run &run)
{
	return {CheckRecorded(run),        CheckTokensUnique(run),    CheckTokensIncrease(run),
			CheckFencesIncrease(run),  CheckNoStaleApplied(run),  CheckAckedDurable(run),
			CheckLeasesExclusive(run), CheckLocksExclusive(run),  CheckSemaphores(run),
			CheckElections(run),       CheckJobEffectsOnce(run),  CheckNoStaleCompletion(run),
			CheckNoJobLost(run),       CheckEnqueuesDurable(run), CheckKeysFinishedOnce(run),
			CheckKeyEffects(run)};
}

} // namespace chaos
