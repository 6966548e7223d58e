/*-------------------------------------------------------------------------
 *
 * svg.cpp
 *	  Draws a chaos run (svg.hpp) as an SVG file: one lane per worker with
 *	  its holdings as bars labelled with their tokens (lease blue,
 *	  leadership teal, semaphore permit purple, session green, shared light
 *	  green, xact yellow), pauses shaded grey, writes as ticks above the
 *	  bars (rejected stale writes as red crosses), terminated backends as
 *	  black triangles, restarts and failovers as vertical lines across all
 *	  lanes, a time axis in seconds and a legend.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/svg.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "svg.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace chaos {
namespace {

constexpr double kLeft = 60, kTop = 50, kLane = 48, kBarH = 16, kRight = 30;

std::string
Escape(const std::string &s)
{
	std::string o;
	for (char c : s)
	{
		if (c == '<')
			o += "&lt;";
		else if (c == '>')
			o += "&gt;";
		else if (c == '&')
			o += "&amp;";
		else
			o += c;
	}
	return o;
}

const char *
KindColor(const std::string &kind)
{
	if (kind == "lease")
		return "#4e79a7";
	if (kind == "election")
		return "#17becf";
	if (kind == "semaphore")
		return "#b07aa1";
	if (kind == "session")
		return "#59a14f";
	if (kind == "shared")
		return "#a8d89a";
	if (kind == "job")
		return "#f28e2b";
	if (kind == "once")
		return "#9c755f";
	return "#e5b80b";
}

} // namespace

bool
WriteSvg(const std::string &path, const Timeline &t)
{
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	auto    span = [&](int64_t a, int64_t b) {
        if (a > 0)
            t0 = std::min(t0, a), t1 = std::max(t1, a);
        if (b > 0)
            t0 = std::min(t0, b), t1 = std::max(t1, b);
	};
	for (auto &b : t.bars)
		span(b.start, b.end);
	for (auto &m : t.marks)
		span(m.at, m.at);
	for (auto &p : t.pauses)
		span(p.start, p.end);
	for (auto &l : t.lines)
		span(l.start, l.end);
	if (t0 >= t1)
	{
		t0 = 0;
		t1 = 1000000;
	}
	double secs = (t1 - t0) / 1e6;
	/* About 2400 px for a minute; between 10 and 60 px a second. */
	double pps = std::max(10.0, std::min(60.0, 2400.0 / std::max(secs, 1.0)));
	double width = kLeft + secs * pps + kRight;
	double lanes_h = kLane * static_cast<double>(t.workers.size());
	double height = kTop + lanes_h + 86; /* the legend may take two rows */
	auto   X = [&](int64_t us) { return kLeft + (us - t0) / 1e6 * pps; };
	std::map<std::string, size_t> lane;
	for (size_t i = 0; i < t.workers.size(); i++)
		lane[t.workers[i]] = i;
	auto Y = [&](const std::string &w) {
		auto it = lane.find(w);
		return kTop + kLane * static_cast<double>(it == lane.end() ? 0 : it->second);
	};

	std::ostringstream s;
	s.setf(std::ios::fixed);
	s.precision(1);
	s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
	  << "\" font-family=\"sans-serif\" font-size=\"10\">\n"
	  << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
	  << "<text x=\"" << kLeft << "\" y=\"18\" font-size=\"13\">" << Escape(t.title) << "</text>\n";
	/* Lanes and the time axis. */
	for (size_t i = 0; i < t.workers.size(); i++)
	{
		double y = kTop + kLane * static_cast<double>(i);
		s << "<rect x=\"" << kLeft << "\" y=\"" << y << "\" width=\"" << secs * pps
		  << "\" height=\"" << kLane << "\" fill=\"" << (i % 2 ? "#f4f4f4" : "#fbfbfb") << "\"/>\n"
		  << "<text x=\"8\" y=\"" << y + kLane / 2 + 4 << "\" font-size=\"12\">"
		  << Escape(t.workers[i]) << "</text>\n";
	}
	double axis_y = kTop + lanes_h;
	int    step = secs > 300 ? 60 : secs > 100 ? 10 : 5;
	for (int sec = 0; sec <= secs; sec += step)
	{
		double x = kLeft + sec * pps;
		s << "<line x1=\"" << x << "\" y1=\"" << axis_y << "\" x2=\"" << x << "\" y2=\""
		  << axis_y + 5 << "\" stroke=\"black\"/><text x=\"" << x << "\" y=\"" << axis_y + 16
		  << "\" text-anchor=\"middle\">" << sec << " s</text>\n";
	}
	/* Pauses under everything else in their lane. */
	for (auto &p : t.pauses)
	{
		double y = Y(p.worker);
		s << "<rect x=\"" << X(p.start) << "\" y=\"" << y + 2 << "\" width=\""
		  << std::max(1.0, X(p.end) - X(p.start)) << "\" height=\"" << kLane - 4
		  << "\" fill=\"#999\" fill-opacity=\"0.35\" stroke=\"#666\" stroke-dasharray=\"3,2\"/>\n"
		  << "<text x=\"" << X(p.start) + 2 << "\" y=\"" << y + kLane - 5
		  << "\" fill=\"#444\" font-size=\"9\">paused</text>\n";
	}
	/* Holdings: bars in the lower half of the lane, token inside if it fits. */
	for (auto &b : t.bars)
	{
		double y = Y(b.worker) + kLane - kBarH - 8;
		double x = X(b.start), w = std::max(1.5, X(b.end) - X(b.start));
		s << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << kBarH
		  << "\" fill=\"" << KindColor(b.kind) << "\" stroke=\"white\" stroke-width=\"0.5\"/>\n";
		std::string label = std::to_string(b.token);
		if (w >= 6.0 * static_cast<double>(label.size()) + 2)
			s << "<text x=\"" << x + w / 2 << "\" y=\"" << y + kBarH - 4
			  << "\" text-anchor=\"middle\" fill=\"white\" font-size=\"9\">" << label
			  << "</text>\n";
	}
	/* Writes and kills in the upper half of the lane. */
	for (auto &m : t.marks)
	{
		double x = X(m.at), y = Y(m.worker) + 6;
		if (m.what == "stale")
			s << "<path d=\"M" << x - 4 << ' ' << y << " l8 8 m-8 0 l8 -8\" stroke=\"#d62728\" "
			  << "stroke-width=\"2.2\"/>\n";
		else if (m.what == "applied")
			s << "<line x1=\"" << x << "\" y1=\"" << y + 2 << "\" x2=\"" << x << "\" y2=\""
			  << y + 10 << "\" stroke=\"#2ca02c\" stroke-width=\"1.2\"/>\n";
		else if (m.what == "unknown")
			s << "<circle cx=\"" << x << "\" cy=\"" << y + 4 << "\" r=\"3\" fill=\"#ff7f0e\"/>\n";
		else if (m.what == "kill")
			s << "<path d=\"M" << x - 5 << ' ' << y - 4 << " h10 l-5 9 z\" fill=\"black\"/>\n";
	}
	/* Restarts and failovers across every lane. */
	for (auto &l : t.lines)
	{
		bool        fo = l.label.rfind("restart", 0) != 0; /* failover, switchover */
		const char *color = fo ? "#9467bd" : "#1f77b4";
		s << "<rect x=\"" << X(l.start) << "\" y=\"" << kTop << "\" width=\""
		  << std::max(1.0, X(l.end) - X(l.start)) << "\" height=\"" << lanes_h << "\" fill=\""
		  << color << "\" fill-opacity=\"0.12\"/>\n"
		  << "<line x1=\"" << X(l.start) << "\" y1=\"" << kTop - 12 << "\" x2=\"" << X(l.start)
		  << "\" y2=\"" << axis_y << "\" stroke=\"" << color << "\" stroke-width=\"2\""
		  << (fo ? "" : " stroke-dasharray=\"6,3\"") << "/>\n"
		  << "<text x=\"" << X(l.start) + 3 << "\" y=\"" << kTop - 4 << "\" fill=\"" << color
		  << "\">" << Escape(l.label) << "</text>\n";
	}
	/* Legend. */
	double ly = axis_y + 40;
	double lx = kLeft;
	auto   key = [&](const std::string &shape, const std::string &text) {
        if (lx + 30 + 6.0 * static_cast<double>(text.size()) > width - kRight && lx > kLeft)
            lx = kLeft, ly += 16; /* a second row */
        s << "<g transform=\"translate(" << lx << ',' << ly << ")\">" << shape
          << "<text x=\"18\" y=\"4\">" << Escape(text) << "</text></g>\n";
        lx += 30 + 6.0 * static_cast<double>(text.size());
	};
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#4e79a7\"/>", "lease (token)");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#17becf\"/>", "leadership");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#b07aa1\"/>", "semaphore permit");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#59a14f\"/>", "session lock");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#a8d89a\"/>", "shared lock");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#e5b80b\"/>", "xact lock");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#f28e2b\"/>", "job claim");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#9c755f\"/>",
		"idempotency key owned");
	key("<line x1=\"7\" y1=\"-6\" x2=\"7\" y2=\"4\" stroke=\"#2ca02c\"/>", "write applied");
	key("<path d=\"M3 -5 l8 8 m-8 0 l8 -8\" stroke=\"#d62728\" stroke-width=\"2\"/>",
		"stale write or completion rejected");
	key("<circle cx=\"7\" cy=\"0\" r=\"3\" fill=\"#ff7f0e\"/>", "outcome unknown");
	key("<rect x=\"0\" y=\"-6\" width=\"14\" height=\"10\" fill=\"#999\" fill-opacity=\"0.5\"/>",
		"paused (SIGSTOP)");
	key("<path d=\"M2 -5 h10 l-5 9 z\"/>", "backend terminated");
	key("<line x1=\"7\" y1=\"-7\" x2=\"7\" y2=\"5\" stroke=\"#1f77b4\" stroke-width=\"2\" "
		"stroke-dasharray=\"4,2\"/>",
		"restart");
	key("<line x1=\"7\" y1=\"-7\" x2=\"7\" y2=\"5\" stroke=\"#9467bd\" stroke-width=\"2\"/>",
		"failover / switchover");
	s << "</svg>\n";

	std::ofstream out(path);
	out << s.str();
	if (!out)
	{
		std::fprintf(stderr, "chaos_check: cannot write %s\n", path.c_str());
		return false;
	}
	return true;
}

} // namespace chaos
