/*-------------------------------------------------------------------------
 *
 * session_monitor.cpp
 *	  fence::SessionMonitor: the checker and watchdog threads.
 *
 * State.  Whether the session is lost is one atomic word, `state`: alive,
 * failed (a check failed; `error` says why) or timed out (no check
 * succeeded for interval + timeout).  It leaves "alive" once, by
 * compare-and-swap, so the first cause found is the one reported, and a
 * late answer never makes a lost session alive again.  The time of the
 * last successful check is a second atomic word, so lost() needs no lock.
 *
 * Threads, as in lease_renewer.cpp.  The checker runs SELECT 1 every interval
 * (counted from the end of the previous check), or at once when resume()
 * asks.  The watchdog sleeps until (last success) + interval + timeout,
 * moved on by each success; at that moment it declares the loss and, if a
 * check is in flight, shuts the connection's socket down, which makes the
 * blocked libpq call fail at once.  The shutdown goes through a duplicate
 * of the socket taken at construction, so it can never hit a descriptor
 * number that libpq closed and the process reused meanwhile.  Whoever moves
 * `state` away from alive makes sure the callback is called, once.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/session_monitor.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/session_monitor.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <pqxx/except>
#include <pqxx/nontransaction>

#include "internal.hpp"

namespace fence {

namespace detail {

using Clock = std::chrono::steady_clock;

enum MonitorState : int
{
	kAlive = 0,
	kFailed = 1,   /* a check failed; `error` holds the message */
	kTimedOut = 2, /* no check succeeded for interval + timeout */
};

static const char kTimedOutMessage[] = "connection check did not answer in time";

struct SessionMonitorImpl
{
	SessionMonitorImpl(pqxx::connection &c, SessionMonitorOptions &&o)
		: conn(c), interval(o.check_interval), timeout(o.check_timeout),
		  on_lost(std::move(o.on_lost))
	{
	}
	~SessionMonitorImpl() { Stop(); }

	pqxx::connection               &conn;
	const std::chrono::milliseconds interval;
	const std::chrono::milliseconds timeout;
	const SessionLossCallback       on_lost;
	int                             backend_pid = 0;
	int                             sock_dup = -1;

	std::atomic<int>        state{kAlive};
	std::atomic<Clock::rep> last_ok{0};       /* steady_clock ticks of the last success */
	std::atomic<bool>       suspended{false}; /* written under mu */
	std::atomic<bool>       stopped{false};   /* lost() keeps its answer from now on */
	std::atomic<bool>       reported{false};

	mutable std::mutex      mu;
	std::condition_variable checker_cv;  /* wakes the checker: stop, check_now */
	std::condition_variable watchdog_cv; /* wakes the watchdog: stop, loss, suspend/resume */
	std::condition_variable done_cv;     /* a check ended (for stop() and resume()) */
	bool                    stop_requested = false; /* under mu */
	bool                    check_now = false;      /* under mu */
	bool                    in_flight = false;      /* under mu: a check is using the connection */
	unsigned long           checks_done = 0;        /* under mu */
	std::string             error;                  /* under mu: why the check failed */
	std::thread             checker;
	std::thread             watchdog;

	Clock::time_point
	Deadline() const noexcept
	{
		return Clock::time_point(Clock::duration(last_ok.load())) + interval + timeout;
	}

	bool
	Lost() noexcept
	{
		if (state.load() != kAlive)
			return true;
		if (stopped.load() || suspended.load() || Clock::now() < Deadline())
			return false;
		int expected = kAlive;
		state.compare_exchange_strong(expected, kTimedOut);
		/* The watchdog aborts the hung check and calls back; its deadline has passed too, so it is awake. */
		watchdog_cv.notify_all();
		return true;
	}

	std::string
	Message() const
	{
		switch (state.load())
		{
			case kAlive:
				return std::string();
			case kTimedOut:
				return kTimedOutMessage;
			default:
			{
				std::lock_guard<std::mutex> lk(mu);
				return error;
			}
		}
	}

	/* Caller holds mu.  Unblocks a check in flight by shutting its socket down. */
	void
	AbortInFlight() noexcept
	{
		if (in_flight && sock_dup >= 0)
			::shutdown(sock_dup, SHUT_RDWR);
	}

	/* Calls the callback once, after the state has left kAlive.  Caller does not hold mu. */
	void
	Report() noexcept
	{
		int s = state.load();
		if (s == kAlive || reported.exchange(true) || !on_lost)
			return;
		try
		{
			on_lost(s == kFailed ? SessionLossReason::kCheckFailed
								 : SessionLossReason::kCheckTimeout,
					Message());
		}
		catch (...)
		{
		}
	}

	std::string Check() noexcept;
	void        CheckerLoop() noexcept;
	void        WatchdogLoop() noexcept;
	bool        Resume() noexcept;
	void        Stop() noexcept;
};

/* One SELECT 1: "" when the session answered, else why it is lost. */
std::string
SessionMonitorImpl::Check() noexcept
{
	try
	{
		pqxx::nontransaction tx(conn, "fence.session_check");
		tx.exec("SELECT 1");
		if (conn.backendpid() != backend_pid) /* libpqxx 6 reconnected silently */
			return "lost the connection to the server: it was re-established in a new session, which holds "
				   "none of the old one's locks";
		return std::string();
	}
	catch (const pqxx::broken_connection &e)
	{
		/*
		 * When libpq has already seen the connection close (e.g. it read the
		 * server's FATAL while idle), libpqxx reports only "Could not obtain
		 * client encoding: not connected.", which tells a user nothing: say
		 * what happened instead.
		 */
		std::string detail = client_internal::OneLine(e.what());
		if (!conn.is_open() || detail.find("client encoding") != std::string::npos)
			detail =
				"the connection was closed (the server ended the session, or the network failed)";
		return "lost the connection to the server: " + detail;
	}
	catch (const std::exception &e)
	{
		return "connection check failed: " + client_internal::OneLine(e.what());
	}
	catch (...)
	{
		return "connection check failed: unknown error";
	}
}

void
SessionMonitorImpl::CheckerLoop() noexcept
{
	std::unique_lock<std::mutex> lk(mu);
	for (;;)
	{
		checker_cv.wait_for(
			lk, interval, [this] { return stop_requested || check_now || state.load() != kAlive; });
		/*
		 * Lost() also applies the deadline here: after this process was
		 * frozen (SIGSTOP, VM pause) for longer than interval + timeout, a
		 * check made now must not hide that nothing answered in time (the
		 * watchdog reports it).  suspend() is the way to stop on purpose.
		 */
		if (stop_requested || Lost())
			return;
		check_now = false;
		in_flight = true;
		lk.unlock();
		std::string err = Check();
		lk.lock();
		in_flight = false;
		checks_done++;
		/*
		 * A check that stop() aborted is not a loss.  An answer that comes
		 * after the deadline does not count (Lost() declares the timeout),
		 * and none revives a lost session.
		 */
		if (!stop_requested && !err.empty())
		{
			error = err;
			int expected = kAlive;
			state.compare_exchange_strong(expected, kFailed);
		}
		else if (!stop_requested && !Lost())
			last_ok.store(Clock::now().time_since_epoch().count());
		bool stopping = stop_requested;
		bool done = stopping || state.load() != kAlive;
		lk.unlock();
		done_cv.notify_all();
		if (done)
		{
			watchdog_cv.notify_all();
			if (!stopping)
				Report();
			return;
		}
		lk.lock();
	}
}

void
SessionMonitorImpl::WatchdogLoop() noexcept
{
	std::unique_lock<std::mutex> lk(mu);
	for (;;)
	{
		if (stop_requested)
			return;
		if (state.load() != kAlive)
		{
			if (state.load() == kTimedOut)
				AbortInFlight();
			lk.unlock();
			Report();
			return;
		}
		if (suspended.load())
		{
			watchdog_cv.wait(lk);
			continue;
		}
		Clock::time_point deadline = Deadline();
		if (Clock::now() >= deadline)
		{
			int expected = kAlive;
			state.compare_exchange_strong(expected, kTimedOut);
			continue;
		}
		watchdog_cv.wait_until(lk, deadline);
	}
}

bool
SessionMonitorImpl::Resume() noexcept
{
	try
	{
		std::unique_lock<std::mutex> lk(mu);
		if (stop_requested)
			return !Lost();
		/* The time we were stopped does not count: only the answer to a check made now does. */
		unsigned long before = checks_done;
		last_ok.store(Clock::now().time_since_epoch().count());
		suspended.store(false);
		if (state.load() == kAlive)
		{
			check_now = true;
			checker_cv.notify_all();
			watchdog_cv.notify_all();
			auto answered = [&] { return checks_done != before || state.load() != kAlive; };
			if (!done_cv.wait_for(lk, timeout, answered))
			{
				/* Hung: make the check fail at once, and wait for that. */
				AbortInFlight();
				done_cv.wait_for(lk, std::chrono::seconds(1), answered);
			}
		}
	}
	catch (...)
	{
		/* std::mutex failures: answer from the state as it is */
	}
	return !Lost();
}

void
SessionMonitorImpl::Stop() noexcept
{
	try
	{
		std::unique_lock<std::mutex> lk(mu);
		stopped.store(true);
		stop_requested = true;
		checker_cv.notify_all();
		watchdog_cv.notify_all();
		if (!done_cv.wait_for(lk, timeout, [this] { return !in_flight; }))
			AbortInFlight();
	}
	catch (...)
	{
	}
	if (checker.joinable())
		checker.join();
	if (watchdog.joinable())
		watchdog.join();
	if (sock_dup >= 0)
		::close(sock_dup);
	sock_dup = -1;
}

} // namespace detail

using detail::SessionMonitorImpl;

SessionMonitor::SessionMonitor(pqxx::connection &conn, Options options)
{
	if (options.check_interval <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: session check interval must be positive");
	if (options.check_timeout <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: session check timeout must be positive");
	if (!conn.is_open())
		throw pqxx::broken_connection("pg_fence: the connection to monitor is not open");
	auto impl = std::make_unique<SessionMonitorImpl>(conn, std::move(options));
	impl->backend_pid = conn.backendpid();
	impl->sock_dup = ::fcntl(conn.sock(), F_DUPFD_CLOEXEC, 0);
	if (impl->sock_dup < 0)
		throw std::system_error(errno, std::generic_category(),
								"pg_fence: dup of the connection socket");
	impl->last_ok.store(detail::Clock::now().time_since_epoch().count());
	SessionMonitorImpl *raw = impl.get();
	impl->checker = std::thread([raw] { raw->CheckerLoop(); });
	impl->watchdog =
		std::thread([raw] { raw->WatchdogLoop(); }); /* if it throws, ~Impl stops the checker */
	impl_ = std::move(impl);
}

SessionMonitor::SessionMonitor(SessionMonitor &&other) noexcept = default;

SessionMonitor &
SessionMonitor::operator=(SessionMonitor &&other) noexcept
{
	if (this != &other)
	{
		stop();
		impl_ = std::move(other.impl_);
	}
	return *this;
}

SessionMonitor::~SessionMonitor()
{
	stop();
}

void
SessionMonitor::stop() noexcept
{
	if (impl_)
		impl_->Stop();
}

bool
SessionMonitor::lost() const noexcept
{
	return impl_ && impl_->Lost();
}

std::string
SessionMonitor::message() const
{
	return impl_ ? impl_->Message() : std::string();
}

void
SessionMonitor::suspend() noexcept
{
	if (!impl_)
		return;
	try
	{
		std::lock_guard<std::mutex> lk(impl_->mu);
		if (impl_->stop_requested)
			return;
		impl_->suspended.store(true);
	}
	catch (...)
	{
		return;
	}
	impl_->watchdog_cv.notify_all();
}

bool
SessionMonitor::resume() noexcept
{
	return impl_ ? impl_->Resume() : true;
}

} // namespace fence
