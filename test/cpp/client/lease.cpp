/*-------------------------------------------------------------------------
 *
 * client/lease.cpp
 *	  Catch2 tests of fence::Lease: renewal, release, riding out a
 *	  terminated connection and a server restart, and loss detection (server
 *	  down past the deadline, stopped renewals, refused renewal after a
 *	  takeover, a renewal rejected for good, a renewal hung on a frozen
 *	  server).
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

#include <unistd.h>

#include <cstdlib>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"
#include "waiter.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams;
using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

#define REQUIRE_LEASES() \
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.lease_acquire(text,interval,text,interval)")

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

/* The wait event and query of the backends running a fence.*_acquire with a wait. */
static int
ServerSideWaiters(pqxx::connection &c, const std::string &name)
{
	pqxx::nontransaction tx(c);
	return ExecParams1(tx,
					   "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' "
					   "AND query LIKE '%wait =>%' AND strpos(query, $1) > 0",
					   name)[0]
		.as<int>();
}

TEST_CASE("Lease: try_acquire_for waits in the server, woken by the release; a wait longer than "
		  "the TTL still gets a full deadline",
		  "[client][lease][semaphore]")
{
	REQUIRE_LEASES();
	const std::string name = Unique("srvwait");
	pqxx::connection  other("");
	auto              held = AcquireRaw(other, name, "1 hour");
	REQUIRE(held.has_value());

	fence_test::Waiter<std::optional<fence::Lease>> w;
	w.Start([&] { return fence::Lease::try_acquire_for("", name, 1s, 30s); });
	/* one backend sleeps in the server (no polling: one call, wait event Extension) */
	CHECK(WaitFor([&] { return ServerSideWaiters(other, name) == 1; }, 5s));
	CHECK_FALSE(w.Finished(1500ms)); /* longer than the TTL */
	auto released_at = Clock::now();
	CHECK(fence_test::ReleaseLease(other, name, *held));
	REQUIRE(w.Finished(30s));
	CHECK(w.error.empty());
	std::optional<fence::Lease> &got = w.result;
	REQUIRE(got.has_value());
	CHECK(w.done_at - released_at < 1s);
	CHECK(got->token() > *held);
	CHECK_FALSE(got->lost());
	/* the deadline counts from the confirmation, not from the request sent 1.5 s earlier */
	CHECK(got->deadline() > Clock::now() + 500ms);
	CHECK(got->release());
}

TEST_CASE("Lease: a semaphore permit (LeaseOptions::permits) is a lease on one of N slots",
		  "[client][lease][semaphore]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("permits");
	fence::LeaseOptions opts;
	opts.permits = 2;
	opts.holder = "w";
	auto a = fence::Lease::try_acquire("", name, 3s, opts);
	auto b = fence::Lease::try_acquire("", name, 3s, opts);
	REQUIRE(a.has_value());
	REQUIRE(b.has_value());
	CHECK(a->token() != b->token());
	CHECK_FALSE(fence::Lease::try_acquire("", name, 3s, opts).has_value());
	{
		pqxx::connection     c("");
		pqxx::nontransaction tx(c);
		CHECK(ExecParams1(tx,
						  "SELECT count(*) FROM fence.locks WHERE name = $1 AND kind = 'semaphore' "
						  "AND holder = 'w'",
						  name)[0]
				  .as<int>() == 2);
	}
	/* renewed like a lease: still held after several TTLs */
	std::this_thread::sleep_for(3500ms);
	CHECK_FALSE(a->lost());
	CHECK(a->renewals() > 0);
	/* a lease of the same name while permits are held: refused with 42809 */
	try
	{
		(void) fence::Lease::try_acquire("", name, 3s);
		FAIL("no error");
	}
	catch (const pqxx::sql_error &e)
	{
		CHECK(std::string(e.sqlstate()) == "42809");
	}
	/* a release of a permit lets a waiter in, through the server-side wait */
	auto        t0 = Clock::now();
	std::thread releaser([&] {
		std::this_thread::sleep_for(300ms);
		a->release();
	});
	auto        c = fence::Lease::try_acquire_for("", name, 3s, 10s, opts);
	releaser.join();
	REQUIRE(c.has_value());
	CHECK(Clock::now() - t0 < 3s);
	CHECK(c->token() > b->token());
	CHECK(b->release());
	CHECK(c->release());
	opts.permits = -1;
	CHECK_THROWS_AS(fence::Lease::try_acquire("", name, 1s, opts), std::invalid_argument);
}

/* Records the retry messages of a Lease. */
struct RetryLog
{
	std::mutex               mu;
	std::vector<std::string> messages;

	fence::RetryCallback
	callback()
	{
		return [this](const std::string &m) {
			std::lock_guard<std::mutex> lk(mu);
			messages.push_back(m);
		};
	}
	std::string
	first()
	{
		std::lock_guard<std::mutex> lk(mu);
		return messages.empty() ? "" : messages.front();
	}
};

std::int64_t
ServerToken(pqxx::connection &c, const std::string &name)
{
	pqxx::nontransaction tx(c);
	pqxx::result         r = ExecParams(tx,
										"SELECT token FROM fence.leases WHERE name = $1 AND "
												"expires_at > clock_timestamp()",
										name);
	return r.empty() ? 0 : r[0][0].as<std::int64_t>();
}

/* Runs "$FENCE_CLUSTER_CTL <what>"; false when the harness gives no way to. */
bool
ClusterCtl(const char *what)
{
	const char *ctl = std::getenv("FENCE_CLUSTER_CTL");
	if (ctl == nullptr || *ctl == '\0')
		return false;
	std::string cmd = std::string("'") + ctl + "' " + what + " >/dev/null 2>&1";
	return std::system(cmd.c_str()) == 0;
}

TEST_CASE("Lease: a terminated connection is not a loss: the renewer connects again and renews",
		  "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("terminated");
	LossLog             log;
	RetryLog            retries;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	opts.on_retry = retries.callback();
	auto lease = fence::Lease::try_acquire("", name, 1500ms, opts);
	REQUIRE(lease.has_value());
	fence::LossToken tok = lease->loss_token();
	const int        first_pid = lease->backend_pid();
	{
		pqxx::connection     admin("");
		pqxx::nontransaction tx(admin);
		CHECK(ExecParams1(tx, "SELECT pg_terminate_backend($1, 5000)", first_pid)[0].as<bool>());
	}
	/* The next renewal (within 500 ms) fails, is retried on a new connection, and renews. */
	REQUIRE(WaitFor([&] { return lease->reconnects() >= 1; }, 1500ms));
	const auto renewed = lease->renewals();
	REQUIRE(WaitFor([&] { return lease->renewals() > renewed; }, 1500ms));
	std::this_thread::sleep_for(1600ms); /* past the TTL: held by renewals on the new session */
	CHECK_FALSE(lease->lost());
	CHECK_FALSE(tok.stop_requested());
	CHECK(log.count() == 0);
	CHECK(lease->backend_pid() != first_pid);
	CHECK(lease->backend_pid() != 0);
	const std::string retry = retries.first();
	CHECK(retry.find("lease renewal failed: connection lost") == 0);
	CHECK(retry.find("; retrying until ") != std::string::npos);
	CHECK(retry.find("(local time)") != std::string::npos);
	pqxx::connection other("");
	CHECK(ServerToken(other, name) == lease->token());
	CHECK_FALSE(AcquireRaw(other, name).has_value());
	CHECK(lease->release());
	CHECK(ServerToken(other, name) == 0);
}

TEST_CASE("Lease: rides out an immediate restart of the server", "[client][lease][restart]")
{
	REQUIRE_LEASES();
	if (std::getenv("FENCE_CLUSTER_CTL") == nullptr)
	{
		WARN("skipped: no FENCE_CLUSTER_CTL (run under scripts/temp-cluster.sh)");
		return;
	}
	const std::string   name = Unique("restart");
	LossLog             log;
	RetryLog            retries;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	opts.on_retry = retries.callback();
	auto lease = fence::Lease::try_acquire("", name, 6s, opts);
	REQUIRE(lease.has_value());
	REQUIRE(ClusterCtl("stop-immediate"));
	std::this_thread::sleep_for(1s); /* down long enough for renewals to fail */
	REQUIRE(ClusterCtl("start"));
	const auto renewed = lease->renewals();
	REQUIRE(WaitFor([&] { return lease->renewals() > renewed; }, 4s));
	CHECK_FALSE(lease->lost());
	CHECK(log.count() == 0);
	CHECK(lease->reconnects() >= 1);
	CHECK_FALSE(retries.first().empty());
	pqxx::connection other("");
	CHECK(ServerToken(other, name) == lease->token());
	CHECK_FALSE(AcquireRaw(other, name).has_value());
	CHECK(lease->release());
}

TEST_CASE("Lease: a server that stays down past the deadline is a loss at the deadline, naming "
		  "the last error",
		  "[client][lease][restart]")
{
	REQUIRE_LEASES();
	if (std::getenv("FENCE_CLUSTER_CTL") == nullptr)
	{
		WARN("skipped: no FENCE_CLUSTER_CTL (run under scripts/temp-cluster.sh)");
		return;
	}
	const std::string   name = Unique("down");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	auto lease = fence::Lease::try_acquire("", name, 1500ms, opts);
	REQUIRE(lease.has_value());
	REQUIRE(ClusterCtl("stop-immediate"));
	struct Restart
	{
		~Restart() { ClusterCtl("start"); }
	} restart;
	const auto deadline = lease->deadline();
	REQUIRE(WaitFor([&] { return lease->lost(); }, 3s));
	/* Not before the deadline that the last successful renewal set. */
	CHECK(Clock::now() >= deadline);
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::LossReason::kDeadline);
	CHECK(log.message.find("lease deadline passed without a successful renewal") == 0);
	CHECK(log.message.find("last error: connection lost") != std::string::npos);
	auto t0 = Clock::now();
	CHECK_FALSE(lease->release());
	CHECK(Clock::now() - t0 < 200ms);
}

TEST_CASE("Lease: a renewal the server rejects for good is a loss at once (kRenewError)",
		  "[client][lease]")
{
	REQUIRE_LEASES();
	const std::string   name = Unique("rejected");
	LossLog             log;
	fence::LeaseOptions opts;
	opts.on_lost = log.callback();
	auto lease = fence::Lease::try_acquire("", name, 3s, opts);
	REQUIRE(lease.has_value());
	pqxx::connection admin("");
	const char      *renew = "fence.lease_renew(text,bigint,interval)";
	{
		pqxx::nontransaction tx(admin);
		tx.exec(std::string("ALTER FUNCTION ") + renew + " RENAME TO lease_renew_hidden");
	}
	struct Restore
	{
		pqxx::connection &c;
		~Restore()
		{
			pqxx::nontransaction tx(c);
			tx.exec("ALTER FUNCTION fence.lease_renew_hidden(text,bigint,interval) RENAME TO "
					"lease_renew");
		}
	} restore{admin};
	auto t0 = Clock::now();
	REQUIRE(WaitFor([&] { return lease->lost(); }, 2s));
	CHECK(Clock::now() - t0 < 1500ms); /* the first renewal (within 1 s), not the deadline */
	REQUIRE(WaitFor([&] { return log.count() == 1; }, 1s));
	CHECK(log.reason == fence::LossReason::kRenewError);
	CHECK(log.message.find("lease renewal failed: ") == 0);
	CHECK(log.message.find("(SQLSTATE 42883)") != std::string::npos);
	CHECK_FALSE(lease->release());
}

TEST_CASE("Lease: errors of the acquisition are thrown with libpq's and the server's words",
		  "[client][lease]")
{
	REQUIRE_LEASES();
	try
	{
		fence::Lease::try_acquire("host=/nonexistent/socket/dir", "x", 1s);
		FAIL("no exception");
	}
	catch (const pqxx::broken_connection &e)
	{
		CHECK(std::string(e.what()).find("/nonexistent/socket/dir") != std::string::npos);
	}
	pqxx::connection admin("");
	{
		pqxx::nontransaction tx(admin);
		tx.exec("DROP DATABASE IF EXISTS fence_client_noext");
		tx.exec("CREATE DATABASE fence_client_noext");
	}
	try
	{
		fence::Lease::try_acquire("dbname=fence_client_noext", "x", 1s);
		FAIL("no exception");
	}
	catch (const pqxx::sql_error &e)
	{
		CHECK(e.sqlstate() == "3F000");
		CHECK(std::string(e.what()).find("schema \"fence\" does not exist") != std::string::npos);
	}
	pqxx::nontransaction tx(admin);
	tx.exec("DROP DATABASE fence_client_noext");
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
	fence_test::FrozenBackend frozen(pid);
	FENCE_TEST_SKIP_UNLESS_FROZEN(frozen, pid);
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

TEST_CASE("Lease: the local deadline counts from the request sent, less TTL/500 and the margin",
		  "[client][lease]")
{
	REQUIRE_LEASES();
	CHECK(fence::lease_clock_allowance(10s) == 20ms);
	CHECK(fence::lease_clock_allowance(400ms) == 0ms);
	const Clock::time_point t0 = Clock::now();
	CHECK(fence::lease_local_deadline(t0, 10s, 1s) == t0 + 10s - 20ms - 1s);

	fence::LeaseOptions opts;
	opts.safety_margin = 1s;
	const Clock::time_point before = Clock::now();
	auto                    lease = fence::Lease::try_acquire("", Unique("deadline"), 5s, opts);
	const Clock::time_point after = Clock::now();
	REQUIRE(lease.has_value());
	/* sent lies between before and after: deadline = sent + 5 s - 10 ms - 1 s */
	CHECK(lease->deadline() >= before + 5s - 10ms - 1s);
	CHECK(lease->deadline() <= after + 5s - 10ms - 1s);
	CHECK(lease->release());

	/* the margin must leave room for the clock allowance: 1 s TTL, 2 ms allowance */
	opts.safety_margin = 999ms;
	CHECK_THROWS_AS(fence::Lease::try_acquire("", "x", 1s, opts), std::invalid_argument);
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
	opts.safety_margin = 0ms;
	opts.connect_timeout = 0ms;
	CHECK_THROWS_AS(fence::Lease::try_acquire("", "x", 1s, opts), std::invalid_argument);
	CHECK_THROWS_AS(fence::Lease::try_acquire("host=/nonexistent/socket/dir", "x", 1s),
					pqxx::broken_connection);
}
