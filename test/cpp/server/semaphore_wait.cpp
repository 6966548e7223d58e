/*-------------------------------------------------------------------------
 *
 * server/semaphore_wait.cpp
 *	  fence.semaphore_acquire: permits held by several real connections,
 *	  and waiting in the server for one (..., wait).
 *
 * The isolation tester cannot see a waiter sleeping on its latch, so the
 * waiting paths are tested here: a release of one permit wakes the head
 * waiter at once; an expiring permit does too; N waiters for N freed
 * permits all get one; holders on different connections and roles are
 * counted together.  Names are unique per run; every permit is released
 * or expires within the test.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/server/semaphore_wait.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch2_compat.hpp"
#include <pqxx/pqxx>

#include "pqxx_compat.hpp"
#include "test_util.hpp"
#include "waiter.hpp"

using fence::pqxx_compat::Exec0;
using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fence_test::ReleaseLease;
using fence_test::SqlWaiter;

#define REQUIRE_SEMAPHORES() \
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.semaphore_acquire(text,integer,interval,text,interval)")

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_sem_wait", base);
}

std::optional<std::int64_t>
Acquire(pqxx::connection &c, const std::string &name, int permits, const std::string &ttl,
		const std::string &wait = "")
{
	pqxx::nontransaction tx(c);
	pqxx::row            r =
        wait.empty()
					   ? ExecParams1(tx, "SELECT fence.semaphore_acquire($1, $2, $3::interval)", name, permits,
									 ttl)
					   : ExecParams1(
							 tx, "SELECT fence.semaphore_acquire($1, $2, $3::interval, NULL, $4::interval)",
							 name, permits, ttl, wait);
	if (r[0].is_null())
		return std::nullopt;
	return r[0].as<std::int64_t>();
}

/* Sets `w` (waiter.hpp) waiting in semaphore_acquire(name, permits, '1 hour', NULL, wait). */
void
StartAcquire(SqlWaiter &w, const std::string &name, int permits, const std::string &wait)
{
	w.StartOn([=](pqxx::connection &c) { return Acquire(c, name, permits, "1 hour", wait); });
}

} // namespace

TEST_CASE("semaphore: permits held on different connections are counted together",
		  "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	const std::string                              name = Unique("count");
	std::vector<std::unique_ptr<pqxx::connection>> conns;
	std::set<std::int64_t>                         tokens;
	for (int i = 0; i < 3; i++)
	{
		conns.push_back(std::make_unique<pqxx::connection>(""));
		auto t = Acquire(*conns.back(), name, 3, "1 hour");
		REQUIRE(t.has_value());
		tokens.insert(*t);
	}
	CHECK(tokens.size() == 3); /* each permit has its own token */
	pqxx::connection other("");
	CHECK_FALSE(Acquire(other, name, 3, "1 hour").has_value());
	int i = 0;
	for (std::int64_t t : tokens)
		CHECK(ReleaseLease(*conns[i++], name, t));
}

TEST_CASE("semaphore wait: a release of one permit wakes the waiter at once", "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	const std::string name = Unique("release");
	pqxx::connection  h("");
	auto              a = Acquire(h, name, 2, "1 hour");
	auto              b = Acquire(h, name, 2, "1 hour");
	REQUIRE(a.has_value());
	REQUIRE(b.has_value());

	SqlWaiter w;
	StartAcquire(w, name, 2, "60 s");
	CHECK_FALSE(w.Finished(500ms)); /* all permits held: it waits */

	auto released_at = Clock::now();
	REQUIRE(ReleaseLease(h, name, *a));
	REQUIRE(w.Finished(5s));
	CHECK(w.error.empty());
	REQUIRE(w.result.has_value());
	CHECK(*w.result > *b);
	CHECK(w.done_at - released_at < 2s); /* woken by the release, not by the 60 s wait */
	CHECK(ReleaseLease(w.conn, name, *w.result));
	CHECK(ReleaseLease(h, name, *b));
}

TEST_CASE("semaphore wait: an expiring permit wakes the waiter", "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	const std::string name = Unique("expiry");
	pqxx::connection  h("");
	auto              a = Acquire(h, name, 2, "1 hour");
	auto              b = Acquire(h, name, 2, "1 second");
	REQUIRE(a.has_value());
	REQUIRE(b.has_value());

	auto      started = Clock::now();
	SqlWaiter w;
	StartAcquire(w, name, 2, "30 s");
	REQUIRE(w.Finished(10s));
	CHECK(w.error.empty());
	REQUIRE(w.result.has_value());
	CHECK(w.done_at - started < 5s);
	CHECK(ReleaseLease(w.conn, name, *w.result));
	CHECK(ReleaseLease(h, name, *a));
}

TEST_CASE("semaphore wait: two waiters, two permits released, both granted", "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	const std::string name = Unique("two");
	pqxx::connection  h("");
	auto              a = Acquire(h, name, 2, "1 hour");
	auto              b = Acquire(h, name, 2, "1 hour");
	REQUIRE(a.has_value());
	REQUIRE(b.has_value());

	SqlWaiter w1, w2;
	StartAcquire(w1, name, 2, "60 s");
	std::this_thread::sleep_for(100ms);
	StartAcquire(w2, name, 2, "60 s");
	CHECK_FALSE(w1.Finished(300ms));
	CHECK_FALSE(w2.Finished(10ms));
	{
		/* both permits freed in one transaction: the grant of the first
		 * waiter hands over to the next one (LeaveLeaseQueue wakes it) */
		pqxx::work tx(h);
		ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, *a);
		ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, *b);
		tx.commit();
	}
	REQUIRE(w1.Finished(5s));
	REQUIRE(w2.Finished(5s));
	REQUIRE(w1.result.has_value());
	REQUIRE(w2.result.has_value());
	CHECK(*w1.result < *w2.result); /* first come, first served */
	CHECK(ReleaseLease(w1.conn, name, *w1.result));
	CHECK(ReleaseLease(w2.conn, name, *w2.result));
}

TEST_CASE("semaphore wait: the wait elapses with nothing held", "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	const std::string name = Unique("elapse");
	pqxx::connection  h("");
	auto              a = Acquire(h, name, 1, "1 hour");
	REQUIRE(a.has_value());
	auto      started = Clock::now();
	SqlWaiter w;
	StartAcquire(w, name, 1, "300 ms");
	REQUIRE(w.Finished(5s));
	CHECK(w.error.empty());
	CHECK_FALSE(w.result.has_value());
	CHECK(w.done_at - started >= 290ms);
	pqxx::nontransaction tx(h);
	CHECK(ExecParams1(tx, "SELECT count(*) FROM fence.locks WHERE name = $1", name)[0].as<int>() ==
		  1);
	CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, *a)[0].as<bool>());
}

TEST_CASE("semaphore: concurrent acquirers without wait all get a permit while permits remain",
		  "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	constexpr int kN = 8;
	for (int round = 0; round < 5; round++)
	{
		const std::string                              name = Unique("burst");
		std::vector<std::unique_ptr<pqxx::connection>> conns;
		for (int i = 0; i < kN; i++)
			conns.push_back(std::make_unique<pqxx::connection>(""));
		std::atomic<int>                         ready{0};
		std::atomic<bool>                        go{false};
		std::vector<std::optional<std::int64_t>> got(kN);
		std::vector<std::string>                 errors(kN);
		std::vector<std::thread>                 threads;
		for (int i = 0; i < kN; i++)
			threads.emplace_back([&, i] {
				ready++;
				while (!go.load())
					std::this_thread::yield();
				try
				{
					got[i] = Acquire(*conns[i], name, kN, "1 hour");
				}
				catch (const std::exception &e)
				{
					errors[i] = e.what();
				}
			});
		while (ready.load() < kN)
			std::this_thread::yield();
		go.store(true);
		for (auto &t : threads)
			t.join();
		int granted = 0;
		for (int i = 0; i < kN; i++)
		{
			CHECK(errors[i].empty());
			if (got[i])
				granted++;
		}
		CHECK(granted == kN); /* none saw another's grant in flight as "all held" */
		for (int i = 0; i < kN; i++)
			if (got[i])
				CHECK(ReleaseLease(*conns[i], name, *got[i]));
	}
}

/*
 * Without wait, a busy name is tried again while the calls in flight on it
 * keep ending (lease_acquire.cpp, TryAgainWhileBusy): here the name is held
 * by A's open transaction for 70 ms, handed by the lock manager straight to
 * B's renewal (queued behind it), which holds it 70 ms more.  No one
 * transaction holds it 100 ms, so C gets its permit at B's commit, ~140 ms
 * after it asked (before 0.3.0 it gave up at 100 ms in all and got NULL).
 * A name held longer than 100 ms by one transaction is still NULL.
 */
TEST_CASE("semaphore: without wait a permit is granted while the calls in flight keep ending",
		  "[server][semaphore]")
{
	REQUIRE_SEMAPHORES();
	const std::string name = Unique("progress");
	pqxx::connection  a(""), c("");
	SqlWaiter         b, cw;
	auto              ta = Acquire(a, name, 4, "1 hour");
	auto              tb = Acquire(b.conn, name, 4, "1 hour");
	REQUIRE(ta);
	REQUIRE(tb);
	{
		pqxx::nontransaction tx(a);
		Exec0(tx, "BEGIN");
		CHECK(
			ExecParams1(tx, "SELECT fence.lease_renew($1, $2, '1 hour')", name, *ta)[0].as<bool>());
	}
	/* B's renewal waits in the lock manager for A's transaction */
	b.StartOn([&](pqxx::connection &conn) -> std::optional<std::int64_t> {
		pqxx::nontransaction tx(conn);
		Exec0(tx, "BEGIN");
		return ExecParams1(tx, "SELECT fence.lease_renew($1, $2, '1 hour')", name, *tb)[0]
					   .as<bool>()
				   ? 1
				   : 0;
	});
	REQUIRE_FALSE(b.Finished(50ms));
	auto asked = Clock::now();
	StartAcquire(cw, name, 4, ""); /* without wait */
	std::this_thread::sleep_for(70ms);
	{
		pqxx::nontransaction tx(a);
		Exec0(tx, "COMMIT");
	}
	REQUIRE(b.Finished(5s));
	CHECK(b.error.empty());
	CHECK(b.result == std::optional<std::int64_t>(1));
	std::this_thread::sleep_for(70ms);
	CHECK_FALSE(cw.Finished(0ms)); /* still trying: the name changed hands at 70 ms */
	{
		pqxx::nontransaction tx(b.conn);
		Exec0(tx, "COMMIT");
	}
	REQUIRE(cw.Finished(5s));
	CHECK(cw.error.empty());
	CHECK(cw.result.has_value());
	CHECK(cw.done_at - asked >= 140ms);

	/* one transaction holding the name 300 ms: NULL after about 100 ms */
	{
		pqxx::nontransaction tx(a);
		Exec0(tx, "BEGIN");
		CHECK(
			ExecParams1(tx, "SELECT fence.lease_renew($1, $2, '1 hour')", name, *ta)[0].as<bool>());
	}
	SqlWaiter dw;
	StartAcquire(dw, name, 4, "");
	CHECK(dw.Finished(5s));
	CHECK(dw.error.empty());
	CHECK_FALSE(dw.result.has_value());
	{
		pqxx::nontransaction tx(a);
		Exec0(tx, "COMMIT");
	}
	CHECK(ReleaseLease(a, name, *ta));
	CHECK(ReleaseLease(b.conn, name, *tb));
	if (cw.result)
		CHECK(ReleaseLease(cw.conn, name, *cw.result));
}
