/*-------------------------------------------------------------------------
 *
 * leader.cpp
 *	  `pg_fence leader NAME`: print the current leader of an election
 *	  (fence.leader); with --watch, print each change of it as it happens,
 *	  like `etcdctl elect --listen`.
 *
 * Output (stdout, tab-separated, one line each, times UTC):
 *	  leader NAME           CANDIDATE  TERM  ELECTED_AT  EXPIRES_AT
 *	                        (nothing, exit 1, when there is no leader)
 *	  leader NAME --watch   TIME  leader  CANDIDATE  TERM   a leader (new term)
 *	                        TIME  none                     no leader
 * CANDIDATE is empty when the leader has none (a lease acquired without
 * a holder, e.g. fence.lease_acquire('x', '20 s')).
 * The first --watch line is the state at start.  The watch is a
 * fence::LeaderWatch (election.hpp): LISTEN pg_fence, a new leader (an
 * election or a plain lease's grant) or its end taken from a notification
 * about NAME, fence.leader(NAME) again after it and once at the leader's
 * expires_at (an expiry without a takeover sends no notification); no
 * polling.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/cli/leader.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "leader.hpp"

#include <time.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include <pqxx/except>

#include "connect.hpp"
#include "pg_fence/election.hpp"

namespace fence::cli {

namespace {

/* "2026-12-01T07:30:00.123Z" */
std::string
IsoUtc(std::chrono::system_clock::time_point t)
{
	auto      ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
	time_t    secs = static_cast<time_t>(ms.count() / 1000);
	struct tm tmv;
	char      buf[48];
	gmtime_r(&secs, &tmv);
	std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tmv.tm_year + 1900,
				  tmv.tm_mon + 1, tmv.tm_mday, tmv.tm_hour, tmv.tm_min, tmv.tm_sec,
				  static_cast<int>(ms.count() % 1000));
	return buf;
}

/*
 * A candidate on one line: tabs and newlines become spaces; no candidate
 * (a lease acquired without a holder) is an empty field.
 */
std::string
Cell(const std::optional<std::string> &candidate)
{
	std::string s = candidate.value_or("");
	for (char &c : s)
		if (c == '\t' || c == '\n' || c == '\r')
			c = ' ';
	return s;
}

} // namespace

int
Leader(const LeaderOptions &o)
{
	{
		auto conn = Connect(o.conninfo);
		CheckExtension(*conn, "fence.leader(text)");
	}
	if (!o.watch)
	{
		std::optional<fence::Leader> l = fence::current_leader(o.conninfo, o.name);
		if (!l)
		{
			Msg("election \"%s\" has no leader", o.name.c_str());
			return kExitNoLeader;
		}
		std::printf("%s\t%lld\t%s\t%s\n", Cell(l->candidate).c_str(),
					static_cast<long long>(l->term), IsoUtc(l->elected_at).c_str(),
					IsoUtc(l->expires_at).c_str());
		return 0;
	}

	std::mutex                mu;
	std::condition_variable   cv;
	long                      lines = 0;
	fence::LeaderWatchOptions wo;
	wo.on_retry = [](const std::string &message) { Msg("%s", message.c_str()); };
	fence::LeaderWatch watch(
		o.conninfo, o.name,
		[&](const std::optional<fence::Leader> &l) {
			std::string now = IsoUtc(std::chrono::system_clock::now());
			if (l)
				std::printf("%s\tleader\t%s\t%lld\n", now.c_str(), Cell(l->candidate).c_str(),
							static_cast<long long>(l->term));
			else
				std::printf("%s\tnone\n", now.c_str());
			std::fflush(stdout);
			std::lock_guard<std::mutex> lk(mu);
			lines++;
			cv.notify_all();
		},
		wo);
	std::unique_lock<std::mutex> lk(mu);
	cv.wait(lk, [&] { return o.count > 0 && lines >= o.count; });
	return 0;
}

} // namespace fence::cli
