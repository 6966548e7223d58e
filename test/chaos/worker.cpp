/*-------------------------------------------------------------------------
 *
 * worker.cpp
 *	  chaos_worker: one client of the chaos test.  Until its deadline it
 *	  takes locks of every kind on a few names and writes the resources they
 *	  guard with the token it got, recording every grant and every write
 *	  attempt with its outcome (history.hpp).
 *
 *	  chaos_worker --id N --conninfo STR --seconds S --out FILE
 *	               [--resources R] [--ttl-ms MS] [--seed X]
 *	  chaos_worker --burst N --conninfo STR --out FILE   (see Burst)
 *
 * A round: pick a kind and a name: chaos/lK for a lease, chaos/sK for a
 * session or xact lock (leases have their own namespace, so they guard
 * resources of their own: lK, sK), then
 *   lease    lease_acquire (waiting up to the TTL in the server), read the
 *            lease's granted_at / expires_at in the granting transaction,
 *            then 1-6 times: sleep, write, and after every second write
 *            lease_renew (stop if refused), then lease_release;
 *   session  fence.lock (1 s), the same writes, fence.unlock;
 *   xact     BEGIN; fence.xact_lock; one write; COMMIT.
 * Locks and leases are taken on one connection and written with on
 * another, as real applications do: a session lock lost with its
 * connection (pg_terminate_backend) or a lease that expired while the
 * worker was stopped (SIGSTOP) leaves the worker a zombie that still
 * writes with its old token, and those writes must be rejected.  The
 * worker deliberately writes before it renews, so a resumed zombie's first
 * acts are stale writes.
 *
 * A write presents the token one of four ways, chosen at random:
 *   guarded  BEGIN; SET LOCAL fence.token; UPDATE chaos.guarded ...; COMMIT
 *   fu       fence.fenced_update(chaos.fu, ..., allow_equal => true)
 *   ledger   BEGIN; SET LOCAL fence.token; INSERT INTO chaos.ledger ...
 *            (guarded with resource_columns); COMMIT
 *   advance  BEGIN; fence.advance('chaos/<resource>', token); the audit row; COMMIT
 * Each carries a unique op id, which the server-side audit (schema.sql)
 * records when the write commits.
 *
 * Bounded: every loop ends at the deadline (--seconds) or at SIGTERM,
 * whichever comes first, after the call in flight; the orchestrator
 * (chaos.sh) kills a worker that is still stuck in a call 20 s later.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/worker.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "history.hpp"
#include "pq.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace chaos {
namespace {

/* SIGTERM from the orchestrator: finish the call in flight and stop. */
volatile std::sig_atomic_t g_stop = 0;

extern "C" void
OnTerm(int)
{
	g_stop = 1;
}

struct Options
{
	int         id = 0;
	std::string conninfo;
	double      seconds = 30;
	std::string out;
	int         resources = 3;
	int         ttl_ms = 1000;
	unsigned    seed = 0;
	int         burst = 0;
};

/*
 * --burst N: one transaction that takes N xact locks (chaos/burst/1..N) in
 * one statement and records every token it saw as a grant of worker
 * "burst".  The nemesis runs it while an asynchronous standby lags before
 * a failover: N above the token allocator's chunk (4096) makes the primary
 * log a new ceiling the standby never receives, so a promoted server that
 * only continued the token sequence would hand these tokens out again.
 */
int
Burst(const Options &o, FILE *out)
{
	PGconn *c = PQconnectdb(o.conninfo.c_str());
	if (PQstatus(c) != CONNECTION_OK)
	{
		PQfinish(c);
		return 1;
	}
	Event e;
	e.type = "grant";
	e.kind = "xact";
	e.worker = "burst";
	e.invoke = NowMicros();
	PQclear(PQexec(c, "BEGIN"));
	std::string sql = "SELECT i, fence.try_xact_lock('chaos/burst/' || i) FROM "
					  "pg_catalog.generate_series(1, " +
					  std::to_string(o.burst) + ") AS i";
	PGresult *res = PQexec(c, sql.c_str());
	e.complete = NowMicros();
	int rc = 1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
	{
		for (int i = 0; i < PQntuples(res); i++)
		{
			e.name = std::string("chaos/burst/") + PQgetvalue(res, i, 0);
			e.token = std::stoll(PQgetvalue(res, i, 1));
			WriteEvent(out, e);
		}
		rc = 0;
	}
	PQclear(res);
	PQclear(PQexec(c, "COMMIT"));
	PQfinish(c);
	return rc;
}

const char *const kTargets[] = {"guarded", "fu", "ledger", "advance"};

class Worker
{
public:
	Worker(const Options &o, FILE *out)
		: o_(o), out_(out), lock_(o.conninfo), data_(o.conninfo),
		  rng_(o.seed ? o.seed : static_cast<unsigned>(NowMicros()) + o.id),
		  name_("w" + std::to_string(o.id))
	{
		deadline_ = NowMicros() + static_cast<int64_t>(o.seconds * 1e6);
	}

	void
	Run()
	{
		while (Running())
		{
			if (!lock_.Ensure() || !data_.Ensure())
			{
				Sleep(100);
				continue;
			}
			std::string k = std::to_string(Pick(o_.resources));
			int         kind = Pick(10);
			if (kind < 5)
				LeaseRound("l" + k);
			else if (kind < 8)
				SessionRound("s" + k);
			else
				XactRound("s" + k);
			Sleep(10 + Pick(40));
		}
	}

private:
	int
	Pick(int n)
	{
		return std::uniform_int_distribution<int>(0, n - 1)(rng_);
	}

	bool
	Running() const
	{
		return !g_stop && NowMicros() < deadline_;
	}

	/* Sleeps ms, in steps of 10 ms so that a stop is seen at once. */
	void
	Sleep(int ms)
	{
		int64_t until = NowMicros() + ms * int64_t(1000);
		while (Running() && NowMicros() < until)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}

	Event
	Base(const char *type, const char *kind, const std::string &name, int64_t token)
	{
		Event e;
		e.type = type;
		e.kind = kind;
		e.name = name;
		e.token = token;
		e.worker = name_;
		return e;
	}

	std::string
	NextOp()
	{
		return name_ + "-" + std::to_string(++ops_);
	}

	static std::string
	LockName(const std::string &res)
	{
		return "chaos/" + res;
	}

	/*
	 * The statements of one write, inside an open transaction.  Returns
	 * "applied" (not yet committed), "stale", "notoken" or "error"; a lost
	 * connection is "error" here: without COMMIT nothing was applied.
	 */
	std::string
	Body(Conn &c, const std::string &target, const std::string &res, int64_t token,
		 const std::string &op)
	{
		std::string t = std::to_string(token);
		Reply       r;
		if (target == "guarded" || target == "ledger")
		{
			r = c.Exec("SET LOCAL fence.token = " + t);
			if (r.ok)
				r = c.Exec(target == "guarded" ? "UPDATE chaos.guarded SET val = val + 1, op = '" +
													 op + "' WHERE id = '" + res + "'"
											   : "INSERT INTO chaos.ledger (stream, op) VALUES ('" +
													 res + "', '" + op + "')");
			if (r.ok)
				return r.status == "UPDATE 1" || r.status == "INSERT 0 1" ? "applied" : "error";
		}
		else if (target == "fu")
		{
			r = c.Exec("SELECT fence.fenced_update('chaos.fu', '{\"id\": \"" + res + "\"}', " + t +
					   ", '{\"val\": " + std::to_string(ops_) + ", \"op\": \"" + op +
					   "\"}', allow_equal => true)");
			if (r.ok)
				return r.value == "t" ? "applied" : "stale";
		}
		else
		{
			r = c.Exec("SELECT fence.advance('" + LockName(res) + "', " + t + ")");
			if (r.ok && r.value != "t")
				return "stale";
			if (r.ok)
				r = c.Exec("INSERT INTO chaos.audit (target, resource, token, op) VALUES "
						   "('advance', '" +
						   res + "', " + t + ", '" + op + "')");
			if (r.ok)
				return "applied";
		}
		if (r.sqlstate == "FN001")
			return "stale";
		if (r.sqlstate == "FN003")
			return "notoken";
		return "error";
	}

	/* COMMIT of a transaction whose writes applied: applied or unknown. */
	static std::string
	Commit(Conn &c)
	{
		Reply r = c.Exec("COMMIT");
		if (r.ok)
			return r.status == "COMMIT" ? "applied" : "error";
		return r.lost ? "unknown" : "error";
	}

	/* One write in its own transaction on the data connection. */
	void
	Write(const std::string &res, int64_t token)
	{
		std::string target = kTargets[Pick(4)];
		Event       e = Base("write", target.c_str(), res, token);
		e.op = NextOp();
		e.invoke = NowMicros();
		if (!data_.Ensure())
		{
			e.outcome = "error";
		}
		else
		{
			Reply b = data_.Exec("BEGIN");
			/* A connection that died meanwhile (a restart, a failover, a
			 * terminated backend) is noticed here: connect again, as an
			 * application's pool would, and go on with the same token. */
			if (b.lost && data_.Ensure())
				b = data_.Exec("BEGIN");
			e.outcome = b.ok ? Body(data_, target, res, token, e.op) : "error";
			if (e.outcome == "applied")
				e.outcome = Commit(data_);
			else
				data_.Rollback();
		}
		e.complete = NowMicros();
		WriteEvent(out_, e);
	}

	/*
	 * 1-6 writes, 30-180 ms apart; a lease is renewed after every second
	 * one (its TTL covers two such gaps several times over), so a worker
	 * stopped past its TTL wakes up and makes one or two stale writes
	 * before its renewal tells it the lease is gone.
	 */
	void
	Writes(const std::string &res, int64_t token, bool lease)
	{
		int n = 1 + Pick(6);
		for (int i = 0; i < n && Running(); i++)
		{
			Sleep(30 + Pick(150));
			Write(res, token);
			if (lease && i % 2 == 1 && !Renew(res, token))
				return;
		}
	}

	/* Returns true while the lease is still ours. */
	bool
	Renew(const std::string &res, int64_t token)
	{
		Event e = Base("renew", "lease", LockName(res), token);
		e.invoke = NowMicros();
		Reply r = lock_.Exec("BEGIN");
		if (r.ok)
			r = lock_.Exec("SELECT fence.lease_renew('" + e.name + "', " + std::to_string(token) +
						   ", interval '" + std::to_string(o_.ttl_ms) + " ms')");
		bool renewed = r.ok && r.value == "t";
		if (renewed)
			r = lock_.Exec("SELECT (extract(epoch FROM expires_at) * 1000000)::bigint "
						   "FROM fence.leases WHERE name = '" +
						   e.name + "' AND token = " + std::to_string(token));
		if (renewed && r.ok)
			e.expires = std::stoll(r.value);
		if (renewed && r.ok)
		{
			Reply c = lock_.Exec("COMMIT");
			e.outcome = c.ok ? "ok" : (c.lost ? "unknown" : "lost");
		}
		else
		{
			e.outcome = r.lost ? "unknown" : "lost";
			lock_.Rollback();
		}
		e.complete = NowMicros();
		WriteEvent(out_, e);
		return e.outcome == "ok";
	}

	void
	LeaseRound(const std::string &res)
	{
		Event e = Base("grant", "lease", LockName(res), -1);
		e.invoke = NowMicros();
		Reply r = lock_.Exec("BEGIN");
		if (r.ok)
			r = lock_.Exec("SELECT fence.lease_acquire('" + e.name + "', interval '" +
						   std::to_string(o_.ttl_ms) + " ms', '" + name_ + "', interval '" +
						   std::to_string(o_.ttl_ms) + " ms')");
		if (!r.ok || r.null)
		{
			lock_.Rollback();
			if (r.ok)
			{
				Event b = Base("busy", "lease", e.name, -1);
				b.invoke = e.invoke;
				b.complete = NowMicros();
				WriteEvent(out_, b);
			}
			return;
		}
		int64_t token = std::stoll(r.value);
		r = lock_.Exec("SELECT (extract(epoch FROM granted_at) * 1000000)::bigint, "
					   "(extract(epoch FROM expires_at) * 1000000)::bigint "
					   "FROM fence.leases WHERE name = '" +
					   e.name + "' AND token = " + std::to_string(token));
		if (r.ok)
		{
			e.granted = std::stoll(r.value);
			e.expires = std::stoll(r.value2);
			r = lock_.Exec("COMMIT");
		}
		/* Not seen: the grant's commit (or the read before it) failed. */
		if (!r.ok || r.status != "COMMIT")
		{
			lock_.Rollback();
			return;
		}
		e.token = token;
		e.complete = NowMicros();
		WriteEvent(out_, e);

		Writes(res, token, true);

		Event rel = Base("release", "lease", e.name, token);
		rel.invoke = NowMicros();
		r = lock_.Exec("SELECT fence.lease_release('" + e.name + "', " + std::to_string(token) +
					   ")");
		rel.outcome = r.ok ? (r.value == "t" ? "ok" : "lost") : "unknown";
		rel.complete = NowMicros();
		WriteEvent(out_, rel);
	}

	void
	SessionRound(const std::string &res)
	{
		Event e = Base("grant", "session", LockName(res), -1);
		e.invoke = NowMicros();
		Reply r = lock_.Exec("SELECT fence.lock('" + e.name + "', interval '1 second')");
		if (!r.ok || r.null)
		{
			if (r.sqlstate == "55P03")
			{
				Event b = Base("busy", "session", e.name, -1);
				b.invoke = e.invoke;
				b.complete = NowMicros();
				WriteEvent(out_, b);
			}
			return;
		}
		e.token = std::stoll(r.value);
		e.complete = NowMicros();
		WriteEvent(out_, e);

		Writes(res, e.token, false);

		Event rel = Base("release", "session", e.name, e.token);
		rel.invoke = NowMicros();
		r = lock_.Exec("SELECT fence.unlock('" + e.name + "', " + std::to_string(e.token) + ")");
		rel.outcome = r.ok ? (r.value == "t" ? "ok" : "lost") : "unknown";
		rel.complete = NowMicros();
		WriteEvent(out_, rel);
	}

	void
	XactRound(const std::string &res)
	{
		Event e = Base("grant", "xact", LockName(res), -1);
		e.invoke = NowMicros();
		Reply r = data_.Exec("BEGIN");
		if (r.ok)
			r = data_.Exec("SELECT fence.xact_lock('" + e.name + "', interval '1 second')");
		if (!r.ok || r.null)
		{
			if (r.sqlstate == "55P03")
			{
				Event b = Base("busy", "xact", e.name, -1);
				b.invoke = e.invoke;
				b.complete = NowMicros();
				WriteEvent(out_, b);
			}
			data_.Rollback();
			return;
		}
		e.token = std::stoll(r.value);
		e.complete = NowMicros();
		WriteEvent(out_, e);

		std::string target = kTargets[Pick(4)];
		Event       w = Base("write", target.c_str(), res, e.token);
		w.op = NextOp();
		w.invoke = NowMicros();
		w.outcome = Body(data_, target, res, e.token, w.op);
		if (w.outcome == "applied")
			w.outcome = Commit(data_);
		else
			data_.Rollback();
		w.complete = NowMicros();
		WriteEvent(out_, w);

		Event rel = Base("release", "xact", e.name, e.token);
		rel.invoke = w.invoke;
		rel.complete = w.complete;
		rel.outcome = w.outcome == "unknown" ? "unknown" : "ok";
		WriteEvent(out_, rel);
	}

	Options      o_;
	FILE        *out_;
	Conn         lock_, data_;
	std::mt19937 rng_;
	std::string  name_;
	int64_t      deadline_ = 0;
	long         ops_ = 0;
};

int
Usage()
{
	std::fprintf(
		stderr, "usage: chaos_worker --id N --conninfo STR --seconds S --out FILE "
				"[--resources R] [--ttl-ms MS] [--seed X] | --burst N --conninfo STR --out FILE\n");
	return 2;
}

} // namespace
} // namespace chaos

int
main(int argc, char **argv)
{
	chaos::Options o;
	for (int i = 1; i + 1 < argc; i += 2)
	{
		std::string k = argv[i], v = argv[i + 1];
		if (k == "--id")
			o.id = std::atoi(v.c_str());
		else if (k == "--conninfo")
			o.conninfo = v;
		else if (k == "--seconds")
			o.seconds = std::atof(v.c_str());
		else if (k == "--out")
			o.out = v;
		else if (k == "--resources")
			o.resources = std::atoi(v.c_str());
		else if (k == "--ttl-ms")
			o.ttl_ms = std::atoi(v.c_str());
		else if (k == "--burst")
			o.burst = std::atoi(v.c_str());
		else if (k == "--seed")
			o.seed = static_cast<unsigned>(std::strtoul(v.c_str(), nullptr, 10));
		else
			return chaos::Usage();
	}
	if (o.conninfo.empty() || o.out.empty() || o.resources < 1 || o.ttl_ms < 100)
		return chaos::Usage();
	FILE *out = std::fopen(o.out.c_str(), "a");
	if (!out)
	{
		std::perror(o.out.c_str());
		return 1;
	}
	std::signal(SIGTERM, chaos::OnTerm);
	int rc = 0;
	if (o.burst > 0)
		rc = chaos::Burst(o, out);
	else
		chaos::Worker(o, out).Run();
	std::fclose(out);
	return rc;
}
