/*-------------------------------------------------------------------------
 *
 * internal.hpp
 *	  Helpers shared by the client library's sources (not installed).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/internal.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <string>

namespace fence::client_internal {

/* The server's limit on names: non-empty, at most 1024 bytes (docs/sqlstates.md, 22023). */
constexpr std::size_t kMaxNameBytes = 1024;

/* Throws std::invalid_argument unless `name` is a valid lock name. */
void CheckName(const std::string &name);

/* An interval literal for `d`, e.g. "1500000 microseconds". */
std::string IntervalLiteral(std::chrono::microseconds d);

/* Milliseconds, at least 1, for SET statement_timeout. */
std::string TimeoutMillis(std::chrono::steady_clock::duration d);

/* `s` on one line: runs of newlines, tabs and spaces made one space, none at the ends (libpq messages). */
std::string OneLine(std::string s);

} // namespace fence::client_internal
