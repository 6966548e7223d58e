/*-------------------------------------------------------------------------
 *
 * leader.hpp
 *	  `pg_fence leader NAME [--watch]`: the leader of an election, or each
 *	  change of it as it happens.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/leader.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "options.hpp"

namespace fence::cli {

/* Exit code of `pg_fence leader NAME` when the election has no leader. */
constexpr int kExitNoLeader = 1;

/*
 * Without --watch: prints the leader (CANDIDATE TAB TERM TAB ELECTED_AT TAB
 * EXPIRES_AT) and returns 0, or returns kExitNoLeader.  With --watch:
 * prints one line per change until interrupted or --count lines, and
 * returns 0.  Throws Unavailable, pqxx errors.
 */
int Leader(const LeaderOptions &o);

} // namespace fence::cli
