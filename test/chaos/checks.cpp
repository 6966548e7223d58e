/*-------------------------------------------------------------------------
 *
 * checks.cpp
 *	  The properties the chaos checker proves.  Each is one test:
 *
 *   history recorded      every lock kind was granted, writes applied and
 *                         every fault asked for injected: a run that did
 *                         nothing proves nothing
 *   tokens unique         no token was handed out twice, across restarts
 *                         and failovers: counting every grant a client saw
 *                         completed and every lease grant the final
 *                         primary's audit holds (grants no client saw and
 *                         no surviving server recorded do not count)
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
 *   leases exclusive      per name, lease holdings never overlap in server
 *                         time: a holding runs from the server's granted_at
 *                         to its release (the server's clock at the
 *                         DELETE) or its latest server-side expiry
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
namespace {

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
	for (const char *kind : {"lease", "session", "xact"})
		if (grants[kind] == 0)
			Problem(r, std::string("no ") + kind + " grant recorded");
	if (applied == 0)
		Problem(r, "no write applied");
	for (auto &f : run.expected_faults)
		if (faults[f] == 0)
			Problem(r, "no " + f + " by the nemesis");
	if (run.audit.empty())
		Problem(r, "the server-side audit of writes is empty");
	if (run.lease_audit.empty())
		Problem(r, "the server-side audit of leases is empty");
	r.summary = std::to_string(grants["lease"] + grants["session"] + grants["xact"]) + " grants, " +
				std::to_string(applied) + " writes applied, " + std::to_string(run.audit.size()) +
				" audited";
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
	std::multiset<std::pair<std::string, int64_t>> client_leases;
	for (auto &e : run.events)
		if (e.type == "grant" && e.token > 0)
		{
			by_token[e.token].push_back({e.kind, e.name, e.worker, "client"});
			if (e.kind == "lease")
				client_leases.insert({e.name, e.token});
		}
	size_t server_only = 0;
	for (auto &a : run.lease_audit)
	{
		if (a.event != "grant")
			continue;
		auto it = client_leases.find({a.name, a.token});
		if (it != client_leases.end())
		{
			client_leases.erase(it); /* the same grant, seen from both sides */
			continue;
		}
		by_token[a.token].push_back({"lease", a.name, a.holder, "final primary's audit"});
		server_only++;
	}
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
				" lease grants known only to the server";
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

CheckResult
CheckLeasesExclusive(const Run &run)
{
	CheckResult r;
	r.name = "lease holdings never overlap";
	auto holdings = LeaseHoldings(run, !run.async);
	std::sort(holdings.begin(), holdings.end(), [](const Holding &a, const Holding &b) {
		return std::tie(a.name, a.start, a.token) < std::tie(b.name, b.start, b.token);
	});
	const Holding *last = nullptr; /* the holding of this name that ends latest */
	size_t         lost = 0;
	for (auto &h : holdings)
	{
		if (!h.audited)
			lost++;
		if (last && last->name != h.name)
			last = nullptr;
		if (last && h.start < last->end)
			Problem(r, h.name + ": token " + std::to_string(h.token) + " (" + h.worker +
						   ") granted at " + Ms(h.start) + " while token " +
						   std::to_string(last->token) + " (" + last->worker + ") held it until " +
						   Ms(last->end));
		if (!last || h.end > last->end)
			last = &h;
	}
	r.summary = std::to_string(holdings.size()) + " holdings";
	if (lost)
		r.summary += ", " + std::to_string(lost) + " seen by clients only";
	if (run.async)
	{
		size_t lost_async = 0;
		for (auto &h : LeaseHoldings(run, true))
			lost_async += !h.audited;
		r.summary += ", " + std::to_string(lost_async) +
					 " client-seen grants lost by a failover (asynchronous replication)";
	}
	return r;
}

/*
 * Every grant beats every grant that completed before it was asked for:
 * one counter per database, and after a failover a new epoch above the
 * timeline it left (SPEC guarantees 2 and 3).  Over every grant a client
 * saw, in real time (client clock: invoke and complete bracket the
 * server's draw).
 */
CheckResult
CheckTokensIncrease(const Run &run)
{
	CheckResult r;
	r.name = "tokens beat every earlier grant";
	std::vector<const Event *> by_invoke, by_complete;
	for (auto &e : run.events)
		if (e.type == "grant" && e.token > 0)
		{
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

std::vector<Holding>
LeaseHoldings(const Run &run, bool with_client_view)
{
	struct Acc
	{
		Holding h;
		int64_t expires = -1, released = -1;
	};
	std::map<std::pair<std::string, int64_t>, Acc> acc;
	for (auto &a : run.lease_audit)
	{
		Acc &x = acc[{a.name, a.token}];
		x.h.name = a.name;
		x.h.token = a.token;
		x.h.audited = true;
		if (a.event == "grant")
		{
			x.h.start = a.granted;
			x.h.worker = a.holder;
		}
		if (a.event == "grant" || a.event == "renew")
			x.expires = std::max(x.expires, a.expires);
		if (a.event == "release")
			x.released = a.at;
	}
	for (auto &e : run.events)
	{
		if (e.kind != "lease" || e.token <= 0)
			continue;
		auto it = acc.find({e.name, e.token});
		if (e.type == "grant")
		{
			if (it == acc.end() && !with_client_view)
				continue;
			Acc &x = acc[{e.name, e.token}];
			x.h.client = true;
			x.h.name = e.name;
			x.h.token = e.token;
			x.h.worker = e.worker;
			if (x.h.start < 0)
				x.h.start = e.granted;
			if (with_client_view)
				x.expires = std::max(x.expires, e.expires);
		}
		else if (e.type == "renew" && e.outcome == "ok" && with_client_view && it != acc.end())
		{
			it->second.expires = std::max(it->second.expires, e.expires);
		}
	}
	std::vector<Holding> out;
	for (auto &kv : acc)
	{
		Acc &x = kv.second;
		if (x.h.start < 0) /* renewed or released, its grant not seen: before the audit */
			continue;
		x.h.end = x.released >= 0 ? std::min(x.released, x.expires) : x.expires;
		out.push_back(x.h);
	}
	return out;
}

std::vector<CheckResult>
CheckAll(const Run &run)
{
	return {CheckRecorded(run),       CheckTokensUnique(run),   CheckTokensIncrease(run),
			CheckFencesIncrease(run), CheckNoStaleApplied(run), CheckAckedDurable(run),
			CheckLeasesExclusive(run)};
}

} // namespace chaos
