/*-------------------------------------------------------------------------
 *
 * client/session_lock.cpp
 *	  Catch2 tests of fence::SessionLock against a real server (libpq
 *	  defaults: the PG* variables of the throwaway cluster), with its loss
 *	  watch (a terminated session noticed without a query).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/session_lock.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;

using fence_test::EnsureExtension;

/* A name no other test (or concurrent run) uses. */
std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_client_session_lock", base);
}

bool
FreeElsewhere(const std::string &name)
{
	pqxx::connection c("");
	auto             l = fence::SessionLock::try_acquire(c, name);
	return l.has_value();
}

} // namespace

TEST_CASE("SessionLock: try_acquire excludes other sessions and RAII releases", "[client][session]")
{
	EnsureExtension();
	pqxx::connection  a(""), b("");
	const std::string name = Unique("raii");
	std::int64_t      first;
	{
		auto la = fence::SessionLock::try_acquire(a, name);
		REQUIRE(la.has_value());
		first = la->token();
		CHECK(first > 0);
		CHECK(la->name() == name);
		CHECK(la->held());
		auto lb = fence::SessionLock::try_acquire(b, name);
		CHECK_FALSE(lb.has_value());
	}
	/* Destroyed: the lock is free again, and the next grant has a higher token. */
	auto lb = fence::SessionLock::try_acquire(b, name);
	REQUIRE(lb.has_value());
	CHECK(lb->token() > first);
}

TEST_CASE("SessionLock: move transfers the hold; the moved-from object releases nothing",
		  "[client][session]")
{
	EnsureExtension();
	pqxx::connection  a("");
	const std::string name = Unique("move");
	auto              la = fence::SessionLock::try_acquire(a, name);
	REQUIRE(la.has_value());
	const std::int64_t token = la->token();

	fence::SessionLock moved(std::move(*la));
	CHECK_FALSE(la->held());
	la.reset(); /* destroying the moved-from object must not unlock */
	CHECK(moved.held());
	CHECK(moved.token() == token);
	CHECK_FALSE(FreeElsewhere(name));

	std::vector<fence::SessionLock> v;
	v.push_back(std::move(moved));
	CHECK_FALSE(FreeElsewhere(name));

	/* Move assignment releases the target's own lock first. */
	const std::string other = Unique("move-target");
	auto              lo = fence::SessionLock::try_acquire(a, other);
	REQUIRE(lo.has_value());
	*lo = std::move(v.back());
	CHECK(FreeElsewhere(other));
	CHECK_FALSE(FreeElsewhere(name));
	CHECK(lo->token() == token);
	v.clear();
	lo.reset();
	CHECK(FreeElsewhere(name));
}

TEST_CASE("SessionLock: release() reports, and is idempotent", "[client][session]")
{
	EnsureExtension();
	pqxx::connection  a("");
	const std::string name = Unique("release");
	auto              la = fence::SessionLock::try_acquire(a, name);
	REQUIRE(la.has_value());
	CHECK(la->release());
	CHECK_FALSE(la->held());
	CHECK_FALSE(la->release());
	CHECK(FreeElsewhere(name));

	/* Released behind its back (unlock_all): release() says false, no error. */
	auto lb = fence::SessionLock::try_acquire(a, name);
	REQUIRE(lb.has_value());
	{
		pqxx::nontransaction tx(a);
		CHECK(Exec1(tx, "SELECT fence.unlock_all()")[0].as<int>() >= 1);
	}
	CHECK_FALSE(lb->release());
}

TEST_CASE("SessionLock: re-entrant grants share the token; each object releases one hold",
		  "[client][session]")
{
	EnsureExtension();
	pqxx::connection  a("");
	const std::string name = Unique("reentrant");
	auto              l1 = fence::SessionLock::try_acquire(a, name);
	auto              l2 = fence::SessionLock::try_acquire(a, name);
	REQUIRE(l1.has_value());
	REQUIRE(l2.has_value());
	CHECK(l1->token() == l2->token());
	l1.reset();
	CHECK_FALSE(FreeElsewhere(name));
	l2.reset();
	CHECK(FreeElsewhere(name));
}

TEST_CASE("SessionLock: try_acquire_for times out, or gets the lock when it is released",
		  "[client][session]")
{
	EnsureExtension();
	pqxx::connection  a(""), b("");
	const std::string name = Unique("wait");
	auto              la = fence::SessionLock::try_acquire(a, name);
	REQUIRE(la.has_value());

	auto t0 = std::chrono::steady_clock::now();
	auto lb = fence::SessionLock::try_acquire_for(b, name, 300ms);
	auto waited = std::chrono::steady_clock::now() - t0;
	CHECK_FALSE(lb.has_value());
	CHECK(waited >= 250ms);
	CHECK(waited < 5s);
	/* The connection is still usable after the 55P03. */
	{
		pqxx::nontransaction tx(b);
		CHECK(Exec1(tx, "SELECT 1")[0].as<int>() == 1);
	}

	std::thread releaser([&] {
		std::this_thread::sleep_for(200ms);
		la.reset();
	});
	auto        lc = fence::SessionLock::try_acquire_for(b, name, 10s);
	releaser.join();
	REQUIRE(lc.has_value());

	/* acquire() without limit returns at once when free. */
	pqxx::connection   c("");
	const std::string  other = Unique("acquire");
	fence::SessionLock ld = fence::SessionLock::acquire(c, other);
	CHECK(ld.token() > lc->token());
}

TEST_CASE("SessionLock: bad arguments throw std::invalid_argument and take nothing",
		  "[client][session]")
{
	EnsureExtension();
	pqxx::connection a("");
	CHECK_THROWS_AS(fence::SessionLock::try_acquire(a, ""), std::invalid_argument);
	CHECK_THROWS_AS(fence::SessionLock::try_acquire(a, std::string(1025, 'x')),
					std::invalid_argument);
	CHECK_THROWS_AS(fence::SessionLock::try_acquire_for(a, "x", 0ms), std::invalid_argument);
	CHECK_THROWS_AS(fence::SessionLock::try_acquire_for(a, "x", -5ms), std::invalid_argument);
	CHECK_THROWS_AS(fence::SessionLock::acquire(a, ""), std::invalid_argument);
	/* 1024 bytes is allowed. */
	auto l = fence::SessionLock::try_acquire(a, std::string(1024, 'y'));
	CHECK(l.has_value());
}

TEST_CASE("SessionLock: a terminated session frees the lock; the destructor does not throw",
		  "[client][session]")
{
	EnsureExtension();
	const std::string name = Unique("terminated");
	auto              a = std::make_unique<pqxx::connection>("");
	auto              la = fence::SessionLock::try_acquire(*a, name);
	REQUIRE(la.has_value());
	const int pid = a->backendpid();
	{
		pqxx::connection     admin("");
		pqxx::nontransaction tx(admin);
		CHECK(ExecParams1(tx, "SELECT pg_terminate_backend($1, 5000)", pid)[0].as<bool>());
	}
	CHECK(FreeElsewhere(name));
	/* The holder's connection is broken too, once used. */
	CHECK_THROWS_AS(pqxx::nontransaction(*a).exec("SELECT 1"), pqxx::broken_connection);
	CHECK_FALSE(la->held());
	CHECK_NOTHROW(la.reset());
}

TEST_CASE("SessionLock: a terminated session is noticed at once, without a query: lost(), the "
		  "callback, the LossToken",
		  "[client][session]")
{
	EnsureExtension();
	const std::string                             name = Unique("noticed");
	pqxx::connection                              a("");
	fence_test::LossLog<fence::SessionLossReason> log;
	fence::SessionLockOptions                     opts;
	opts.on_lost = log.callback();
	auto la = fence::SessionLock::try_acquire(a, name, opts);
	REQUIRE(la.has_value());
	fence::LossToken tok = la->loss_token();
	CHECK(la->held());
	CHECK_FALSE(la->lost());
	CHECK_FALSE(tok.stop_requested());
	/* Moving keeps the watch (the callback does not refer to the object). */
	fence::SessionLock moved = std::move(*la);
	CHECK_FALSE(la->held());
	CHECK_FALSE(la->lost());
	CHECK(la->loss_token().stop_requested());
	{
		pqxx::connection     admin("");
		pqxx::nontransaction tx(admin);
		CHECK(
			ExecParams1(tx, "SELECT pg_terminate_backend($1, 5000)", a.backendpid())[0].as<bool>());
	}
	/* No query on `a`: the hang-up is seen on the socket. */
	REQUIRE(fence_test::WaitFor([&] { return moved.lost(); }, 1s));
	CHECK_FALSE(moved.held());
	CHECK(tok.stop_requested());
	REQUIRE(fence_test::WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::SessionLossReason::kConnectionClosed);
	CHECK(log.message.find("the server closed the session's connection") == 0);
	CHECK(FreeElsewhere(name));
	CHECK_FALSE(moved.release()); /* gone with its session: false, no throw */
	CHECK(moved.lost());          /* keeps its answer */
	CHECK(log.count() == 1);
}

TEST_CASE("SessionLock: a released lock is never reported lost; queries on the connection do not "
		  "wake the watch",
		  "[client][session]")
{
	EnsureExtension();
	const std::string         name = Unique("quiet");
	pqxx::connection          a("");
	std::atomic<int>          calls{0};
	fence::SessionLockOptions opts;
	opts.on_lost = [&](fence::SessionLossReason, const std::string &) { calls++; };
	auto la = fence::SessionLock::try_acquire(a, name, opts);
	REQUIRE(la.has_value());
	fence::LossToken tok = la->loss_token();
	{
		/* The application keeps using the connection: results and notices are not hang-ups. */
		pqxx::nontransaction tx(a);
		for (int i = 0; i < 50; i++)
			Exec1(tx, "SELECT repeat('x', 100000)");
		tx.exec("LISTEN pg_fence_test; NOTIFY pg_fence_test, 'hello'");
	}
	std::this_thread::sleep_for(100ms);
	CHECK_FALSE(la->lost());
	CHECK(la->held());
	CHECK(la->release());
	CHECK(tok.stop_requested()); /* released: stop, but not lost */
	CHECK_FALSE(la->lost());
	/* The session ends after the release: nothing to report. */
	fence::pqxx_compat::Close(a);
	std::this_thread::sleep_for(100ms);
	CHECK(calls.load() == 0);
	CHECK_FALSE(la->lost());
}
