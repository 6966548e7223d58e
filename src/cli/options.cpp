/*-------------------------------------------------------------------------
 *
 * options.cpp
 *	  The command line of the pg_fence tool: `run` options (ParseRun),
 *	  durations, --dbname.  `status` parses its own few options with the
 *	  same helpers (status.cpp).
 *
 * Rules: options come before NAME; everything after NAME (and an optional
 * "--") is the command.  "--opt value" and "--opt=value" are both
 * accepted.  Durations are a positive number with a unit (ms, s, m, h; no
 * unit: seconds).  Every error is a UsageError, so exit 64.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/options.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "options.hpp"

#include <unistd.h>

#include <libpq-fe.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fence::cli {

namespace {

/* HOST:PID, the default --holder. */
std::string
DefaultHolder()
{
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		std::strcpy(host, "unknown-host");
	return std::string(host) + ":" + std::to_string(getpid());
}

} // namespace

bool
IsHelp(const std::string &a)
{
	return a == "--help" || a == "-h";
}

milliseconds
ParseDuration(const std::string &text, const char *what)
{
	if (!text.empty() && text[0] == '-')
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": must be positive"};
	std::size_t i = 0;
	while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
		i++;
	std::string number = text.substr(0, i);
	std::string unit = text.substr(i);
	double      scale;
	if (unit == "ms")
		scale = 1;
	else if (unit == "s" || unit.empty())
		scale = 1000;
	else if (unit == "m" || unit == "min")
		scale = 60000;
	else if (unit == "h")
		scale = 3600000;
	else
		throw UsageError{std::string("invalid ") + what + " \"" + text +
						 "\": unknown unit (use ms, s, m or h)"};
	char *end = nullptr;
	errno = 0;
	double value = number.empty() || number == "." ? -1 : std::strtod(number.c_str(), &end);
	if (number.empty() || errno != 0 || end != number.c_str() + number.size() || !(value >= 0))
		throw UsageError{std::string("invalid ") + what + " \"" + text +
						 "\": expected a number and a unit, like 30s"};
	double ms = value * scale;
	if (value == 0)
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": must be positive"};
	if (ms < 1)
		throw UsageError{std::string("invalid ") + what + " \"" + text +
						 "\": must be at least 1ms"};
	if (ms > 1e12)
		throw UsageError{std::string("invalid ") + what + " \"" + text + "\": too long"};
	return milliseconds(static_cast<long long>(ms));
}

std::string
FormatDuration(milliseconds d)
{
	if (d.count() % 1000 == 0)
		return std::to_string(d.count() / 1000) + "s";
	return std::to_string(d.count()) + "ms";
}

/* psql's rule: a value with '=' or a postgres[ql]:// URI is a connection string, else a database name. */
std::string
ConninfoFromDbname(const std::string &dbname)
{
	if (dbname.find('=') != std::string::npos || dbname.rfind("postgresql://", 0) == 0 ||
		dbname.rfind("postgres://", 0) == 0)
	{
		char             *err = nullptr;
		PQconninfoOption *opts = PQconninfoParse(dbname.c_str(), &err);
		if (opts == nullptr)
		{
			std::string m = err ? Trim(err) : "out of memory";
			if (err)
				PQfreemem(err);
			throw UsageError{"invalid connection string \"" + dbname + "\": " + m};
		}
		PQconninfoFree(opts);
		return dbname;
	}
	std::string quoted = "dbname='";
	for (char c : dbname)
	{
		if (c == '\'' || c == '\\')
			quoted.push_back('\\');
		quoted.push_back(c);
	}
	return quoted + "'";
}

bool
TakeOption(const std::vector<std::string> &args, std::size_t &i, const char *long_name,
		   const char *short_name, std::string *value)
{
	const std::string &a = args[i];
	std::string        prefix = std::string(long_name) + "=";
	if (a.rfind(prefix, 0) == 0)
	{
		*value = a.substr(prefix.size());
		return true;
	}
	if (a == long_name || (short_name && a == short_name))
	{
		if (i + 1 >= args.size())
			throw UsageError{"option " + a + " needs a value"};
		*value = args[++i];
		return true;
	}
	return false;
}

RunOptions
ParseRun(const std::vector<std::string> &args)
{
	RunOptions  o;
	bool        lease_given = false;
	std::size_t i = 0;
	for (; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string        v;
		if (a == "--")
		{
			i++;
			break;
		}
		if (a.empty() || a[0] != '-')
			break;
		if (IsHelp(a))
			throw HelpRequested{};
		if (TakeOption(args, i, "--lease", nullptr, &v))
		{
			o.ttl = ParseDuration(v, "lease TTL");
			lease_given = true;
		}
		else if (a == "--session")
			o.session = true;
		else if (TakeOption(args, i, "--semaphore", nullptr, &v))
		{
			char *end = nullptr;
			errno = 0;
			long n = std::strtol(v.c_str(), &end, 10);
			if (v.empty() || *end != '\0' || errno != 0 || n < 1 || n > 10000)
				throw UsageError{"invalid --semaphore \"" + v +
								 "\": must be a whole number of permits from 1 to 10000"};
			o.permits = static_cast<int>(n);
		}
		else if (TakeOption(args, i, "--wait", "-w", &v))
			o.wait = ParseDuration(v, "wait duration");
		else if (TakeOption(args, i, "--holder", nullptr, &v))
			o.holder = v;
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (lease_given && o.session)
		throw UsageError{"--lease and --session cannot be used together"};
	if (o.permits > 0 && o.session)
		throw UsageError{"--semaphore and --session cannot be used together"};
	if (!o.session && o.ttl < milliseconds(3))
		throw UsageError{"invalid lease TTL: must be at least 3ms"};
	if (i >= args.size())
		throw UsageError{"missing lock NAME"};
	o.name = args[i++];
	if (o.name.empty())
		throw UsageError{"lock NAME must not be empty"};
	if (o.name.size() > 1024)
		throw UsageError{"lock NAME is longer than 1024 bytes"};
	if (i < args.size() && args[i] == "--")
		i++;
	for (; i < args.size(); i++)
		o.command.push_back(args[i]);
	if (o.command.empty())
		throw UsageError{"missing COMMAND (usage: pg_fence run NAME -- COMMAND [ARG]...)"};
	if (o.holder.empty())
		o.holder = DefaultHolder();
	return o;
}

namespace {

/* NAME's rules, shared by run, elect and leader. */
void
CheckNameArg(const std::string &name, const char *what)
{
	if (name.empty())
		throw UsageError{std::string(what) + " NAME must not be empty"};
	if (name.size() > 1024)
		throw UsageError{std::string(what) + " NAME is longer than 1024 bytes"};
}

long
ParseCount(const std::string &v)
{
	char *end = nullptr;
	errno = 0;
	long n = std::strtol(v.c_str(), &end, 10);
	if (v.empty() || *end != '\0' || errno != 0 || n <= 0)
		throw UsageError{"--count must be a positive whole number, not \"" + v + "\""};
	return n;
}

} // namespace

RunOptions
ParseElect(const std::vector<std::string> &args)
{
	RunOptions  o;
	bool        have_name = false;
	std::size_t i = 0;
	o.elect = true;
	for (; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string        v;
		if (a == "--")
		{
			i++;
			break;
		}
		if (a.empty() || a[0] != '-')
		{
			if (have_name)
				break; /* the command, without "--" */
			o.name = a;
			have_name = true;
			continue;
		}
		if (IsHelp(a))
			throw HelpRequested{};
		if (TakeOption(args, i, "--ttl", nullptr, &v))
			o.ttl = ParseDuration(v, "TTL");
		else if (TakeOption(args, i, "--candidate", nullptr, &v))
		{
			if (v.empty())
				throw UsageError{"--candidate must not be empty"};
			if (v.size() > 1024)
				throw UsageError{"--candidate is longer than 1024 bytes"};
			o.holder = v;
		}
		else if (TakeOption(args, i, "--wait", "-w", &v))
			o.wait = ParseDuration(v, "wait duration");
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (o.ttl < milliseconds(3))
		throw UsageError{"invalid TTL: must be at least 3ms"};
	if (!have_name)
		throw UsageError{"missing election NAME"};
	CheckNameArg(o.name, "election");
	for (; i < args.size(); i++)
		o.command.push_back(args[i]);
	if (o.command.empty())
		throw UsageError{
			"missing COMMAND (usage: pg_fence elect NAME [OPTION]... -- COMMAND [ARG]...)"};
	if (o.holder.empty())
		o.holder = DefaultHolder();
	return o;
}

LeaderOptions
ParseLeader(const std::vector<std::string> &args)
{
	LeaderOptions o;
	bool          have_name = false;
	for (std::size_t i = 0; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string        v;
		if (a.empty() || a[0] != '-')
		{
			if (have_name)
				throw UsageError{"unexpected argument \"" + a + "\" (one election NAME only)"};
			o.name = a;
			have_name = true;
		}
		else if (IsHelp(a))
			throw HelpRequested{};
		else if (a == "--watch" || a == "-w")
			o.watch = true;
		else if (TakeOption(args, i, "--count", "-c", &v))
			o.count = ParseCount(v);
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (!have_name)
		throw UsageError{"missing election NAME"};
	CheckNameArg(o.name, "election");
	if (o.count > 0 && !o.watch)
		throw UsageError{"--count goes with --watch"};
	return o;
}

namespace {

/* A whole number from `lo` to `hi` for option `opt`. */
long
ParseWhole(const std::string &v, const char *opt, long lo, long hi)
{
	char *end = nullptr;
	errno = 0;
	long n = std::strtol(v.c_str(), &end, 10);
	if (v.empty() || *end != '\0' || errno != 0 || n < lo || n > hi)
		throw UsageError{std::string("invalid ") + opt + " \"" + v +
						 "\": must be a whole number from " + std::to_string(lo) + " to " +
						 std::to_string(hi)};
	return n;
}

} // namespace

WorkOptions
ParseWork(const std::vector<std::string> &args)
{
	WorkOptions o;
	bool        have_queue = false;
	std::size_t i = 0;
	for (; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string        v;
		if (a == "--")
		{
			i++;
			break;
		}
		if (a.empty() || a[0] != '-')
		{
			if (have_queue)
				break; /* the command, without "--" */
			o.queue = a;
			have_queue = true;
			continue;
		}
		if (IsHelp(a))
			throw HelpRequested{};
		if (TakeOption(args, i, "--ttl", nullptr, &v))
			o.ttl = ParseDuration(v, "TTL");
		else if (TakeOption(args, i, "--concurrency", "-j", &v))
			o.concurrency = static_cast<int>(ParseWhole(v, "--concurrency", 1, 1000));
		else if (TakeOption(args, i, "--wait", "-w", &v))
			o.wait = ParseDuration(v, "wait duration");
		else if (TakeOption(args, i, "--max-jobs", nullptr, &v))
			o.max_jobs = ParseWhole(v, "--max-jobs", 1, 1000000000L);
		else if (TakeOption(args, i, "--holder", nullptr, &v))
		{
			if (v.size() > 1024)
				throw UsageError{"--holder is longer than 1024 bytes"};
			o.holder = v;
		}
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (o.ttl < milliseconds(30))
		throw UsageError{"invalid TTL: must be at least 30ms"};
	if (!have_queue)
		throw UsageError{"missing QUEUE"};
	CheckNameArg(o.queue, "queue");
	for (; i < args.size(); i++)
		o.command.push_back(args[i]);
	if (o.command.empty())
		throw UsageError{
			"missing COMMAND (usage: pg_fence work QUEUE [OPTION]... -- COMMAND [ARG]...)"};
	if (o.holder.empty())
		o.holder = DefaultHolder();
	return o;
}

EnqueueOptions
ParseEnqueue(const std::vector<std::string> &args)
{
	EnqueueOptions           o;
	std::vector<std::string> positional;
	bool                     only_positional = false;
	for (std::size_t i = 0; i < args.size(); i++)
	{
		const std::string &a = args[i];
		std::string        v;
		if (only_positional || a == "-" || a.empty() || a[0] != '-')
		{
			positional.push_back(a);
			continue;
		}
		if (a == "--")
		{
			only_positional = true;
			continue;
		}
		if (IsHelp(a))
			throw HelpRequested{};
		if (TakeOption(args, i, "--run-at", nullptr, &v))
			o.run_at = v;
		else if (TakeOption(args, i, "--delay", nullptr, &v))
			o.delay = ParseDuration(v, "delay");
		else if (TakeOption(args, i, "--priority", nullptr, &v))
			o.priority = ParseWhole(v, "--priority", -2147483647L - 1, 2147483647L);
		else if (TakeOption(args, i, "--max-attempts", nullptr, &v))
			o.max_attempts = ParseWhole(v, "--max-attempts", 1, 2147483647L);
		else if (TakeOption(args, i, "--unique-key", nullptr, &v))
		{
			if (v.empty())
				throw UsageError{"--unique-key must not be empty"};
			o.unique_key = v;
		}
		else if (TakeOption(args, i, "--dbname", "-d", &v))
			o.conninfo = ConninfoFromDbname(v);
		else
			throw UsageError{"unknown option \"" + a + "\""};
	}
	if (o.run_at && o.delay)
		throw UsageError{"--run-at and --delay cannot be used together"};
	if (positional.empty())
		throw UsageError{"missing QUEUE"};
	if (positional.size() > 2)
		throw UsageError{"unexpected argument \"" + positional[2] +
						 "\" (usage: pg_fence enqueue QUEUE [PAYLOAD|-] [OPTION]...)"};
	o.queue = positional[0];
	CheckNameArg(o.queue, "queue");
	if (positional.size() == 2 && positional[1] != "-")
		o.payload = positional[1];
	return o;
}

} // namespace fence::cli
