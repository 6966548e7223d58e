/*-------------------------------------------------------------------------
 *
 * server/locks_multi.cpp
 *	  Connection-bound locks seen from several real client connections.
 *
 * Guarantees checked (docs/guarantees.md): 1 mutual exclusion, 2 monotonic tokens, 4 a
 * lock is free as soon as its session ends (client disconnect,
 * pg_terminate_backend).  Every test runs against the server named by libpq's
 * environment, in database fence_catch2 (created with pg_fence if missing).
 *
 * Catch2 assertions are not thread-safe: worker threads only record what they
 * see; the main thread asserts.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/server/locks_multi.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "catch2_compat.hpp"
#include <pqxx/pqxx>

#include "pqxx_compat.hpp"

using fence::pqxx_compat::Exec1;
using fence::pqxx_compat::ExecParams;
using fence::pqxx_compat::ExecParams0;
using fence::pqxx_compat::ExecParams1;

namespace {

const char *const kTestDatabase = "fence_catch2";

/* Connection string for the test database (the rest comes from PG* variables). */
std::string
TestConninfo()
{
	static const std::string conninfo = [] {
		pqxx::connection     admin{""};
		pqxx::nontransaction tx{admin};
		if (ExecParams(tx, "SELECT 1 FROM pg_catalog.pg_database WHERE datname = $1", kTestDatabase)
				.empty())
			tx.exec(std::string("CREATE DATABASE ") + tx.quote_name(kTestDatabase));
		std::string          ci = std::string("dbname=") + kTestDatabase;
		pqxx::connection     c{ci};
		pqxx::nontransaction t2{c};
		t2.exec("CREATE EXTENSION IF NOT EXISTS pg_fence");
		return ci;
	}();
	return conninfo;
}

/* A lock name no earlier run of these tests has used. */
std::string
UniqueName(const std::string &what)
{
	auto now = std::chrono::system_clock::now().time_since_epoch();
	return "catch2/" + what + "/" + std::to_string(getpid()) + "/" +
		   std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

std::optional<int64_t>
TryLock(pqxx::connection &c, const std::string &name)
{
	pqxx::nontransaction tx{c};
	pqxx::row            r = ExecParams1(tx, "SELECT fence.try_lock($1)", name);
	if (r[0].is_null())
		return std::nullopt;
	return r[0].as<int64_t>();
}

bool
Unlock(pqxx::connection &c, const std::string &name, int64_t token)
{
	pqxx::nontransaction tx{c};
	return ExecParams1(tx, "SELECT fence.unlock($1, $2)", name, token)[0].as<bool>();
}

/* Poll try_lock until it grants (the old backend may take a moment to exit). */
std::optional<int64_t>
TryLockWithin(pqxx::connection &c, const std::string &name, std::chrono::milliseconds limit)
{
	auto deadline = std::chrono::steady_clock::now() + limit;
	for (;;)
	{
		auto token = TryLock(c, name);
		if (token || std::chrono::steady_clock::now() > deadline)
			return token;
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
}

struct Grant
{
	int64_t seq; /* grant order, counted while holding the lock */
	int64_t token;
	int     worker;
};

} /* namespace */

TEST_CASE(
	"four connections racing try_lock/unlock: one holder at a time, tokens increase in grant order",
	"[locks][race]")
{
	const int         kWorkers = 4;
	const int         kGrantsPerWorker = 25;
	const int         kMaxAttempts = 20000;
	const std::string conninfo = TestConninfo();
	const std::string name = UniqueName("race");

	int64_t row_id;
	{
		pqxx::connection     c{conninfo};
		pqxx::nontransaction tx{c};
		tx.exec("CREATE TABLE IF NOT EXISTS public.catch2_race ("
				" id bigserial PRIMARY KEY,"
				" holders integer NOT NULL DEFAULT 0,"
				" grants bigint NOT NULL DEFAULT 0)");
		row_id = Exec1(tx, "INSERT INTO public.catch2_race DEFAULT VALUES RETURNING id")[0]
					 .as<int64_t>();
	}

	std::mutex               mu;
	std::vector<Grant>       grants;
	std::vector<std::string> errors;
	std::atomic<long>        busy{0};
	std::atomic<int>         ready{0};

	auto worker = [&](int id) {
		try
		{
			pqxx::connection     c{conninfo};
			pqxx::nontransaction tx{c};
			ready++;
			while (ready.load() < kWorkers)
				std::this_thread::yield();

			int mine = 0;
			for (int attempt = 0; attempt < kMaxAttempts && mine < kGrantsPerWorker; attempt++)
			{
				pqxx::row r = ExecParams1(tx, "SELECT fence.try_lock($1)", name);
				if (r[0].is_null())
				{
					busy++;
					continue;
				}
				int64_t token = r[0].as<int64_t>();

				/* Inside the critical section: count holders and grants. */
				pqxx::row in = ExecParams1(
					tx,
					"UPDATE public.catch2_race SET holders = holders + 1, grants = grants + 1"
					" WHERE id = $1 RETURNING holders, grants",
					row_id);
				int     holders = in[0].as<int>();
				int64_t seq = in[1].as<int64_t>();

				ExecParams0(tx, "UPDATE public.catch2_race SET holders = holders - 1 WHERE id = $1",
							row_id);
				bool released =
					ExecParams1(tx, "SELECT fence.unlock($1, $2)", name, token)[0].as<bool>();

				std::lock_guard<std::mutex> g(mu);
				grants.push_back(Grant{seq, token, id});
				if (holders != 1)
					errors.push_back("worker " + std::to_string(id) + " saw " +
									 std::to_string(holders) + " holders with token " +
									 std::to_string(token));
				if (!released)
					errors.push_back("worker " + std::to_string(id) + ": unlock of token " +
									 std::to_string(token) + " returned false");
				mine++;
			}
			if (mine < kGrantsPerWorker)
			{
				std::lock_guard<std::mutex> g(mu);
				errors.push_back("worker " + std::to_string(id) + " got only " +
								 std::to_string(mine) + " grants");
			}
		}
		catch (const std::exception &e)
		{
			ready++; /* do not leave the others spinning */
			std::lock_guard<std::mutex> g(mu);
			errors.push_back("worker " + std::to_string(id) + ": " + e.what());
		}
	};

	std::vector<std::thread> threads;
	for (int i = 0; i < kWorkers; i++)
		threads.emplace_back(worker, i);
	for (auto &t : threads)
		t.join();

	INFO("first error: " << (errors.empty() ? std::string("none") : errors.front()));
	REQUIRE(errors.empty());
	REQUIRE(grants.size() == static_cast<size_t>(kWorkers * kGrantsPerWorker));
	/* The race really happened: some attempts found the lock taken. */
	CHECK(busy.load() > 0);

	std::sort(grants.begin(), grants.end(),
			  [](const Grant &a, const Grant &b) { return a.seq < b.seq; });
	for (size_t i = 0; i < grants.size(); i++)
	{
		/* seq is 1, 2, 3...: every grant was counted exactly once */
		REQUIRE(grants[i].seq == static_cast<int64_t>(i + 1));
		if (i > 0)
		{
			INFO("grant " << grants[i].seq << " (worker " << grants[i].worker << ") token "
						  << grants[i].token << " after token " << grants[i - 1].token);
			REQUIRE(grants[i].token > grants[i - 1].token);
		}
	}

	/* Nothing is left held: a fresh connection gets the lock with a newer token. */
	pqxx::connection after{conninfo};
	auto             token = TryLock(after, name);
	REQUIRE(token.has_value());
	REQUIRE(*token > grants.back().token);
	REQUIRE(Unlock(after, name, *token));
}

TEST_CASE("a connection closed while holding a session lock frees it", "[locks][abandon]")
{
	const std::string conninfo = TestConninfo();
	const std::string name = UniqueName("closed");
	pqxx::connection  other{conninfo};
	int64_t           first;

	{
		pqxx::connection holder{conninfo};
		auto             token = TryLock(holder, name);
		REQUIRE(token.has_value());
		first = *token;
		/* re-entrant for the holder, busy for everyone else */
		REQUIRE(TryLock(holder, name) == token);
		REQUIRE_FALSE(TryLock(other, name).has_value());
	} /* holder disconnects without unlocking */

	auto token = TryLockWithin(other, name, std::chrono::seconds(10));
	REQUIRE(token.has_value());
	REQUIRE(*token > first);
	REQUIRE(Unlock(other, name, *token));
}

TEST_CASE("a transaction lock held in an open transaction is freed when the connection closes",
		  "[locks][abandon]")
{
	const std::string conninfo = TestConninfo();
	const std::string name = UniqueName("closed-xact");
	pqxx::connection  other{conninfo};
	int64_t           first;

	{
		pqxx::connection holder{conninfo};
		pqxx::work       tx{holder};
		pqxx::row        r = ExecParams1(tx, "SELECT fence.try_xact_lock($1)", name);
		REQUIRE_FALSE(r[0].is_null());
		first = r[0].as<int64_t>();
		REQUIRE_FALSE(TryLock(other, name).has_value());
	} /* transaction and connection abandoned */

	auto token = TryLockWithin(other, name, std::chrono::seconds(10));
	REQUIRE(token.has_value());
	REQUIRE(*token > first);
	REQUIRE(Unlock(other, name, *token));
}

TEST_CASE("pg_terminate_backend of the holder frees its session lock", "[locks][abandon]")
{
	const std::string conninfo = TestConninfo();
	const std::string name = UniqueName("terminated");
	pqxx::connection  holder{conninfo};
	pqxx::connection  other{conninfo};

	auto first = TryLock(holder, name);
	REQUIRE(first.has_value());
	REQUIRE_FALSE(TryLock(other, name).has_value());

	{
		pqxx::nontransaction tx{other};
		/* waits (up to 10 s) until the backend is gone */
		REQUIRE(ExecParams1(tx, "SELECT pg_catalog.pg_terminate_backend($1, 10000)",
							holder.backendpid())[0]
					.as<bool>());
	}

	auto token = TryLockWithin(other, name, std::chrono::seconds(10));
	REQUIRE(token.has_value());
	REQUIRE(*token > *first);
	REQUIRE(Unlock(other, name, *token));
}
