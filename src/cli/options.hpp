/*-------------------------------------------------------------------------
 *
 * options.hpp
 *	  The command line of the pg_fence tool: `run` options, durations,
 *	  --dbname.  Everything here throws UsageError (exit 64) on bad input.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/options.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace fence::cli {

constexpr milliseconds kDefaultTtl(30000);

/* `pg_fence run`'s command line, parsed. */
struct RunOptions
{
	bool                        session = false;
	milliseconds                ttl = kDefaultTtl;
	std::optional<milliseconds> wait;
	int                         permits = 0;   /* --semaphore N: a permit of N; 0: a lease */
	bool                        elect = false; /* `elect`: campaign, holder is the candidate */
	bool                        once = false;  /* `once`: NAME is an idempotency key (once.cpp) */
	std::string                 holder;
	std::string                 conninfo;
	std::string                 name;
	std::vector<std::string>    command;
	/* NAME=VALUE pairs added to the command's environment (once: FENCE_KEY, FENCE_STEP). */
	std::vector<std::string> env;
};

/* Parses what follows "run"; throws UsageError, or HelpRequested for --help / -h. */
RunOptions ParseRun(const std::vector<std::string> &args);

/*
 * Parses what follows "elect": NAME, options (before or after NAME),
 * "--", COMMAND.  The result is a lease RunOptions with elect set, the
 * candidate in `holder` and no wait limit unless --wait was given.
 */
RunOptions ParseElect(const std::vector<std::string> &args);

/* `pg_fence leader`'s command line, parsed. */
struct LeaderOptions
{
	std::string conninfo;
	std::string name;
	bool        watch = false;
	long        count = 0; /* --watch: stop after this many lines; 0: until interrupted */
};

/* Parses what follows "leader"; throws UsageError, or HelpRequested. */
LeaderOptions ParseLeader(const std::vector<std::string> &args);

/* "--help" or "-h". */
bool IsHelp(const std::string &a);

/* Takes "--opt value" or "--opt=value" (or "short value") at args[i]; advances i past the value. */
bool TakeOption(const std::vector<std::string> &args, std::size_t &i, const char *long_name,
				const char *short_name, std::string *value);

/* "500ms", "30s", "2m", "1h", "1.5s", "10" (seconds); must be positive.  `what` names it in errors. */
milliseconds ParseDuration(const std::string &text, const char *what);

/* "30s", or "1500ms" when not whole seconds. */
std::string FormatDuration(milliseconds d);

/* psql's rule: a value with '=' or a postgres[ql]:// URI is a connection string, else a database name. */
std::string ConninfoFromDbname(const std::string &dbname);

} // namespace fence::cli
