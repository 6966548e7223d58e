/*-------------------------------------------------------------------------
 *
 * server/lease_wait.cpp
 *	  fence.lease_acquire(..., wait): waiting in the server, seen from
 *	  several real connections.
 *
 * Every way a waiter is woken or stops waiting: a release (at its commit),
 * the holder's expiry, a grant in flight that rolls back, the wait
 * elapsing, a cancel, the waiter's session being killed; first come, first
 * served, and one release waking one waiter, not all of them.  (The
 * isolation tester cannot see a waiter that sleeps on its latch rather than
 * in the lock manager, so these paths are tested here; test/specs/
 * lease_wait.spec has those that need no other session to make progress.)
 *
 * Each waiter runs on its own connection in its own thread; threads only
 * record what they see, the main thread asserts.  The lease names are
 * unique per run; every lease is released or expires within the test.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/server/lease_wait.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "catch2_compat.hpp"
#include <pqxx/pqxx>

#include "pqxx_compat.hpp"
#include "test_util.hpp"
#include "waiter.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams;
using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fence_test::ReleaseLease;
using fence_test::SqlWaiter;

#define REQUIRE_WAITING() \
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.lease_acquire(text,interval,text,interval)")

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_lease_wait", base);
}

std::optional<std::int64_t>
Acquire(pqxx::connection &c, const std::string &name, const std::string &ttl,
		const char *wait = nullptr)
{
	pqxx::nontransaction tx(c);
	pqxx::row            r = wait == nullptr
								 ? ExecParams1(tx, "SELECT fence.lease_acquire($1, $2::interval)", name, ttl)
								 : ExecParams1(tx,
											   "SELECT fence.lease_acquire($1, $2::interval, NULL, "
														  "$3::interval)",
											   name, ttl, std::string(wait));
	if (r[0].is_null())
		return std::nullopt;
	return r[0].as<std::int64_t>();
}

/* Sets `w` (waiter.hpp) waiting in lease_acquire(name, ttl, NULL, wait). */
void
StartAcquire(SqlWaiter &w, const std::string &name, const char *wait,
			 const std::string &ttl = "1 hour")
{
	w.StartOn([=](pqxx::connection &c) { return Acquire(c, name, ttl, wait); });
}

/* pg_stat_activity's wait event of a backend. */
std::string
WaitEventOf(pqxx::connection &c, int pid)
{
	pqxx::nontransaction tx(c);
	pqxx::row            r =
		ExecParams1(tx,
					"SELECT coalesce(wait_event_type, '') || '/' || coalesce(wait_event, '') FROM "
					"pg_stat_activity WHERE pid = $1",
					pid);
	return r[0].as<std::string>();
}

} // namespace

TEST_CASE("lease wait: a release wakes the waiter at once, which gets the lease",
		  "[server][lease_wait]")
{
	REQUIRE_WAITING();
	const std::string name = Unique("release");
	pqxx::connection  h("");
	auto              held = Acquire(h, name, "1 hour");
	REQUIRE(held.has_value());

	SqlWaiter w;
	StartAcquire(w, name, "60 s");
	CHECK_FALSE(w.Finished(500ms)); /* waiting, not polling out */
	const std::string event = WaitEventOf(h, w.pid);
	/* 17+: a named wait event; 15/16: the generic one */
	CHECK((event == "Extension/PgFenceLease" || event == "Extension/Extension"));

	auto released_at = Clock::now();
	REQUIRE(ReleaseLease(h, name, *held));
	REQUIRE(w.Finished(5s));
	auto got = w.result;
	CHECK(w.error.empty());
	REQUIRE(got.has_value());
	CHECK(*got > *held);
	CHECK(w.done_at - released_at < 2s); /* woken by the release, not by the 60 s wait */
	CHECK(ReleaseLease(w.conn, name, *got));
}

TEST_CASE("lease wait: the holder's expiry wakes the waiter", "[server][lease_wait]")
{
	REQUIRE_WAITING();
	const std::string name = Unique("expiry");
	pqxx::connection  h("");
	auto              held = Acquire(h, name, "1 second");
	REQUIRE(held.has_value());
	auto      t0 = Clock::now();
	SqlWaiter w;
	StartAcquire(w, name, "60 s");
	REQUIRE(w.Finished(10s));
	auto got = w.result;
	REQUIRE(got.has_value());
	CHECK(*got > *held);
	CHECK(w.done_at - t0 < 5s);
	CHECK(ReleaseLease(w.conn, name, *got));
}

TEST_CASE("lease wait: a grant in flight that rolls back wakes the waiter", "[server][lease_wait]")
{
	REQUIRE_WAITING();
	const std::string name = Unique("rollback");
	pqxx::connection  h("");
	pqxx::work        tx(h);
	auto              held =
		ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour')", name)[0].as<std::int64_t>();
	CHECK(held > 0);

	SqlWaiter w;
	StartAcquire(w, name, "60 s");
	CHECK_FALSE(w.Finished(500ms));
	auto rolled_back_at = Clock::now();
	tx.abort();
	REQUIRE(w.Finished(5s));
	auto got = w.result;
	REQUIRE(got.has_value());
	CHECK(w.done_at - rolled_back_at < 2s);
	CHECK(ReleaseLease(w.conn, name, *got));
}

TEST_CASE("lease wait: first come, first served; one release wakes one waiter",
		  "[server][lease_wait]")
{
	REQUIRE_WAITING();
	const std::string name = Unique("fifo");
	pqxx::connection  h("");
	auto              held = Acquire(h, name, "1 hour");
	REQUIRE(held.has_value());

	std::vector<std::unique_ptr<SqlWaiter>> ws;
	for (int i = 0; i < 4; i++)
	{
		ws.push_back(std::make_unique<SqlWaiter>());
		StartAcquire(*ws.back(), name, "60 s");
		std::this_thread::sleep_for(150ms); /* a clear arrival order */
	}
	for (auto &w : ws)
		CHECK_FALSE(w->Finished(0ms));

	std::int64_t prev = *held;
	REQUIRE(ReleaseLease(h, name, prev));
	for (std::size_t i = 0; i < ws.size(); i++)
	{
		/* the oldest remaining waiter gets it; the others keep waiting */
		REQUIRE(ws[i]->Finished(5s));
		auto got = ws[i]->result;
		REQUIRE(got.has_value());
		CHECK(*got > prev);
		for (std::size_t j = i + 1; j < ws.size(); j++)
			CHECK_FALSE(ws[j]->Finished(i + 1 == ws.size() ? 0ms : 300ms));
		prev = *got;
		CHECK(ReleaseLease(ws[i]->conn, name, prev));
	}
}

TEST_CASE("lease wait: the wait elapses with NULL and nothing held", "[server][lease_wait]")
{
	REQUIRE_WAITING();
	const std::string name = Unique("elapses");
	pqxx::connection  h("");
	auto              held = Acquire(h, name, "1 hour");
	REQUIRE(held.has_value());
	pqxx::connection w("");
	auto             t0 = Clock::now();
	auto             got = Acquire(w, name, "1 hour", "400 ms");
	CHECK_FALSE(got.has_value());
	CHECK(Clock::now() - t0 >= 390ms);
	pqxx::nontransaction tx(w);
	CHECK(ExecParams1(tx, "SELECT token FROM fence.leases WHERE name = $1", name)[0]
			  .as<std::int64_t>() == *held);
	CHECK(ReleaseLease(h, name, *held));
}

TEST_CASE("lease wait: a cancelled or killed waiter leaves the queue; the next one is served",
		  "[server][lease_wait]")
{
	REQUIRE_WAITING();
	const std::string name = Unique("cancel");
	pqxx::connection  h("");
	auto              held = Acquire(h, name, "1 hour");
	REQUIRE(held.has_value());

	SqlWaiter cancelled, killed, served;
	StartAcquire(cancelled, name, "60 s");
	std::this_thread::sleep_for(150ms);
	StartAcquire(killed, name, "60 s");
	std::this_thread::sleep_for(150ms);
	StartAcquire(served, name, "60 s");
	std::this_thread::sleep_for(150ms);

	{
		pqxx::nontransaction tx(h);
		CHECK(ExecParams1(tx, "SELECT pg_cancel_backend($1)", cancelled.pid)[0].as<bool>());
	}
	REQUIRE(cancelled.Finished(5s));
	auto cancelled_got = cancelled.result;
	INFO("cancelled waiter: token " << (cancelled_got ? *cancelled_got : 0) << ", error "
									<< cancelled.error << ", held " << *held << ", pid "
									<< cancelled.pid);
	CHECK_FALSE(cancelled_got.has_value());
	CHECK(cancelled.sqlstate == "57014");
	{
		pqxx::nontransaction tx(h);
		CHECK(ExecParams1(tx, "SELECT pg_terminate_backend($1, 5000)", killed.pid)[0].as<bool>());
	}
	REQUIRE(killed.Finished(5s));
	auto killed_got = killed.result;
	INFO("killed waiter: token " << (killed_got ? *killed_got : 0) << ", error " << killed.error);
	CHECK_FALSE(killed_got.has_value());
	CHECK_FALSE(killed.error.empty());
	CHECK_FALSE(served.Finished(200ms));

	auto released_at = Clock::now();
	REQUIRE(ReleaseLease(h, name, *held));
	REQUIRE(served.Finished(5s));
	auto got = served.result;
	REQUIRE(got.has_value());
	CHECK(served.done_at - released_at < 2s);
	CHECK(ReleaseLease(served.conn, name, *got));
}
