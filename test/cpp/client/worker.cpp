/*-------------------------------------------------------------------------
 *
 * client/worker.cpp
 *	  Catch2 tests of fence::Worker and fence::Job against a real server,
 *	  with several connections: a claim kept past its TTL by heartbeats and
 *	  completed; completion in the caller's transaction; a paused worker
 *	  whose claim expired loses (lost signal, FN001 from complete, its
 *	  fenced write stale) while the new claimant completes; rescue when the
 *	  claimant session is terminated; a heartbeat refused after a cancel;
 *	  fail with retry_at; an unfinished Job destroyed; an interrupted wait;
 *	  bad arguments; and examples/queue_worker.cpp, compiled in and run.
 *
 * Skipped (with a warning) when the server's pg_fence has no job queue.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/worker.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"

/* The example, compiled into the tests and run by the last test case. */
#define main queue_worker_example_main
#include "../../../examples/queue_worker.cpp"
#undef main

using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fence_test::WaitFor;

#define REQUIRE_QUEUE() \
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.claim(text,interval,integer,interval,text)")

std::string
Queue(const std::string &base)
{
	return fence_test::Unique("test_client_worker", base);
}

std::int64_t
EnqueueJob(const std::string &queue, const std::string &payload = "{\"n\": 1}")
{
	pqxx::connection c("");
	pqxx::work       tx(c);
	auto             id = ExecParams1(tx, "SELECT fence.enqueue($1, $2::jsonb)", queue, payload)[0]
				  .as<std::int64_t>();
	tx.commit();
	return id;
}

/* One column of the job's fence.jobs row, as text ("" for NULL). */
std::string
JobField(std::int64_t id, const std::string &column)
{
	pqxx::connection     c("");
	pqxx::nontransaction tx(c);
	auto r = ExecParams1(tx, "SELECT (" + column + ")::text FROM fence.jobs WHERE id = $1", id);
	return r[0].is_null() ? "" : r[0].c_str();
}

struct JobLossLog
{
	std::mutex        mu;
	int               calls = 0;
	std::int64_t      id = 0;
	fence::LossReason reason{};

	fence::JobLossCallback
	callback()
	{
		return [this](std::int64_t job, fence::LossReason r, const std::string &) {
			std::lock_guard<std::mutex> lk(mu);
			calls++;
			id = job;
			reason = r;
		};
	}
	int
	count()
	{
		std::lock_guard<std::mutex> lk(mu);
		return calls;
	}
};

} // namespace

TEST_CASE("Worker: a claimed job is kept past its TTL by heartbeats, then completed",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string    q = Queue("basic");
	const std::int64_t   id = EnqueueJob(q, "{\"to\": \"ann\"}");
	fence::WorkerOptions o;
	o.ttl = 1200ms; /* heartbeats every 400 ms, the first one on a new connection */
	o.holder = "catch2 worker";
	fence::Worker w("", q, o);
	CHECK(w.queue() == q);
	CHECK(w.backend_pid() > 0);
	auto jobs = w.claim(5, 2s);
	REQUIRE(jobs.size() == 1);
	fence::Job &job = jobs[0];
	CHECK(job.id() == id);
	CHECK(job.attempt() == 1);
	CHECK(job.token() > 0);
	CHECK(job.queue() == q);
	CHECK(job.payload() == "{\"to\": \"ann\"}");
	CHECK(JobField(id, "state") == "running");
	CHECK(JobField(id, "token") == std::to_string(job.token()));
	CHECK(JobField(id, "holder") == "catch2 worker");

	std::this_thread::sleep_for(3000ms); /* 2.5 TTLs */
	CHECK_FALSE(job.lost());
	CHECK(job.heartbeats() >= 2);
	CHECK_FALSE(job.loss_token().stop_requested());
	CHECK(JobField(id, "claimed_until > clock_timestamp()") == "true");

	CHECK(job.complete("{\"sent\": true}"));
	CHECK(job.finished());
	CHECK_FALSE(job.lost());
	CHECK(job.loss_token().stop_requested());
	CHECK(JobField(id, "state") == "completed");
	CHECK(JobField(id, "result") == "{\"sent\": true}");
	CHECK_THROWS_AS(job.complete(), std::logic_error);
	/* nothing else to claim */
	CHECK(w.claim(1).empty());
}

TEST_CASE("Worker: complete(tx) commits the job's effects and its completion together",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string  q = Queue("tx");
	const std::int64_t id = EnqueueJob(q);
	pqxx::connection   c("");
	{
		pqxx::work tx(c);
		tx.exec("CREATE TABLE IF NOT EXISTS test_worker_effects (job_id bigint, token bigint)");
		tx.commit();
	}
	fence::Worker w("", q);
	auto          jobs = w.claim();
	REQUIRE(jobs.size() == 1);

	SECTION("rolled back: neither the effect nor the completion; the job is claimed again at "
			"expiry")
	{
		{
			pqxx::work tx(c);
			tx.exec("INSERT INTO test_worker_effects VALUES (" + std::to_string(id) + ", 0)");
			CHECK(jobs[0].complete(tx));
			/* no commit */
		}
		CHECK(jobs[0].finished());
		CHECK(JobField(id, "state") == "running");
		pqxx::nontransaction n(c);
		CHECK(ExecParams1(n, "SELECT count(*) FROM test_worker_effects WHERE job_id = $1", id)[0]
				  .as<int>() == 0);
	}
	SECTION("committed: both")
	{
		pqxx::work tx(c);
		tx.exec("INSERT INTO test_worker_effects VALUES (" + std::to_string(id) + ", " +
				std::to_string(jobs[0].token()) + ")");
		CHECK(jobs[0].complete(tx, "{\"n\": 2}"));
		tx.commit();
		CHECK(JobField(id, "state") == "completed");
		CHECK(JobField(id, "result") == "{\"n\": 2}");
		pqxx::nontransaction n(c);
		CHECK(ExecParams1(n, "SELECT count(*) FROM test_worker_effects WHERE job_id = $1", id)[0]
				  .as<int>() == 1);
	}
}

TEST_CASE("Worker: a paused worker whose claim expired loses; the new claimant completes",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string  q = Queue("zombie");
	const std::int64_t id = EnqueueJob(q);
	pqxx::connection   c("");
	{
		pqxx::work tx(c);
		tx.exec("CREATE TABLE IF NOT EXISTS test_worker_rows"
				" (id bigint PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0)");
		tx.exec("INSERT INTO test_worker_rows (id, v) VALUES (" + std::to_string(id) +
				", 'new') ON CONFLICT DO NOTHING");
		tx.commit();
	}
	JobLossLog           log;
	fence::WorkerOptions paused_o;
	paused_o.ttl = 400ms;
	paused_o.heartbeat_interval = 1h; /* it never heartbeats: a paused worker */
	paused_o.on_lost = log.callback();
	fence::Worker paused("", q, paused_o);
	auto          a = paused.claim(1, 2s);
	REQUIRE(a.size() == 1);

	/* Another worker, waiting in the server, gets the job once the claim expires. */
	fence::WorkerOptions o;
	o.ttl = 10s;
	fence::Worker     other("", q, o);
	Clock::time_point t0 = Clock::now();
	auto              b = other.claim(1, 5s);
	REQUIRE(b.size() == 1);
	CHECK(Clock::now() - t0 < 2s);
	CHECK(b[0].id() == id);
	CHECK(b[0].attempt() == 2);
	CHECK(b[0].token() > a[0].token());

	/* The lost signal fired (the local deadline passed without a heartbeat). */
	CHECK(a[0].lost());
	CHECK(a[0].loss_token().stop_requested());
	CHECK(WaitFor([&] { return log.count() == 1; }, 2s));
	CHECK(log.id == id);
	CHECK(log.reason == fence::LossReason::kDeadline);

	/* The new claimant writes and completes. */
	{
		pqxx::work tx(c);
		CHECK(fence::fenced_update(tx, "test_worker_rows", {{"id", id}}, b[0].token(),
								   {{"v", "new claimant"}}) == fence::UpdateResult::kApplied);
		CHECK(b[0].complete(tx));
		tx.commit();
	}
	/* The paused worker wakes up: its write is stale, its completion raises FN001. */
	{
		pqxx::work tx(c);
		CHECK(fence::fenced_update(tx, "test_worker_rows", {{"id", id}}, a[0].token(),
								   {{"v", "zombie"}}) == fence::UpdateResult::kStale);
		try
		{
			a[0].complete(tx);
			FAIL("complete with a superseded token succeeded");
		}
		catch (const pqxx::sql_error &e)
		{
			CHECK(e.sqlstate() == "FN001");
		}
	}
	CHECK(a[0].finished());
	CHECK(a[0].lost());
	{
		pqxx::nontransaction n(c);
		CHECK(ExecParams1(n, "SELECT v FROM test_worker_rows WHERE id = $1", id)[0]
				  .as<std::string>() == "new claimant");
	}
	CHECK(JobField(id, "state") == "completed");
	CHECK(JobField(id, "attempt") == "2");
	CHECK(JobField(id, "token") == std::to_string(b[0].token()));
}

TEST_CASE("Worker: complete() and fail() without a transaction refuse a superseded claim",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string    q = Queue("zombie2");
	const std::int64_t   id = EnqueueJob(q);
	const std::int64_t   id2 = EnqueueJob(q);
	fence::WorkerOptions paused_o;
	paused_o.ttl = 300ms;
	paused_o.heartbeat_interval = 1h;
	fence::Worker paused("", q, paused_o);
	auto          a = paused.claim(2);
	REQUIRE(a.size() == 2);
	CHECK(a[0].id() == id);
	CHECK(a[1].id() == id2);
	fence::Worker other("", q);
	auto          b = other.claim(2, 5s);
	REQUIRE(b.size() == 2);
	try
	{
		a[0].complete();
		FAIL("complete with a superseded token succeeded");
	}
	catch (const pqxx::sql_error &e)
	{
		CHECK(e.sqlstate() == "FN001");
	}
	CHECK(a[0].lost());
	CHECK(a[0].finished());
	CHECK_THROWS_AS(a[0].fail("late"), std::logic_error);
	CHECK_FALSE(a[1].fail("late failure of a superseded claim"));
	CHECK(a[1].lost());
	CHECK(JobField(id2, "state") == "running");
	CHECK(JobField(id2, "last_error") == "");
	CHECK(b[0].complete());
	CHECK_FALSE(b[0].lost());
	CHECK(b[1].complete());
	CHECK(JobField(id, "state") == "completed");
	CHECK(JobField(id2, "state") == "completed");
}

TEST_CASE("Worker: a terminated claimant session is rescued at once, not at TTL",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string    q = Queue("terminated");
	const std::int64_t   id = EnqueueJob(q);
	JobLossLog           log;
	fence::WorkerOptions o;
	o.ttl = 20s;
	o.heartbeat_interval = 200ms;
	o.on_lost = log.callback();
	fence::Worker w("", q, o);
	auto          a = w.claim();
	REQUIRE(a.size() == 1);
	{
		pqxx::connection     c("");
		pqxx::nontransaction tx(c);
		ExecParams1(tx, "SELECT pg_terminate_backend($1)", w.backend_pid());
	}
	fence::Worker     other("", q);
	Clock::time_point t0 = Clock::now();
	auto              b = other.claim(1, 10s);
	REQUIRE(b.size() == 1);
	CHECK(Clock::now() - t0 < 5s); /* far less than the 20 s TTL */
	CHECK(b[0].id() == id);
	CHECK(b[0].token() > a[0].token());
	/* The old claim's next heartbeat is refused: the lost signal fires. */
	CHECK(WaitFor([&] { return a[0].lost(); }, 3s));
	CHECK(log.count() == 1);
	CHECK(log.reason == fence::LossReason::kRefused);
	CHECK_THROWS_AS(a[0].complete(), pqxx::sql_error);
	CHECK(b[0].complete());
	/* The first worker's next claim reports the lost session; the one after connects again. */
	EnqueueJob(q);
	CHECK_THROWS_AS(w.claim(1, 2s), pqxx::broken_connection);
	CHECK(w.backend_pid() == 0);
	auto again = w.claim(1, 2s);
	CHECK(again.size() == 1);
	CHECK(w.backend_pid() > 0);
	if (!again.empty())
		CHECK(again[0].complete());
}

TEST_CASE("Worker: a cancelled job's heartbeat is refused and the loss reported",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string    q = Queue("cancelled");
	const std::int64_t   id = EnqueueJob(q);
	JobLossLog           log;
	fence::WorkerOptions o;
	o.ttl = 3s; /* a heartbeat every second: refused long before the deadline */
	o.on_lost = log.callback();
	fence::Worker w("", q, o);
	auto          a = w.claim();
	REQUIRE(a.size() == 1);
	auto stop = a[0].loss_token();
	{
		pqxx::connection     c("");
		pqxx::nontransaction tx(c);
		CHECK(ExecParams1(tx, "SELECT fence.cancel($1)", id)[0].as<bool>());
	}
	CHECK(WaitFor([&] { return stop.stop_requested(); }, 4s));
	CHECK(a[0].lost());
	CHECK(log.count() == 1);
	CHECK(log.reason == fence::LossReason::kRefused);
	CHECK(JobField(id, "state") == "cancelled");
}

TEST_CASE("Worker: fail() with retry_at requeues the job; the next claim is attempt 2",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string  q = Queue("fail");
	const std::int64_t id = EnqueueJob(q);
	fence::Worker      w("", q);
	auto               a = w.claim();
	REQUIRE(a.size() == 1);
	auto retry_at = std::chrono::system_clock::now() + 1s;
	CHECK(a[0].fail("exit status 3; stderr: boom", retry_at));
	CHECK(a[0].finished());
	CHECK_FALSE(a[0].lost());
	CHECK(JobField(id, "state") == "queued");
	CHECK(JobField(id, "last_error") == "exit status 3; stderr: boom");
	CHECK(JobField(id, "abs(extract(epoch FROM run_at - pg_catalog.to_timestamp(" +
						   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
											  retry_at.time_since_epoch())
											  .count()) +
						   " / 1000.0))) < 0.01") == "true");
	CHECK(w.claim().empty()); /* not before retry_at */
	auto b = w.claim(1, 5s);
	REQUIRE(b.size() == 1);
	CHECK(b[0].attempt() == 2);
	CHECK(b[0].token() > a[0].token());
	CHECK(b[0].complete());
}

TEST_CASE("Worker: an unfinished Job destroyed fails its job (abandoned)", "[client][worker]")
{
	REQUIRE_QUEUE();
	const std::string  q = Queue("abandoned");
	const std::int64_t id = EnqueueJob(q);
	fence::Worker      w("", q);
	{
		auto a = w.claim();
		REQUIRE(a.size() == 1);
		fence::Job moved = std::move(a[0]);
		CHECK(a[0].id() == 0);
		CHECK(moved.id() == id);
	}
	CHECK(JobField(id, "state") == "queued");
	CHECK(JobField(id, "attempt") == "1");
	CHECK(JobField(id, "last_error LIKE 'abandoned%'") == "true");
}

TEST_CASE("Worker: interrupt_fd ends a waiting claim at once; the session stays",
		  "[client][worker]")
{
	REQUIRE_QUEUE();
	int fds[2];
	REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
	const std::string    q = Queue("interrupt");
	fence::WorkerOptions o;
	o.interrupt_fd = fds[0];
	fence::Worker     w("", q, o);
	const int         pid = w.backend_pid();
	std::thread       poke([&] {
        std::this_thread::sleep_for(300ms);
        char one = 1;
        (void) !write(fds[1], &one, 1);
    });
	Clock::time_point t0 = Clock::now();
	auto              jobs = w.claim(1, 20s);
	poke.join();
	CHECK(jobs.empty());
	CHECK(Clock::now() - t0 < 5s);
	CHECK(w.backend_pid() == pid);
	char buf[4];
	(void) !read(fds[0], buf, sizeof buf);
	const std::int64_t id = EnqueueJob(q);
	auto               next = w.claim(1, 2s);
	REQUIRE(next.size() == 1);
	CHECK(next[0].id() == id);
	CHECK(next[0].complete());
	close(fds[0]);
	close(fds[1]);
}

TEST_CASE("Worker: bad arguments are refused before anything is claimed", "[client][worker]")
{
	REQUIRE_QUEUE();
	fence::WorkerOptions o;
	o.ttl = 2ms;
	CHECK_THROWS_AS(fence::Worker("", "q", o), std::invalid_argument);
	CHECK_THROWS_AS(fence::Worker("", ""), std::invalid_argument);
	CHECK_THROWS_AS(fence::Worker("", std::string(1025, 'q')), std::invalid_argument);
	o = {};
	o.safety_margin = 40s;
	CHECK_THROWS_AS(fence::Worker("", "q", o), std::invalid_argument);
	fence::Worker w("", Queue("args"));
	CHECK_THROWS_AS(w.claim(0), std::invalid_argument);
	CHECK_THROWS_AS(w.claim(1001), std::invalid_argument);
	CHECK_THROWS_AS(w.claim(1, -1ms), std::invalid_argument);
	/* A TTL the server refuses: 22023. */
	{
		pqxx::connection     c("");
		pqxx::nontransaction tx(c);
		std::string          max = tx.exec("SHOW fence.max_lease_ttl")[0][0].c_str();
		INFO("fence.max_lease_ttl = " << max);
	}
	fence::WorkerOptions huge;
	huge.ttl = std::chrono::hours(24 * 365 * 20);
	fence::Worker big("", Queue("args"), huge);
	try
	{
		big.claim();
		FAIL("a TTL above fence.max_lease_ttl was accepted");
	}
	catch (const pqxx::sql_error &e)
	{
		CHECK(e.sqlstate() == "22023");
	}
}

TEST_CASE("Worker: examples/queue_worker.cpp runs: one e-mail per job, the zombie refused",
		  "[client][worker][example]")
{
	REQUIRE_QUEUE();
	char  arg0[] = "queue_worker";
	char *argv[] = {arg0, nullptr};
	CHECK(queue_worker_example_main(1, argv) == 0);
}
