/*-------------------------------------------------------------------------
 *
 * client/session_monitor.cpp
 *	  Catch2 tests of fence::SessionMonitor against a real server (libpq
 *	  defaults: the PG* variables of the throwaway cluster): a terminated
 *	  session is reported within seconds, a healthy one never; a check
 *	  hung on a frozen backend is a loss (kCheckTimeout) and is aborted; so
 *	  is a process frozen that long; suspend()/resume(); stop() and the
 *	  destructor return promptly.
 *
 * The frozen-backend tests stop the monitored connection's backend with
 * SIGSTOP (like a dead network: no answer, no error), so they need the
 * server on this machine and permission to signal it (root, or the
 * server's OS user); otherwise they are skipped with a warning.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/session_monitor.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using fence_test::EnsureExtension;
using fence_test::WaitFor;
using LossLog = fence_test::LossLog<fence::SessionLossReason>;

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_client_session_monitor", base);
}

void
Terminate(int pid)
{
	pqxx::connection     admin("");
	pqxx::nontransaction tx(admin);
	REQUIRE(ExecParams1(tx, "SELECT pg_terminate_backend($1, 5000)", pid)[0].as<bool>());
}

bool
StartsWith(const std::string &s, const std::string &prefix)
{
	return s.rfind(prefix, 0) == 0;
}

} // namespace

TEST_CASE(
	"SessionMonitor: pg_terminate_backend of the monitored session is reported within seconds",
	"[client][session_monitor]")
{
	EnsureExtension();
	pqxx::connection  conn("");
	const std::string name = Unique("terminated");
	auto              lock = fence::SessionLock::try_acquire(conn, name);
	REQUIRE(lock.has_value());

	LossLog                      log;
	fence::SessionMonitorOptions opts; /* the defaults: a check every 1 s, 3 s to answer */
	opts.on_lost = log.callback();
	fence::SessionMonitor monitor(conn, opts);
	CHECK_FALSE(monitor.lost());
	CHECK(monitor.message().empty());

	auto t0 = Clock::now();
	Terminate(conn.backendpid());
	REQUIRE(WaitFor([&] { return log.count() > 0; }, 5s));
	const auto took = Clock::now() - t0;
	CHECK(took < 2500ms); /* the next check, at most 1 s away, fails at once */
	CHECK(monitor.lost());
	{
		std::lock_guard<std::mutex> lk(log.mu);
		CHECK(log.reason == fence::SessionLossReason::kCheckFailed);
		INFO("message: " << log.message);
		CHECK(StartsWith(log.message, "lost the connection to the server: "));
		CHECK(log.message.find('\n') == std::string::npos);
		CHECK(monitor.message() == log.message);
	}
	/* Reported once; stays lost; the session's lock is free for others. */
	std::this_thread::sleep_for(1500ms);
	CHECK(log.count() == 1);
	CHECK(monitor.lost());
	monitor.stop();
	CHECK(monitor.lost());
	pqxx::connection other("");
	CHECK(fence::SessionLock::try_acquire(other, name).has_value());
	CHECK_FALSE(lock->held());
}

TEST_CASE(
	"SessionMonitor: a healthy session is never reported; after stop() the connection is the caller's again",
	"[client][session_monitor]")
{
	pqxx::connection             conn("");
	LossLog                      log;
	fence::SessionMonitorOptions opts;
	opts.check_interval = 50ms;
	opts.check_timeout = 1000ms;
	opts.on_lost = log.callback();
	fence::SessionMonitor monitor(conn, opts);
	std::this_thread::sleep_for(1500ms); /* about 30 checks */
	CHECK_FALSE(monitor.lost());
	CHECK(monitor.message().empty());
	CHECK(log.count() == 0);

	auto t0 = Clock::now();
	monitor.stop();
	CHECK(Clock::now() - t0 < 500ms);
	pqxx::nontransaction tx(conn);
	CHECK(Exec1(tx, "SELECT 1")[0].as<int>() == 1);

	/* Stopped: the clock no longer counts, even long past interval + timeout. */
	fence::SessionMonitorOptions quick;
	quick.check_interval = 20ms;
	quick.check_timeout = 30ms;
	pqxx::connection      conn2("");
	fence::SessionMonitor m2(conn2, quick);
	m2.stop();
	m2.stop(); /* idempotent */
	std::this_thread::sleep_for(200ms);
	CHECK_FALSE(m2.lost());
}

TEST_CASE("SessionMonitor: stop() and the destructor return promptly between checks",
		  "[client][session_monitor]")
{
	pqxx::connection conn("");
	{
		fence::SessionMonitor monitor(conn); /* next check 1 s away */
		std::this_thread::sleep_for(50ms);
		auto t0 = Clock::now();
		monitor.stop();
		CHECK(Clock::now() - t0 < 200ms);
	}
	auto t1 = Clock::now();
	{
		fence::SessionMonitor monitor(conn);
		std::this_thread::sleep_for(1100ms); /* one check done */
		t1 = Clock::now();
	} /* destructor */
	CHECK(Clock::now() - t1 < 200ms);
	pqxx::nontransaction tx(conn);
	CHECK(Exec1(tx, "SELECT 1")[0].as<int>() == 1);
}

TEST_CASE(
	"SessionMonitor: a check hung on a frozen backend is a loss at interval + timeout, and is aborted",
	"[client][session_monitor]")
{
	pqxx::connection             conn("");
	const int                    pid = conn.backendpid();
	LossLog                      log;
	fence::SessionMonitorOptions opts;
	opts.check_interval = 200ms;
	opts.check_timeout = 500ms;
	opts.on_lost = log.callback();
	fence::SessionMonitor monitor(conn, opts);
	std::this_thread::sleep_for(300ms); /* one check answered */
	CHECK_FALSE(monitor.lost());

	fence_test::FrozenBackend fb(pid);
	FENCE_TEST_SKIP_UNLESS_FROZEN(fb, pid);
	auto t0 = Clock::now();
	REQUIRE(WaitFor([&] { return monitor.lost(); }, 3s));
	/* At most interval + timeout after the last answer, which came before t0. */
	CHECK(Clock::now() - t0 < 900ms);
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::SessionLossReason::kCheckTimeout);
	CHECK(log.message == "connection check did not answer in time");
	CHECK(monitor.message() == "connection check did not answer in time");

	/* The backend is still frozen: stop() must not wait for it (the check was aborted). */
	auto t1 = Clock::now();
	monitor.stop();
	CHECK(Clock::now() - t1 < 300ms);
	CHECK(log.count() == 1);
	CHECK(monitor.lost());
}

TEST_CASE(
	"SessionMonitor: a process frozen past interval + timeout finds the session lost when it continues",
	"[client][session_monitor]")
{
	/* The frozen process is a child: it reports lost() and message() through a pipe. */
	int fds[2];
	REQUIRE(pipe(fds) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
	{
		close(fds[0]);
		char out = 'e'; /* error */
		try
		{
			pqxx::connection             conn("");
			fence::SessionMonitorOptions opts;
			opts.check_interval = 100ms;
			opts.check_timeout = 200ms;
			fence::SessionMonitor monitor(conn, opts);
			char                  ready = 'r';
			if (write(fds[1], &ready, 1) != 1)
				_exit(1);
			std::this_thread::sleep_for(1500ms); /* the parent freezes us for 800 ms of it */
			if (!monitor.lost())
				out = 'a'; /* alive */
			else
				out = monitor.message() == "connection check did not answer in time" ? 'L' : 'm';
			monitor.stop();
		}
		catch (...)
		{
		}
		ssize_t n = write(fds[1], &out, 1);
		(void) n;
		_exit(0);
	}
	close(fds[1]);
	char c = 0;
	REQUIRE(read(fds[0], &c, 1) == 1);
	REQUIRE(c == 'r');
	std::this_thread::sleep_for(200ms);
	REQUIRE(kill(pid, SIGSTOP) == 0);
	std::this_thread::sleep_for(800ms);
	kill(pid, SIGCONT);
	c = 0;
	CHECK(read(fds[0], &c, 1) == 1);
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	INFO("child answered '"
		 << c << "' (L: lost, no answer in time; a: alive; m: other message; e: error)");
	CHECK(c == 'L');
}

TEST_CASE(
	"SessionMonitor: while suspended, an unanswered check is no loss; resume() checks at once",
	"[client][session_monitor]")
{
	LossLog                      log;
	fence::SessionMonitorOptions opts;
	opts.check_interval = 100ms;
	opts.check_timeout = 300ms;
	opts.on_lost = log.callback();

	SECTION("the session survived the suspension: resume() is true")
	{
		pqxx::connection      conn("");
		const int             pid = conn.backendpid();
		fence::SessionMonitor monitor(conn, opts);
		monitor.suspend();
		{
			fence_test::FrozenBackend fb(pid);
			FENCE_TEST_SKIP_UNLESS_FROZEN(fb, pid);
			std::this_thread::sleep_for(
				900ms); /* twice interval + timeout, the check in flight hangs */
			CHECK_FALSE(monitor.lost());
			CHECK(log.count() == 0);
		}
		auto t0 = Clock::now();
		CHECK(monitor.resume());
		CHECK(Clock::now() - t0 < 300ms);
		CHECK_FALSE(monitor.lost());
		/* Counting again: still healthy a while later. */
		std::this_thread::sleep_for(600ms);
		CHECK_FALSE(monitor.lost());
		CHECK(log.count() == 0);
	}

	SECTION(
		"the session does not answer after the suspension: resume() aborts the check and is false")
	{
		pqxx::connection      conn("");
		const int             pid = conn.backendpid();
		fence::SessionMonitor monitor(conn, opts);
		monitor.suspend();
		fence_test::FrozenBackend fb(pid);
		FENCE_TEST_SKIP_UNLESS_FROZEN(fb, pid);
		std::this_thread::sleep_for(200ms);
		auto t0 = Clock::now();
		CHECK_FALSE(monitor.resume());
		const auto took = Clock::now() - t0;
		CHECK(took >= 250ms); /* waited for the answer, check_timeout */
		CHECK(took < 1500ms);
		CHECK(monitor.lost());
		REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
		INFO("message: " << monitor.message());
		CHECK(StartsWith(monitor.message(), "lost the connection to the server: "));
	}

	SECTION("a session terminated during the suspension: resume() is false")
	{
		pqxx::connection      conn("");
		fence::SessionMonitor monitor(conn, opts);
		monitor.suspend();
		Terminate(conn.backendpid());
		CHECK_FALSE(monitor.resume());
		CHECK(monitor.lost());
		CHECK(StartsWith(monitor.message(), "lost the connection to the server: "));
	}
}

TEST_CASE("SessionMonitor: moves; a throwing callback is ignored; bad arguments throw",
		  "[client][session_monitor]")
{
	pqxx::connection             conn("");
	fence::SessionMonitorOptions opts;
	opts.check_interval = 100ms;
	std::atomic<int> calls{0};
	opts.on_lost = [&](fence::SessionLossReason, const std::string &) {
		calls++;
		throw std::runtime_error("ignored");
	};
	fence::SessionMonitor first(conn, opts);
	fence::SessionMonitor monitor(std::move(first));
	CHECK_FALSE(first.lost());
	CHECK(first.message().empty());
	first.stop(); /* empty: does nothing */
	CHECK(first.resume());

	Terminate(conn.backendpid());
	REQUIRE(WaitFor([&] { return monitor.lost(); }, 3s));
	std::this_thread::sleep_for(300ms);
	CHECK(calls == 1);
	monitor = fence::SessionMonitor(std::move(monitor)); /* self-move through a temporary */
	CHECK(monitor.lost());
	monitor.stop();

	pqxx::connection             c2("");
	fence::SessionMonitorOptions bad;
	bad.check_interval = 0ms;
	CHECK_THROWS_AS(fence::SessionMonitor(c2, bad), std::invalid_argument);
	bad.check_interval = 1s;
	bad.check_timeout = -1ms;
	CHECK_THROWS_AS(fence::SessionMonitor(c2, bad), std::invalid_argument);
	fence::pqxx_compat::Close(c2);
	CHECK_THROWS_AS(fence::SessionMonitor(c2), pqxx::broken_connection);
}
