/*-------------------------------------------------------------------------
 *
 * holdings.cpp
 *	  The chaos checker's properties of holdings (checks.hpp): who held a
 *	  name when, and that no two held it at once where docs/guarantees.md says
 *	  they cannot.
 *
 *   leases exclusive      per name, lease and leadership holdings never
 *                         overlap in server time: a holding runs from the
 *                         server's granted_at to its release (the server's
 *                         clock at the DELETE) or its latest server-side
 *                         expiry (semaphore permits are the next check's)
 *   locks exclusive       per name, no holding of a session or xact lock
 *                         overlaps any other holding of the name, and no
 *                         shared holding an exclusive one (shared ones may
 *                         overlap each other, and are counted when they
 *                         do).  A connection-bound holding is known from
 *                         inside: the rows its backend wrote while holding
 *                         it (schema.sql, chaos.holds: committed, so written
 *                         under the lock, on the server's clock), and the
 *                         client's grant to its release when the release
 *                         found the lock still held.  Each is a span inside
 *                         the real holding, whatever became of the session
 *                         afterwards; spans that overlap are holdings that
 *                         did.
 *   permits respected     a semaphore permit is granted only while fewer
 *                         than permits others of its name are held (the
 *                         permits its client asked for, or the audit's; the
 *                         holdings as for leases)
 *   one leader per term   a term (the token of a leadership) has one
 *                         candidate, whichever side saw it (the client that
 *                         campaigned, the final primary's audit), and per
 *                         name the terms increase in the order leaders were
 *                         elected (server time)
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/holdings.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "checks.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace chaos {
namespace {

bool
IsLeaseKind(const std::string &kind)
{
	return kind == "lease" || kind == "election" || kind == "semaphore";
}

std::string
AuditKind(const LeaseAuditRow &a)
{
	return a.permits >= 0 ? "semaphore" : a.elected ? "election" : "lease";
}

std::string
Describe(const Holding &h)
{
	return h.kind + " token " + std::to_string(h.token) + " (" + h.worker + ", " + Ms(h.start) +
		   " to " + Ms(h.end) + ")";
}

/* Holdings sorted by name, then start. */
void
SortByStart(std::vector<Holding> &hs)
{
	std::sort(hs.begin(), hs.end(), [](const Holding &a, const Holding &b) {
		return std::tie(a.name, a.start, a.token) < std::tie(b.name, b.start, b.token);
	});
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
		x.h.kind = AuditKind(a);
		x.h.permits = a.permits;
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
		if (!IsLeaseKind(e.kind) || e.token <= 0)
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
			if (x.h.kind.empty())
				x.h.kind = e.kind;
			/* the permits the client asked for, if the audit says more */
			if (e.kind == "semaphore" && !e.op.empty() &&
				(x.h.permits < 0 || std::stoll(e.op) < x.h.permits))
				x.h.permits = std::stoll(e.op);
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

std::vector<Holding>
LockHoldings(const Run &run)
{
	std::map<std::pair<std::string, int64_t>, Holding> acc;
	auto add = [&](const std::string &name, int64_t token, const std::string &kind,
				   const std::string &worker, int64_t start, int64_t end) -> Holding & {
		Holding &h = acc[{name, token}];
		if (h.kind.empty())
		{
			h.name = name;
			h.token = token;
			h.kind = kind;
			h.worker = worker;
			h.start = start;
			h.end = end;
		}
		/* both spans lie inside the one real holding: so does their hull */
		h.start = std::min(h.start, start);
		h.end = std::max(h.end, end);
		return h;
	};
	for (auto &r : run.holds)
		add(r.name, r.token,
			r.scope == "xact"    ? "xact"
			: r.mode == "shared" ? "shared"
								 : "session",
			r.worker, r.at, r.at)
			.audited = true;
	std::map<std::tuple<std::string, std::string, int64_t>, int64_t> granted;
	for (auto &e : run.events)
	{
		if ((e.kind != "session" && e.kind != "shared" && e.kind != "xact") ||
			e.worker == "burst" || e.token <= 0)
			continue;
		auto key = std::make_tuple(e.worker, e.name, e.token);
		if (e.type == "grant")
			granted[key] = e.complete;
		else if (e.type == "release" && e.outcome == "ok" && granted.count(key) &&
				 granted[key] <= e.invoke)
			add(e.name, e.token, e.kind, e.worker, granted[key], e.invoke).client = true;
	}
	std::vector<Holding> out;
	for (auto &kv : acc)
		out.push_back(kv.second);
	return out;
}

CheckResult
CheckLeasesExclusive(const Run &run)
{
	CheckResult r;
	r.name = "leases and leaderships never overlap";
	std::vector<Holding> holdings;
	for (auto &h : LeaseHoldings(run, !run.async))
		if (h.kind != "semaphore")
			holdings.push_back(h);
	SortByStart(holdings);
	const Holding *last = nullptr; /* the holding of this name that ends latest */
	size_t         lost = 0;
	for (auto &h : holdings)
	{
		if (!h.audited)
			lost++;
		if (last && last->name != h.name)
			last = nullptr;
		if (last && h.start < last->end)
			Problem(r,
					h.name + ": " + Describe(h) + " granted while " + Describe(*last) + " held it");
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
			lost_async += !h.audited && h.kind != "semaphore";
		r.summary += ", " + std::to_string(lost_async) +
					 " client-seen grants lost by a failover (asynchronous replication)";
	}
	return r;
}

CheckResult
CheckLocksExclusive(const Run &run)
{
	CheckResult r;
	r.name = "session, xact and shared locks exclusive";
	auto holdings = LockHoldings(run);
	SortByStart(holdings);
	/* per name: the holdings that end latest, of any mode and exclusive */
	const Holding *any = nullptr, *excl = nullptr, *shared = nullptr;
	size_t         server = 0, client = 0, both = 0, sharing = 0;
	for (auto &h : holdings)
	{
		server += h.audited;
		client += h.client;
		both += h.audited && h.client;
		if (any && any->name != h.name)
			any = excl = shared = nullptr;
		bool           is_shared = h.kind == "shared";
		const Holding *other = is_shared ? excl : any;
		if (other && h.start < other->end)
			Problem(r,
					h.name + ": " + Describe(h) + " held while " + Describe(*other) + " held it");
		if (is_shared && shared && h.start < shared->end)
			sharing++;
		if (!any || h.end > any->end)
			any = &h;
		if (!is_shared && (!excl || h.end > excl->end))
			excl = &h;
		if (is_shared && (!shared || h.end > shared->end))
			shared = &h;
	}
	r.summary = std::to_string(holdings.size()) + " holdings (" + std::to_string(server) +
				" recorded by the holding backend, " + std::to_string(client) +
				" released by their client, " + std::to_string(both) + " both), " +
				std::to_string(sharing) + " shared while another shared holding lasted";
	return r;
}

CheckResult
CheckSemaphores(const Run &run)
{
	CheckResult r;
	r.name = "semaphore permits respected";
	std::map<std::string, std::vector<Holding>> by_name;
	std::map<std::string, int64_t> permits; /* the most any grant of a name asked for */
	for (auto &h : LeaseHoldings(run, !run.async))
		if (h.kind == "semaphore")
		{
			by_name[h.name].push_back(h);
			permits[h.name] = std::max(permits[h.name], h.permits);
		}
	size_t n = 0, most = 0, last = 0; /* last: grants that took the last free permit */
	for (auto &kv : by_name)
		for (auto &h : kv.second)
		{
			n++;
			std::vector<const Holding *> others;
			for (auto &g : kv.second)
				if (&g != &h && g.start <= h.start && h.start < g.end)
					others.push_back(&g);
			most = std::max(most, others.size() + 1);
			int64_t allowed = h.permits >= 0 ? h.permits : permits[kv.first];
			last += static_cast<int64_t>(others.size()) + 1 == allowed;
			if (allowed >= 0 && static_cast<int64_t>(others.size()) >= allowed)
			{
				std::string what = kv.first + ": " + Describe(h) + " granted with " +
								   std::to_string(allowed) + " permits while held by";
				for (auto *g : others)
					what += " " + Describe(*g);
				Problem(r, what);
			}
		}
	r.summary = std::to_string(n) + " permits, at most " + std::to_string(most) +
				" held at once, " + std::to_string(last) + " grants took the last one";
	return r;
}

CheckResult
CheckElections(const Run &run)
{
	CheckResult r;
	r.name = "one leader per term, terms increase";
	std::map<std::pair<std::string, int64_t>, std::set<std::string>> leaders;
	for (auto &a : run.lease_audit)
		if (a.elected && a.event != "release")
			leaders[{a.name, a.token}].insert(a.holder);
	for (auto &e : run.events)
		if (e.kind == "election" && e.token > 0 &&
			(e.type == "grant" || (e.type == "renew" && e.outcome == "ok")))
			leaders[{e.name, e.token}].insert(e.worker);
	for (auto &l : leaders)
		if (l.second.size() > 1)
		{
			std::string who;
			for (auto &c : l.second)
				who += (who.empty() ? "" : ", ") + c;
			Problem(r, l.first.first + ": term " + std::to_string(l.first.second) +
						   " has leaders " + who);
		}
	std::vector<Holding> terms;
	for (auto &h : LeaseHoldings(run, true))
		if (h.kind == "election")
			terms.push_back(h);
	SortByStart(terms);
	for (size_t i = 1; i < terms.size(); i++)
		if (terms[i].name == terms[i - 1].name && terms[i].token <= terms[i - 1].token)
			Problem(r, terms[i].name + ": " + Describe(terms[i]) + " elected after " +
						   Describe(terms[i - 1]));
	r.summary = std::to_string(leaders.size()) + " terms";
	return r;
}

} // namespace chaos
