/*-------------------------------------------------------------------------
 *
 * connect.hpp
 *	  Connecting to the database and checking that pg_fence is installed
 *	  there, for `run` and `status`.  Failures are Unavailable (exit 69).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/connect.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <memory>
#include <string>

#include <pqxx/connection>

#include "cli.hpp"

namespace fence::cli {

/*
 * Opens a connection ("" = libpq defaults, the PG* variables) that never
 * reconnects silently (libpqxx 6): a new session would hold none of the
 * old one's locks.  Throws Unavailable with libpq's message.
 */
std::unique_ptr<pqxx::connection> Connect(const std::string &conninfo);

/*
 * Throws Unavailable, with a hint, when the extension, or the function
 * `proc` (a regprocedure literal, e.g. "fence.lock(text,interval)"), is
 * missing in the connection's database.
 */
void CheckExtension(pqxx::connection &conn, const char *proc);

} // namespace fence::cli
