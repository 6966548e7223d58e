/*-------------------------------------------------------------------------
 *
 * status.hpp
 *	  `pg_fence status [--dbname CONNINFO] [NAME]`: the view fence.locks as
 *	  a table on stdout; with --watch [--interval DURATION] [--count N], a
 *	  live view redrawn like top(1).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/status.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <string>
#include <vector>

namespace fence::cli {

/*
 * Runs `status` with the arguments that follow it.  Returns 0, or 1 when
 * NAME was given and no unexpired lock of that name exists (not with
 * --watch, which returns 0 after --count frames).  Throws
 * UsageError, HelpRequested, Unavailable and pqxx errors (see main()).
 */
int Status(const std::vector<std::string> &args);

} // namespace fence::cli
