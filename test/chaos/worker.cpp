/*-------------------------------------------------------------------------
 *
 * worker.cpp
 *	  chaos_worker: one client of the chaos test.  Until its deadline it
 *	  takes locks of every kind on a few names and writes the resources they
 *	  guard with the token it got, recording every grant and every write
 *	  attempt with its outcome (history.hpp).
 *
 *	  chaos_worker --id N --conninfo STR --seconds S --out FILE
 *	               [--resources R] [--ttl-ms MS] [--seed X] [--incarnation I]
 *	  chaos_worker --burst N --conninfo STR --out FILE   (burst.hpp)
 *	  chaos_worker --drain S --id N --conninfo STR --out FILE [--ttl-ms MS]
 *
 * A round: pick a kind and a name (chaos/lK lease, chaos/e0 leadership,
 * chaos/m0 semaphore with 2 permits, chaos/sK session or xact lock, chaos/s0
 * shared lock; leases have their own namespace, so they guard resources of
 * their own: lK, e0, sK), then
 *   lease      lease_acquire (waiting up to the TTL in the server), read
 *              the lease's granted_at / expires_at in the granting
 *              transaction, then 1-6 times: sleep, write, and after every
 *              second write lease_renew (stop if refused); lease_release;
 *   election   the same with campaign, renewing half the time by
 *              campaigning again (the same term back, or a new term when
 *              the old one expired: recorded and resigned), and resign;
 *   semaphore  the same with semaphore_acquire, writing the resource of
 *              its slot (m0-0, m0-1);
 *   session    chaos.hold(fence.lock (1 s)), the same writes, each followed
 *              by chaos.beat on the lock's connection, fence.unlock;
 *   shared     the same with fence.lock_shared (sharers' tokens are
 *              ordered too: an older sharer's write after a newer one's is
 *              stale);
 *   xact       BEGIN; chaos.hold(fence.xact_lock); one write; chaos.beat;
 *              COMMIT;
 *   job        enqueue one or two jobs of the queue "chaos" (each with its
 *              row in chaos.job_rows, in one transaction), claim one
 *              (fence.claim with the TTL, waiting up to the TTL in the
 *              server), hold it a while (a heartbeat, now and then a nap
 *              past the TTL), then its effect and fence.complete in one
 *              transaction, or fence.fail (jobs.hpp);
 *   once       fence.once_begin of one of the two keys of the current five
 *              seconds; as the owner: a step, the key's effect with the
 *              step 'effect' in one transaction, once_finish (or
 *              once_release).
 * --incarnation I: the worker started again after a kill -9 (its op ids
 * get the prefix wN.I).  --drain S: after the chaos, claim and complete
 * the queue's jobs until none is queued or running (S seconds at most).
 * chaos.hold and chaos.beat (schema.sql) record the holding of a
 * connection-bound lock server-side, written by the backend that holds it.
 * Locks and leases are taken on one connection and written with on
 * another, as real applications do: a session lock lost with its
 * connection (pg_terminate_backend) or a lease that expired while the
 * worker was stopped (SIGSTOP) leaves the worker a zombie that still
 * writes with its old token, and those writes must be rejected.  The
 * worker deliberately writes before it renews, so a resumed zombie's first
 * acts are stale writes.  A write presents the token one of four ways
 * (writes.hpp), each with a unique op id that the server-side audit
 * (schema.sql) records when the write commits.
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
#include "burst.hpp"
#include "jobs.hpp"
#include "pq.hpp"
#include "writes.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
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
	int         incarnation = 0; /* restarts after a kill -9 (op ids stay unique) */
	double      drain = 0;       /* --drain S: only finish the queue's jobs */
};

/* The one semaphore's name and its permits. */
const char *const kSemaphore = "m0";
constexpr int     kPermits = 2;

/* Kinds held as rows of fence.leases (the rest are connection-bound). */
bool
IsLeaseKind(const std::string &kind)
{
	return kind == "lease" || kind == "semaphore" || kind == "election";
}

class Worker
{
public:
	Worker(const Options &o, FILE *out)
		: o_(o), out_(out), lock_(o.conninfo), data_(o.conninfo),
		  rng_(o.seed ? o.seed : static_cast<unsigned>(NowMicros()) + o.id),
		  name_("w" + std::to_string(o.id)),
		  op_prefix_(name_ + (o.incarnation ? "." + std::to_string(o.incarnation) : ""))
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
			int         kind = Pick(34);
			if (kind < 6)
				LeaseRound("lease", "l" + k);
			else if (kind < 10) /* one name: candidates compete, a deposed leader writes */
				LeaseRound("election", "e0");
			else if (kind < 13) /* held long: so that a third wants a permit */
				LeaseRound("semaphore", kSemaphore);
			else if (kind < 16)
				SessionRound("session", "s" + k);
			else if (kind < 18) /* one name, so that sharers meet */
				SessionRound("shared", "s0");
			else if (kind < 20)
				XactRound("s" + k);
			else if (kind < 28)
				JobRound();
			else
				OnceRound();
			Sleep(10 + Pick(40));
		}
	}

	/*
	 * The drain after the chaos: claims and completes the queue's jobs
	 * (effect and completion in one transaction, as a worker does) until no
	 * job is queued or running, or the deadline.  A claim of a worker that
	 * died is claimable at once, an expired one at its expiry.
	 */
	void
	Drain()
	{
		while (Running())
		{
			if (!lock_.Ensure() || !data_.Ensure())
			{
				Sleep(100);
				continue;
			}
			Reply r = lock_.Exec("SELECT count(*) FROM fence.jobs WHERE queue = '" +
								 std::string(kQueue) + "' AND state IN ('queued', 'running')");
			if (r.ok && r.value == "0")
				return;
			std::string job;
			int64_t     token = Claim(job);
			if (token > 0)
				Complete(job, token, "guard");
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

	/* Sleeps ms even past a stop (a zombie's nap: what it does next matters). */
	static void
	SleepThrough(int ms)
	{
		std::this_thread::sleep_for(std::chrono::milliseconds(ms));
	}

	Event
	Base(const char *type, const std::string &kind, const std::string &name, int64_t token)
	{
		Event e;
		e.type = type;
		e.kind = kind;
		e.name = name;
		e.token = token;
		e.worker = name_;
		return e;
	}

	/* An acquire (the grant event e, not completed) that got no lock. */
	void
	Busy(const Event &e)
	{
		Event b = Base("busy", e.kind, e.name, -1);
		b.invoke = e.invoke;
		b.complete = NowMicros();
		WriteEvent(out_, b);
	}

	std::string
	NextOp()
	{
		return op_prefix_ + "-" + std::to_string(++ops_);
	}

	static std::string
	LockName(const std::string &res)
	{
		return "chaos/" + res;
	}

	std::string
	Ttl() const
	{
		return "interval '" + std::to_string(o_.ttl_ms) + " ms'";
	}

	/*
	 * A beat of a connection-bound lock (schema.sql, chaos.beat): a row
	 * stamped with the server's clock, written by the holding backend while
	 * it holds the lock.  Not in the client's history; true if written.
	 */
	bool
	Beat(Conn &c, const std::string &name, int64_t token)
	{
		Reply r = c.Exec("SELECT chaos.beat('" + name + "', " + std::to_string(token) + ")");
		return r.ok && r.value == "t";
	}

	/* One write in its own transaction on the data connection. */
	void
	Write(const std::string &res, int64_t token)
	{
		std::string target = kTargets[Pick(4)];
		Event       e = Base("write", target, res, token);
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
			e.outcome = b.ok ? WriteBody(data_, target, res, token, e.op, ops_) : "error";
			if (e.outcome == "applied")
				e.outcome = Commit(data_);
			else
				data_.Rollback();
		}
		e.complete = NowMicros();
		WriteEvent(out_, e);
	}

	/*
	 * The holding of lock name: 1-6 steps, 30-180 ms apart (2-10 for a
	 * shared lock, 3-12 for a semaphore permit, so that they meet).  A step
	 * writes resource res with the token, renews a lease-table holding
	 * after every second step (its TTL covers two such gaps several times
	 * over), and beats a session or shared lock on the connection that
	 * holds it.  So a worker stopped past its TTL wakes up and makes one or
	 * two stale writes before its renewal tells it the holding is gone.
	 */
	void
	Hold(const std::string &kind, const std::string &name, const std::string &res, int64_t token)
	{
		int n = kind == "shared" ? 2 + Pick(9) : kind == "semaphore" ? 3 + Pick(10) : 1 + Pick(6);
		for (int i = 0; i < n && Running(); i++)
		{
			Sleep(30 + Pick(150));
			Write(res, token);
			if (IsLeaseKind(kind) && i % 2 == 1 && !Renew(kind, name, token))
				return;
			if (!IsLeaseKind(kind))
				Beat(lock_, name, token);
		}
	}

	/* The server's granted_at and expires_at of (name, token), in µs, and its slot. */
	bool
	ReadTimes(const std::string &name, int64_t token, int64_t &granted, int64_t &expires,
			  std::string *slot = nullptr)
	{
		Reply r = lock_.Exec("SELECT (extract(epoch FROM granted_at) * 1000000)::bigint, "
							 "(extract(epoch FROM expires_at) * 1000000)::bigint, slot "
							 "FROM fence.leases WHERE name = '" +
							 name + "' AND token = " + std::to_string(token));
		if (!r.ok || r.null)
			return false;
		granted = std::stoll(r.value);
		expires = std::stoll(r.value2);
		if (slot)
			*slot = r.value3;
		return true;
	}

	/*
	 * Renews a lease, a permit or a leadership; returns true while it is
	 * still ours.  Half the time a leader renews by campaigning again,
	 * which must return its own term (docs/elections.md, fence.campaign); a new term
	 * instead (its leadership had expired and nobody took over) is recorded
	 * as a grant and resigned at once.
	 */
	bool
	Renew(const std::string &kind, const std::string &name, int64_t token)
	{
		Event   e = Base("renew", kind, name, token);
		bool    again = kind == "election" && Pick(2) == 0;
		int64_t got = -1, granted = -1, expires = -1;
		e.invoke = NowMicros();
		Reply r = lock_.Exec("BEGIN");
		if (r.ok)
			r = lock_.Exec(again ? "SELECT fence.campaign('" + e.name + "', '" + name_ + "', " +
									   Ttl() + ")"
								 : "SELECT fence.lease_renew('" + e.name + "', " +
									   std::to_string(token) + ", " + Ttl() + ")");
		if (r.ok && again && !r.null)
			got = std::stoll(r.value);
		bool renewed = r.ok && (again ? got == token : r.value == "t");
		bool other = again && got > 0 && got != token;
		if ((renewed || other) && !ReadTimes(e.name, got > 0 ? got : token, granted, expires))
			renewed = other = false;
		if (renewed || other)
		{
			Reply c = lock_.Exec("COMMIT");
			e.outcome = !c.ok ? (c.lost ? "unknown" : "lost") : renewed ? "ok" : "lost";
			if (renewed)
				e.expires = expires;
			other = other && c.ok;
		}
		else
		{
			e.outcome = r.lost || !lock_.Pid() ? "unknown" : "lost";
			lock_.Rollback();
		}
		e.complete = NowMicros();
		WriteEvent(out_, e);
		if (other)
		{
			terms_[e.name] = got;
			Event g = Base("grant", kind, e.name, got);
			g.invoke = e.invoke;
			g.complete = e.complete;
			g.granted = granted;
			g.expires = expires;
			WriteEvent(out_, g);
			Release(kind, e.name, got);
		}
		return e.outcome == "ok";
	}

	void
	Release(const std::string &kind, const std::string &name, int64_t token)
	{
		Event rel = Base("release", kind, name, token);
		rel.invoke = NowMicros();
		Reply r = lock_.Exec(std::string("SELECT fence.") +
							 (kind == "election" ? "resign('" : "lease_release('") + name + "', " +
							 std::to_string(token) + ")");
		rel.outcome = r.ok ? (r.value == "t" ? "ok" : "lost") : "unknown";
		rel.complete = NowMicros();
		WriteEvent(out_, rel);
	}

	/* The statement that takes a lease, a permit or a leadership, waiting up to the TTL. */
	std::string
	AcquireSql(const std::string &kind, const std::string &name)
	{
		std::string who = "'" + name_ + "'";
		if (kind == "semaphore")
			return "SELECT fence.semaphore_acquire('" + name + "', " + std::to_string(kPermits) +
				   ", " + Ttl() + ", " + who + ", " + Ttl() + ")";
		if (kind == "election")
			return "SELECT fence.campaign('" + name + "', " + who + ", " + Ttl() + ", " + Ttl() +
				   ")";
		return "SELECT fence.lease_acquire('" + name + "', " + Ttl() + ", " + who + ", " + Ttl() +
			   ")";
	}

	/* A lease, a semaphore permit or a leadership (kind), held for a while. */
	void
	LeaseRound(const std::string &kind, const std::string &res)
	{
		Event e = Base("grant", kind, LockName(res), -1);
		e.invoke = NowMicros();
		Reply r = lock_.Exec("BEGIN");
		if (r.ok)
			r = lock_.Exec(AcquireSql(kind, e.name));
		if (!r.ok || r.null)
		{
			lock_.Rollback();
			if (r.ok)
				Busy(e);
			return;
		}
		int64_t     token = std::stoll(r.value);
		std::string slot;
		if (ReadTimes(e.name, token, e.granted, e.expires, &slot))
			r = lock_.Exec("COMMIT");
		/* Not seen: the grant's commit (or the read before it) failed. */
		if (!r.ok || r.status != "COMMIT")
		{
			lock_.Rollback();
			return;
		}
		e.token = token;
		e.complete = NowMicros();
		if (kind == "semaphore")
			e.op = std::to_string(kPermits); /* the permits asked for */
		/* Our term still (its resignation was lost with a connection): the
		 * campaign extended it, as a renewal does. */
		if (kind == "election" && terms_[e.name] == token)
		{
			e.type = "renew";
			e.outcome = "ok";
			e.granted = -1;
		}
		terms_[e.name] = token;
		WriteEvent(out_, e);

		/* A permit's holder writes the resource of its slot (m0-0, m0-1):
		 * permits' tokens are valid side by side, so fence per holder. */
		Hold(kind, e.name, kind == "semaphore" ? res + "-" + slot : res, token);
		Release(kind, e.name, token);
	}

	/*
	 * A session lock (kind session: fence.lock) or a shared one (shared:
	 * fence.lock_shared), granted in the statement that records it
	 * server-side (chaos.hold), beaten while held, released with unlock.
	 * The release is "ok" only when unlock returned true: then this one
	 * backend held the lock from the grant to the unlock.
	 */
	void
	SessionRound(const std::string &kind, const std::string &res)
	{
		bool  shared = kind == "shared";
		Event e = Base("grant", kind, LockName(res), -1);
		e.invoke = NowMicros();
		Reply r = lock_.Exec("SELECT chaos.hold('" + e.name + "', fence." +
							 (shared ? "lock_shared" : "lock") + "('" + e.name +
							 "', interval '1 second'), '" + (shared ? "shared" : "exclusive") +
							 "', 'session', '" + name_ + "')");
		if (!r.ok || r.null)
		{
			if (r.sqlstate == "55P03")
				Busy(e);
			else if (!r.ok && !r.lost) /* a lock taken but not recorded: let it go */
				lock_.Exec("SELECT fence.unlock_all()");
			return;
		}
		e.token = std::stoll(r.value);
		e.complete = NowMicros();
		WriteEvent(out_, e);

		Hold(kind, e.name, res, e.token);

		Event rel = Base("release", kind, e.name, e.token);
		rel.invoke = NowMicros();
		r = lock_.Exec("SELECT fence.unlock('" + e.name + "', " + std::to_string(e.token) + ")");
		rel.outcome = r.ok ? (r.value == "t" ? "ok" : "lost") : "unknown";
		rel.complete = NowMicros();
		WriteEvent(out_, rel);
		if (!r.ok && !r.lost) /* still held, maybe: not into the next round */
			lock_.Exec("SELECT fence.unlock_all()");
	}

	/*
	 * BEGIN; the xact lock, recorded server-side in the granting statement;
	 * one write; a beat; COMMIT.  The release is "ok" when the COMMIT
	 * committed (the lock was held until then), "rollback" when the
	 * transaction ended in an error, "unknown" when the connection broke.
	 */
	void
	XactRound(const std::string &res)
	{
		Event e = Base("grant", "xact", LockName(res), -1);
		e.invoke = NowMicros();
		Reply r = data_.Exec("BEGIN");
		if (r.ok)
			r = data_.Exec("SELECT chaos.hold('" + e.name + "', fence.xact_lock('" + e.name +
						   "', interval '1 second'), 'exclusive', 'xact', '" + name_ + "')");
		if (!r.ok || r.null)
		{
			if (r.sqlstate == "55P03")
				Busy(e);
			data_.Rollback();
			return;
		}
		e.token = std::stoll(r.value);
		e.complete = NowMicros();
		WriteEvent(out_, e);

		std::string target = kTargets[Pick(4)];
		Event       w = Base("write", target, res, e.token);
		w.op = NextOp();
		w.invoke = NowMicros();
		w.outcome = WriteBody(data_, target, res, e.token, w.op, ops_);
		if (w.outcome == "applied" && !Beat(data_, e.name, e.token))
			w.outcome = "error";
		Event rel = Base("release", "xact", e.name, e.token);
		rel.invoke = NowMicros();
		if (w.outcome == "applied")
		{
			w.outcome = Commit(data_);
			rel.outcome = w.outcome == "applied"   ? "ok"
						  : w.outcome == "unknown" ? "unknown"
												   : "rollback";
		}
		else
		{
			rel.outcome = data_.Pid() ? "rollback" : "unknown";
			data_.Rollback();
		}
		w.complete = rel.complete = NowMicros();
		WriteEvent(out_, w);
		WriteEvent(out_, rel);
	}

	/* "job/ID", the history's name of a job. */
	static std::string
	JobName(const std::string &id)
	{
		return "job/" + id;
	}

	/*
	 * Enqueues one job (payload {"op": OP}) and its row in chaos.job_rows,
	 * in one transaction on the data connection; returns the job id when
	 * it committed.  Recorded as an enqueue event (outcome applied, unknown
	 * or error; op the job's op, name the job when known).
	 */
	std::string
	Enqueue()
	{
		Event e = Base("enqueue", "job", "", -1);
		e.op = NextOp();
		e.invoke = NowMicros();
		std::string id;
		Reply       r = data_.Exec("BEGIN");
		if (r.lost && data_.Ensure())
			r = data_.Exec("BEGIN");
		if (r.ok)
			r = data_.Exec("SELECT fence.enqueue('" + std::string(kQueue) + "', '{\"op\": \"" +
						   e.op + "\"}', max_attempts => 8)");
		if (r.ok && !r.null)
		{
			id = r.value;
			e.name = JobName(id);
			r = data_.Exec("INSERT INTO chaos.job_rows (job_id, enqueue_op) VALUES (" + id + ", '" +
						   e.op + "')");
		}
		if (r.ok && !id.empty())
			e.outcome = Commit(data_);
		else
		{
			e.outcome = "error";
			data_.Rollback();
		}
		e.complete = NowMicros();
		WriteEvent(out_, e);
		return e.outcome == "applied" ? id : std::string();
	}

	/*
	 * Claims one job of the queue, waiting up to the TTL in the server:
	 * a grant event (kind job, name job/ID, token, op the attempt), and the
	 * token (0: none).
	 */
	int64_t
	Claim(std::string &job)
	{
		Event g = Base("grant", "job", "", -1);
		g.invoke = NowMicros();
		Reply r =
			lock_.Exec("SELECT job_id, token, attempt FROM fence.claim('" + std::string(kQueue) +
					   "', " + Ttl() + ", 1, wait => " + Ttl() + ", holder => '" + name_ + "')");
		if (!r.ok)
			return 0;
		if (r.null)
		{
			Busy(g);
			return 0;
		}
		job = r.value;
		g.name = JobName(job);
		g.token = std::stoll(r.value2);
		g.op = r.value3;
		g.complete = NowMicros();
		WriteEvent(out_, g);
		return g.token;
	}

	/* The effect and the completion, in one transaction (jobs.hpp). */
	void
	Complete(const std::string &job, int64_t token, const std::string &target)
	{
		Event e = Base("complete", "job", JobName(job), token);
		e.op = NextOp();
		e.invoke = NowMicros();
		e.outcome = data_.Ensure() ? EffectAndComplete(data_, target, job, token, e.op) : "error";
		e.complete = NowMicros();
		WriteEvent(out_, e);
	}

	/* A statement of a job or a key by its token: outcome ok (true), false, unknown, error. */
	void
	Call(const char *type, const std::string &kind, const std::string &name, int64_t token,
		 const std::string &sql, const std::string &op = std::string())
	{
		Event e = Base(type, kind, name, token);
		e.op = op;
		e.invoke = NowMicros();
		Reply r = lock_.Exec(sql);
		e.outcome = r.ok ? (r.value == "t" ? "ok" : "false") : r.lost ? "unknown" : "error";
		e.complete = NowMicros();
		WriteEvent(out_, e);
	}

	/*
	 * A queue round: enqueue a job two times in three (now and then
	 * cancelling it at once), claim one, hold it 2-6 steps of 30-180 ms (a heartbeat
	 * after the second), one time in four oversleep its claim, then complete
	 * it with its effect (nine times in ten: guard or fenced_update, at
	 * random) or fail it for a retry now.
	 * A worker paused past its claim's TTL goes on as a zombie: its
	 * heartbeat says false, and it still tries to complete, which must be
	 * refused with its effect.
	 */
	void
	JobRound()
	{
		/* Fewer enqueues than claims (two in three rounds): no backlog
		 * builds up, so an expired claim (due at its expiry, after the jobs
		 * queued before it) is claimed again soon. */
		if (Pick(3) > 0 && Running())
		{
			std::string id = Enqueue();
			if (!id.empty() && Pick(15) == 0)
				Call("cancel", "job", JobName(id), -1, "SELECT fence.cancel(" + id + ")");
		}
		std::string job;
		int64_t     token = Running() ? Claim(job) : 0;
		if (token <= 0)
			return;
		std::string t = std::to_string(token);
		for (int i = 0, n = 2 + Pick(5); i < n && Running(); i++)
		{
			Sleep(30 + Pick(150));
			if (i == 1)
				Call("renew", "job", JobName(job), token,
					 "SELECT fence.heartbeat(" + job + ", " + t + ", " + Ttl() + ")");
		}
		/* A handler slower than its claim, without a heartbeat (one time
		 * in four): another worker rescues the job meanwhile, and this one's
		 * completion, when it comes, must be refused with its effect. */
		if (Pick(4) == 0)
			SleepThrough(o_.ttl_ms * 2 + Pick(o_.ttl_ms));
		if (Pick(10) == 0)
			Call("fail", "job", JobName(job), token,
				 "SELECT fence.fail(" + job + ", " + t + ", 'chaos', now())");
		else
			Complete(job, token, Pick(2) ? "guard" : "fu");
	}

	/*
	 * An idempotency-key round on one of two keys of the current five
	 * seconds (so that workers meet on a key, and a paused owner's key is
	 * taken over): once_begin (one time in thirty with another
	 * fingerprint); as the owner: the step 'started' if none, one time in
	 * three a nap past the lease, the effect
	 * with the step 'effect' in one transaction (unless a previous owner's
	 * step says it is done), then once_finish, or one time in ten
	 * once_release.  An owner whose effect was refused does not finish.
	 */
	void
	OnceRound()
	{
		std::string key =
			"k" + std::to_string(NowMicros() / 5000000 % 1000000) + "-" + std::to_string(Pick(2));
		std::string name = "once/" + key;
		Event       g = Base("grant", "once", name, -1);
		g.invoke = NowMicros();
		Reply r = lock_.Exec("SELECT status, token, step FROM fence.once_begin('" + key + "', " +
							 Ttl() + ", '" + (Pick(30) ? "chaos" : "other") + "')");
		if (!r.ok || r.null)
			return;
		g.complete = NowMicros();
		if (r.value != "new")
		{
			g.type = "begin";
			g.outcome = r.value;
			g.op = r.value3;
			WriteEvent(out_, g);
			return;
		}
		g.token = std::stoll(r.value2);
		g.op = r.value3;
		WriteEvent(out_, g);
		std::string t = std::to_string(g.token), step = g.op;
		if (step.empty())
			Call("step", "once", name, g.token,
				 "SELECT fence.once_step('" + key + "', " + t + ", 'started')", "started");
		Sleep(30 + Pick(150));
		/* An owner slower than its lease (one time in three): another takes
		 * the key over meanwhile, and this one's effect must be refused. */
		if (Pick(3) == 0)
			SleepThrough(o_.ttl_ms * 2 + Pick(o_.ttl_ms));
		bool effect = step == "effect";
		if (!effect && Running())
		{
			Event e = Base("effect", "once", name, g.token);
			e.op = NextOp();
			e.invoke = NowMicros();
			e.outcome = lock_.Ensure() ? KeyEffect(lock_, key, g.token, e.op) : "error";
			e.complete = NowMicros();
			WriteEvent(out_, e);
			effect = e.outcome == "applied";
		}
		if (!effect || !Running())
			return;
		Sleep(30 + Pick(150));
		if (Pick(10) == 0)
			Call("release", "once", name, g.token,
				 "SELECT fence.once_release('" + key + "', " + t + ")");
		else
			Call("finish", "once", name, g.token,
				 "SELECT fence.once_finish('" + key + "', " + t + ", '{\"by\": \"" + name_ +
					 "\"}')");
	}

	Options                        o_;
	FILE                          *out_;
	Conn                           lock_, data_;
	std::mt19937                   rng_;
	std::string                    name_, op_prefix_;
	int64_t                        deadline_ = 0;
	long                           ops_ = 0;
	std::map<std::string, int64_t> terms_; /* per election name, our last term */
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
		else if (k == "--incarnation")
			o.incarnation = std::atoi(v.c_str());
		else if (k == "--drain")
			o.drain = std::atof(v.c_str());
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
		rc = chaos::Burst(o.conninfo, o.burst, out);
	else if (o.drain > 0)
	{
		o.seconds = o.drain;
		chaos::Worker(o, out).Drain();
	}
	else
		chaos::Worker(o, out).Run();
	std::fclose(out);
	return rc;
}
