/*-------------------------------------------------------------------------
 *
 * common.cpp
 *	  Argument checks, literals and message clean-up shared by the client
 *	  library.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/common.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "internal.hpp"

#include <stdexcept>

#include "pg_fence/client.hpp"

#ifndef PG_FENCE_VERSION
#define PG_FENCE_VERSION "unknown"
#endif

namespace fence {

const char *
client_version() noexcept
{
	return PG_FENCE_VERSION;
}

namespace client_internal {

void
CheckName(const std::string &name)
{
	if (name.empty())
		throw std::invalid_argument("pg_fence: lock name must not be empty");
	if (name.size() > kMaxNameBytes)
		throw std::invalid_argument("pg_fence: lock name is longer than 1024 bytes");
	if (name.find('\0') != std::string::npos)
		throw std::invalid_argument("pg_fence: lock name must not contain a NUL byte");
}

std::string
IntervalLiteral(std::chrono::microseconds d)
{
	return std::to_string(d.count()) + " microseconds";
}

std::string
TimeoutMillis(std::chrono::steady_clock::duration d)
{
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
	if (ms < 1)
		ms = 1;
	return std::to_string(ms);
}

std::string
OneLine(std::string s)
{
	/* one line, runs of blanks (libpq indents its hints with tabs) as one space */
	std::string out;
	bool        blank = false;

	for (char c : s)
	{
		if (c == '\n' || c == '\r' || c == '\t' || c == ' ')
		{
			blank = true;
			continue;
		}
		if (blank && !out.empty())
			out += ' ';
		blank = false;
		out += c;
	}
	return out;
}

} // namespace client_internal
} // namespace fence
