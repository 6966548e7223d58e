/*-------------------------------------------------------------------------
 *
 * enqueue.cpp
 *	  `pg_fence enqueue QUEUE [PAYLOAD|-]`: one fence.enqueue call, the job
 *	  id on standard output.
 *
 * The payload is a JSON text, from the command line or, when it is
 * missing or "-", from standard input (all of it).  What the server
 * refuses as input (a payload that is not JSON, a --run-at it cannot
 * read, a value out of range: SQLSTATE classes 22) is a usage error,
 * exit 64.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/enqueue.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include <pqxx/except>
#include <pqxx/transaction>

#include "connect.hpp"
#include "pqxx_compat.hpp"
#include "work.hpp"

namespace fence::cli {

namespace {

std::string
ReadStdin()
{
	std::string s;
	char        buf[8192];
	for (;;)
	{
		ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw UsageError{"cannot read the payload from standard input"};
		if (n == 0)
			break;
		s.append(buf, static_cast<std::size_t>(n));
	}
	return s;
}

} // namespace

int
Enqueue(const EnqueueOptions &o)
{
	const std::string payload = o.payload ? *o.payload : ReadStdin();
	auto              conn = Connect(o.conninfo);
	CheckExtension(*conn, "fence.enqueue(text,jsonb,timestamptz,integer,integer,text)");
	pqxx::work  tx(*conn);
	std::string sql =
		"SELECT fence.enqueue(" + tx.quote(o.queue) + ", " + tx.quote(payload) + "::jsonb";
	if (o.run_at)
		sql += ", run_at => " + tx.quote(*o.run_at) + "::timestamptz";
	if (o.delay)
		sql += ", run_at => pg_catalog.clock_timestamp() + " +
			   tx.quote(std::to_string(o.delay->count()) + " milliseconds") + "::interval";
	if (o.priority)
		sql += ", priority => " + std::to_string(*o.priority);
	if (o.max_attempts)
		sql += ", max_attempts => " + std::to_string(*o.max_attempts);
	if (o.unique_key)
		sql += ", unique_key => " + tx.quote(*o.unique_key);
	sql += ")";
	std::string id;
	try
	{
		id = pqxx_compat::Exec1(tx, sql)[0].c_str();
		tx.commit();
	}
	catch (const pqxx::sql_error &e)
	{
		/* Class 22 (data exception): the payload, --run-at or a value the server refuses. */
		if (e.sqlstate().rfind("22", 0) == 0)
			throw UsageError{Trim(e.what()) + " (SQLSTATE " + e.sqlstate() + ")"};
		throw;
	}
	std::printf("%s\n", id.c_str());
	return 0;
}

} // namespace fence::cli
