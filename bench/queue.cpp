/*-------------------------------------------------------------------------
 *
 * queue.cpp
 *	  Job queue load driver (bench/queue.sh): pg_fence's fence.claim /
 *	  fence.complete against a hand-written SKIP LOCKED queue with the same
 *	  durability, with the same client code (libpq, one thread and one
 *	  connection per worker, prepared statements).
 *
 * Modes:
 *
 *   --mode throughput --system fence|sl --tx one|two --batch B --workers N
 *            --queue Q --max-seconds S
 *       N workers take the jobs already queued in Q (bench/queue.sh enqueued
 *       them) until a claim returns none, or until S seconds have passed.
 *       Each job's handler is one UPDATE of bench_effect (the row named by
 *       the payload's "k").  --tx one: BEGIN; claim up to B jobs; for each,
 *       the UPDATE and the completion; COMMIT.  --tx two: the claim commits
 *       on its own first (the job is seen running), then BEGIN; effects and
 *       completions; COMMIT.
 *         fence: SELECT ... FROM fence.claim(Q, '30 s', B); fence.complete(id, token)
 *         sl:    UPDATE sl_jobs SET state = 'running', ... WHERE id IN
 *                (SELECT id ... ORDER BY priority DESC, run_at, id
 *                 LIMIT B FOR UPDATE SKIP LOCKED) RETURNING id, payload;
 *                UPDATE sl_jobs SET state = 'completed', ... WHERE id = $1
 *       Output: jobs_done  seconds (from the moment every worker was
 *       connected and prepared to the last completion's commit)
 *
 *   --mode latency --workers N --samples M --gap-min MS --gap-spread MS
 *       enqueue -> start latency with waiting workers: N workers wait in
 *       fence.claim(Q, '30 s', 1, wait => '10 s'); one enqueuer calls
 *       fence.enqueue(Q, {"seq": i}) every gap-min + uniform [0, gap-spread)
 *       ms.  A worker that gets a job notes the time and completes it.
 *       Output, one line per job: seq  after_ack_us  after_send_us
 *       With --worker-commit async the workers run with synchronous_commit
 *       = off (a diagnosis: what the claim's own commit flush costs; the
 *       enqueuer's commits stay durable)
 *
 *   --mode rescue-kill --samples M
 *       A child process connects, claims the only job of Q with a 60 s TTL
 *       and waits; a worker of this process waits in fence.claim(Q, '60 s',
 *       1, wait => '10 s'); the child is killed (SIGKILL, as a crashed
 *       worker) and the time until the waiting worker gets the job is noted.
 *       Output, one line per sample: delay_us (from kill() to the claim's
 *       return)  scan_us (from kill() to the instant the waiting claim took
 *       the job: its lease's start, claimed_until - ttl, server clock; the
 *       same machine's wall clock as kill()'s)
 *
 *   --mode rescue-ttl --samples M --ttl-ms T
 *       A holder connection claims the only job with a TTL of T ms and stays
 *       connected, doing nothing; a worker waits in fence.claim(..., wait).
 *       Output, one line per sample: late_us (the wall clock at which the
 *       waiting worker's claim returned, minus the claimed_until of the
 *       holder's claim as fence.jobs shows it)  scan_late_us (the instant
 *       the waiting claim took the job, its lease's start, minus the same
 *       claimed_until: without the claim's commit and the way back)
 *
 *   --mode backlog --queues A,B --claims M
 *       One client claims (fence.claim(Q, '30 s')) and completes a job in one
 *       transaction, M times, alternating between the queues.  Output, one
 *       line per claim: queue  latency_us
 *
 * PostgreSQL connection: the libpq environment (PGHOST, ...).  Exit status 1
 * on any error (the message goes to stderr).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  bench/queue.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Options
{
	std::string mode = "throughput";
	std::string system = "fence";
	std::string tx = "one";
	std::string queue = "bench";
	std::string queues;
	int         batch = 1;
	int         workers = 1;
	double      max_seconds = 60;
	int         samples = 100;
	int         gap_min_ms = 5;
	int         gap_spread_ms = 20;
	int         ttl_ms = 300;
	int         claims = 1000;
	unsigned    seed = 1;
	bool        worker_async_commit = false; /* latency: the workers' commits asynchronous */
};

long long
WallMicros()
{
	return std::chrono::duration_cast<std::chrono::microseconds>(
			   std::chrono::system_clock::now().time_since_epoch())
		.count();
}

long long
Micros(Clock::duration d)
{
	return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

class Conn
{
public:
	Conn()
	{
		conn_ = PQconnectdb("");
		if (PQstatus(conn_) != CONNECTION_OK)
			throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn_));
	}
	~Conn() { PQfinish(conn_); }
	Conn(const Conn &) = delete;
	Conn &operator=(const Conn &) = delete;

	void
	Prepare(const char *name, const char *sql)
	{
		PGresult *res = PQprepare(conn_, name, sql, 0, nullptr);
		Check(res, PGRES_COMMAND_OK, name);
		PQclear(res);
	}

	/* Runs a prepared statement; returns its result (the caller clears it). */
	PGresult *
	Run(const char *name, std::initializer_list<const char *> params,
		ExecStatusType want = PGRES_TUPLES_OK)
	{
		std::vector<const char *> p(params);
		PGresult                 *res =
			PQexecPrepared(conn_, name, static_cast<int>(p.size()), p.data(), nullptr, nullptr, 0);
		Check(res, want, name);
		return res;
	}

	void
	Exec(const char *sql)
	{
		PGresult      *res = PQexec(conn_, sql);
		ExecStatusType st = PQresultStatus(res);
		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		{
			std::string err = PQresultErrorMessage(res);
			PQclear(res);
			throw std::runtime_error(std::string(sql) + ": " + err);
		}
		PQclear(res);
	}

	std::string
	Value(const char *sql)
	{
		PGresult *res = PQexec(conn_, sql);
		Check(res, PGRES_TUPLES_OK, sql);
		std::string v = PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";
		PQclear(res);
		return v;
	}

	/* The raw connection, for asynchronous calls (PQsendQuery). */
	PGconn *
	Raw()
	{
		return conn_;
	}

private:
	static void
	Check(PGresult *res, ExecStatusType want, const char *what)
	{
		if (PQresultStatus(res) != want)
		{
			std::string err = PQresultErrorMessage(res);
			PQclear(res);
			throw std::runtime_error(std::string(what) + ": " + err);
		}
	}

	PGconn *conn_ = nullptr;
};

/* The "k" of a payload like {"k": 123}. */
std::string
PayloadKey(const char *payload)
{
	const char *p = std::strstr(payload, "\"k\"");
	if (p == nullptr)
		throw std::runtime_error(std::string("payload without k: ") + payload);
	p += 3;
	while (*p == ' ' || *p == ':')
		p++;
	return std::string(p, std::strspn(p, "0123456789"));
}

long long
PayloadSeq(const char *payload)
{
	const char *p = std::strstr(payload, "\"seq\"");
	if (p == nullptr)
		throw std::runtime_error(std::string("payload without seq: ") + payload);
	p += 5;
	while (*p == ' ' || *p == ':')
		p++;
	return std::atoll(p);
}

/* ------------------------------------------------------------------------ */
/* throughput */

void
PrepareWorker(Conn &c, const Options &o)
{
	c.Prepare("effect", "UPDATE bench_effect SET n = n + 1 WHERE id = $1::int");
	if (o.system == "fence")
	{
		c.Prepare("claim", "SELECT job_id, token, payload FROM fence.claim($1, '30 s', $2::int)");
		c.Prepare("complete", "SELECT fence.complete($1::bigint, $2::bigint)");
	}
	else if (o.system == "sl")
	{
		c.Prepare(
			"claim",
			"UPDATE sl_jobs j SET state = 'running', attempt = j.attempt + 1, locked_by = $3, "
			"locked_until = now() + interval '30 s' "
			"FROM (SELECT id FROM sl_jobs WHERE queue = $1 AND state = 'queued' AND run_at <= now() "
			"ORDER BY priority DESC, run_at, id LIMIT $2::int FOR UPDATE SKIP LOCKED) c "
			"WHERE j.id = c.id RETURNING j.id, 0::bigint, j.payload");
		c.Prepare(
			"complete",
			"UPDATE sl_jobs SET state = 'completed', finished_at = now(), locked_until = NULL "
			"WHERE id = $1::bigint AND state = 'running' AND $2::bigint IS NOT NULL");
	}
	else
		throw std::runtime_error("unknown --system " + o.system);
}

int
Throughput(const Options &o)
{
	std::atomic<long>              done{0};
	std::atomic<int>               ready{0};
	std::atomic<bool>              go{false};
	std::atomic<bool>              failed{false};
	std::mutex                     mu;
	std::string                    error;
	std::vector<Clock::time_point> last(o.workers);
	Clock::time_point              start;
	std::string                    batch = std::to_string(o.batch);

	auto worker = [&](int w) {
		try
		{
			Conn        c;
			std::string holder = "w" + std::to_string(w);
			PrepareWorker(c, o);
			ready++;
			while (!go.load())
				std::this_thread::yield();
			bool sl = o.system == "sl";
			for (;;)
			{
				if (Micros(Clock::now() - start) > o.max_seconds * 1e6 || failed.load())
					break;
				if (o.tx == "one")
					c.Exec("BEGIN");
				PGresult *jobs =
					sl ? c.Run("claim", {o.queue.c_str(), batch.c_str(), holder.c_str()})
					   : c.Run("claim", {o.queue.c_str(), batch.c_str()});
				int n = PQntuples(jobs);
				if (n == 0)
				{
					PQclear(jobs);
					if (o.tx == "one")
						c.Exec("COMMIT");
					break;
				}
				if (o.tx == "two")
					c.Exec("BEGIN");
				for (int i = 0; i < n; i++)
				{
					std::string k = PayloadKey(PQgetvalue(jobs, i, 2));
					PQclear(c.Run("effect", {k.c_str()}, PGRES_COMMAND_OK));
					PQclear(c.Run("complete", {PQgetvalue(jobs, i, 0), PQgetvalue(jobs, i, 1)},
								  sl ? PGRES_COMMAND_OK : PGRES_TUPLES_OK));
				}
				PQclear(jobs);
				c.Exec("COMMIT");
				last[w] = Clock::now();
				done += n;
			}
		}
		catch (const std::exception &e)
		{
			std::lock_guard<std::mutex> g(mu);
			error = e.what();
			failed = true;
			ready++;
		}
	};

	std::vector<std::thread> threads;
	for (int w = 0; w < o.workers; w++)
		threads.emplace_back(worker, w);
	while (ready.load() < o.workers)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	start = Clock::now();
	for (auto &l : last)
		l = start;
	go = true;
	for (auto &t : threads)
		t.join();
	if (failed)
	{
		std::fprintf(stderr, "queue: %s\n", error.c_str());
		return 1;
	}
	Clock::time_point end = *std::max_element(last.begin(), last.end());
	std::printf("%ld\t%.6f\n", done.load(), Micros(end - start) / 1e6);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* latency: enqueue -> start with waiting workers */

int
Latency(const Options &o)
{
	struct Sample
	{
		Clock::time_point send, ack, start;
	};
	std::vector<Sample> s(o.samples);
	std::atomic<int>    started{0};
	std::atomic<bool>   failed{false};
	std::atomic<int>    ready{0};
	std::mutex          mu;
	std::string         error;

	auto worker = [&]() {
		try
		{
			Conn c;
			/* diagnosis: what the claim's own commit flush costs (not what pg_fence does) */
			if (o.worker_async_commit)
				c.Exec("SET synchronous_commit = off");
			c.Prepare(
				"claim",
				"SELECT job_id, token, payload FROM fence.claim($1, '30 s', 1, wait => '10 s')");
			c.Prepare("complete", "SELECT fence.complete($1::bigint, $2::bigint)");
			ready++;
			while (!failed.load())
			{
				PGresult         *res = c.Run("claim", {o.queue.c_str()});
				Clock::time_point now = Clock::now();
				if (PQntuples(res) == 0)
				{
					PQclear(res);
					continue;
				}
				long long seq = PayloadSeq(PQgetvalue(res, 0, 2));
				if (seq < 0)
				{
					PQclear(c.Run("complete", {PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1)}));
					PQclear(res);
					return;
				}
				s[seq].start = now;
				started++;
				PQclear(c.Run("complete", {PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1)}));
				PQclear(res);
			}
		}
		catch (const std::exception &e)
		{
			std::lock_guard<std::mutex> g(mu);
			error = e.what();
			failed = true;
			ready++;
		}
	};
	std::vector<std::thread> threads;
	for (int w = 0; w < o.workers; w++)
		threads.emplace_back(worker);
	try
	{
		Conn c;
		c.Prepare("enqueue", "SELECT fence.enqueue($1, $2::jsonb)");
		while (ready.load() < o.workers)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		/* give the workers time to be waiting in the server */
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		std::mt19937                       rng(o.seed);
		std::uniform_int_distribution<int> spread(0, std::max(0, o.gap_spread_ms - 1));
		for (int i = 0; i < o.samples && !failed.load(); i++)
		{
			std::this_thread::sleep_for(std::chrono::milliseconds(o.gap_min_ms + spread(rng)));
			std::string payload = "{\"seq\": " + std::to_string(i) + "}";
			s[i].send = Clock::now();
			PQclear(c.Run("enqueue", {o.queue.c_str(), payload.c_str()}));
			s[i].ack = Clock::now();
		}
		for (int w = 0; w < o.workers; w++)
			PQclear(c.Run("enqueue", {o.queue.c_str(), "{\"seq\": -1}"}));
	}
	catch (const std::exception &e)
	{
		std::lock_guard<std::mutex> g(mu);
		error = e.what();
		failed = true;
	}
	for (auto &t : threads)
		t.join();
	if (failed)
	{
		std::fprintf(stderr, "queue: %s\n", error.c_str());
		return 1;
	}
	for (int i = 0; i < o.samples; i++)
		std::printf("%d\t%lld\t%lld\n", i, Micros(s[i].start - s[i].ack),
					Micros(s[i].start - s[i].send));
	return 0;
}

/* ------------------------------------------------------------------------ */
/* rescue after the claimant's session died, and after its TTL */

/* A waiter thread: one claim with wait; returns the moment it returned. */
struct Waiter
{
	std::thread                           thread;
	Clock::time_point                     got;
	std::chrono::system_clock::time_point got_wall;
	std::string                           error;
	int                                   rows = 0;
	long long scan_us = 0; /* when the claim took the job: epoch microseconds, server clock */
	std::atomic<bool> sent{false};

	void
	Start(Conn &c, const std::string &queue, const char *ttl)
	{
		thread = std::thread([this, &c, queue, ttl]() {
			try
			{
				std::string sql = std::string("SELECT job_id, token FROM fence.claim('") + queue +
								  "', '" + ttl + "', 1, wait => '10 s')";
				if (PQsendQuery(c.Raw(), sql.c_str()) != 1)
					throw std::runtime_error("send claim");
				sent = true;
				PGresult *res;
				PGresult *first = nullptr;
				while ((res = PQgetResult(c.Raw())) != nullptr)
				{
					if (first == nullptr)
					{
						got = Clock::now();
						got_wall = std::chrono::system_clock::now();
						first = res;
					}
					else
						PQclear(res);
				}
				if (first == nullptr || PQresultStatus(first) != PGRES_TUPLES_OK)
					throw std::runtime_error(std::string("claim: ") +
											 (first ? PQresultErrorMessage(first) : "no result"));
				rows = PQntuples(first);
				if (rows == 1)
				{
					std::string id = PQgetvalue(first, 0, 0);
					std::string sql2 =
						"SELECT fence.complete(" + id + ", " + PQgetvalue(first, 0, 1) + ")";
					PQclear(first);
					/* the instant the claim took the job (server clock): its lease's start */
					std::string q = "SELECT (extract(epoch FROM claimed_until - interval '" +
									std::string(ttl) +
									"') * 1000000)::bigint FROM fence.jobs WHERE id = " + id;
					scan_us = std::atoll(c.Value(q.c_str()).c_str());
					c.Exec(sql2.c_str());
				}
				else
					PQclear(first);
			}
			catch (const std::exception &e)
			{
				error = e.what();
			}
			sent = true;
		});
	}
};

std::string
Enqueue(Conn &c, const std::string &queue)
{
	return c.Value(("SELECT fence.enqueue('" + queue + "', '{\"k\": 1}')").c_str());
}

int
RescueKill(const Options &o)
{
	Conn admin;
	Conn wc;
	for (int i = 0; i < o.samples; i++)
	{
		Enqueue(admin, o.queue);
		int pipefd[2];
		if (pipe(pipefd) != 0)
			throw std::runtime_error("pipe");
		pid_t child = fork();
		if (child == 0)
		{
			close(pipefd[0]);
			/* the connection stays open until the process is killed */
			Conn *cc = nullptr;
			int   rc = 0;
			try
			{
				cc = new Conn();
				std::string got = cc->Value(
					("SELECT job_id FROM fence.claim('" + o.queue + "', '60 s', 1)").c_str());
				if (got.empty())
					rc = 2;
			}
			catch (const std::exception &e)
			{
				std::fprintf(stderr, "queue: child: %s\n", e.what());
				rc = 3;
			}
			char b = static_cast<char>(rc);
			if (write(pipefd[1], &b, 1) != 1)
				_exit(4);
			for (;;)
				pause();
		}
		close(pipefd[1]);
		char b = 9;
		if (read(pipefd[0], &b, 1) != 1 || b != 0)
		{
			kill(child, SIGKILL);
			waitpid(child, nullptr, 0);
			throw std::runtime_error("the child's claim failed");
		}
		close(pipefd[0]);
		Waiter w;
		w.Start(wc, o.queue, "60 s");
		while (!w.sent.load())
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		/* the waiter is in the server (its claim found the job running) */
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		Clock::time_point killed = Clock::now();
		long long         killed_wall = WallMicros();
		kill(child, SIGKILL);
		w.thread.join();
		waitpid(child, nullptr, 0);
		if (!w.error.empty())
			throw std::runtime_error(w.error);
		if (w.rows != 1)
			throw std::runtime_error("the waiter got no job within 10 s of the kill");
		std::printf("%lld\t%lld\n", Micros(w.got - killed), w.scan_us - killed_wall);
		std::fflush(stdout);
	}
	return 0;
}

int
RescueTtl(const Options &o)
{
	Conn        admin;
	Conn        holder;
	Conn        wc;
	std::string ttl = std::to_string(o.ttl_ms) + " ms";
	for (int i = 0; i < o.samples; i++)
	{
		Enqueue(admin, o.queue);
		std::string id = holder.Value(
			("SELECT job_id FROM fence.claim('" + o.queue + "', '" + ttl + "', 1)").c_str());
		if (id.empty())
			throw std::runtime_error("the holder's claim got no job");
		std::string until = admin.Value(
			("SELECT (extract(epoch FROM claimed_until) * 1000000)::bigint FROM fence.jobs WHERE id = " +
			 id)
				.c_str());
		Waiter w;
		w.Start(wc, o.queue, "60 s");
		w.thread.join();
		if (!w.error.empty())
			throw std::runtime_error(w.error);
		if (w.rows != 1)
			throw std::runtime_error("the waiter got no job within 10 s");
		long long got_us =
			std::chrono::duration_cast<std::chrono::microseconds>(w.got_wall.time_since_epoch())
				.count();
		long long expiry = std::atoll(until.c_str());
		std::printf("%lld\t%lld\n", got_us - expiry, w.scan_us - expiry);
		std::fflush(stdout);
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* claim latency against the backlog */

int
Backlog(const Options &o)
{
	std::vector<std::string> queues;
	std::stringstream        ss(o.queues);
	for (std::string q; std::getline(ss, q, ',');)
		queues.push_back(q);
	if (queues.empty())
		throw std::runtime_error("--queues missing");
	Conn c;
	c.Prepare("claim", "SELECT job_id, token, payload FROM fence.claim($1, '30 s', 1)");
	c.Prepare("complete", "SELECT fence.complete($1::bigint, $2::bigint)");
	for (int i = 0; i < o.claims; i++)
	{
		const std::string &q = queues[i % queues.size()];
		Clock::time_point  t0 = Clock::now();
		c.Exec("BEGIN");
		PGresult *res = c.Run("claim", {q.c_str()});
		if (PQntuples(res) != 1)
			throw std::runtime_error("queue " + q + " ran out of jobs");
		PQclear(c.Run("complete", {PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1)}));
		PQclear(res);
		c.Exec("COMMIT");
		std::printf("%s\t%lld\n", q.c_str(), Micros(Clock::now() - t0));
	}
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; i++)
	{
		std::string a = argv[i];
		if (i + 1 >= argc)
		{
			std::fprintf(stderr, "queue: %s needs a value\n", a.c_str());
			return 2;
		}
		std::string v = argv[++i];
		if (a == "--mode")
			o.mode = v;
		else if (a == "--system")
			o.system = v;
		else if (a == "--tx")
			o.tx = v;
		else if (a == "--queue")
			o.queue = v;
		else if (a == "--queues")
			o.queues = v;
		else if (a == "--batch")
			o.batch = std::atoi(v.c_str());
		else if (a == "--workers")
			o.workers = std::atoi(v.c_str());
		else if (a == "--max-seconds")
			o.max_seconds = std::atof(v.c_str());
		else if (a == "--samples")
			o.samples = std::atoi(v.c_str());
		else if (a == "--gap-min")
			o.gap_min_ms = std::atoi(v.c_str());
		else if (a == "--gap-spread")
			o.gap_spread_ms = std::atoi(v.c_str());
		else if (a == "--ttl-ms")
			o.ttl_ms = std::atoi(v.c_str());
		else if (a == "--claims")
			o.claims = std::atoi(v.c_str());
		else if (a == "--worker-commit")
			o.worker_async_commit = v == "async";
		else if (a == "--seed")
			o.seed = static_cast<unsigned>(std::atoi(v.c_str()));
		else
		{
			std::fprintf(stderr, "queue: unknown option %s\n", a.c_str());
			return 2;
		}
	}
	try
	{
		if (o.mode == "throughput")
			return Throughput(o);
		if (o.mode == "latency")
			return Latency(o);
		if (o.mode == "rescue-kill")
			return RescueKill(o);
		if (o.mode == "rescue-ttl")
			return RescueTtl(o);
		if (o.mode == "backlog")
			return Backlog(o);
		std::fprintf(stderr, "queue: unknown --mode %s\n", o.mode.c_str());
		return 2;
	}
	catch (const std::exception &e)
	{
		std::fprintf(stderr, "queue: %s\n", e.what());
		return 1;
	}
}
