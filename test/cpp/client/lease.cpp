/*-------------------------------------------------------------------------
 *
 * client/lease.cpp
 *	  Catch2 tests of fence::Lease: renewal, release, and loss detection
 *	  (terminated connection, stopped renewals, refused renewal after a
 *	  takeover, a renewal hung on a frozen server).
 *
 * Skipped (with a warning) when the server's pg_fence has no lease
 * functions.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/lease.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams;
using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/* Creates the extension; false (and a warning) when leases are not there. */
bool
LeasesAvailable()
{
	pqxx::connection     c("");
	pqxx::nontransaction tx(c);
	tx.exec("CREATE EXTENSION IF NOT EXISTS pg_fence");
	return !Exec1(tx,
				  "SELECT to_regprocedure('fence.lease_acquire(text,interval,text)') IS NULL")[0]
				.as<bool>();
}

#define REQUIRE_LEASES()                                                         \
	do                                                                           \
	{                                                                            \
		if (!LeasesAvailable())                                                  \
		{                                                                        \
			WARN("skipped: fence.lease_acquire(text,interval,text) is missing"); \
			return;                                                              \
		}                                                                        \
	} while (0)

using fence_test::WaitFor;
using LossLog = fence_test::LossLog<fence::LossReason>;

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_client_lease", base);
}

std::optional<std::int64_t>
AcquireRaw(pqxx::connection &c, const std::string &name, const char *ttl = "10 seconds")
{
	pqxx::nontransaction tx(c);
	pqxx::row            r =
		ExecParams1(tx, "SELECT fence.lease_acquire($1, $2::interval)", name, std::string(ttl));
	if (r[0].is_null())
		return std::nullopt;
	return r[0].as<std::int64_t>();
}

} // namespace

TEST_CASE("Lease: excludes others, survives past its TTL by renewing, releases", "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("renew");
	pqxx::connection    other("");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.holder = "catch2 renew test";
	opts.on_lost = log.callback();
	auto lease = fence::Lease::try_acquire("", name, 600ms, opts);
	REQUIRE(lease.has_value());
	CHECK(lease->token() > 0);
	CHECK(lease->name() == name);
	CHECK(lease->ttl() == 600ms);
	CHECK_FALSE(lease->lost());
	CHECK(lease->deadline() > Clock::now());
	CHECK(lease->deadline() <= Clock::now() + 600ms);
	CHECK_FALSE(fence::Lease::try_acquire("", name, 1s).has_value());

	/* Three TTLs later it is still ours: renewed every 200 ms. */
	std::this_thread::sleep_for(1800ms);
	CHECK_FALSE(lease->lost());
	CHECK_FALSE(lease->loss_token().stop_requested());
	CHECK_FALSE(AcquireRaw(other, name).has_value());
	{
		pqxx::nontransaction tx(other);
		pqxx::row            r =
			ExecParams1(tx,
						"SELECT token, holder, expires_at > clock_timestamp() FROM fence.leases "
						"WHERE name = $1",
						name);
		CHECK(r[0].as<std::int64_t>() == lease->token());
		CHECK(r[1].as<std::string>() == "catch2 renew test");
		CHECK(r[2].as<bool>());
	}

	fence::LossToken   tok = lease->loss_token();
	const std::int64_t token = lease->token();
	CHECK(lease->release());
	CHECK_FALSE(lease->release());
	CHECK_FALSE(lease->lost());
	CHECK(tok.stop_requested());
	CHECK(log.count() == 0);
	auto next = AcquireRaw(other, name);
	REQUIRE(next.has_value());
	CHECK(*next > token);
	/* After the lease's deadline, a released lease still does not count as lost. */
	std::this_thread::sleep_for(700ms);
	CHECK_FALSE(lease->lost());
}

TEST_CASE("Lease: the destructor releases; a default LossToken is stopped", "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string name = Unique("dtor");
	fence::LossToken  tok;
	CHECK(tok.stop_requested());
	{
		auto lease = fence::Lease::try_acquire("", name, 5s);
		REQUIRE(lease.has_value());
		tok = lease->loss_token();
		CHECK_FALSE(tok.stop_requested());
		/* Moving keeps the same lease. */
		fence::Lease moved = std::move(*lease);
		CHECK_FALSE(moved.lost());
		lease.reset();
		CHECK_FALSE(tok.stop_requested());
	}
	CHECK(tok.stop_requested());
	pqxx::connection other("");
	CHECK(AcquireRaw(other, name).has_value());
}

TEST_CASE("Lease: try_acquire_for waits for a busy lease, or gives up", "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string name = Unique("wait");
	pqxx::connection  other("");
	REQUIRE(AcquireRaw(other, name, "700 milliseconds").has_value());
	auto t0 = Clock::now();
	CHECK_FALSE(fence::Lease::try_acquire_for("", name, 1s, 200ms).has_value());
	CHECK(Clock::now() - t0 >= 200ms);
	auto lease = fence::Lease::try_acquire_for("", name, 1s, 5s);
	REQUIRE(lease.has_value());
	CHECK(Clock::now() - t0 >= 600ms);
}

TEST_CASE("Lease: loss is detected within the TTL when its connection is terminated",
		  "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("terminated");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	auto lease = fence::Lease::try_acquire("", name, 1500ms, opts);
	REQUIRE(lease.has_value());
	fence::LossToken tok = lease->loss_token();
	auto             killed_at = Clock::now();
	{
		pqxx::connection     admin("");
		pqxx::nontransaction tx(admin);
		CHECK(ExecParams1(tx, "SELECT pg_terminate_backend($1, 5000)", lease->backend_pid())[0]
				  .as<bool>());
	}
	/* The next renewal (every 500 ms) fails: lost well before the TTL. */
	REQUIRE(WaitFor([&] { return lease->lost(); }, 1500ms));
	CHECK(Clock::now() - killed_at < 1500ms);
	CHECK(tok.stop_requested());
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::LossReason::kRenewError);
	CHECK_FALSE(log.message.empty());
	CHECK_FALSE(lease->release()); /* lost: nothing to release, and no throw */
}

TEST_CASE(
	"Lease: without renewals it is lost at its local deadline, before another holder can take it",
	"[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("deadline");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	opts.renew_interval = std::chrono::hours(10); /* renewals stopped on purpose */
	auto lease = fence::Lease::try_acquire("", name, 800ms, opts);
	REQUIRE(lease.has_value());
	pqxx::connection other("");

	/* Poll: the moment another session can take the lease, ours must already be lost. */
	std::optional<std::int64_t> taken;
	auto                        until = Clock::now() + 3s;
	while (!taken && Clock::now() < until)
	{
		bool lost_before = lease->lost();
		taken = AcquireRaw(other, name);
		if (taken)
			CHECK(lost_before);
		else
			std::this_thread::sleep_for(10ms);
	}
	REQUIRE(taken.has_value());
	CHECK(*taken > lease->token());
	CHECK(lease->lost());
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::LossReason::kDeadline);
	CHECK_FALSE(lease->release());
	/* The new holder's lease was not touched by the old holder's release. */
	pqxx::nontransaction tx(other);
	CHECK(ExecParams1(tx, "SELECT token FROM fence.leases WHERE name = $1", name)[0]
			  .as<std::int64_t>() == *taken);
}

TEST_CASE("Lease: a refused renewal (expired and taken over) is a loss", "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("refused");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	auto lease = fence::Lease::try_acquire("", name, 3s, opts);
	REQUIRE(lease.has_value());
	pqxx::connection admin("");
	{
		/* Expire it on the server (as a superuser), then take it over. */
		pqxx::nontransaction tx(admin);
		ExecParams(tx,
				   "UPDATE fence.leases SET expires_at = clock_timestamp() - interval '1 second' "
				   "WHERE name = $1",
				   name);
	}
	auto taken = AcquireRaw(admin, name);
	REQUIRE(taken.has_value());
	/* The next renewal (within 1 s) is refused. */
	REQUIRE(WaitFor([&] { return lease->lost(); }, 2s));
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::LossReason::kRefused);
	CHECK_FALSE(lease->release());
}

TEST_CASE(
	"Lease: a renewal hung on a frozen server does not keep the lease alive, nor the destructor waiting",
	"[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("frozen");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	auto lease = fence::Lease::try_acquire("", name, 900ms, opts);
	REQUIRE(lease.has_value());
	const int pid = lease->backend_pid();
	/* Freeze the backend (like a dead network: no answer, no error). */
	if (kill(pid, SIGSTOP) != 0)
	{
		WARN("skipped: cannot stop backend " << pid << " (not root, and not the server's OS user)");
		return;
	}
	struct Resume
	{
		int pid;
		~Resume() { kill(pid, SIGCONT); }
	} resume{pid};
	auto t0 = Clock::now();
	REQUIRE(WaitFor([&] { return lease->lost(); }, 2s));
	CHECK(Clock::now() - t0 < 1s);
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::LossReason::kDeadline);
	/* Still frozen: release must not wait for the network. */
	auto t1 = Clock::now();
	lease.reset();
	CHECK(Clock::now() - t1 < 500ms);
}

TEST_CASE("Lease: bad arguments throw std::invalid_argument", "[client][lease]")
{
	REQUIRE_LEASES();
	CHECK_THROWS_AS(fence::Lease::try_acquire("", "", 1s), std::invalid_argument);
	CHECK_THROWS_AS(fence::Lease::try_acquire("", std::string(1025, 'n'), 1s),
					std::invalid_argument);
	CHECK_THROWS_AS(fence::Lease::try_acquire("", "x", 2ms), std::invalid_argument);
	CHECK_THROWS_AS(fence::Lease::try_acquire_for("", "x", 1s, -1ms), std::invalid_argument);
	fence::LeaseOptions opts;
	opts.safety_margin = 1s;
	CHECK_THROWS_AS(fence::Lease::try_acquire("", "x", 1s, opts), std::invalid_argument);
	CHECK_THROWS_AS(fence::Lease::try_acquire("host=/nonexistent/socket/dir", "x", 1s),
					pqxx::broken_connection);
}
