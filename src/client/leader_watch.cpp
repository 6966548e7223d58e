/*-------------------------------------------------------------------------
 *
 * leader_watch.cpp
 *	  fence::LeaderWatch (LISTEN pg_fence on a connection of its own) and
 *	  fence::current_leader (one fence.leader call).
 *
 * The watch's thread.  It sleeps in poll(2) on its connection's socket and
 * a "stop" pipe (pq_conn.hpp, PqConn::WaitNotify) until a notification on
 * channel pg_fence arrives, the current leader's expires_at passes (an
 * expiry without a takeover sends no notification), or the destructor
 * asks it to stop.  A notification about another name is ignored; one
 * about the watched name is applied first (an election or a plain lease's
 * grant reported from the payload, notify_payload.hpp; a resign or release
 * of the current term reported as "none"), then fence.leader(name) is read again, as it is at
 * expires_at; each report is made only when the (candidate, term) pair
 * changed, and terms never go back.  A broken connection is made again
 * with backoff (50 ms doubling to 5 s), followed by LISTEN and a fresh
 * read, so the state after a change made while disconnected is reported.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/leader_watch.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/election.hpp"

#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <pqxx/except>

#include "internal.hpp"
#include "notify_payload.hpp"
#include "pq_conn.hpp"

namespace fence {

namespace detail {

using client_internal::PqConn;
using client_internal::PqOutcome;
using Clock = std::chrono::steady_clock;

constexpr char kChannel[] = "pg_fence";

[[noreturn]] void
ThrowWatchOutcome(const PqOutcome &o)
{
	if (o.kind == PqOutcome::kServerError)
		throw pqxx::sql_error("pg_fence: " + o.message, "", o.sqlstate.c_str());
	throw pqxx::broken_connection(
		"pg_fence: " + (o.message.empty() ? std::string("connection failed") : o.message));
}

/*
 * One column, so that PqConn::Exec can return it: term, elected_at and
 * expires_at (epoch seconds), the seconds left before expires_at on the
 * server's clock, and the candidate last (it may contain tabs), as "c"
 * followed by the candidate, or "n" when it is NULL (a lease acquired
 * without a holder: concat_ws would drop a NULL field).
 */
std::string
LeaderQuery(const PqConn &conn, const std::string &name)
{
	return "SELECT concat_ws(E'\\t', term, extract(epoch FROM elected_at), "
		   "extract(epoch FROM expires_at), extract(epoch FROM expires_at - clock_timestamp()), "
		   "coalesce('c' || candidate, 'n')) FROM fence.leader(" +
		   conn.Literal(name) + ")";
}

std::chrono::system_clock::time_point
FromEpoch(const std::string &s)
{
	double secs = std::strtod(s.c_str(), nullptr);
	return std::chrono::system_clock::time_point(
		std::chrono::duration_cast<std::chrono::system_clock::duration>(
			std::chrono::duration<double>(secs)));
}

/* The row LeaderQuery returned; *left = time before its expiry (server clock). */
std::optional<Leader>
ParseLeader(const std::optional<std::string> &value, Clock::duration *left)
{
	if (!value)
		return std::nullopt;
	std::vector<std::string> f;
	std::size_t              start = 0;
	while (f.size() < 4)
	{
		std::size_t tab = value->find('\t', start);
		if (tab == std::string::npos)
			break;
		f.push_back(value->substr(start, tab - start));
		start = tab + 1;
	}
	if (f.size() < 4)
		throw std::runtime_error("pg_fence: unexpected fence.leader row: " + *value);
	Leader l;
	l.term = std::stoll(f[0]);
	l.elected_at = FromEpoch(f[1]);
	l.expires_at = FromEpoch(f[2]);
	if (start >= value->size() || ((*value)[start] != 'c' && (*value)[start] != 'n'))
		throw std::runtime_error("pg_fence: unexpected fence.leader row: " + *value);
	if ((*value)[start] == 'c')
		l.candidate = value->substr(start + 1);
	if (left)
		*left = std::chrono::duration_cast<Clock::duration>(
			std::chrono::duration<double>(std::max(0.0, std::strtod(f[3].c_str(), nullptr))));
	return l;
}

/* "2026-12-01T07:05:29.123456+00:00" (the payloads' times, always UTC) */
std::chrono::system_clock::time_point
FromIsoUtc(const std::optional<std::string> &text)
{
	struct tm tmv = {};
	double    sec = 0;
	if (!text || std::sscanf(text->c_str(), "%d-%d-%dT%d:%d:%lf", &tmv.tm_year, &tmv.tm_mon,
							 &tmv.tm_mday, &tmv.tm_hour, &tmv.tm_min, &sec) != 6)
		return {};
	tmv.tm_year -= 1900;
	tmv.tm_mon -= 1;
	tmv.tm_sec = 0;
	auto whole = std::chrono::system_clock::from_time_t(timegm(&tmv));
	return whole + std::chrono::duration_cast<std::chrono::system_clock::duration>(
					   std::chrono::duration<double>(sec));
}

struct LeaderWatchImpl
{
	std::string        conninfo;
	std::string        name;
	LeaderCallback     on_change;
	LeaderWatchOptions options;

	PqConn                     conn;
	int                        stop_rd = -1;
	int                        stop_wr = -1;
	std::thread                thread;
	mutable std::mutex         mu; /* guards current */
	std::optional<Leader>      current;
	std::atomic<std::uint64_t> changes{0};
	bool              reported = false; /* the watch's thread only (after the first report) */
	std::int64_t      last_term = 0;    /* highest term reported */
	Clock::time_point recheck_at = Clock::time_point::max();

	~LeaderWatchImpl()
	{
		if (stop_rd >= 0)
			::close(stop_rd);
		if (stop_wr >= 0)
			::close(stop_wr);
	}

	/* Connects, LISTENs and reads the leader; `stop_fd` -1 in the constructor. */
	PqOutcome
	Start(int stop_fd)
	{
		PqOutcome r = conn.Connect(conninfo, Clock::now() + options.connect_timeout, stop_fd);
		if (!r.ok())
			return r;
		r = conn.Exec(std::string("LISTEN ") + kChannel, Clock::now() + options.connect_timeout,
					  stop_fd);
		if (!r.ok())
			return r;
		return Read(stop_fd);
	}

	/* fence.leader(name) again; reports a change. */
	PqOutcome
	Read(int stop_fd)
	{
		PqOutcome r =
			conn.Exec(LeaderQuery(conn, name), Clock::now() + options.connect_timeout, stop_fd);
		if (!r.ok())
			return r;
		Clock::duration       left{};
		std::optional<Leader> l = ParseLeader(r.value, &left);
		/* Read again just after the expiry, unless a renewal moved it (then again after that). */
		recheck_at =
			l ? Clock::now() + left + std::chrono::milliseconds(5) : Clock::time_point::max();
		Report(l);
		return r;
	}

	/*
	 * A notification about this name, in commit order.  A new holder of
	 * the lease `name` (kind "leader", elected by fence.campaign, or
	 * "lease", a plain fence.lease_acquire: fence.leader() reports both)
	 * is reported from the payload itself, so that a leader that is gone
	 * again before the next read is seen too; a resign or release of the
	 * current term reports "none".  A payload about an older term than one
	 * already reported (read after it) is stale and skipped.  Semaphore
	 * permits are no leaders (fence.leader() refuses a semaphore's name).
	 */
	void
	Apply(const client_internal::NotifyPayload &n)
	{
		if ((n.kind == "leader" || n.kind == "lease") &&
			(n.event == "acquired" || n.event == "taken_over"))
		{
			if (n.token <= last_term)
				return;
			Leader l;
			l.candidate = n.holder;
			l.term = n.token;
			l.elected_at = FromIsoUtc(n.at);
			l.expires_at = FromIsoUtc(n.expires_at);
			Report(l);
		}
		else if (n.event == "resigned" || n.event == "released")
		{
			bool ends_current;
			{
				std::lock_guard<std::mutex> lk(mu);
				ends_current = current && current->term == n.token;
			}
			if (ends_current)
				Report(std::nullopt);
		}
	}

	/* Records `l` as the current leader; calls on_change if (candidate, term) changed. */
	void
	Report(const std::optional<Leader> &l)
	{
		bool changed;
		{
			std::lock_guard<std::mutex> lk(mu);
			changed = !reported || current.has_value() != l.has_value() ||
					  (l && (current->term != l->term || current->candidate != l->candidate));
			current = l;
		}
		if (l)
			last_term = std::max(last_term, l->term);
		if (!changed)
			return;
		reported = true;
		changes++;
		if (on_change)
		{
			try
			{
				on_change(l);
			}
			catch (...)
			{
			}
		}
	}

	bool
	Sleep(Clock::duration d) const
	{
		struct pollfd p = {stop_rd, POLLIN, 0};
		int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
		return ::poll(&p, 1, ms) == 0;
	}

	/* The thread's top: nothing may escape it (it would call std::terminate). */
	void
	Loop() noexcept
	{
		for (;;)
		{
			try
			{
				LoopBody();
				return;
			}
			catch (...)
			{
				/* out of memory in a message: close and start over */
				conn.Close();
				if (!Sleep(std::chrono::seconds(1)))
					return;
			}
		}
	}

	void
	LoopBody()
	{
		Clock::duration backoff = std::chrono::milliseconds(50);
		for (;;)
		{
			PqOutcome r;
			try
			{
				if (!conn.connected())
					r = Start(stop_rd);
				else
				{
					std::vector<std::string> payloads;
					Clock::time_point        until =
						std::min(recheck_at, Clock::now() + std::chrono::hours(1));
					r = conn.WaitNotify(kChannel, until, stop_rd, &payloads);
					bool reread = Clock::now() >= recheck_at;
					for (const std::string &p : payloads)
					{
						auto n = client_internal::ParseNotifyPayload(p);
						if (!n)
						{
							reread = true; /* unreadable: ask the server */
							continue;
						}
						if (n->name_truncated ? name.compare(0, n->name.size(), n->name) != 0
											  : n->name != name)
							continue; /* another name's */
						reread = true;
						if (!n->name_truncated)
							Apply(*n);
					}
					if (r.ok() && reread)
						r = Read(stop_rd);
				}
			}
			catch (const std::exception &e)
			{
				r.kind = PqOutcome::kConnectionLost;
				r.message = e.what();
				conn.Close();
			}
			catch (...)
			{
				r.kind = PqOutcome::kConnectionLost;
				r.message = "unknown error";
				conn.Close();
			}
			if (r.kind == PqOutcome::kStopped)
				return;
			if (r.ok())
			{
				backoff = std::chrono::milliseconds(50);
				continue;
			}
			conn.Close();
			if (options.on_retry)
			{
				try
				{
					options.on_retry("leader watch: " + r.message + "; connecting again");
				}
				catch (...)
				{
				}
			}
			if (!Sleep(backoff))
				return;
			backoff = std::min<Clock::duration>(backoff * 2, std::chrono::seconds(5));
		}
	}
};

} // namespace detail

using detail::Clock;
using detail::PqOutcome;

/* ---------- LeaderWatch ---------- */

LeaderWatch::LeaderWatch(const std::string &conninfo, const std::string &name,
						 LeaderCallback on_change, LeaderWatchOptions options)
{
	client_internal::CheckName(name);
	if (options.connect_timeout <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: connect timeout must be greater than zero");
	auto impl = std::make_shared<detail::LeaderWatchImpl>();
	impl->conninfo = conninfo;
	impl->name = name;
	impl->on_change = std::move(on_change);
	impl->options = std::move(options);
	int fds[2];
	if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
		throw std::system_error(errno, std::generic_category(), "pg_fence: pipe");
	impl->stop_rd = fds[0];
	impl->stop_wr = fds[1];

	/* Connect, LISTEN and read once here, so that errors reach the caller; report from the thread. */
	PqOutcome r = impl->conn.Connect(conninfo, Clock::now() + impl->options.connect_timeout, -1);
	if (r.ok())
		r = impl->conn.Exec(std::string("LISTEN ") + detail::kChannel,
							Clock::now() + impl->options.connect_timeout, -1);
	if (r.ok())
		r = impl->conn.Exec(detail::LeaderQuery(impl->conn, name),
							Clock::now() + impl->options.connect_timeout, -1);
	if (!r.ok())
		detail::ThrowWatchOutcome(r);
	detail::ParseLeader(r.value, nullptr); /* throws on a row it cannot read */

	detail::LeaderWatchImpl *raw = impl.get();
	impl->thread = std::thread([raw] {
		/* The first report: read again on the thread (cheap), which also sets recheck_at. */
		PqOutcome first;
		try
		{
			first = raw->Read(raw->stop_rd);
		}
		catch (...)
		{
			raw->conn.Close(); /* Loop reconnects and reports through on_retry */
		}
		if (first.kind == PqOutcome::kStopped)
			return;
		if (!first.ok())
			raw->conn.Close();
		raw->Loop();
	});
	impl_ = std::move(impl);
}

LeaderWatch::~LeaderWatch()
{
	if (!impl_)
		return;
	char one = 1;
	while (::write(impl_->stop_wr, &one, 1) < 0 && errno == EINTR)
	{
	}
	if (impl_->thread.joinable())
		impl_->thread.join();
	impl_->conn.Close();
}

std::optional<Leader>
LeaderWatch::leader() const
{
	std::lock_guard<std::mutex> lk(impl_->mu);
	return impl_->current;
}

std::uint64_t
LeaderWatch::changes() const noexcept
{
	return impl_->changes.load();
}

/* ---------- current_leader ---------- */

std::optional<Leader>
current_leader(const std::string &conninfo, const std::string &name)
{
	client_internal::CheckName(name);
	client_internal::PqConn conn;
	auto                    deadline = Clock::now() + std::chrono::seconds(10);
	PqOutcome               r = conn.Connect(conninfo, deadline, -1);
	if (r.ok())
		r = conn.Exec(detail::LeaderQuery(conn, name), deadline, -1);
	if (!r.ok())
		detail::ThrowWatchOutcome(r);
	return detail::ParseLeader(r.value, nullptr);
}

} // namespace fence
