/*-------------------------------------------------------------------------
 *
 * lease.cpp
 *	  fence::Lease: acquisition, the renewer and watchdog threads, release.
 *
 * Timekeeping.  The lease's state is one atomic word, the local deadline in
 * steady_clock nanoseconds, with two sentinels: kLost (lost, for good) and
 * kReleased (released cleanly).  Everybody who decides something compares
 * the clock with that word and changes it only by compare-and-swap, so the
 * answers are linearizable: once any thread has seen the lease lost, no
 * late renewal can extend it again, and a renewal that extended it before
 * the deadline is seen by every later lost() call.
 *
 * Threads.  The renewer sends fence.lease_renew every renew_interval, each
 * in a transaction with SET LOCAL statement_timeout = the time left.  The
 * watchdog sleeps on a condition variable until the deadline (woken on each
 * extension); at the deadline it declares the loss and, if a call is still
 * in flight, shuts the connection's socket down, which makes the blocked
 * libpq call fail at once: a hung renewal neither keeps the holder
 * believing it holds the lease nor keeps the destructor waiting.  The
 * shutdown goes through a dup() of the socket taken at connect time, so it
 * can never hit a descriptor number that libpq closed and the process
 * reused meanwhile.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/lease.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/lease.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <pqxx/connection>
#include <pqxx/except>
#include <pqxx/transaction>

#include "internal.hpp"
#include "pqxx_compat.hpp"

namespace fence {

namespace detail {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kLost = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kReleased = std::numeric_limits<std::int64_t>::max();

static std::int64_t
ToNs(Clock::time_point t)
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

static std::int64_t
NowNs()
{
	return ToNs(Clock::now());
}

struct LeaseState
{
	/* Local deadline (ns on steady_clock), or kLost / kReleased. */
	mutable std::atomic<std::int64_t> deadline{kLost};
	/* The last real deadline, for Lease::deadline(). */
	std::atomic<std::int64_t> last_deadline{0};
	std::atomic<bool>         ended{false};

	/* True if lost; turns a passed deadline into kLost (for good). */
	bool
	CheckLost() const noexcept
	{
		std::int64_t d = deadline.load();
		for (;;)
		{
			if (d == kLost)
				return true;
			if (NowNs() < d)
				return false;
			if (deadline.compare_exchange_weak(d, kLost))
				return true;
		}
	}

	/* Moves the deadline to `next` if the lease is not lost yet. */
	bool
	Extend(std::int64_t next) noexcept
	{
		std::int64_t d = deadline.load();
		for (;;)
		{
			if (d == kLost || d == kReleased)
				return false;
			if (NowNs() >= d)
			{
				if (deadline.compare_exchange_weak(d, kLost))
					return false;
				continue;
			}
			if (deadline.compare_exchange_weak(d, next))
			{
				last_deadline.store(next);
				return true;
			}
		}
	}

	void
	MarkLost() noexcept
	{
		std::int64_t d = deadline.load();
		while (d != kReleased && d != kLost && !deadline.compare_exchange_weak(d, kLost))
		{
		}
	}

	/* Freezes lost() at its current answer: false stays false after release. */
	void
	MarkReleased() noexcept
	{
		std::int64_t d = deadline.load();
		for (;;)
		{
			if (d == kLost || d == kReleased)
				break;
			if (NowNs() >= d)
			{
				if (deadline.compare_exchange_weak(d, kLost))
					break;
				continue;
			}
			if (deadline.compare_exchange_weak(d, kReleased))
				break;
		}
		ended.store(true);
	}
};

struct LeaseImpl
{
	std::string               name;
	std::string               holder;
	std::chrono::milliseconds ttl{0};
	std::chrono::milliseconds interval{0};
	std::chrono::milliseconds margin{0};
	Lease::LossCallback       on_lost;
	std::int64_t              token = 0;
	int                       backend_pid = 0;

	std::unique_ptr<pqxx::connection> conn;
	int                               sock_dup = -1;

	std::shared_ptr<LeaseState> state = std::make_shared<LeaseState>();
	std::atomic<bool>           loss_reported{false};

	std::mutex              mu;
	std::condition_variable cv;
	bool                    stop_renewer = false;  /* under mu */
	bool                    stop_watchdog = false; /* under mu */
	bool                    in_flight = false;     /* under mu: a call is using the connection */
	bool                    finished = false;      /* released or destroyed */
	std::thread             renewer;
	std::thread             watchdog;

	~LeaseImpl()
	{
		if (sock_dup >= 0)
			::close(sock_dup);
	}

	/* Caller holds mu.  Unblocks a call in flight by shutting its socket. */
	void
	AbortInFlight() noexcept
	{
		if (in_flight && sock_dup >= 0)
			::shutdown(sock_dup, SHUT_RDWR);
	}

	void
	ReportLoss(Lease::LossReason reason, const std::string &message) noexcept
	{
		state->MarkLost();
		if (loss_reported.exchange(true))
			return;
		if (on_lost)
		{
			try
			{
				on_lost(reason, message);
			}
			catch (...)
			{
			}
		}
	}

	void RenewerLoop() noexcept;
	void WatchdogLoop() noexcept;
};

void
LeaseImpl::RenewerLoop() noexcept
{
	std::unique_lock<std::mutex> lk(mu);
	Clock::time_point            next = Clock::now() + interval;
	for (;;)
	{
		cv.wait_until(lk, next, [&] { return stop_renewer; });
		if (stop_renewer)
			return;
		if (Clock::now() < next)
			continue; /* spurious wakeup */
		if (state->CheckLost())
			return; /* the watchdog reports it */

		Clock::time_point sent = Clock::now();
		Clock::duration   left = std::chrono::nanoseconds(state->deadline.load() - ToNs(sent));
		in_flight = true;
		lk.unlock();

		bool        renewed = false;
		bool        failed = false;
		std::string error;
		try
		{
			pqxx::work tx(*conn, "fence.lease_renew");
			tx.exec("SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(left));
			pqxx::row row =
				pqxx_compat::ExecParams1(tx, "SELECT fence.lease_renew($1, $2, $3::interval)", name,
										 token, client_internal::IntervalLiteral(ttl));
			renewed = !row[0].is_null() && row[0].as<bool>();
			tx.commit();
		}
		catch (const std::exception &e)
		{
			failed = true;
			error = e.what();
		}
		catch (...)
		{
			failed = true;
			error = "unknown error";
		}

		lk.lock();
		in_flight = false;
		if (stop_renewer)
			return; /* release or destruction: not a loss */
		if (failed)
		{
			lk.unlock();
			while (!error.empty() && (error.back() == '\n' || error.back() == ' '))
				error.pop_back();
			ReportLoss(Lease::LossReason::kRenewError, "lease renewal failed: " + error);
			return;
		}
		if (!renewed)
		{
			lk.unlock();
			ReportLoss(
				Lease::LossReason::kRefused,
				"lease renewal refused: the lease expired or was taken over by another holder");
			return;
		}
		if (!state->Extend(ToNs(sent + ttl - margin)))
			return;      /* the deadline passed while the renewal was in flight */
		cv.notify_all(); /* the watchdog sleeps until the new deadline */
		next = sent + interval;
	}
}

void
LeaseImpl::WatchdogLoop() noexcept
{
	std::unique_lock<std::mutex> lk(mu);
	while (!stop_watchdog)
	{
		if (state->CheckLost())
		{
			AbortInFlight();
			bool quiet = stop_renewer; /* releasing: not a loss to report */
			lk.unlock();
			if (quiet)
				state->MarkLost();
			else
				ReportLoss(Lease::LossReason::kDeadline,
						   "lease deadline passed without a successful renewal (local clock)");
			return;
		}
		std::int64_t d = state->deadline.load();
		if (d == kReleased)
			return;
		cv.wait_until(lk, Clock::time_point(std::chrono::nanoseconds(d)));
	}
}

} // namespace detail

using detail::Clock;
using detail::LeaseImpl;

bool
LossToken::stop_requested() const noexcept
{
	return !state_ || state_->ended.load() || state_->CheckLost();
}

Lease::Lease(std::shared_ptr<LeaseImpl> impl) noexcept : impl_(std::move(impl))
{
}

Lease::Lease(Lease &&other) noexcept = default;

Lease &
Lease::operator=(Lease &&other) noexcept
{
	if (this != &other)
	{
		Shutdown();
		impl_ = std::move(other.impl_);
	}
	return *this;
}

Lease::~Lease()
{
	Shutdown();
}

std::optional<Lease>
Lease::try_acquire(const std::string &conninfo, const std::string &name,
				   std::chrono::milliseconds ttl, Options options)
{
	return try_acquire_for(conninfo, name, ttl, std::chrono::milliseconds::zero(),
						   std::move(options));
}

std::optional<Lease>
Lease::try_acquire_for(const std::string &conninfo, const std::string &name,
					   std::chrono::milliseconds ttl, std::chrono::milliseconds wait,
					   Options options)
{
	client_internal::CheckName(name);
	if (ttl < std::chrono::milliseconds(3))
		throw std::invalid_argument("pg_fence: lease TTL must be at least 3 milliseconds");
	if (wait < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: wait must not be negative");
	if (options.safety_margin < std::chrono::milliseconds::zero() || options.safety_margin >= ttl)
		throw std::invalid_argument(
			"pg_fence: lease safety margin must be at least zero and less than the TTL");
	if (options.renew_interval < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: renew interval must not be negative");

	auto impl = std::make_shared<LeaseImpl>();
	impl->name = name;
	impl->holder = options.holder;
	impl->ttl = ttl;
	impl->interval = options.renew_interval > std::chrono::milliseconds::zero()
						 ? options.renew_interval
						 : ttl / 3;
	impl->margin = options.safety_margin;
	impl->on_lost = std::move(options.on_lost);
	impl->conn = std::make_unique<pqxx::connection>(conninfo);
	/* A silently re-established connection must not hide a broken one. */
	pqxx_compat::NoReactivation(*impl->conn);
	impl->backend_pid = impl->conn->backendpid();
	impl->sock_dup = ::dup(impl->conn->sock());
	if (impl->sock_dup < 0)
		throw std::system_error(errno, std::generic_category(),
								"pg_fence: dup of the connection socket");

	const Clock::time_point   give_up = Clock::now() + wait;
	std::chrono::milliseconds pause(50);
	for (;;)
	{
		Clock::time_point sent = Clock::now();
		pqxx::work        tx(*impl->conn, "fence.lease_acquire");
		tx.exec("SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(ttl));
		pqxx::row row =
			impl->holder.empty()
				? pqxx_compat::ExecParams1(tx, "SELECT fence.lease_acquire($1, $2::interval)", name,
										   client_internal::IntervalLiteral(ttl))
				: pqxx_compat::ExecParams1(tx, "SELECT fence.lease_acquire($1, $2::interval, $3)",
										   name, client_internal::IntervalLiteral(ttl),
										   impl->holder);
		tx.commit();
		if (!row[0].is_null())
		{
			impl->token = row[0].as<std::int64_t>();
			std::int64_t d = detail::ToNs(sent + ttl - impl->margin);
			impl->state->last_deadline.store(d);
			impl->state->deadline.store(d);
			break;
		}
		Clock::time_point now = Clock::now();
		if (now >= give_up)
			return std::nullopt;
		std::this_thread::sleep_for(std::min<Clock::duration>(pause, give_up - now));
		pause = std::min(pause * 3 / 2, std::chrono::milliseconds(1000));
	}

	LeaseImpl *raw = impl.get();
	impl->watchdog = std::thread([raw] { raw->WatchdogLoop(); });
	impl->renewer = std::thread([raw] { raw->RenewerLoop(); });
	return Lease(std::move(impl));
}

std::int64_t
Lease::token() const noexcept
{
	return impl_ ? impl_->token : 0;
}

const std::string &
Lease::name() const noexcept
{
	static const std::string empty;
	return impl_ ? impl_->name : empty;
}

std::chrono::milliseconds
Lease::ttl() const noexcept
{
	return impl_ ? impl_->ttl : std::chrono::milliseconds::zero();
}

bool
Lease::lost() const noexcept
{
	return impl_ && impl_->state->CheckLost();
}

LossToken
Lease::loss_token() const
{
	return impl_ ? LossToken(impl_->state) : LossToken();
}

std::chrono::steady_clock::time_point
Lease::deadline() const noexcept
{
	if (!impl_)
		return {};
	return Clock::time_point(std::chrono::nanoseconds(impl_->state->last_deadline.load()));
}

int
Lease::backend_pid() const noexcept
{
	return impl_ ? impl_->backend_pid : 0;
}

bool
Lease::release()
{
	if (!impl_)
		return false;
	LeaseImpl &im = *impl_;
	{
		std::lock_guard<std::mutex> lk(im.mu);
		if (im.finished)
			return false;
		im.finished = true;
		im.stop_renewer = true;
	}
	im.cv.notify_all();
	/* A renewal in flight finishes, or the watchdog aborts it at the deadline. */
	if (im.renewer.joinable())
		im.renewer.join();

	bool               released = false;
	std::exception_ptr error;
	if (!im.state->CheckLost())
	{
		Clock::duration left =
			std::chrono::nanoseconds(im.state->deadline.load() - detail::NowNs());
		{
			std::lock_guard<std::mutex> lk(im.mu);
			im.in_flight = true;
		}
		try
		{
			pqxx::work tx(*im.conn, "fence.lease_release");
			tx.exec("SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(left));
			pqxx::row row = pqxx_compat::ExecParams1(tx, "SELECT fence.lease_release($1, $2)",
													 im.name, im.token);
			released = !row[0].is_null() && row[0].as<bool>();
			tx.commit();
		}
		catch (...)
		{
			error = std::current_exception();
		}
		std::lock_guard<std::mutex> lk(im.mu);
		im.in_flight = false;
	}
	im.state->MarkReleased();
	{
		std::lock_guard<std::mutex> lk(im.mu);
		im.stop_watchdog = true;
	}
	im.cv.notify_all();
	if (im.watchdog.joinable())
		im.watchdog.join();
	im.conn.reset();
	if (error)
		std::rethrow_exception(error);
	return released;
}

void
Lease::Shutdown() noexcept
{
	try
	{
		release();
	}
	catch (...)
	{
		/* The lease expires at its TTL. */
	}
	impl_.reset();
}

} // namespace fence
