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

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "options.hpp"

namespace fence::cli {

/* What Supervise asks the runner about its lock. */
struct LockWatch
{
	/* True once the lock is lost, and then *why says why.  Asked every 200 ms and on every self-pipe byte. */
	std::function<bool(std::string *why)> lost;
	/* ^Z of an interactive --session job: pg_fence is about to stop itself (raise(SIGSTOP)). */
	std::function<void()> suspending = [] {};
	/* ...and has been continued: find out whether the lock is still held, before lost() is asked. */
	std::function<void()> resumed = [] {};
	/*
	 * A lease's local deadline (the loss, SIGTERM), if the lock has one:
	 * the loop wakes up for it, and SIGKILL lands at most `grace` after it.
	 */
	std::function<std::optional<Clock::time_point>()> deadline = [] {
		return std::optional<Clock::time_point>();
	};
};

/*
 * Waits for the command `child` (StartCommand), forwarding signals, and
 * stops it (SIGTERM, SIGKILL `grace` later) if `watch.lost()` turns true.
 * Returns the exit code for pg_fence: the command's own (128+N if killed by
 * signal N), or kExitLost.  `run`, `elect` and `once` (once.cpp) share it;
 * supervise.cpp says more.
 */
int Supervise(pid_t child, const RunOptions &o, milliseconds grace, const LockWatch &watch);

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
