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
 * `pg_fence status --watch` redraws, every --interval (default 2s), a frame
 * like top(1): held locks and leases with how long they have been held and
 * when they expire, one line per waiter with how long it has waited, and
 * the counters of fence.stats().  On a terminal each frame clears the
 * screen first; otherwise frames follow each other, a blank line apart, so
 * that the output can be logged.  --count N stops after N frames.  A
 * leader is the holder of a lease and appears among the leases here;
 * `pg_fence leader NAME [--watch]` (leader.cpp) shows an election.
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
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include <unistd.h>

#include <pqxx/pqxx>

#include "cli.hpp"
#include "connect.hpp"
#include "options.hpp"
#include "pqxx_compat.hpp"

namespace fence::cli {

namespace {

using Row = std::vector<std::string>;

/* Prints `head`, a rule, and `rows` on stdout, in columns, then "(N noun)". */
void
PrintTable(const Row &head, const std::vector<Row> &rows, const char *one = "lock",
		   const char *many = "locks")
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
	std::printf("(%zu %s)\n", rows.size(), rows.size() == 1 ? one : many);
}

/* A cell's text: "" for NULL, newlines and tabs as spaces. */
std::string
Cell(const pqxx::field &f)
{
	std::string s = f.is_null() ? "" : f.c_str();
	for (char &ch : s)
		if (ch == '\n' || ch == '\t')
			ch = ' ';
	return s;
}

/* A length of time: "850ms", "12.3s", "4m05s", "2h07m", "3d04h". */
std::string
FormatSeconds(double s)
{
	char buf[64];
	if (s < 0)
		s = 0;
	if (s < 1)
		std::snprintf(buf, sizeof buf, "%dms", static_cast<int>(s * 1000));
	else if (s < 60)
		std::snprintf(buf, sizeof buf, "%.1fs", s);
	else if (s < 3600)
		std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60,
					  static_cast<int>(s) % 60);
	else if (s < 86400)
		std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600,
					  static_cast<int>(s) % 3600 / 60);
	else
		std::snprintf(buf, sizeof buf, "%lldd%02dh", static_cast<long long>(s) / 86400,
					  static_cast<int>(static_cast<long long>(s) % 86400 / 3600));
	return buf;
}

/* A column of seconds as a length of time ("" for NULL). */
std::string
FormatAge(const pqxx::field &f)
{
	return f.is_null() ? "" : FormatSeconds(f.as<double>());
}

/* One frame of `status --watch`. */
void
PrintFrame(pqxx::connection &conn, const std::optional<std::string> &name, milliseconds interval)
{
	pqxx::nontransaction tx(conn);
	pqxx::row            now = fence::pqxx_compat::Exec1(
				   tx, "SELECT current_database(), to_char(clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ')");
	std::printf("pg_fence status, database %s, %s (every %s; Ctrl-C to quit)\n\n", now[0].c_str(),
				now[1].c_str(), FormatDuration(interval).c_str());

	const std::string locks_q =
		"SELECT name, kind, token, pid, holder, "
		"extract(epoch FROM clock_timestamp() - granted_at), "
		"extract(epoch FROM expires_at - clock_timestamp()), waiters, "
		"extract(epoch FROM longest_wait) "
		"FROM fence.locks WHERE $1::text IS NULL OR name = $1 ORDER BY kind, name, token";
	pqxx::result     locks = name ? fence::pqxx_compat::ExecParams(tx, locks_q, *name)
								  : fence::pqxx_compat::ExecParams(tx, locks_q, nullptr);
	std::vector<Row> rows;
	for (const auto &r : locks)
	{
		std::string expires;
		if (!r[6].is_null())
		{
			double left = r[6].as<double>();
			expires =
				left > 0 ? "in " + FormatSeconds(left) : "EXPIRED " + FormatSeconds(-left) + " ago";
		}
		rows.push_back({Cell(r[0]), Cell(r[1]), Cell(r[2]), Cell(r[3]), Cell(r[4]), FormatAge(r[5]),
						expires, Cell(r[7]), FormatAge(r[8])});
	}
	PrintTable(
		{"name", "kind", "token", "pid", "holder", "held", "expires", "waiters", "longest_wait"},
		rows);

	const std::string waiters_q =
		"SELECT name, pid, application_name, extract(epoch FROM waited), holder_pid "
		"FROM fence.waiters WHERE $1::text IS NULL OR name = $1 "
		"ORDER BY waited DESC NULLS LAST, pid";
	pqxx::result waiters = name ? fence::pqxx_compat::ExecParams(tx, waiters_q, *name)
								: fence::pqxx_compat::ExecParams(tx, waiters_q, nullptr);
	rows.clear();
	for (const auto &r : waiters)
		rows.push_back({Cell(r[0]), Cell(r[1]), Cell(r[2]), FormatAge(r[3]), Cell(r[4])});
	std::printf("\n");
	PrintTable({"waiting for", "pid", "application_name", "waited", "holder_pid"}, rows, "waiter",
			   "waiters");

	pqxx::row st = fence::pqxx_compat::Exec1(
		tx, "SELECT acquired_session, acquired_xact, acquired_lease, busy, waits, timeouts, "
			"renewals, releases, lease_expirations, lease_takeovers, stale_writes_rejected, "
			"missing_tokens, to_char(stats_reset, 'YYYY-MM-DD HH24:MI:SS TZ') FROM fence.stats()");
	std::printf("\n");
	if (st[0].is_null())
		std::printf(
			"counters: none (pg_fence has no shared memory here; see fence.shared_memory())\n");
	else
		std::printf("since %s: grants %s session, %s xact, %s lease; busy %s; waits %s (%s timed "
					"out); renewals %s; releases %s; lease expirations %s, takeovers %s; stale "
					"writes rejected %s; missing tokens %s\n",
					Cell(st[12]).c_str(), st[0].c_str(), st[1].c_str(), st[2].c_str(),
					st[3].c_str(), st[4].c_str(), st[5].c_str(), st[6].c_str(), st[7].c_str(),
					st[8].c_str(), st[9].c_str(), st[10].c_str(), st[11].c_str());
}

/* `status --watch`: a frame every interval, count frames (0: until killed). */
int
Watch(pqxx::connection &conn, const std::optional<std::string> &name, milliseconds interval,
	  long count)
{
	const bool tty = isatty(STDOUT_FILENO) == 1;
	for (long frame = 1;; frame++)
	{
		if (tty)
			std::fputs("\033[H\033[2J", stdout);
		else if (frame > 1)
			std::fputs("\n", stdout);
		PrintFrame(conn, name, interval);
		std::fflush(stdout);
		if (count > 0 && frame >= count)
			return 0;
		std::this_thread::sleep_for(interval);
	}
}

} // namespace

int
Status(const std::vector<std::string> &args)
{
	std::string                conninfo;
	std::optional<std::string> name;
	bool                       watch = false;
	milliseconds               interval(2000);
	long                       count = 0;
	for (std::size_t i = 0; i < args.size(); i++)
	{
		std::string v;
		if (IsHelp(args[i]))
			throw HelpRequested{};
		if (TakeOption(args, i, "--dbname", "-d", &v))
			conninfo = ConninfoFromDbname(v);
		else if (args[i] == "--watch" || args[i] == "-w")
			watch = true;
		else if (TakeOption(args, i, "--interval", "-n", &v))
			interval = ParseDuration(v, "interval");
		else if (TakeOption(args, i, "--count", "-c", &v))
		{
			char *end = nullptr;
			count = std::strtol(v.c_str(), &end, 10);
			if (v.empty() || *end != '\0' || count <= 0)
				throw UsageError{"--count must be a positive whole number, not \"" + v + "\""};
		}
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
	if (watch)
		return Watch(*conn, name, interval, count);
	if (count > 0 || interval != milliseconds(2000))
		throw UsageError{"--interval and --count go with --watch"};

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
