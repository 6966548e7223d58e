/*-------------------------------------------------------------------------
 *
 * work.hpp
 *	  `pg_fence work` (work.cpp) and `pg_fence enqueue` (enqueue.cpp): the
 *	  fenced job queue from the command line.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/work.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "options.hpp"

namespace fence::cli {

/*
 * Claims jobs of o.queue and runs o.command once per job until stopped
 * (SIGTERM/SIGINT), --max-jobs, or idle for --wait; returns 0 then.
 * Throws Unavailable (69), pqxx errors (70, 64 for 22023).
 */
int Work(const WorkOptions &o);

/* Enqueues one job and prints its id; returns 0.  Throws like Work, UsageError for bad input. */
int Enqueue(const EnqueueOptions &o);

} // namespace fence::cli
