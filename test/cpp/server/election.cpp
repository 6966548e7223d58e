/*-------------------------------------------------------------------------
 *
 * server/election.cpp
 *	  Leader election (fence.campaign / leader / resign) and the NOTIFY
 *	  pg_fence payloads, seen from several real connections.
 *
 * A waiting campaign sleeps on its latch, which the isolation tester
 * cannot see (test/specs/election.spec has what needs no waiter): a
 * resignation and an expiry wake it.  Notifications are read with libpq
 * on a connection of their own (LISTEN pg_fence) and their JSON is parsed
 * by the server (jsonb), so a payload that is not valid JSON fails.
 *
 * Each waiter runs on its own connection in its own thread; threads only
 * record what they see, the main thread asserts.  Names are unique per
 * run; every lease is released or expires within the test.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/server/election.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "catch2_compat.hpp"
#include <pqxx/pqxx>

#include "pqxx_compat.hpp"
#include "test_util.hpp"
#include "waiter.hpp"

using fence::pqxx_compat::ExecParams1;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fence_test::SqlWaiter;

#define REQUIRE_ELECTIONS() \
	FENCE_TEST_SKIP_UNLESS_FUNCTION("fence.campaign(text,text,interval,interval)")

std::string
Unique(const std::string &base)
{
	return fence_test::Unique("test_election", base);
}

std::optional<std::int64_t>
Campaign(pqxx::connection &c, const std::string &name, const std::string &candidate,
		 const std::string &ttl, const char *wait = nullptr)
{
	pqxx::nontransaction tx(c);
	pqxx::row            r =
        wait == nullptr
					   ? ExecParams1(tx, "SELECT fence.campaign($1, $2, $3::interval)", name, candidate, ttl)
					   : ExecParams1(tx, "SELECT fence.campaign($1, $2, $3::interval, $4::interval)", name,
									 candidate, ttl, std::string(wait));
	if (r[0].is_null())
		return std::nullopt;
	return r[0].as<std::int64_t>();
}

bool
Resign(pqxx::connection &c, const std::string &name, std::int64_t term)
{
	pqxx::nontransaction tx(c);
	return ExecParams1(tx, "SELECT fence.resign($1, $2)", name, term)[0].as<bool>();
}

/* fence.leader(name)'s candidate, or "" when there is no leader. */
std::string
LeaderOf(pqxx::connection &c, const std::string &name)
{
	pqxx::nontransaction tx(c);
	pqxx::row            r =
		ExecParams1(tx, "SELECT coalesce((SELECT candidate FROM fence.leader($1)), '')", name);
	return r[0].as<std::string>();
}

/* Sets `w` (waiter.hpp) waiting in campaign(name, candidate, '1 hour', wait). */
void
StartCampaign(SqlWaiter &w, const std::string &name, const std::string &candidate, const char *wait)
{
	w.StartOn([=](pqxx::connection &c) { return Campaign(c, name, candidate, "1 hour", wait); });
}

/* A libpq connection that LISTENs on pg_fence. */
class Listener
{
public:
	Listener() : conn_(PQconnectdb(""))
	{
		REQUIRE(PQstatus(conn_) == CONNECTION_OK);
		PGresult *r = PQexec(conn_, "LISTEN pg_fence");
		bool      ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
		REQUIRE(ok);
	}
	~Listener() { PQfinish(conn_); }
	Listener(const Listener &) = delete;
	Listener &operator=(const Listener &) = delete;

	/*
	 * The next pg_fence payload that contains one of `needles` (other
	 * tests' notifications are skipped), or nullopt after `limit`.
	 */
	std::optional<std::string>
	Next(const std::vector<std::string> &needles, std::chrono::milliseconds limit = 10s)
	{
		auto until = Clock::now() + limit;
		for (;;)
		{
			if (PQconsumeInput(conn_) == 0)
				return std::nullopt;
			while (PGnotify *n = PQnotifies(conn_))
			{
				std::string payload = n->extra;
				bool        ours = std::strcmp(n->relname, "pg_fence") == 0;
				PQfreemem(n);
				if (!ours)
					continue;
				for (const auto &needle : needles)
					if (payload.find(needle) != std::string::npos)
						return payload;
			}
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
			if (left.count() <= 0)
				return std::nullopt;
			pollfd pfd{PQsocket(conn_), POLLIN, 0};
			(void) poll(&pfd, 1, static_cast<int>(left.count()));
		}
	}

private:
	PGconn *conn_;
};

/* "name":"<name>" as it appears in a payload (names here need no escaping). */
std::string
NameKey(const std::string &name)
{
	return "\"name\":\"" + name + "\"";
}

/* A payload's key, as text (->>), parsed by the server; "<null>" for JSON null / missing. */
std::string
Field(pqxx::connection &c, const std::string &payload, const std::string &key)
{
	pqxx::nontransaction tx(c);
	pqxx::row r = ExecParams1(tx, "SELECT coalesce($1::jsonb ->> $2, '<null>')", payload, key);
	return r[0].as<std::string>();
}

/* The payload's keys, sorted, comma-separated. */
std::string
Keys(pqxx::connection &c, const std::string &payload)
{
	pqxx::nontransaction tx(c);
	pqxx::row            r = ExecParams1(
				   tx, "SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys($1::jsonb) AS k", payload);
	return r[0].as<std::string>();
}

} // namespace

TEST_CASE("election: a resignation wakes the waiting campaigner, elected with a larger term",
		  "[server][election]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("resign");
	pqxx::connection  h("");
	auto              term = Campaign(h, name, "node-a", "1 hour");
	REQUIRE(term.has_value());

	SqlWaiter w;
	StartCampaign(w, name, "node-b", "60 s");
	CHECK_FALSE(w.Finished(500ms)); /* waiting in the server */
	CHECK(LeaderOf(h, name) == "node-a");

	auto resigned_at = Clock::now();
	REQUIRE(Resign(h, name, *term));
	REQUIRE(w.Finished(5s));
	CHECK(w.error.empty());
	REQUIRE(w.result.has_value());
	CHECK(*w.result > *term);
	CHECK(w.done_at - resigned_at < 2s); /* woken by the resignation, not by the 60 s wait */
	CHECK(LeaderOf(h, name) == "node-b");
	CHECK_FALSE(Resign(h, name, *term)); /* the old term is gone for good */
	CHECK(Resign(w.conn, name, *w.result));
	CHECK(LeaderOf(h, name).empty());
}

TEST_CASE("election: the leader's expiry wakes the waiting campaigner", "[server][election]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("expiry");
	pqxx::connection  h("");
	auto              term = Campaign(h, name, "node-a", "1 second");
	REQUIRE(term.has_value());

	auto      t0 = Clock::now();
	SqlWaiter w;
	StartCampaign(w, name, "node-b", "60 s");
	REQUIRE(w.Finished(10s));
	REQUIRE(w.result.has_value());
	CHECK(*w.result > *term);
	CHECK(w.done_at - t0 < 5s);
	CHECK_FALSE(Resign(h, name, *term));
	CHECK(Resign(w.conn, name, *w.result));
}

TEST_CASE("election: a waiting campaign that sees no resignation returns NULL after its wait",
		  "[server][election]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("elapse");
	pqxx::connection  h("");
	auto              term = Campaign(h, name, "node-a", "1 hour");
	REQUIRE(term.has_value());

	SqlWaiter w;
	StartCampaign(w, name, "node-b", "300 ms");
	REQUIRE(w.Finished(10s));
	CHECK(w.error.empty());
	CHECK_FALSE(w.result.has_value());
	CHECK(LeaderOf(h, name) == "node-a");
	CHECK(Resign(h, name, *term));
}

TEST_CASE("notify: election, renewal, resignation and takeover payloads", "[server][notify]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("notify");
	Listener          l;
	pqxx::connection  a("");
	pqxx::connection  b("");

	auto term = Campaign(a, name, "node-a", "1 hour");
	REQUIRE(term.has_value());
	auto p = l.Next({NameKey(name)});
	REQUIRE(p.has_value());
	CHECK(Keys(a, *p) == "at,event,expires_at,holder,kind,name,token");
	CHECK(Field(a, *p, "name") == name);
	CHECK(Field(a, *p, "kind") == "leader");
	CHECK(Field(a, *p, "event") == "acquired");
	CHECK(Field(a, *p, "token") == std::to_string(*term));
	CHECK(Field(a, *p, "holder") == "node-a");
	{
		/* times are ISO 8601 in UTC, equal to what leader() reports */
		pqxx::nontransaction tx(a);
		pqxx::row            r = ExecParams1(
					   tx,
					   "SELECT ($1::jsonb ->> 'expires_at') ~ '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?\\+00:00$', "
								  "($1::jsonb ->> 'expires_at')::timestamptz = (SELECT expires_at FROM fence.leader($2)), "
								  "($1::jsonb ->> 'at')::timestamptz = (SELECT elected_at FROM fence.leader($2))",
					   *p, name);
		CHECK(r[0].as<bool>());
		CHECK(r[1].as<bool>());
		CHECK(r[2].as<bool>());
	}

	/* neither a renewal nor the leader's own campaign notifies: the next one is the resignation */
	{
		pqxx::nontransaction tx(a);
		CHECK(ExecParams1(tx, "SELECT fence.lease_renew($1, $2, '1 hour')", name, *term)[0]
				  .as<bool>());
	}
	CHECK(Campaign(a, name, "node-a", "1 hour") == term);
	REQUIRE(Resign(a, name, *term));
	p = l.Next({NameKey(name)});
	REQUIRE(p.has_value());
	CHECK(Field(a, *p, "event") == "resigned");
	CHECK(Field(a, *p, "kind") == "leader");
	CHECK(Field(a, *p, "token") == std::to_string(*term));
	CHECK(Field(a, *p, "holder") == "node-a");
	CHECK(Field(a, *p, "expires_at") == "<null>");

	/* an expired leader taken over by a plain lease: previous_* tell what ended */
	auto term2 = Campaign(a, name, "node-a", "200 ms");
	REQUIRE(term2.has_value());
	p = l.Next({NameKey(name)});
	REQUIRE(p.has_value());
	CHECK(Field(a, *p, "event") == "acquired");
	REQUIRE(fence_test::WaitFor([&] { return LeaderOf(b, name).empty(); }, 10s));
	std::int64_t token;
	{
		pqxx::nontransaction tx(b);
		token = ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour', 'plain')", name)[0]
					.as<std::int64_t>();
	}
	p = l.Next({NameKey(name)});
	REQUIRE(p.has_value());
	CHECK(Keys(a, *p) == "at,event,expires_at,holder,kind,name,previous_expires_at,"
						 "previous_holder,previous_kind,previous_token,token");
	CHECK(Field(a, *p, "event") == "taken_over");
	CHECK(Field(a, *p, "kind") == "lease");
	CHECK(Field(a, *p, "token") == std::to_string(token));
	CHECK(Field(a, *p, "holder") == "plain");
	CHECK(Field(a, *p, "previous_kind") == "leader");
	CHECK(Field(a, *p, "previous_token") == std::to_string(*term2));
	CHECK(Field(a, *p, "previous_holder") == "node-a");

	/* a release */
	{
		pqxx::nontransaction tx(b);
		CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, token)[0].as<bool>());
	}
	p = l.Next({NameKey(name)});
	REQUIRE(p.has_value());
	CHECK(Field(a, *p, "event") == "released");
	CHECK(Field(a, *p, "kind") == "lease");
	CHECK(Field(a, *p, "token") == std::to_string(token));
}

TEST_CASE("notify: semaphore permits say kind semaphore and their slot", "[server][notify]")
{
	REQUIRE_ELECTIONS();
	const std::string    name = Unique("sem");
	Listener             l;
	pqxx::connection     a("");
	pqxx::connection     j(""); /* parses the payloads */
	pqxx::nontransaction tx(a);
	auto t1 = ExecParams1(tx, "SELECT fence.semaphore_acquire($1, 2, '1 hour')", name)[0]
				  .as<std::int64_t>();
	auto t2 = ExecParams1(tx, "SELECT fence.semaphore_acquire($1, 2, '1 hour', 'h2')", name)[0]
				  .as<std::int64_t>();
	auto p1 = l.Next({NameKey(name)});
	auto p2 = l.Next({NameKey(name)});
	REQUIRE(p1.has_value());
	REQUIRE(p2.has_value());
	CHECK(Field(j, *p1, "kind") == "semaphore");
	CHECK(Field(j, *p1, "token") == std::to_string(t1));
	CHECK(Field(j, *p1, "holder") == "<null>");
	CHECK(Field(j, *p1, "slot") == "0");
	CHECK(Field(j, *p2, "slot") == "1");
	CHECK(Field(j, *p2, "holder") == "h2");
	CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2) AND fence.lease_release($1, $3)",
					  name, t1, t2)[0]
			  .as<bool>());
}

TEST_CASE("notify: a rolled-back grant or resignation sends nothing; delivery at commit",
		  "[server][notify]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("rollback");
	const std::string marker = Unique("marker");
	Listener          l;
	pqxx::connection  a("");
	pqxx::connection  m("");

	{
		pqxx::work tx(a);
		CHECK_FALSE(
			ExecParams1(tx, "SELECT fence.campaign($1, 'node-a', '1 hour')", name)[0].is_null());
		tx.abort();
	}
	{
		/* a savepoint rolled back: its grant's notification goes with it */
		pqxx::work tx(a);
		tx.exec("SAVEPOINT s");
		CHECK_FALSE(
			ExecParams1(tx, "SELECT fence.campaign($1, 'node-a', '1 hour')", name)[0].is_null());
		tx.exec("ROLLBACK TO SAVEPOINT s");
		tx.commit();
	}
	auto term = Campaign(a, name, "node-a", "1 hour");
	REQUIRE(term.has_value());
	{
		/* not before the commit */
		pqxx::work tx(a);
		CHECK(ExecParams1(tx, "SELECT fence.resign($1, $2)", name, *term)[0].as<bool>());
		auto early = l.Next({NameKey(name)});
		REQUIRE(early.has_value());
		CHECK(Field(m, *early, "event") == "acquired"); /* the committed campaign's */
		CHECK(Field(m, *early, "token") == std::to_string(*term));
		CHECK_FALSE(l.Next({NameKey(name)}, 300ms).has_value());
		tx.abort(); /* and a rolled-back resignation sends nothing either */
	}
	/* a marker committed afterwards arrives first: nothing of `name` was sent in between */
	{
		pqxx::nontransaction tx(m);
		CHECK_FALSE(
			ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour')", marker)[0].is_null());
	}
	auto p = l.Next({NameKey(name), NameKey(marker)});
	REQUIRE(p.has_value());
	CHECK(Field(m, *p, "name") == marker);
	CHECK(LeaderOf(m, name) == "node-a");
	CHECK(Resign(a, name, *term));
}

TEST_CASE("notify: names and holders too long for the payload are cut and flagged",
		  "[server][notify]")
{
	REQUIRE_ELECTIONS();
	/* 1024 bytes that escape to six each (\u0001), after a unique prefix */
	const std::string prefix = Unique("long") + "/";
	const std::string name = prefix + std::string(1024 - prefix.size(), '\x01');
	/* the longest holder (1024 bytes), escaping to two each: over the payload's 2000 */
	const std::string holder(1024, '"');
	Listener          l;
	pqxx::connection  a("");
	std::int64_t      token;
	{
		pqxx::nontransaction tx(a);
		token = ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour', $2)", name, holder)[0]
					.as<std::int64_t>();
	}
	auto p = l.Next({"\"name\":\"" + prefix});
	REQUIRE(p.has_value());
	CHECK(p->size() < 8000);
	CHECK(Field(a, *p, "name_truncated") == "true");
	CHECK(Field(a, *p, "holder_truncated") == "true");
	{
		pqxx::nontransaction tx(a);
		pqxx::row            r =
			ExecParams1(tx,
						"SELECT left($2, length($1::jsonb ->> 'name')) = ($1::jsonb ->> 'name'), "
						"length($1::jsonb ->> 'name') BETWEEN 100 AND length($2) - 1, "
						"left($3, length($1::jsonb ->> 'holder')) = ($1::jsonb ->> 'holder'), "
						"length($1::jsonb ->> 'holder') BETWEEN 100 AND length($3) - 1",
						*p, name, holder);
		CHECK(r[0].as<bool>()); /* a prefix of the name */
		CHECK(r[1].as<bool>()); /* cut, not emptied */
		CHECK(r[2].as<bool>());
		CHECK(r[3].as<bool>());
	}
	CHECK(Field(a, *p, "token") == std::to_string(token));

	/* a short name is not flagged */
	const std::string short_name = Unique("short");
	{
		pqxx::nontransaction tx(a);
		CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, token)[0].as<bool>());
		token = ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour', 'h')", short_name)[0]
					.as<std::int64_t>();
	}
	p = l.Next({NameKey(short_name)});
	REQUIRE(p.has_value());
	CHECK(Field(a, *p, "name_truncated") == "<null>");
	CHECK(Field(a, *p, "holder_truncated") == "<null>");
	pqxx::nontransaction tx(a);
	CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", short_name, token)[0].as<bool>());
}

TEST_CASE("notify: fence.notify = off sends nothing", "[server][notify]")
{
	REQUIRE_ELECTIONS();
	const std::string name = Unique("off");
	const std::string marker = Unique("marker-off");
	Listener          l;
	pqxx::connection  a("");
	pqxx::connection  m("");
	std::int64_t      token;
	{
		pqxx::nontransaction tx(a);
		tx.exec("SET fence.notify = off");
		token =
			ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour')", name)[0].as<std::int64_t>();
		CHECK(ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, token)[0].as<bool>());
	}
	{
		pqxx::nontransaction tx(m);
		CHECK_FALSE(
			ExecParams1(tx, "SELECT fence.lease_acquire($1, '1 hour')", marker)[0].is_null());
	}
	auto p = l.Next({NameKey(name), NameKey(marker)});
	REQUIRE(p.has_value());
	CHECK(Field(m, *p, "name") == marker);
}
