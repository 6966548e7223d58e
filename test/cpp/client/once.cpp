/*-------------------------------------------------------------------------
 *
 * client/once.cpp
 *	  Catch2 tests of fence::Once (idempotency keys) with several real
 *	  connections: three begins of one key at once (exactly one owner), a
 *	  paused owner taken over (lost signal, finish refused), replay of the
 *	  stored response, fingerprint mismatch, release and the destructor,
 *	  renewal past the TTL, finish in the caller's transaction, bad input.
 *
 * Skipped (with a warning) when the server's pg_fence has no idempotency
 * keys (fence.once_begin).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/once.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"

namespace {

using namespace std::chrono_literals;
using fence::OnceStatus;
using fence_test::WaitFor;
using LossLog = fence_test::LossLog<fence::LossReason>;

#define REQUIRE_ONCE() FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.once_begin(text,interval,text)")

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_client_once", base);
}

} // namespace

TEST_CASE("Once: three begins of one key at once, exactly one owns it; Done replays",
		  "[client][once]")
{
	REQUIRE_ONCE();
	const std::string key = Unique("three");
	for (int round = 0; round < 3; round++)
	{
		const std::string                       k = key + "/" + std::to_string(round);
		std::vector<std::optional<fence::Once>> onces(3);
		std::vector<std::string>                errors(3);
		std::vector<std::thread>                threads;
		for (int i = 0; i < 3; i++)
			threads.emplace_back([&, i] {
				try
				{
					onces[i].emplace(fence::Once::begin("", k, 10s, std::string("fp")));
				}
				catch (const std::exception &e)
				{
					errors[i] = e.what();
				}
			});
		for (auto &t : threads)
			t.join();
		int owner = -1, news = 0, in_progress = 0;
		for (int i = 0; i < 3; i++)
		{
			INFO("begin " << i << ": " << errors[i]);
			REQUIRE(onces[i].has_value());
			if (onces[i]->status() == OnceStatus::kNew)
			{
				news++;
				owner = i;
			}
			else if (onces[i]->status() == OnceStatus::kInProgress)
				in_progress++;
		}
		REQUIRE(news == 1);
		REQUIRE(in_progress == 2);
		fence::Once &o = *onces[owner];
		CHECK(o.owned());
		CHECK(o.token() > 0);
		CHECK_FALSE(o.step().has_value());
		CHECK_FALSE(o.loss_token().stop_requested());
		for (int i = 0; i < 3; i++)
			if (i != owner)
			{
				CHECK(onces[i]->token() == 0);
				CHECK_FALSE(onces[i]->owned());
				CHECK(onces[i]->loss_token().stop_requested());
				CHECK_THROWS_AS(onces[i]->finish(), std::logic_error);
			}
		CHECK(o.step("sent"));
		CHECK(o.finish(std::string(R"({"id": 7, "status": "sent"})")));
		CHECK_FALSE(o.owned());
		CHECK_FALSE(o.lost());
		CHECK(o.loss_token().stop_requested());

		fence::Once again = fence::Once::begin("", k, 10s, std::string("fp"));
		CHECK(again.status() == OnceStatus::kDone);
		REQUIRE(again.response().has_value());
		CHECK(*again.response() == R"({"id": 7, "status": "sent"})");
		CHECK(again.token() == 0);
		CHECK_FALSE(again.owned());
		CHECK_FALSE(again.release());
	}
}

TEST_CASE("Once: a key begun with another fingerprint is a mismatch, nothing owned",
		  "[client][once]")
{
	REQUIRE_ONCE();
	const std::string k = Unique("mismatch");
	fence::Once       first = fence::Once::begin("", k, 10s, std::string("body-hash-1"));
	REQUIRE(first.status() == OnceStatus::kNew);
	fence::Once other = fence::Once::begin("", k, 10s, std::string("body-hash-2"));
	CHECK(other.status() == OnceStatus::kMismatch);
	CHECK(other.token() == 0);
	CHECK_FALSE(other.owned());
	CHECK(std::string(fence::to_string(other.status())) == "mismatch");
	CHECK(first.finish(std::nullopt));
	fence::Once done_other = fence::Once::begin("", k, 10s, std::string("body-hash-2"));
	CHECK(done_other.status() == OnceStatus::kMismatch);
	fence::Once done = fence::Once::begin("", k, 10s, std::string("body-hash-1"));
	CHECK(done.status() == OnceStatus::kDone);
	CHECK_FALSE(done.response().has_value()); /* finished without a response */
}

TEST_CASE("Once: a paused owner is taken over: lost signal, its step and finish refused",
		  "[client][once]")
{
	REQUIRE_ONCE();
	const std::string  k = Unique("paused");
	LossLog            log;
	fence::OnceOptions opts;
	opts.on_lost = log.callback();
	opts.renew_interval = 60s; /* the owner "pauses": it never renews */
	fence::Once zombie = fence::Once::begin("", k, 600ms, std::nullopt, opts);
	REQUIRE(zombie.status() == OnceStatus::kNew);
	fence::LossToken stop = zombie.loss_token();
	CHECK(zombie.step("charged"));

	/* While its lease is live, the key is in progress for everyone else, at its step. */
	fence::Once busy = fence::Once::begin("", k, 10s);
	CHECK(busy.status() == OnceStatus::kInProgress);
	REQUIRE(busy.step().has_value());
	CHECK(*busy.step() == "charged");

	/* Past its TTL: lost on the local clock, and taken over with a larger token and its step. */
	REQUIRE(WaitFor([&] { return zombie.lost(); }, 2s));
	CHECK(stop.stop_requested());
	CHECK(WaitFor([&] { return log.count() == 1; }, 2s));
	std::this_thread::sleep_for(100ms); /* the server's expiry is after the local deadline */
	fence::Once heir = fence::Once::begin("", k, 10s);
	REQUIRE(heir.status() == OnceStatus::kNew);
	CHECK(heir.token() > zombie.token());
	REQUIRE(heir.step().has_value());
	CHECK(*heir.step() == "charged");

	/* The zombie wakes up: its recovery point and its finish are refused. */
	CHECK_FALSE(zombie.step("emailed"));
	CHECK_FALSE(zombie.finish(std::string(R"({"by": "zombie"})")));
	CHECK(zombie.lost());
	CHECK(log.count() == 1);
	CHECK_FALSE(zombie.release());

	CHECK(heir.finish(std::string(R"({"by": "heir"})")));
	fence::Once later = fence::Once::begin("", k, 10s);
	CHECK(later.status() == OnceStatus::kDone);
	REQUIRE(later.response().has_value());
	CHECK(*later.response() == R"({"by": "heir"})");
}

TEST_CASE("Once: renews while owned, past several TTLs", "[client][once]")
{
	REQUIRE_ONCE();
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.once_renew(text,bigint,interval)");
	const std::string  k = Unique("renew");
	LossLog            log;
	fence::OnceOptions opts;
	opts.on_lost = log.callback();
	fence::Once owner = fence::Once::begin("", k, 900ms, std::nullopt, opts);
	REQUIRE(owner.status() == OnceStatus::kNew);
	std::this_thread::sleep_for(2700ms);
	INFO("loss: " << log.message);
	CHECK(owner.owned());
	CHECK_FALSE(owner.lost());
	fence::Once other = fence::Once::begin("", k, 10s);
	CHECK(other.status() == OnceStatus::kInProgress);
	CHECK(owner.finish());
	CHECK(log.count() == 0);
}

TEST_CASE("Once: release and the destructor make the key retryable at once", "[client][once]")
{
	REQUIRE_ONCE();
	const std::string k = Unique("release");
	std::int64_t      t1, t2;
	{
		fence::Once a = fence::Once::begin("", k, 30s);
		REQUIRE(a.status() == OnceStatus::kNew);
		t1 = a.token();
		CHECK(a.step("half-way"));
		CHECK(a.release());
		CHECK_FALSE(a.release());
		CHECK_FALSE(a.lost());
		CHECK(a.loss_token().stop_requested());
		CHECK_THROWS_AS(a.step("more"), std::logic_error);
	}
	{
		fence::Once b = fence::Once::begin("", k, 30s);
		REQUIRE(b.status() == OnceStatus::kNew);
		t2 = b.token();
		CHECK(t2 > t1);
		REQUIRE(b.step().has_value());
		CHECK(*b.step() == "half-way");
		/* b goes out of scope unfinished: its destructor releases the key */
	}
	fence::Once c = fence::Once::begin("", k, 30s);
	REQUIRE(c.status() == OnceStatus::kNew);
	CHECK(c.token() > t2);
	/* A moved-from Once owns nothing; the moved-to one carries on. */
	fence::Once d(std::move(c));
	CHECK(c.token() == 0);
	CHECK_FALSE(c.owned());
	CHECK(d.owned());
	CHECK(d.finish());
}

TEST_CASE("Once: finish in the caller's transaction is done iff the transaction commits",
		  "[client][once]")
{
	REQUIRE_ONCE();
	const std::string k = Unique("tx");
	pqxx::connection  app("");
	{
		fence::Once o = fence::Once::begin("", k, 1s);
		REQUIRE(o.status() == OnceStatus::kNew);
		{
			pqxx::work tx(app);
			CHECK(o.finish(tx, std::string(R"({"rolled": "back"})")));
			tx.abort();
		}
		/* Not done: in progress until the owner's lease expires, then taken over. */
		fence::Once busy = fence::Once::begin("", k, 10s);
		CHECK(busy.status() == OnceStatus::kInProgress);
	}
	std::this_thread::sleep_for(1200ms);
	fence::Once o2 = fence::Once::begin("", k, 10s);
	REQUIRE(o2.status() == OnceStatus::kNew);
	{
		pqxx::work tx(app);
		CHECK(o2.finish(tx, std::string(R"({"ok": true})")));
		tx.commit();
	}
	fence::Once done = fence::Once::begin("", k, 10s);
	CHECK(done.status() == OnceStatus::kDone);
	REQUIRE(done.response().has_value());
	CHECK(*done.response() == R"({"ok": true})");
}

TEST_CASE("Once: bad input is refused and changes nothing", "[client][once]")
{
	REQUIRE_ONCE();
	CHECK_THROWS_AS(fence::Once::begin("", "", 10s), std::invalid_argument);
	CHECK_THROWS_AS(fence::Once::begin("", std::string(1025, 'k'), 10s), std::invalid_argument);
	CHECK_THROWS_AS(fence::Once::begin("", Unique("ttl"), 2ms), std::invalid_argument);
	fence::OnceOptions bad;
	bad.safety_margin = 10s;
	CHECK_THROWS_AS(fence::Once::begin("", Unique("margin"), 10s, std::nullopt, bad),
					std::invalid_argument);
	/* A TTL the server refuses (above fence.max_lease_ttl): 22023, nothing begun. */
	const std::string k = Unique("huge");
	try
	{
		fence::Once::begin("", k, std::chrono::hours(24 * 365 * 100));
		FAIL("no error for a 100-year TTL");
	}
	catch (const pqxx::sql_error &e)
	{
		CHECK(e.sqlstate() == "22023");
	}
	fence::Once fresh = fence::Once::begin("", k, 10s);
	CHECK(fresh.status() == OnceStatus::kNew);
	/* Invalid JSON as the response: the server's error (22P02); the key is not done. */
	CHECK_THROWS_AS(fresh.finish(std::string("{not json")), pqxx::sql_error);
}
