/*-------------------------------------------------------------------------
 *
 * supervise.hpp
 *	  `pg_fence run`: run a command while holding a lease (RunLease) or a
 *	  session lock (RunSession); `pg_fence elect` is RunLease with a
 *	  campaign (RunOptions::elect).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/supervise.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "options.hpp"

namespace fence::cli {

/*
 * Each takes the lock (waiting up to o.wait), runs o.command while holding
 * it, and releases it.  Returns pg_fence's exit code: the command's own
 * (128+N if killed by signal N), or kExitBusy, kExitTimeout, kExitLost.
 * Throws Unavailable (cannot connect, extension missing), pqxx errors and
 * std::system_error, which main() turns into exit codes.  RunSession ends
 * the process itself (DieBySignal) when a signal arrives while it waits
 * for the lock.
 */
int RunLease(const RunOptions &o);
int RunSession(const RunOptions &o);

} // namespace fence::cli
