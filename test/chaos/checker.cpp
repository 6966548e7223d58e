/*-------------------------------------------------------------------------
 *
 * checker.cpp
 *	  chaos_check: reads a chaos run's history (the workers' and the
 *	  nemesis' event files, the final primary's audit dumps), proves the
 *	  properties of checks.cpp and holdings.cpp, prints one line per
 *	  property, the run's counts and the summary line "N passed, N failed",
 *	  and draws the run as an SVG timeline.
 *
 *	  chaos_check --dir DIR [--svg FILE] [--async] [--faults LIST]
 *
 * DIR holds w*.tsv (one per worker) and nemesis.tsv (history.hpp's event
 * format), audit.tsv, lease_audit.tsv and holds.tsv (schema.sql's dump
 * views).  test/shell/chaos/checker.sh runs it on edited histories.
 * --async: the run replicated asynchronously (checks.hpp, Run::async).
 * --faults: comma separated nemesis faults that must have happened (pause,
 * kill, restart, failover): part of "history recorded".
 * Exit status 0 only when every property holds.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/checker.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "checks.hpp"
#include "history.hpp"
#include "svg.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace chaos {
namespace {

struct Counts
{
	std::map<std::string, size_t> grants, writes, nemesis;
	std::map<std::string, size_t> enqueues, completes, key_effects, begins, jobs, keys;
	size_t                        busy = 0, burst = 0, finishes = 0;
};

Counts
Count(const Run &run)
{
	Counts c;
	for (auto &e : run.events)
	{
		if (e.worker == "burst")
			c.burst++;
		else if (e.type == "grant")
			c.grants[e.kind]++;
		else if (e.type == "write")
			c.writes[e.outcome]++;
		else if (e.type == "enqueue")
			c.enqueues[e.outcome]++;
		else if (e.type == "complete")
			c.completes[e.outcome]++;
		else if (e.type == "effect")
			c.key_effects[e.outcome]++;
		else if (e.type == "begin")
			c.begins[e.outcome]++;
		else if (e.type == "finish" && e.outcome == "ok")
			c.finishes++;
		else if (e.type == "busy")
			c.busy++;
		else if (e.type == "pause" || e.type == "kill" || e.type == "restart" ||
				 e.type == "failover" || e.type == "switchover" || e.type == "crash")
			c.nemesis[e.type]++;
	}
	for (auto &j : run.jobs)
		c.jobs[j.state]++;
	for (auto &k : run.keys)
		c.keys[k.state]++;
	return c;
}

size_t
Get(const std::map<std::string, size_t> &m, const char *k)
{
	auto it = m.find(k);
	return it == m.end() ? size_t(0) : it->second;
}

/* The queue's and the keys' counts, a second line. */
std::string
QueueLine(const Counts &c)
{
	std::string jobs;
	for (auto &j : c.jobs)
		jobs += (jobs.empty() ? "" : ", ") + std::to_string(j.second) + " " + j.first;
	std::string keys;
	for (auto &k : c.keys)
		keys += (keys.empty() ? "" : ", ") + std::to_string(k.second) + " " + k.first;
	return "jobs enqueued " + std::to_string(Get(c.enqueues, "applied")) + " (" + jobs +
		   "), completions committed " + std::to_string(Get(c.completes, "applied")) +
		   ", stale completions refused " +
		   std::to_string(Get(c.completes, "stale") + Get(c.completes, "false")) + ", keys " +
		   std::to_string(c.grants.count("once") ? c.grants.at("once") : 0) + " owned (" + keys +
		   "), key effects committed " + std::to_string(Get(c.key_effects, "applied")) +
		   ", refused " +
		   std::to_string(Get(c.key_effects, "stale") + Get(c.key_effects, "false")) +
		   ", finished " + std::to_string(c.finishes) + ", in progress " +
		   std::to_string(Get(c.begins, "in_progress")) + ", done " +
		   std::to_string(Get(c.begins, "done")) + ", mismatch " +
		   std::to_string(Get(c.begins, "mismatch"));
}

std::string
CountsLine(const Counts &c)
{
	auto g = [&](const char *k) {
		auto it = c.grants.find(k);
		return it == c.grants.end() ? size_t(0) : it->second;
	};
	auto w = [&](const char *k) {
		auto it = c.writes.find(k);
		return it == c.writes.end() ? size_t(0) : it->second;
	};
	auto n = [&](const char *k) {
		auto it = c.nemesis.find(k);
		return it == c.nemesis.end() ? size_t(0) : it->second;
	};
	size_t      total = 0;
	std::string kinds;
	for (const char *k :
		 {"lease", "election", "semaphore", "session", "shared", "xact", "job", "once"})
	{
		total += g(k);
		kinds += std::string(kinds.empty() ? "" : ", ") + k + " " + std::to_string(g(k));
	}
	return "grants " + std::to_string(total) + " (" + kinds + "), writes applied " +
		   std::to_string(w("applied")) + ", stale writes rejected " + std::to_string(w("stale")) +
		   ", outcome unknown " + std::to_string(w("unknown")) + ", write errors " +
		   std::to_string(w("error") + w("notoken")) + ", pauses " + std::to_string(n("pause")) +
		   ", kills " + std::to_string(n("kill")) +
		   (n("crash") ? ", workers killed " + std::to_string(n("crash")) : "") + ", restarts " +
		   std::to_string(n("restart")) + ", failovers " + std::to_string(n("failover")) +
		   (n("switchover") ? ", switchovers " + std::to_string(n("switchover")) : "") +
		   (c.burst ? ", burst tokens " + std::to_string(c.burst) : "");
}

Timeline
BuildTimeline(const Run &run, const std::string &title)
{
	Timeline              t;
	std::set<std::string> workers;
	int64_t               end = 0;
	for (auto &e : run.events)
	{
		/* the burst's thousands of grants are in the counts, not drawn */
		if (!e.worker.empty() && e.worker != "burst" && e.type != "kill" && e.type != "pause" &&
			e.type != "crash")
			workers.insert(e.worker);
		end = std::max(end, e.complete);
	}
	t.workers.assign(workers.begin(), workers.end());
	std::sort(t.workers.begin(), t.workers.end(), [](const std::string &a, const std::string &b) {
		return a.size() != b.size() ? a.size() < b.size() : a < b;
	});
	for (auto &h : LeaseHoldings(run, true))
		t.bars.push_back({h.worker, h.kind, h.token, h.start, h.end});
	/* Session, shared and xact holdings: from the grant to its release, as the client saw them. */
	std::map<std::tuple<std::string, std::string, int64_t>, std::pair<std::string, int64_t>> open;
	for (auto &e : run.events)
	{
		if ((e.kind != "session" && e.kind != "shared" && e.kind != "xact") || e.worker == "burst")
			continue;
		auto key = std::make_tuple(e.worker, e.name, e.token);
		if (e.type == "grant")
			open[key] = {e.kind, e.complete};
		else if (e.type == "release" && open.count(key))
		{
			t.bars.push_back({e.worker, e.kind, e.token, open[key].second, e.complete});
			open.erase(key);
		}
	}
	for (auto &o : open)
		t.bars.push_back(
			{std::get<0>(o.first), o.second.first, std::get<2>(o.first), o.second.second, end});
	/* Job claims and key ownerships: from the grant to the completion, failure, finish or
	 * release that ended it (its invoke), else to the last thing done with it. */
	std::map<std::tuple<std::string, std::string, int64_t>, std::pair<std::string, int64_t>> held;
	std::map<std::tuple<std::string, std::string, int64_t>, int64_t>                         last;
	for (auto &e : run.events)
	{
		if (e.kind != "job" && e.kind != "once")
			continue;
		auto key = std::make_tuple(e.worker, e.name, e.token);
		if (e.type == "grant")
		{
			held[key] = {e.kind, e.complete};
			last[key] = e.complete + 50000;
			continue;
		}
		if (!held.count(key))
			continue;
		last[key] = std::max(last[key], e.complete);
		if (e.type == "complete" || e.type == "fail" || e.type == "finish" || e.type == "release")
		{
			t.bars.push_back({e.worker, held[key].first, e.token, held[key].second, e.invoke});
			held.erase(key);
		}
	}
	for (auto &h : held)
		t.bars.push_back({std::get<0>(h.first), h.second.first, std::get<2>(h.first),
						  h.second.second, last[h.first]});
	for (auto &e : run.events)
	{
		if (e.type == "write" &&
			(e.outcome == "applied" || e.outcome == "stale" || e.outcome == "unknown"))
			t.marks.push_back({e.worker, e.outcome, e.complete});
		else if ((e.type == "complete" || e.type == "effect") &&
				 (e.outcome == "applied" || e.outcome == "stale" || e.outcome == "false" ||
				  e.outcome == "unknown"))
			t.marks.push_back(
				{e.worker, e.outcome == "false" ? std::string("stale") : e.outcome, e.complete});
		else if (e.type == "kill" || e.type == "crash")
			t.marks.push_back({e.worker, "kill", e.invoke});
		else if (e.type == "pause")
			t.pauses.push_back({e.worker, e.invoke, e.complete});
		else if (e.type == "restart" || e.type == "failover" || e.type == "switchover")
			t.lines.push_back(
				{e.type == "restart" ? "restart" : e.type + " to " + e.name, e.invoke, e.complete});
	}
	t.title = title;
	return t;
}

} // namespace
} // namespace chaos

int
main(int argc, char **argv)
{
	namespace fs = std::filesystem;
	std::string dir, svg;
	chaos::Run  run;
	for (int i = 1; i < argc; i++)
	{
		std::string a = argv[i];
		if (a == "--dir" && i + 1 < argc)
			dir = argv[++i];
		else if (a == "--svg" && i + 1 < argc)
			svg = argv[++i];
		else if (a == "--async")
			run.async = true;
		else if (a == "--faults" && i + 1 < argc)
		{
			std::string list = argv[++i], f;
			for (char c : list + ",")
			{
				if (c == ',' && !f.empty())
					run.expected_faults.push_back(f), f.clear();
				else if (c != ',')
					f += c;
			}
		}
		else
		{
			std::fprintf(stderr,
						 "usage: chaos_check --dir DIR [--svg FILE] [--async] [--faults LIST]\n");
			return 2;
		}
	}
	if (dir.empty())
	{
		std::fprintf(stderr,
					 "usage: chaos_check --dir DIR [--svg FILE] [--async] [--faults LIST]\n");
		return 2;
	}
	std::error_code ec;
	for (auto &f : fs::directory_iterator(dir, ec))
	{
		std::string name = f.path().filename().string();
		bool worker = name.size() > 5 && name[0] == 'w' && name.find(".tsv") != std::string::npos;
		if (worker || name == "nemesis.tsv")
			chaos::ReadEvents(f.path().string(), run.events);
	}
	bool audit_ok = chaos::ReadAudit(dir + "/audit.tsv", run.audit) &&
					chaos::ReadLeaseAudit(dir + "/lease_audit.tsv", run.lease_audit) &&
					chaos::ReadHolds(dir + "/holds.tsv", run.holds) &&
					chaos::ReadJobs(dir + "/jobs.tsv", run.jobs) &&
					chaos::ReadJobEffects(dir + "/job_effects.tsv", run.job_effects) &&
					chaos::ReadKeys(dir + "/once_keys.tsv", run.keys) &&
					chaos::ReadKeyEffects(dir + "/once_effects.tsv", run.key_effects);
	if (ec || !audit_ok)
		std::printf("chaos_check: cannot read the history in %s%s\n", dir.c_str(),
					audit_ok ? ""
							 : " (audit.tsv, lease_audit.tsv, holds.tsv, jobs.tsv, job_effects.tsv,"
							   " once_keys.tsv or once_effects.tsv missing or malformed)");

	size_t passed = 0, failed = 0;
	for (auto &r : chaos::CheckAll(run))
	{
		std::printf("%s - %s (%s)\n", r.passed ? "ok" : "not ok", r.name.c_str(),
					r.summary.c_str());
		for (auto &p : r.problems)
			std::printf("    %s\n", p.c_str());
		if (r.problem_count > r.problems.size())
			std::printf("    ... %zu problems in all\n", r.problem_count);
		(r.passed ? passed : failed)++;
	}
	if (!audit_ok)
		failed++;
	auto counts = chaos::Count(run);
	std::printf("%s\n%s\n", chaos::CountsLine(counts).c_str(), chaos::QueueLine(counts).c_str());
	if (!svg.empty())
	{
		std::string title = "pg_fence chaos run: " + chaos::CountsLine(counts);
		if (chaos::WriteSvg(svg, chaos::BuildTimeline(run, title)))
			std::printf("timeline: %s\n", svg.c_str());
	}
	std::printf("%zu passed, %zu failed\n", passed, failed);
	return failed ? 1 : 0;
}
