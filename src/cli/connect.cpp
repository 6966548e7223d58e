/*-------------------------------------------------------------------------
 *
 * connect.cpp
 *	  Connecting to the database and checking that pg_fence is installed
 *	  there.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/connect.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "connect.hpp"

#include <pqxx/except>
#include <pqxx/nontransaction>

#include "pqxx_compat.hpp"

namespace fence::cli {

std::unique_ptr<pqxx::connection>
Connect(const std::string &conninfo)
{
	try
	{
		auto c = std::make_unique<pqxx::connection>(conninfo);
		fence::pqxx_compat::NoReactivation(*c);
		return c;
	}
	catch (const pqxx::broken_connection &e)
	{
		throw Unavailable{"could not connect to the database: " + Trim(e.what()), ""};
	}
}

void
CheckExtension(pqxx::connection &conn, const char *proc)
{
	pqxx::nontransaction tx(conn);
	pqxx::row            r = fence::pqxx_compat::ExecParams1(
				   tx,
				   "SELECT current_database(), "
							  "(SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_fence'), "
							  "pg_catalog.to_regprocedure($1) IS NOT NULL",
				   std::string(proc));
	std::string db = r[0].c_str();
	if (r[1].is_null())
		throw Unavailable{"extension pg_fence is not installed in database \"" + db + "\"",
						  "Run CREATE EXTENSION pg_fence; in that database (as a superuser)."};
	if (!r[2].as<bool>())
		throw Unavailable{"pg_fence " + std::string(r[1].c_str()) + " in database \"" + db +
							  "\" has no " + proc,
						  "Update it: ALTER EXTENSION pg_fence UPDATE;"};
}

} // namespace fence::cli
