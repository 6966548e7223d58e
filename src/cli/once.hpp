/*-------------------------------------------------------------------------
 *
 * once.hpp
 *	  `pg_fence once KEY [--ttl TTL] [--fingerprint F] [--key-per day|hour]
 *	  -- COMMAND...`: run COMMAND only if the idempotency key KEY is not done
 *	  yet, and record it done when COMMAND exits 0.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/once.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "options.hpp"

namespace fence::cli {

/* EX_DATAERR: `once` found KEY used with another --fingerprint. */
constexpr int kExitMismatch = 65;

/* `pg_fence once`'s command line, parsed. */
struct OnceCommand
{
	RunOptions                 run; /* name = KEY as given, ttl, conninfo, command; once set */
	std::optional<std::string> fingerprint;
	std::string                key_per; /* "", "day" or "hour" */
};

/* Parses what follows "once"; throws UsageError, or HelpRequested for --help / -h. */
OnceCommand ParseOnce(const std::vector<std::string> &args);

/*
 * Begins the key; runs the command if it is ours (renewing the key and
 * stopping the command if the key is lost, as `run` does with a lease);
 * finishes the key if the command exited 0, releases it otherwise.
 * Returns pg_fence's exit code (docs/cli.md, "pg_fence once").  Throws
 * like RunLease (Unavailable, pqxx errors), which main() maps.
 */
int RunOnce(const OnceCommand &c);

} // namespace fence::cli
