/*-------------------------------------------------------------------------
 *
 * session_lock.cpp
 *	  Example of the pg_fence C++ client: a session lock
 *	  (fence::SessionLock), held by one database session at a time and
 *	  released at the end of its scope.
 *
 * Usage: session_lock [CONNINFO]
 *	  CONNINFO is a libpq connection string; without it the PG* environment
 *	  variables are used.  The database needs CREATE EXTENSION pg_fence.
 *
 * Two connections (two sessions) take turns on the lock "example-lock":
 * the first takes it, the second finds it busy, the first releases it and
 * the second then gets it, with a higher fencing token.  Each step prints
 * one line; the exit status is 0 only if every outcome was the expected one.
 *
 * Build: see examples/CMakeLists.txt (CMake) or examples/Makefile
 * (pkg-config).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  examples/session_lock.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <cstdint>
#include <iostream>
#include <string>

#include <pg_fence/client.hpp>

using namespace std::chrono_literals;

int
main(int argc, char **argv)
{
	const std::string conninfo = argc > 1 ? argv[1] : "";
	const std::string name = "example-lock";

	try
	{
		pqxx::connection session1(conninfo);
		pqxx::connection session2(conninfo);

		std::int64_t first_token = 0;
		{
			auto lock = fence::SessionLock::try_acquire(session1, name);
			if (!lock)
			{
				std::cout << name << " is held by another session\n";
				return 1;
			}
			first_token = lock->token();
			std::cout << "session 1 holds " << name << " with token " << first_token << "\n";

			/* Another session does not get it while session 1 holds it. */
			auto other = fence::SessionLock::try_acquire(session2, name);
			std::cout << "session 2 try_acquire: " << (other ? "granted" : "busy") << "\n";
			if (other)
				return 1;
		} /* the lock is released here, by its destructor */
		std::cout << "session 1 released it\n";

		/* Now session 2 gets it (waiting at most 5 seconds), with a higher token. */
		auto lock = fence::SessionLock::try_acquire_for(session2, name, 5s);
		if (!lock)
		{
			std::cout << "session 2 timed out\n";
			return 1;
		}
		std::cout << "session 2 holds " << name << " with token " << lock->token() << "\n";
		return lock->token() > first_token ? 0 : 1;
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
