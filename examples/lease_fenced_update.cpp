/*-------------------------------------------------------------------------
 *
 * lease_fenced_update.cpp
 *	  Example of the pg_fence C++ client: a lease (fence::Lease) and a
 *	  write that carries its fencing token (fence::fenced_update), so that
 *	  the write of an older holder is rejected.
 *
 * Usage: lease_fenced_update [CONNINFO]
 *	  CONNINFO is a libpq connection string; without it the PG* environment
 *	  variables are used.  The database needs CREATE EXTENSION pg_fence.
 *
 * It creates the table example_jobs (if missing) with row 1, then:
 *	 1. takes the lease "example-job" (TTL 10 s, renewed in the background),
 *		writes row 1 with its token and releases the lease;
 *	 2. takes the lease again: a new grant with a higher token, and writes
 *		row 1 with that;
 *	 3. writes row 1 once more with the first token, as a holder that was
 *		paused past its lease would: the write is rejected as stale.
 * Each step prints one line; the exit status is 0 only if every outcome
 * was the expected one.
 *
 * Build: see examples/CMakeLists.txt (CMake) or examples/Makefile
 * (pkg-config).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  examples/lease_fenced_update.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <cstdint>
#include <iostream>
#include <string>

#include <pg_fence/client.hpp>

using namespace std::chrono_literals;

namespace {

const char *const kLeaseName = "example-job";

/* Writes row 1 of example_jobs with `token`; returns what happened. */
fence::UpdateResult
WriteJob(pqxx::connection &conn, std::int64_t token, const std::string &state)
{
	pqxx::work          tx(conn);
	fence::UpdateResult result =
		fence::fenced_update(tx, "example_jobs", {{"id", 1}}, token, {{"state", state}});
	tx.commit();
	std::cout << "write with token " << token << ": " << fence::to_string(result) << "\n";
	return result;
}

} // namespace

int
main(int argc, char **argv)
{
	const std::string conninfo = argc > 1 ? argv[1] : "";

	try
	{
		std::cout << "pg_fence client " << fence::client_version() << "\n";

		pqxx::connection conn(conninfo);
		{
			pqxx::work tx(conn);
			tx.exec("CREATE TABLE IF NOT EXISTS example_jobs ("
					" id integer PRIMARY KEY, state text NOT NULL,"
					" fence bigint NOT NULL DEFAULT 0)");
			tx.exec("INSERT INTO example_jobs (id, state) VALUES (1, 'new')"
					" ON CONFLICT (id) DO NOTHING");
			tx.commit();
		}

		fence::LeaseOptions options;
		options.holder = "lease_fenced_update example";

		/* 1. The first holder. */
		auto first = fence::Lease::try_acquire(conninfo, kLeaseName, 10s, options);
		if (!first)
		{
			std::cout << "lease " << kLeaseName << " is held by someone else\n";
			return 1;
		}
		const std::int64_t old_token = first->token();
		std::cout << "lease " << kLeaseName << ": token " << old_token << "\n";
		/* A worker checks its lease before each step of work. */
		if (first->loss_token().stop_requested())
			return 1;
		if (WriteJob(conn, old_token, "written by the first holder") !=
			fence::UpdateResult::kApplied)
			return 1;
		first->release();

		/* 2. The next holder: a new grant, a higher token. */
		auto second = fence::Lease::try_acquire(conninfo, kLeaseName, 10s, options);
		if (!second)
			return 1;
		std::cout << "lease " << kLeaseName << " again: token " << second->token() << "\n";
		if (WriteJob(conn, second->token(), "written by the second holder") !=
			fence::UpdateResult::kApplied)
			return 1;

		/* 3. The first holder wakes up and writes with its old token. */
		std::cout << "old holder: ";
		if (WriteJob(conn, old_token, "late write of the first holder") !=
			fence::UpdateResult::kStale)
			return 1;
		return 0;
	}
	catch (const pqxx::sql_error &e)
	{
		std::cerr << "SQL error " << e.sqlstate() << ": " << e.what() << "\n";
	}
	catch (const std::exception &e)
	{
		std::cerr << "error: " << e.what() << "\n";
	}
	return 1;
}
