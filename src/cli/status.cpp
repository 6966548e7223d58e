/*-------------------------------------------------------------------------
 *
 * status.cpp
 *	  `pg_fence status`: the view fence.locks (name, kind, token, pid,
 *	  holder, granted_at, expires_at, expired, waiters) as a table, for all
 *	  locks or for one NAME.
 *
 * The table is psql-like but plain: columns padded to their widest cell,
 * two spaces apart, a rule of dashes under the header, no trailing blanks,
 * and a "(N locks)" footer.  A newline or tab inside a value becomes a
 * space, so that every lock is one line.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/status.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "status.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <optional>

#include <pqxx/pqxx>

#include "cli.hpp"
#include "connect.hpp"
#include "options.hpp"
#include "pqxx_compat.hpp"

namespace fence::cli {

namespace {

using Row = std::vector<std::string>;

/* Prints `head`, a rule, and `rows` on stdout, in columns. */
void
PrintTable(const Row &head, const std::vector<Row> &rows)
{
	std::vector<std::size_t> width;
	for (auto &h : head)
		width.push_back(h.size());
	for (const auto &cells : rows)
		for (std::size_t c = 0; c < cells.size(); c++)
			width[c] = std::max(width[c], cells[c].size());
	auto print_row = [&](const Row &cells) {
		std::string line;
		for (std::size_t c = 0; c < cells.size(); c++)
		{
			std::string cell = cells[c];
			if (c + 1 < cells.size())
				cell.resize(width[c], ' ');
			line += cell;
			if (c + 1 < cells.size())
				line += "  ";
		}
		while (!line.empty() && line.back() == ' ')
			line.pop_back();
		std::printf("%s\n", line.c_str());
	};
	print_row(head);
	Row rule;
	for (std::size_t c = 0; c < head.size(); c++)
		rule.push_back(std::string(width[c], '-'));
	print_row(rule);
	for (auto &r : rows)
		print_row(r);
	std::printf("(%zu %s)\n", rows.size(), rows.size() == 1 ? "lock" : "locks");
}

} // namespace

int
Status(const std::vector<std::string> &args)
{
	std::string                conninfo;
	std::optional<std::string> name;
	for (std::size_t i = 0; i < args.size(); i++)
	{
		std::string v;
		if (IsHelp(args[i]))
			throw HelpRequested{};
		if (TakeOption(args, i, "--dbname", "-d", &v))
			conninfo = ConninfoFromDbname(v);
		else if (!args[i].empty() && args[i][0] == '-')
			throw UsageError{"unknown option \"" + args[i] + "\""};
		else if (!name)
			name = args[i];
		else
			throw UsageError{"status takes at most one NAME"};
	}
	auto conn = Connect(conninfo);
	{
		pqxx::nontransaction tx(*conn);
		pqxx::row            r = fence::pqxx_compat::Exec1(
					   tx,
					   "SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_fence'), "
								  "pg_catalog.to_regclass('fence.locks') IS NOT NULL, current_database()");
		if (r[0].is_null())
			throw Unavailable{"extension pg_fence is not installed in database \"" +
								  std::string(r[2].c_str()) + "\"",
							  "Run CREATE EXTENSION pg_fence; in that database (as a superuser)."};
		if (!r[1].as<bool>())
			throw Unavailable{"pg_fence " + std::string(r[0].c_str()) + " has no view fence.locks",
							  "Update it: ALTER EXTENSION pg_fence UPDATE;"};
	}
	pqxx::nontransaction tx(*conn);
	const std::string    q =
		"SELECT name, kind, token, pid, holder, "
		"to_char(granted_at, 'YYYY-MM-DD HH24:MI:SS.MS TZ'), "
		"to_char(expires_at, 'YYYY-MM-DD HH24:MI:SS.MS TZ'), "
		"CASE WHEN expired THEN 'yes' WHEN expired IS NOT NULL THEN 'no' END, waiters "
		"FROM fence.locks WHERE $1::text IS NULL OR name = $1 ORDER BY name, kind, token";
	pqxx::result     res = name ? fence::pqxx_compat::ExecParams(tx, q, *name)
								: fence::pqxx_compat::ExecParams(tx, q, nullptr);
	const Row        head = {"name",       "kind",       "token",   "pid",    "holder",
							 "granted_at", "expires_at", "expired", "waiters"};
	std::vector<Row> rows;
	bool             any_held = false;
	for (const auto &row : res)
	{
		Row cells;
		for (std::size_t c = 0; c < head.size(); c++)
		{
			std::string s =
				row[static_cast<int>(c)].is_null() ? "" : row[static_cast<int>(c)].c_str();
			for (char &ch : s)
				if (ch == '\n' || ch == '\t')
					ch = ' ';
			cells.push_back(s);
		}
		if (cells[7] != "yes")
			any_held = true;
		rows.push_back(std::move(cells));
	}
	PrintTable(head, rows);
	if (name && !any_held)
		return 1;
	return 0;
}

} // namespace fence::cli
