/*-------------------------------------------------------------------------
 *
 * history.hpp
 *	  The chaos test's recorded history: one event per line, tab separated,
 *	  written by the workers (worker.cpp) and the nemesis (nemesis.sh), read
 *	  by the checker (checker.cpp), together with the server-side audit
 *	  dumped from the final primary (schema.sql's audit_dump,
 *	  lease_audit_dump and holds_dump views).
 *
 * Every event line has the same eleven columns ("-" for none):
 *
 *   type kind name token worker invoke_us complete_us granted_us expires_us outcome op
 *
 *   grant    a lock or lease the worker saw granted: kind lease / election /
 *            semaphore (rows of fence.leases) or session / shared / xact
 *            (connection-bound), name, token; for a row of fence.leases
 *            the server's granted_at and expires_at as the server reported
 *            them in the granting transaction; for a semaphore permit, op
 *            is the permits the worker asked for
 *   renew    lease_renew (or a leader's campaign) of (name, token):
 *            outcome ok / lost / unknown; expires_us the server's new
 *            expiry when ok
 *   release  lease_release / resign / unlock of (name, token): outcome ok
 *            (true) / lost (false) / unknown; for xact, the COMMIT that
 *            ended the transaction: ok (committed), rollback (ended by an
 *            error) or unknown.  invoke is taken before the request is
 *            sent, so for a connection-bound lock released ok the worker
 *            held it at least from the grant's complete to this invoke
 *   busy     an acquire that returned no lock (NULL, 55P03): kind, name
 *   write    a write attempt: kind = target (guarded, fu, ledger, advance),
 *            name = resource, token presented, op = its unique id, outcome
 *            applied / stale (FN001, or fenced_update / advance returned
 *            false) / notoken (FN003) / error (an SQL error: not applied) /
 *            unknown (the connection was lost before the outcome arrived)
 *   pause    nemesis: worker stopped (SIGSTOP) from invoke to complete
 *   kill     nemesis: pg_terminate_backend of a worker's backend (name: pid)
 *   restart  nemesis: primary stopped immediately and started again
 *   failover nemesis: primary stopped immediately, standby promoted (name:
 *            the new primary's port); under Patroni, the primary killed
 *            until a replica takes writes
 *   switchover nemesis (Patroni): patronictl switchover, until the new
 *            primary takes writes
 *   crash    nemesis: the worker process (name: its pid) killed with
 *            SIGKILL, then started again (its history goes on in a new
 *            file, its op ids with a new prefix)
 *
 * The job queue (kind job, name job/ID; jobs.hpp):
 *   enqueue  fence.enqueue and the job's row, committed together: op = the
 *            job's op (its payload), outcome applied / unknown / error
 *   grant    a claim (fence.claim): token, op = the attempt
 *   renew    fence.heartbeat: outcome ok / false / unknown / error
 *   complete the effect and fence.complete in one transaction: op = the
 *            effect's op, outcome applied / stale (FN001) / false /
 *            unknown / error
 *   fail     fence.fail with a retry now: outcome ok / false / ...
 *   cancel   fence.cancel: outcome ok / false / ...
 * Idempotency keys (kind once, name once/KEY):
 *   grant    once_begin returned new: token, op = the step it reported
 *   begin    once_begin returned another status (outcome: in_progress,
 *            done, mismatch; op = the step)
 *   step     once_step(token, op): outcome ok / false / ...
 *   effect   the key's effect with once_step 'effect' in one transaction:
 *            op = the effect's op, outcome applied / stale / false /
 *            unknown / error
 *   finish   once_finish: outcome ok / false / unknown / error
 *   release  once_release: outcome ok / false / ...
 *
 * Worker "burst" (chaos_worker --burst) records thousands of xact grants
 * taken in one statement while an async standby lags: counted and checked,
 * not drawn.
 *
 * Times are microseconds since 1970 on the machine's clock, which is also
 * the server's (loopback only: one machine).  invoke is taken before the
 * request is sent, complete after its answer arrived.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/history.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_HISTORY_HPP
#define PG_FENCE_CHAOS_HISTORY_HPP

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace chaos {

struct Event
{
	std::string type, kind, name;
	int64_t     token = -1;
	std::string worker;
	int64_t     invoke = -1, complete = -1, granted = -1, expires = -1;
	std::string outcome, op;
};

/* An applied write, from chaos.audit_dump (the final primary). */
struct AuditRow
{
	int64_t     seq = 0, at = 0;
	std::string target, resource;
	int64_t     old_fence = -1; /* -1: not a row (ledger, advance) */
	int64_t     token = 0;
	std::string op;
};

/* A change of fence.leases, from chaos.lease_audit_dump. */
struct LeaseAuditRow
{
	int64_t     seq = 0, at = 0;
	std::string event, name;
	int64_t     token = 0;
	std::string holder;
	int64_t     granted = -1, expires = -1;
	int64_t     slot = 0, permits = -1; /* permits -1: a lease or a leadership */
	bool        elected = false;
};

/*
 * A row written by a backend while it held a connection-bound lock, from
 * chaos.holds_dump: event grant (in the granting statement) or beat.
 */
struct HoldRow
{
	int64_t     seq = 0, at = 0;
	std::string event, name;
	int64_t     token = 0;
	std::string mode, scope, worker; /* exclusive / shared, session / xact */
	int64_t     pid = 0, backend_start = 0;
};

/* A job after the drain, from chaos.jobs_dump (state missing: only its row). */
struct JobRow
{
	int64_t     id = 0;
	std::string state;
	int64_t     attempt = -1, token = -1;
	std::string op;
	int64_t     max_attempts = -1;
};

/* An applied effect of a job (chaos.job_effects_dump) or of a key (once_effects_dump). */
struct EffectRow
{
	int64_t     seq = 0, at = 0;
	std::string subject; /* job/ID or once/KEY */
	std::string target;  /* guard, fu; once */
	int64_t     token = 0;
	std::string op;
};

/* An idempotency key at the end, from chaos.once_keys_dump. */
struct KeyRow
{
	std::string name; /* once/KEY */
	std::string state;
	int64_t     token = -1;
	std::string step;
};

inline const char *
Dash(const std::string &s)
{
	return s.empty() ? "-" : s.c_str();
}

/* One line, written and flushed at once: a worker may be SIGKILLed. */
inline void
WriteEvent(FILE *out, const Event &e)
{
	std::fprintf(out, "%s\t%s\t%s\t%lld\t%s\t%lld\t%lld\t%lld\t%lld\t%s\t%s\n", Dash(e.type),
				 Dash(e.kind), Dash(e.name), static_cast<long long>(e.token), Dash(e.worker),
				 static_cast<long long>(e.invoke), static_cast<long long>(e.complete),
				 static_cast<long long>(e.granted), static_cast<long long>(e.expires),
				 Dash(e.outcome), Dash(e.op));
	std::fflush(out);
}

inline std::vector<std::string>
SplitTabs(const std::string &line)
{
	std::vector<std::string> f;
	std::string              cur;
	for (char c : line)
	{
		if (c == '\t')
		{
			f.push_back(cur == "-" ? std::string() : cur);
			cur.clear();
		}
		else if (c != '\r')
		{
			cur += c;
		}
	}
	f.push_back(cur == "-" ? std::string() : cur);
	return f;
}

inline int64_t
ToInt(const std::string &s)
{
	return s.empty() ? -1 : std::stoll(s);
}

/*
 * Reads a tab-separated file of ncols columns ("-" read as empty), one Row
 * per line made by parse.  A line of another width ends the reading with
 * false, unless skip_torn: then it is skipped, and so is a line parse
 * throws on (a worker killed while writing leaves a torn last line).
 * Returns false if the file cannot be opened.
 */
template <typename Row, typename Parse>
inline bool
ReadRows(const std::string &path, size_t ncols, bool skip_torn, std::vector<Row> &out, Parse parse)
{
	std::ifstream in(path);
	if (!in)
		return false;
	std::string line;
	while (std::getline(in, line))
	{
		auto f = SplitTabs(line);
		if (f.size() != ncols)
		{
			if (skip_torn)
				continue;
			return false;
		}
		if (!skip_torn)
		{
			out.push_back(parse(f));
			continue;
		}
		try
		{
			out.push_back(parse(f));
		}
		catch (const std::exception &)
		{
			continue;
		}
	}
	return true;
}

/* The events of a worker or of the nemesis; a torn last line is skipped. */
inline bool
ReadEvents(const std::string &path, std::vector<Event> &out)
{
	return ReadRows(path, 11, true, out, [](const std::vector<std::string> &f) {
		Event e;
		e.type = f[0];
		e.kind = f[1];
		e.name = f[2];
		e.token = ToInt(f[3]);
		e.worker = f[4];
		e.invoke = ToInt(f[5]);
		e.complete = ToInt(f[6]);
		e.granted = ToInt(f[7]);
		e.expires = ToInt(f[8]);
		e.outcome = f[9];
		e.op = f[10];
		return e;
	});
}

inline bool
ReadAudit(const std::string &path, std::vector<AuditRow> &out)
{
	return ReadRows(path, 7, false, out, [](const std::vector<std::string> &f) {
		AuditRow r;
		r.seq = ToInt(f[0]);
		r.at = ToInt(f[1]);
		r.target = f[2];
		r.resource = f[3];
		r.old_fence = ToInt(f[4]);
		r.token = ToInt(f[5]);
		r.op = f[6];
		return r;
	});
}

inline bool
ReadLeaseAudit(const std::string &path, std::vector<LeaseAuditRow> &out)
{
	return ReadRows(path, 11, false, out, [](const std::vector<std::string> &f) {
		LeaseAuditRow r;
		r.seq = ToInt(f[0]);
		r.at = ToInt(f[1]);
		r.event = f[2];
		r.name = f[3];
		r.token = ToInt(f[4]);
		r.holder = f[5];
		r.granted = ToInt(f[6]);
		r.expires = ToInt(f[7]);
		r.slot = ToInt(f[8]);
		r.permits = ToInt(f[9]);
		r.elected = f[10] == "1";
		return r;
	});
}

inline bool
ReadHolds(const std::string &path, std::vector<HoldRow> &out)
{
	return ReadRows(path, 10, false, out, [](const std::vector<std::string> &f) {
		HoldRow r;
		r.seq = ToInt(f[0]);
		r.at = ToInt(f[1]);
		r.event = f[2];
		r.name = f[3];
		r.token = ToInt(f[4]);
		r.mode = f[5];
		r.scope = f[6];
		r.worker = f[7];
		r.pid = ToInt(f[8]);
		r.backend_start = ToInt(f[9]);
		return r;
	});
}

inline bool
ReadJobs(const std::string &path, std::vector<JobRow> &out)
{
	return ReadRows(path, 6, false, out, [](const std::vector<std::string> &f) {
		JobRow r;
		r.id = ToInt(f[0]);
		r.state = f[1];
		r.attempt = ToInt(f[2]);
		r.token = ToInt(f[3]);
		r.op = f[4];
		r.max_attempts = ToInt(f[5]);
		return r;
	});
}

inline bool
ReadJobEffects(const std::string &path, std::vector<EffectRow> &out)
{
	return ReadRows(path, 6, false, out, [](const std::vector<std::string> &f) {
		EffectRow r;
		r.seq = ToInt(f[0]);
		r.at = ToInt(f[1]);
		r.subject = "job/" + f[2];
		r.target = f[3];
		r.token = ToInt(f[4]);
		r.op = f[5];
		return r;
	});
}

inline bool
ReadKeyEffects(const std::string &path, std::vector<EffectRow> &out)
{
	return ReadRows(path, 5, false, out, [](const std::vector<std::string> &f) {
		EffectRow r;
		r.seq = ToInt(f[0]);
		r.at = ToInt(f[1]);
		r.subject = "once/" + f[2];
		r.target = "once";
		r.token = ToInt(f[3]);
		r.op = f[4];
		return r;
	});
}

inline bool
ReadKeys(const std::string &path, std::vector<KeyRow> &out)
{
	return ReadRows(path, 4, false, out, [](const std::vector<std::string> &f) {
		KeyRow r;
		r.name = "once/" + f[0];
		r.state = f[1];
		r.token = ToInt(f[2]);
		r.step = f[3];
		return r;
	});
}

} // namespace chaos

#endif /* PG_FENCE_CHAOS_HISTORY_HPP */
