/*-------------------------------------------------------------------------
 *
 * queue.cpp
 *	  The chaos checker's properties of the job queue and of idempotency
 *	  keys (worker.cpp JobRound / OnceRound, jobs.hpp), each one a test:
 *
 *   job effects at most once   per job, at most one effect committed (the
 *                              final primary's chaos.job_effect_audit);
 *                              an effect only with its job's completion
 *                              (the job is completed), and a completed job
 *                              has its effect
 *   no stale completion        a completed job was completed by its latest
 *                              claim: no client saw a claim of it with a
 *                              larger token, its effect carries the same
 *                              token, every completion a client saw
 *                              committed is the job's, no completion was
 *                              committed after a newer claim of the job
 *                              had been granted, and no completion
 *                              reported refused (FN001, false) committed
 *                              its effect; a newer claim a restart or
 *                              failover may have lost (claims commit
 *                              without a flush) is counted, not failed
 *   no job lost                after the drain every committed enqueue's
 *                              job is completed, failed or cancelled
 *   enqueues durable           every enqueue a client saw committed is on
 *                              the final primary (counted, not failed,
 *                              with asynchronous replication)
 *   keys finished once         per key, one owner's once_finish returned
 *                              true, the key was never owned again after
 *                              it, and the final primary's key was
 *                              finished by that owner
 *   no superseded key effect   per key at most one effect committed, none
 *                              written after a newer owner had been
 *                              granted the key, none reported refused
 *                              that committed; a finished key has its
 *                              effect
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/queue.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "checks.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace chaos {

namespace {

bool
Finished(const std::string &state)
{
	return state == "completed" || state == "failed" || state == "cancelled";
}

bool
KeyDone(const std::string &state)
{
	return state == "done" || state == "finished";
}

std::string
Tok(int64_t t)
{
	return std::to_string(t);
}

/* The final primary's jobs by history name (job/ID). */
std::map<std::string, const JobRow *>
JobsByName(const Run &run)
{
	std::map<std::string, const JobRow *> jobs;
	for (auto &j : run.jobs)
		jobs["job/" + Tok(j.id)] = &j;
	return jobs;
}

std::map<std::string, std::vector<const EffectRow *>>
BySubject(const std::vector<EffectRow> &effects)
{
	std::map<std::string, std::vector<const EffectRow *>> by;
	for (auto &e : effects)
		by[e.subject].push_back(&e);
	return by;
}

/* The clients' grants of kind (job claims, key ownerships) per name. */
std::map<std::string, std::vector<const Event *>>
Grants(const Run &run, const std::string &kind)
{
	std::map<std::string, std::vector<const Event *>> by;
	for (auto &e : run.events)
		if (e.type == "grant" && e.kind == kind && e.token > 0)
			by[e.name].push_back(&e);
	return by;
}

/* A grant of the same name with a larger token that a client saw before time t. */
const Event *
NewerGrantBefore(const std::vector<const Event *> &grants, int64_t token, int64_t t)
{
	for (const Event *g : grants)
		if (g->token > token && g->complete >= 0 && g->complete < t)
			return g;
	return nullptr;
}

/*
 * A client-seen claim that a server fault may have lost: a claim-only
 * transaction commits without waiting for its flush or for standbys
 * (docs/queue.md, Durability), so an immediate restart or a failover
 * can put the job back under its earlier claim, which may then complete.
 * Excused when the claim was granted at most 5 s before the fault began
 * (the asynchronous standby lags for less than that), the completion
 * that beat it was sent after the fault began, and no call with the
 * claim's token succeeded after the fault ended (which would show that
 * the claim survived).
 */
class LostClaims
{
public:
	explicit LostClaims(const Run &run)
	{
		for (auto &e : run.events)
		{
			if (e.type == "restart" || e.type == "failover")
				faults_.push_back(&e);
			else if (e.kind == "job" && e.token > 0 &&
					 (e.outcome == "ok" || e.outcome == "applied") &&
					 (e.type == "renew" || e.type == "complete" || e.type == "fail"))
				used_[{e.name, e.token}].push_back(e.invoke);
		}
	}

	bool
	Lost(const Event &claim, int64_t beaten_at) const
	{
		for (const Event *f : faults_)
		{
			if (claim.complete > f->complete || claim.complete < f->invoke - 5000000 ||
				beaten_at < f->invoke)
				continue;
			bool survived = false;
			auto u = used_.find({claim.name, claim.token});
			if (u != used_.end())
				for (int64_t t : u->second)
					survived |= t > f->complete;
			if (!survived)
				return true;
		}
		return false;
	}

private:
	std::vector<const Event *>                                      faults_;
	std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> used_;
};

/* When a completion by token was last sent (-1: never). */
int64_t
CompletionSent(const Run &run, const std::string &name, int64_t token)
{
	int64_t at = -1;
	for (auto &e : run.events)
		if (e.type == "complete" && e.kind == "job" && e.name == name && e.token == token)
			at = std::max(at, e.invoke);
	return at;
}

std::set<std::string>
Ops(const std::vector<EffectRow> &effects)
{
	std::set<std::string> ops;
	for (auto &e : effects)
		ops.insert(e.op);
	return ops;
}

} // namespace

CheckResult
CheckJobEffectsOnce(const Run &run)
{
	CheckResult r;
	r.name = "every job's effect applied at most once";
	auto   jobs = JobsByName(run);
	auto   effects = BySubject(run.job_effects);
	size_t completed = 0;
	for (auto &s : effects)
	{
		if (s.second.size() > 1)
		{
			std::string what = s.first + ": effect applied " + Tok(s.second.size()) + " times:";
			for (const EffectRow *e : s.second)
				what += " [" + e->target + " op " + e->op + " token " + Tok(e->token) + " at " +
						Ms(e->at) + "]";
			Problem(r, what);
		}
		auto j = jobs.find(s.first);
		for (const EffectRow *e : s.second)
			if (j == jobs.end() || j->second->state != "completed")
				Problem(r, s.first + ": effect op " + e->op + " by token " + Tok(e->token) +
							   " committed, but the job is " +
							   (j == jobs.end() ? std::string("not on the final primary")
												: j->second->state));
	}
	for (auto &j : jobs)
		if (j.second->state == "completed")
		{
			completed++;
			if (!effects.count(j.first))
				Problem(r, j.first + " completed by token " + Tok(j.second->token) +
							   " without its effect");
		}
	r.summary = Tok(run.jobs.size()) + " jobs, " + Tok(completed) + " completed, " +
				Tok(run.job_effects.size()) + " effects";
	return r;
}

CheckResult
CheckNoStaleCompletion(const Run &run)
{
	CheckResult r;
	r.name = "no stale completion accepted";
	auto                                      jobs = JobsByName(run);
	auto                                      claims = Grants(run, "job");
	auto                                      effects = BySubject(run.job_effects);
	auto                                      effect_ops = Ops(run.job_effects);
	LostClaims                                lost_claims(run);
	std::set<std::pair<std::string, int64_t>> excused; /* claims a fault lost */
	size_t                                    acked = 0, refused = 0, lost = 0;
	for (auto &j : jobs)
	{
		if (j.second->state != "completed")
			continue;
		int64_t tc = j.second->token;
		int64_t sent = CompletionSent(run, j.first, tc);
		for (const Event *g : claims[j.first])
			if (g->token > tc && sent >= 0 && lost_claims.Lost(*g, sent))
				excused.insert({j.first, g->token});
			else if (g->token > tc)
				Problem(r, j.first + " completed by token " + Tok(tc) + ", but " + g->worker +
							   " claimed it with token " + Tok(g->token) + " at " +
							   Ms(g->complete));
		for (const EffectRow *e : effects[j.first])
			if (e->token != tc)
				Problem(r, j.first + " completed by token " + Tok(tc) + ", but its effect op " +
							   e->op + " was written with token " + Tok(e->token));
	}
	for (auto &e : run.events)
	{
		if (e.type != "complete" || e.kind != "job")
			continue;
		if (e.outcome == "stale" || e.outcome == "false")
			refused++;
		if (e.outcome == "applied")
		{
			acked++;
			for (const Event *g : claims[e.name])
				if (g->token <= e.token || g->complete < 0 || g->complete >= e.invoke)
					continue;
				else if (lost_claims.Lost(*g, e.invoke))
					excused.insert({e.name, g->token});
				else
					Problem(r, e.name + ": completion by token " + Tok(e.token) + " (" + e.worker +
								   ", op " + e.op + ") committed after " + g->worker +
								   " was granted token " + Tok(g->token) + " at " +
								   Ms(g->complete));
			auto j = jobs.find(e.name);
			if (j != jobs.end() && j->second->state == "completed" && j->second->token == e.token)
				continue;
			lost++;
			if (!run.async)
				Problem(r, e.name + ": " + e.worker + "'s completion by token " + Tok(e.token) +
							   " committed at " + Ms(e.complete) + ", but the job is " +
							   (j == jobs.end()
									? std::string("not on the final primary")
									: j->second->state + " by token " + Tok(j->second->token)));
		}
		else if (e.outcome != "unknown" && effect_ops.count(e.op))
			Problem(r, e.name + ": completion by token " + Tok(e.token) + " (" + e.worker +
						   ", op " + e.op + ") was reported " + e.outcome +
						   ", but its effect committed");
	}
	r.summary =
		Tok(acked) + " completions acknowledged, " + Tok(refused) +
		" refused (stale token or false)" +
		(run.async ? ", " + Tok(lost) + " lost by a failover (asynchronous: counted)" : "") + ", " +
		Tok(excused.size()) +
		" newer claims lost by a restart or failover (docs/queue.md, Durability: counted)";
	return r;
}

CheckResult
CheckNoJobLost(const Run &run)
{
	CheckResult                   r;
	std::map<std::string, size_t> states;
	r.name = "no job lost";
	for (auto &j : run.jobs)
	{
		states[j.state]++;
		if (!Finished(j.state))
			Problem(r, "job/" + Tok(j.id) + " (op " + j.op + ") is " + j.state +
						   " after the drain (attempt " + Tok(j.attempt) + ", token " +
						   Tok(j.token) + ")");
	}
	r.summary = Tok(run.jobs.size()) + " jobs:";
	for (auto &s : states)
		r.summary += " " + Tok(s.second) + " " + s.first;
	return r;
}

CheckResult
CheckEnqueuesDurable(const Run &run)
{
	CheckResult r;
	r.name = "acknowledged enqueues durable";
	std::set<std::string> ops;
	for (auto &j : run.jobs)
		if (j.state != "missing")
			ops.insert(j.op);
	size_t acked = 0, lost = 0;
	for (auto &e : run.events)
	{
		if (e.type != "enqueue" || e.outcome != "applied")
			continue;
		acked++;
		if (ops.count(e.op))
			continue;
		lost++;
		if (!run.async)
			Problem(r, "the enqueue of " + e.name + " (op " + e.op + ") by " + e.worker +
						   " committed at " + Ms(e.complete) + " is not on the final primary");
	}
	r.summary = Tok(acked) + " acknowledged, " + Tok(lost) + " lost" +
				(run.async ? " (asynchronous replication: counted, not failed)" : "");
	return r;
}

CheckResult
CheckKeysFinishedOnce(const Run &run)
{
	CheckResult r;
	r.name = "no key finished twice";
	auto                                              owners = Grants(run, "once");
	std::map<std::string, std::vector<const Event *>> finishes;
	std::map<std::string, const KeyRow *>             keys;
	for (auto &k : run.keys)
		keys[k.name] = &k;
	for (auto &e : run.events)
		if (e.type == "finish" && e.kind == "once" && e.outcome == "ok")
			finishes[e.name].push_back(&e);
	size_t lost = 0, done = 0;
	for (auto &f : finishes)
	{
		std::set<int64_t> tokens;
		const Event      *first = f.second.front();
		for (const Event *e : f.second)
		{
			tokens.insert(e->token);
			if (e->complete < first->complete)
				first = e;
		}
		/*
		 * Asynchronous replication: a finish committed on a primary that a
		 * failover left behind may be lost, and the key then owned and
		 * finished again on the new timeline.  Counted, not failed, when
		 * every earlier finish is of an older epoch (the token's high bits:
		 * docs/tokens.md) than the last one.
		 */
		if (tokens.size() > 1 && run.async)
		{
			const int64_t last = *tokens.rbegin();
			bool          older = true;
			for (int64_t t : tokens)
				if (t != last && (t >> 40) >= (last >> 40))
					older = false;
			if (older)
			{
				lost += tokens.size() - 1;
				tokens = {last};
			}
		}
		if (tokens.size() > 1)
		{
			std::string what = f.first + " finished by " + Tok(tokens.size()) + " owners:";
			for (const Event *e : f.second)
				what +=
					" [" + e->worker + " token " + Tok(e->token) + " at " + Ms(e->complete) + "]";
			Problem(r, what);
		}
		bool again = false;
		for (const Event *g : owners[f.first])
			if (g->invoke > first->complete)
			{
				again = true;
				if (!run.async)
					Problem(r, f.first + " finished by token " + Tok(first->token) + " at " +
								   Ms(first->complete) + ", then owned again by " + g->worker +
								   " with token " + Tok(g->token) + " at " + Ms(g->complete));
			}
		auto k = keys.find(f.first);
		bool kept =
			k != keys.end() && KeyDone(k->second->state) && k->second->token == first->token;
		if (!kept || again)
		{
			lost++;
			if (!run.async && !kept)
				Problem(r, f.first + ": " + first->worker + "'s finish by token " +
							   Tok(first->token) + " returned true, but the final primary has " +
							   (k == keys.end()
									? std::string("no such key")
									: k->second->state + " by token " + Tok(k->second->token)));
		}
	}
	for (auto &k : run.keys)
		done += KeyDone(k.state);
	r.summary = Tok(run.keys.size()) + " keys, " + Tok(done) + " done, " + Tok(finishes.size()) +
				" finished by a client" +
				(run.async ? ", " + Tok(lost) + " finishes lost by a failover (counted)" : "");
	return r;
}

CheckResult
CheckKeyEffects(const Run &run)
{
	CheckResult r;
	r.name = "no key effect by a superseded owner";
	auto   owners = Grants(run, "once");
	auto   effects = BySubject(run.key_effects);
	auto   ops = Ops(run.key_effects);
	size_t refused = 0, lost = 0;
	for (auto &s : effects)
	{
		if (s.second.size() > 1)
		{
			std::string what = s.first + ": effect applied " + Tok(s.second.size()) + " times:";
			for (const EffectRow *e : s.second)
				what += " [op " + e->op + " token " + Tok(e->token) + " at " + Ms(e->at) + "]";
			Problem(r, what);
		}
		for (const EffectRow *e : s.second)
			if (const Event *g = NewerGrantBefore(owners[s.first], e->token, e->at))
				Problem(r, s.first + ": effect op " + e->op + " by token " + Tok(e->token) +
							   " written at " + Ms(e->at) + ", after " + g->worker +
							   " took the key over with token " + Tok(g->token) + " at " +
							   Ms(g->complete));
	}
	for (auto &e : run.events)
		if (e.type == "effect" && e.kind == "once" && e.outcome != "applied" &&
			e.outcome != "unknown")
		{
			refused += e.outcome == "stale" || e.outcome == "false";
			if (ops.count(e.op))
				Problem(r, e.name + ": effect op " + e.op + " by token " + Tok(e.token) + " (" +
							   e.worker + ") was reported " + e.outcome + ", but it committed");
		}
	for (auto &k : run.keys)
		if (KeyDone(k.state) && !effects.count(k.name))
		{
			lost++;
			if (!run.async)
				Problem(r, k.name + " is done (token " + Tok(k.token) + ") without its effect");
		}
	r.summary = Tok(run.key_effects.size()) + " effects of " + Tok(effects.size()) + " keys, " +
				Tok(refused) + " refused" +
				(run.async ? ", " + Tok(lost) + " done keys without their effect (counted)" : "");
	return r;
}

} // namespace chaos
