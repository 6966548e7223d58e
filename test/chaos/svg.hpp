/*-------------------------------------------------------------------------
 *
 * svg.hpp
 *	  The chaos run as a picture: one lane per worker, time left to right.
 *	  Filled by the checker from the history, drawn by svg.cpp (plain SVG
 *	  text, no plotting library).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/svg.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_SVG_HPP
#define PG_FENCE_CHAOS_SVG_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace chaos {

struct Timeline
{
	struct Bar /* a holding: grant to release or expiry */
	{
		std::string worker, kind;
		int64_t     token, start, end;
	};
	struct Mark /* a point in a lane: a write, a backend terminated */
	{
		std::string worker, what; /* applied, stale, unknown, kill */
		int64_t     at;
	};
	struct Span /* a pause (SIGSTOP .. SIGCONT) */
	{
		std::string worker;
		int64_t     start, end;
	};
	struct Line /* a restart or failover, across every lane */
	{
		std::string label;
		int64_t     start, end;
	};
	std::vector<std::string> workers;
	std::vector<Bar>         bars;
	std::vector<Mark>        marks;
	std::vector<Span>        pauses;
	std::vector<Line>        lines;
	std::string              title;
};

/* Writes the picture to path; false (and a message on stderr) on failure. */
bool WriteSvg(const std::string &path, const Timeline &t);

} // namespace chaos

#endif /* PG_FENCE_CHAOS_SVG_HPP */
