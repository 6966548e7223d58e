/*-------------------------------------------------------------------------
 *
 * cli.hpp
 *	  What every source file of the pg_fence command-line tool shares: the
 *	  exit codes, the errors that end the tool with one of them, and how it
 *	  writes its messages.  Internal to the tool (not installed).
 *
 * main.cpp has the overview of the tool and a map of its files.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/cli.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <string>

namespace fence::cli {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/* Exit codes (sysexits.h numbers where one fits); documented in docs/cli.md, "Exit status". */
constexpr int kExitUsage = 64;       /* EX_USAGE: bad command line or duration */
constexpr int kExitUnavailable = 69; /* EX_UNAVAILABLE: cannot connect, extension missing */
constexpr int kExitInternal = 70;    /* EX_SOFTWARE: unexpected error (server error, fork...) */
constexpr int kExitTimeout = 73;     /* --wait elapsed while the lock stayed busy */
constexpr int kExitLost = 74;        /* the lock was lost while the command ran */
constexpr int kExitBusy = 75;        /* EX_TEMPFAIL: busy, and no --wait */
constexpr int kExitNotFound = 127;   /* the command was not found (as in sh) */
constexpr int kExitNotExec = 126;    /* the command could not be executed */

/* A bad command line: main() prints the message and a hint, and exits 64. */
struct UsageError
{
	std::string message;
};

/* --help or -h among a subcommand's options: main() prints the usage, exits 0. */
struct HelpRequested
{
};

/* Cannot connect, or the extension is missing: main() prints both, exits 69. */
struct Unavailable
{
	std::string message;
	std::string hint;
};

/* Writes "pg_fence: <message>\n" to stderr (pg_fence's own messages never go to stdout). */
void Msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A libpq/libpqxx message on one line, without the trailing newline. */
std::string Trim(std::string s);

} // namespace fence::cli
