/*-------------------------------------------------------------------------
 *
 * client/election.cpp
 *	  Catch2 tests of fence::Election and fence::LeaderWatch on several real
 *	  connections: two candidates on one name, hand-over at resign and at
 *	  destruction (a higher term, at once rather than at the TTL), loss of a
 *	  leader whose backend is terminated and that stops renewing past its
 *	  TTL, observation of every change (election, resign, expiry without a
 *	  takeover), and the errors.
 *
 * Skipped (with a warning) when the server's pg_fence has no fence.campaign.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/client/election.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "catch2_compat.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include <libpq-fe.h>

#include "notify_payload.hpp"
#include "pg_fence/client.hpp"
#include "pqxx_compat.hpp"
#include "test_util.hpp"
#include "waiter.hpp"

using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fence_test::WaitFor;

#define REQUIRE_ELECTIONS() \
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.campaign(text,text,interval,interval)")

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_client_election", base);
}

/* Every leader an on_leader callback reported, in order ("" = none). */
struct LeaderLog
{
	std::mutex               mu;
	std::vector<std::string> seen; /* "candidate/term" or "none" */

	fence::LeaderCallback
	callback()
	{
		return [this](const std::optional<fence::Leader> &l) {
			std::lock_guard<std::mutex> lk(mu);
			seen.push_back(l ? l->candidate.value_or("(null)") + "/" + std::to_string(l->term)
							 : "none");
		};
	}
	std::string
	last()
	{
		std::lock_guard<std::mutex> lk(mu);
		return seen.empty() ? "" : seen.back();
	}
	std::vector<std::string>
	all()
	{
		std::lock_guard<std::mutex> lk(mu);
		return seen;
	}
};

/* fence.leader(name) through SQL on `c`: "candidate/term" or "none". */
std::string
LeaderRow(pqxx::connection &c, const std::string &name)
{
	pqxx::nontransaction tx(c);
	pqxx::result         r = fence::pqxx_compat::ExecParams(
				tx, "SELECT candidate || '/' || term FROM fence.leader($1)", name);
	return r.empty() ? "none" : r[0][0].as<std::string>();
}

fence::ElectionOptions
Candidate(const std::string &id)
{
	fence::ElectionOptions o;
	o.candidate = id;
	return o;
}

} // namespace

TEST_CASE("Election: one leader at a time; a waiting candidate is elected with a higher term "
		  "when the leader resigns",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string         name = Unique("resign");
	pqxx::connection          sql("");
	std::atomic<std::int64_t> elected_term{0};
	fence::ElectionOptions    bo = Candidate("B");
	bo.on_elected = [&](std::int64_t t) { elected_term = t; };
	fence::Election a("", name, 60s, Candidate("A"));
	fence::Election b("", name, 60s, std::move(bo));
	CHECK(a.name() == name);
	CHECK(a.candidate() == "A");
	CHECK_FALSE(a.is_leader());
	CHECK(a.term() == 0);
	CHECK(a.loss_token().stop_requested());

	REQUIRE(a.campaign(0ms));
	CHECK(a.is_leader());
	CHECK(a.term() > 0);
	CHECK(a.backend_pid() > 0);
	CHECK_FALSE(a.loss_token().stop_requested());
	CHECK(a.campaign(0ms)); /* already leader */
	CHECK(LeaderRow(sql, name) == "A/" + std::to_string(a.term()));
	auto cl = fence::current_leader("", name);
	REQUIRE(cl.has_value());
	CHECK(cl->candidate == "A");
	CHECK(cl->term == a.term());
	CHECK(cl->expires_at > cl->elected_at);

	/* B cannot be elected while A leads, not even after a short wait. */
	auto t0 = Clock::now();
	CHECK_FALSE(b.campaign(0ms));
	CHECK_FALSE(b.campaign(300ms));
	CHECK(Clock::now() - t0 >= 300ms);
	CHECK_FALSE(b.is_leader());

	/* B waits in the server; A's resign elects it at once (A's TTL is a minute). */
	fence_test::Waiter<bool> b_campaign;
	b_campaign.Start([&] { return b.campaign(60s); });
	CHECK_FALSE(b_campaign.Finished(200ms));
	const std::int64_t a_term = a.term();
	fence::LossToken   a_tok = a.loss_token();
	t0 = Clock::now();
	CHECK(a.resign());
	REQUIRE(b_campaign.Finished(20s));
	CHECK(b_campaign.error.empty());
	CHECK(b_campaign.done_at - t0 < 20s);
	REQUIRE(b_campaign.result);
	CHECK(b.is_leader());
	CHECK(b.term() > a_term);
	CHECK(elected_term.load() == b.term());
	CHECK_FALSE(a.is_leader());
	CHECK_FALSE(a.lost());
	CHECK(a.term() == a_term);
	CHECK(a_tok.stop_requested());
	CHECK_FALSE(a.resign()); /* not leader any more */
	CHECK(LeaderRow(sql, name) == "B/" + std::to_string(b.term()));

	/* A campaigns again after B resigns: a new, higher term. */
	CHECK(b.resign());
	REQUIRE(a.campaign(0ms));
	CHECK(a.term() > b.term());
}

TEST_CASE("Election: the destructor resigns, so the waiting candidate is elected before the TTL",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string        name = Unique("dtor");
	pqxx::connection         sql("");
	std::int64_t             a_term;
	fence::Election          b("", name, 60s, Candidate("B"));
	fence_test::Waiter<bool> b_campaign;
	{
		fence::Election a("", name, 60s, Candidate("A"));
		REQUIRE(a.campaign(0ms));
		a_term = a.term();
		b_campaign.Start([&] { return b.campaign(60s); });
		CHECK_FALSE(b_campaign.Finished(200ms));
	}
	CHECK(b_campaign.Finished(20s));
	CHECK(b_campaign.error.empty());
	REQUIRE(b.is_leader());
	CHECK(b.term() > a_term);
	CHECK(LeaderRow(sql, name) == "B/" + std::to_string(b.term()));
}

TEST_CASE("Election: a leader whose backend is terminated and that stops renewing loses "
		  "past its TTL; the follower is elected with a higher term",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string                      name = Unique("loss");
	pqxx::connection                       sql("");
	fence_test::LossLog<fence::LossReason> log;
	fence::ElectionOptions                 ao = Candidate("A");
	ao.on_lost = log.callback();
	ao.renew_interval = 10s; /* no renewal before the 800 ms TTL runs out */
	fence::Election a("", name, 800ms, std::move(ao));
	fence::Election b("", name, 10s, Candidate("B"));
	REQUIRE(a.campaign(0ms));
	const std::int64_t a_term = a.term();
	fence::LossToken   tok = a.loss_token();
	{
		pqxx::nontransaction tx(sql);
		CHECK(ExecParams1(tx, "SELECT pg_terminate_backend($1)", a.backend_pid())[0].as<bool>());
	}
	/* B waits in the server and is elected once A's term expires. */
	REQUIRE(b.campaign(20s));
	CHECK(b.term() > a_term);
	CHECK(WaitFor([&] { return log.count() == 1; }, 10s));
	CHECK(a.lost());
	CHECK_FALSE(a.is_leader());
	CHECK(tok.stop_requested());
	CHECK(a.term() == a_term);
	CHECK_FALSE(a.resign());
	CHECK(LeaderRow(sql, name) == "B/" + std::to_string(b.term()));
	/* The deposed leader's write with its old term loses to the new leader's. */
	{
		pqxx::nontransaction tx(sql);
		tx.exec("CREATE TABLE IF NOT EXISTS election_test_row (id int PRIMARY KEY, fence bigint "
				"NOT NULL DEFAULT 0)");
		tx.exec("INSERT INTO election_test_row VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET "
				"fence = 0");
		auto w = [&](std::int64_t term) {
			return ExecParams1(tx,
							   "SELECT fence.fenced_update('election_test_row', '{\"id\":1}', $1, "
							   "'{}')",
							   term)[0]
				.as<bool>();
		};
		CHECK(w(b.term()));
		CHECK_FALSE(w(a_term));
	}
}

/* The pid of the backend waiting in fence.campaign for `name` (0: none), and its application_name. */
int
CampaignerPid(pqxx::connection &c, const std::string &name, std::string *app = nullptr)
{
	pqxx::nontransaction tx(c);
	pqxx::result         r = fence::pqxx_compat::ExecParams(
				tx,
				"SELECT pid, application_name FROM pg_stat_activity WHERE state = 'active' AND "
						"strpos(query, 'fence.campaign(') > 0 AND strpos(query, $1) > 0 AND pid <> "
						"pg_backend_pid()",
				name);
	if (r.size() != 1)
		return 0;
	if (app)
		*app = r[0][1].as<std::string>();
	return r[0][0].as<int>();
}

TEST_CASE("Election: a campaign rides out its backend being terminated or its wait cancelled, "
		  "and is elected when the leader resigns",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string      name = Unique("campaign-reconnect");
	pqxx::connection       sql("");
	std::atomic<int>       retries{0};
	fence::ElectionOptions bo = Candidate("B");
	bo.on_retry = [&](const std::string &) { retries++; };
	fence::Election b("", name, 60s, std::move(bo));
	std::int64_t    holder_term;
	{
		pqxx::nontransaction tx(sql);
		holder_term = ExecParams1(tx, "SELECT fence.campaign($1, 'holder', '5 min')", name)[0]
						  .as<std::int64_t>();
	}
	std::atomic<int> result{-1};
	std::thread      t([&] {
        try
        {
            result = b.campaign(60s) ? 1 : 0;
        }
        catch (const std::exception &e)
        {
            WARN(e.what());
            result = 2;
        }
    });
	int              pid = 0;
	std::string      app;
	REQUIRE(WaitFor([&] { return (pid = CampaignerPid(sql, name, &app)) != 0; }, 20s));
	CHECK(app == "B"); /* application_name: the candidate */
	{
		pqxx::nontransaction tx(sql);
		CHECK(ExecParams1(tx, "SELECT pg_terminate_backend($1)", pid)[0].as<bool>());
	}
	/* A new backend campaigns in its place. */
	int pid2 = 0;
	CHECK(WaitFor([&] { return (pid2 = CampaignerPid(sql, name)) != 0 && pid2 != pid; }, 20s));
	CHECK(retries.load() >= 1);
	/* Someone else cancels the wait (57014): it campaigns again. */
	const int before = retries.load();
	{
		pqxx::nontransaction tx(sql);
		CHECK(ExecParams1(tx, "SELECT pg_cancel_backend($1)", pid2)[0].as<bool>());
	}
	CHECK(WaitFor([&] { return retries.load() > before && CampaignerPid(sql, name) != 0; }, 20s));
	CHECK(result.load() == -1);
	{
		pqxx::nontransaction tx(sql);
		CHECK(ExecParams1(tx, "SELECT fence.resign($1, $2)", name, holder_term)[0].as<bool>());
	}
	t.join();
	CHECK(result.load() == 1);
	CHECK(b.is_leader());
	CHECK(b.term() > holder_term);
	CHECK(LeaderRow(sql, name) == "B/" + std::to_string(b.term()));
}

TEST_CASE("Election: a leader without a candidate (a lease acquired without a holder) is read, "
		  "watched and observed",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("null-candidate");
	pqxx::connection  sql("");
	LeaderLog         watched;
	/* Watching before it exists: the watch's thread meets it. */
	fence::LeaderWatch w("", name, watched.callback());
	REQUIRE(WaitFor([&] { return watched.last() == "none"; }, 10s));
	std::int64_t token;
	{
		pqxx::nontransaction tx(sql);
		token =
			ExecParams1(tx, "SELECT fence.lease_acquire($1, '60 s')", name)[0].as<std::int64_t>();
	}
	const std::string expect = "(null)/" + std::to_string(token);
	CHECK(WaitFor([&] { return watched.last() == expect; }, 10s));
	std::optional<fence::Leader> l = fence::current_leader("", name);
	REQUIRE(l);
	CHECK_FALSE(l->candidate.has_value());
	CHECK(l->term == token);
	CHECK(l->expires_at > l->elected_at);
	/* A watch and an observing Election started while it leads. */
	LeaderLog              observed;
	fence::ElectionOptions eo = Candidate("E");
	eo.on_leader = observed.callback();
	fence::Election e("", name, 10s, std::move(eo));
	CHECK(WaitFor([&] { return observed.last() == expect; }, 10s));
	REQUIRE(e.observed_leader());
	CHECK_FALSE(e.observed_leader()->candidate.has_value());
	CHECK_FALSE(e.campaign(0ms));
	{
		pqxx::nontransaction tx(sql);
		CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, token)[0].as<bool>());
	}
	CHECK(WaitFor([&] { return watched.last() == "none" && observed.last() == "none"; }, 10s));
	CHECK(w.leader() == std::nullopt);
}

TEST_CASE("Election: a plain lease held for a moment only is seen by watches and observers, "
		  "from its notifications",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string      name = Unique("short-lease");
	pqxx::connection       sql("");
	LeaderLog              watched, observed;
	fence::LeaderWatch     w("", name, watched.callback());
	fence::ElectionOptions eo = Candidate("E");
	eo.on_leader = observed.callback();
	fence::Election e("", name, 10s, std::move(eo));
	REQUIRE(WaitFor([&] { return watched.last() == "none" && observed.last() == "none"; }, 10s));
	/*
	 * Granted and released in one transaction: both notifications arrive
	 * together at its commit, and fence.leader() never shows the lease to
	 * anyone, so only the "acquired" payload of kind lease can report it.
	 * Then a lease without a holder, granted and released in two
	 * statements (pg_fence leader --watch's case in test/shell/cli/elect.sh).
	 */
	std::int64_t t1, t2;
	{
		pqxx::work tx(sql);
		t1 = ExecParams1(tx, "SELECT fence.lease_acquire($1, '60 s', 'plain')", name)[0]
				 .as<std::int64_t>();
		CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, t1)[0].as<bool>());
		tx.commit();
	}
	{
		pqxx::nontransaction tx(sql);
		t2 = ExecParams1(tx, "SELECT fence.lease_acquire($1, '60 s')", name)[0].as<std::int64_t>();
		CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, t2)[0].as<bool>());
	}
	const std::vector<std::string> expect{"none", "plain/" + std::to_string(t1), "none",
										  "(null)/" + std::to_string(t2), "none"};
	CHECK(WaitFor([&] { return watched.all().size() >= 5 && observed.all().size() >= 5; }, 10s));
	CHECK(watched.all() == expect);
	CHECK(observed.all() == expect);
	CHECK(w.leader() == std::nullopt);
	CHECK_FALSE(e.observed_leader().has_value());
}

TEST_CASE("Election: observers see every new leader, a resign, and an expiry without a takeover",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	const std::string      name = Unique("observe");
	const std::string      other_name = Unique("observe-other");
	LeaderLog              seen;
	fence::ElectionOptions oo = Candidate("observer");
	oo.on_leader = seen.callback();
	fence::Election observer("", name, 10s, std::move(oo));
	CHECK(WaitFor([&] { return seen.last() == "none"; }, 10s));
	CHECK_FALSE(observer.observed_leader().has_value());

	fence::Election a("", name, 30s, Candidate("A"));
	REQUIRE(a.campaign(0ms));
	const std::string a_seen = "A/" + std::to_string(a.term());
	CHECK(WaitFor([&] { return seen.last() == a_seen; }, 10s));
	auto ol = observer.observed_leader();
	REQUIRE(ol.has_value());
	CHECK(ol->candidate == "A");
	CHECK(ol->term == a.term());

	/* Another name's changes are not this election's. */
	fence::Election x("", other_name, 30s, Candidate("X"));
	REQUIRE(x.campaign(0ms));
	CHECK(x.resign());

	CHECK(a.resign());
	CHECK(WaitFor([&] { return seen.last() == "none"; }, 10s));

	/* Q leads for a moment only: seen from the notifications, though gone before any read. */
	std::string q_seen;
	{
		fence::Election q("", name, 30s, Candidate("Q"));
		REQUIRE(q.campaign(0ms));
		q_seen = "Q/" + std::to_string(q.term());
		CHECK(q.resign());
	}
	CHECK(WaitFor([&] { return seen.all().size() == 5; }, 10s));

	/* B stops renewing: its term expires with no takeover, hence no NOTIFY; still seen. */
	fence::ElectionOptions bo = Candidate("B");
	bo.renew_interval = 10s;
	fence::Election b("", name, 700ms, std::move(bo));
	REQUIRE(b.campaign(0ms));
	const std::string b_seen = "B/" + std::to_string(b.term());
	CHECK(WaitFor([&] { return seen.last() == b_seen; }, 10s));
	CHECK(WaitFor([&] { return seen.last() == "none"; }, 10s));
	CHECK(seen.all() ==
		  std::vector<std::string>{"none", a_seen, "none", q_seen, "none", b_seen, "none"});

	/* A standalone LeaderWatch reports the state at start. */
	LeaderLog          w;
	fence::LeaderWatch watch("", name, w.callback());
	CHECK(WaitFor([&] { return watch.changes() == 1; }, 10s));
	CHECK(w.all() == std::vector<std::string>{"none"});
	CHECK_FALSE(watch.leader().has_value());
}

TEST_CASE("Election: bad arguments and connection failures are errors", "[client][election]")
{
	CHECK_THROWS_AS(fence::Election("", "", 10s), std::invalid_argument);
	CHECK_THROWS_AS(fence::Election("", std::string(1025, 'x'), 10s), std::invalid_argument);
	CHECK_THROWS_AS(fence::Election("", "n", 2ms), std::invalid_argument);
	fence::ElectionOptions bad = Candidate(std::string("a\0b", 3));
	CHECK_THROWS_AS(fence::Election("", "n", 10s, bad), std::invalid_argument);
	fence::ElectionOptions margin;
	margin.safety_margin = 10s;
	CHECK_THROWS_AS(fence::Election("", "n", 10s, margin), std::invalid_argument);
	fence::Election e("", "n", 10s);
	CHECK_THROWS_AS(e.campaign(-1ms), std::invalid_argument);
	CHECK_THROWS_AS(fence::current_leader("", ""), std::invalid_argument);
	CHECK_THROWS_AS(fence::LeaderWatch("", "", nullptr), std::invalid_argument);

	const std::string nowhere = "host=/nonexistent-pg-fence-socket-dir connect_timeout=2";
	CHECK_THROWS_AS(fence::current_leader(nowhere, "n"), pqxx::broken_connection);
	CHECK_THROWS_AS(fence::LeaderWatch(nowhere, "n", nullptr), pqxx::broken_connection);
	fence::Election far(nowhere, "n", 10s);
	CHECK_THROWS_AS(far.campaign(0ms), pqxx::broken_connection);
	CHECK_FALSE(far.is_leader());
}

TEST_CASE("Election: the server's notification payloads are read back exactly, escapes included",
		  "[client][election]")
{
	REQUIRE_ELECTIONS();
	/* A name and a candidate with a quote, a backslash, a tab and non-ASCII text. */
	const std::string                           name = Unique("payload \"q\" \\ \t é ✓");
	const std::string                           candidate = "cand \"x\"\\\n✓";
	std::unique_ptr<PGconn, void (*)(PGconn *)> listener(PQconnectdb(""), PQfinish);
	REQUIRE(PQstatus(listener.get()) == CONNECTION_OK);
	PQclear(PQexec(listener.get(), "LISTEN pg_fence"));

	fence::Election e("", name, 30s, Candidate(candidate));
	REQUIRE(e.campaign(0ms));
	const std::int64_t term = e.term();
	CHECK(e.resign());

	std::vector<fence::client_internal::NotifyPayload> got;
	std::vector<std::string>                           raw;
	WaitFor(
		[&] {
			PQconsumeInput(listener.get());
			while (PGnotify *n = PQnotifies(listener.get()))
			{
				raw.emplace_back(n->extra);
				if (auto p = fence::client_internal::ParseNotifyPayload(n->extra))
					if (p->name == name)
						got.push_back(*p);
				PQfreemem(n);
			}
			return got.size() >= 2;
		},
		10s);
	INFO("payloads: " << raw.size());
	REQUIRE(got.size() == 2);
	CHECK(got[0].kind == "leader");
	CHECK(got[0].event == "acquired");
	CHECK(got[0].token == term);
	CHECK(got[0].holder == std::optional<std::string>(candidate));
	CHECK_FALSE(got[0].name_truncated);
	CHECK(got[0].at.has_value());
	CHECK(got[0].expires_at.has_value());
	CHECK(got[1].event == "resigned");
	CHECK(got[1].token == term);
	CHECK_FALSE(got[1].expires_at.has_value());

	CHECK_FALSE(fence::client_internal::ParseNotifyPayload("not json").has_value());
	CHECK_FALSE(fence::client_internal::ParseNotifyPayload("{\"name\":\"x\"}").has_value());
	auto surrogate = fence::client_internal::ParseNotifyPayload(
		"{\"name\":\"\\ud83d\\ude00\",\"kind\":\"leader\",\"event\":\"acquired\",\"token\":7}");
	REQUIRE(surrogate.has_value());
	CHECK(surrogate->name == "\xF0\x9F\x98\x80");
	CHECK_FALSE(surrogate->holder.has_value());
}
