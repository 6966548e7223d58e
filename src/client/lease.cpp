/*-------------------------------------------------------------------------
 *
 * lease.cpp
 *	  fence::Lease: acquisition (a lease, a semaphore permit or a
 *	  leadership), the accessors, release.  The renewer thread that keeps
 *	  it is in lease_renewer.cpp, the state both share in lease_impl.hpp.
 *
 * Timekeeping.  Whether the lease is held is one atomic word, the local
 * deadline (loss_state.hpp); lost() compares it with the clock, so the
 * answer is right at the deadline even if no thread has run since.
 *
 * Acquisition.  A lease is acquired with fence.lease_acquire; a semaphore
 * permit (LeaseOptions::permits) with fence.semaphore_acquire and is
 * otherwise the same; so is a leadership (LeaseOptions::campaign):
 * fence.campaign to acquire, fence.resign to release.  Waiting for the
 * lease (try_acquire_for) happens in the server: one acquire call with its
 * wait argument, retried after a transient failure while the wait has
 * time left.  Once granted, the renewer thread starts (lease_renewer.cpp);
 * release() stops it through the "stop" pipe and then owns the connection.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/lease.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/lease.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <pqxx/except>

#include "internal.hpp"
#include "lease_impl.hpp"

namespace fence {

namespace detail {

std::string
Describe(const PqOutcome &o)
{
	switch (o.kind)
	{
		case PqOutcome::kConnectionLost:
			return "connection lost: " + o.message;
		case PqOutcome::kServerError:
			return o.message + " (SQLSTATE " + o.sqlstate + ")";
		case PqOutcome::kDeadline:
			return "no answer before the deadline";
		case PqOutcome::kStopped:
			return "stopped";
		case PqOutcome::kOk:
			break;
	}
	return "ok";
}

LeaseImpl::~LeaseImpl()
{
	if (stop_rd >= 0)
		::close(stop_rd);
	if (stop_wr >= 0)
		::close(stop_wr);
}

void
LeaseImpl::StopRenewer() noexcept
{
	/* Wake the renewer: its sleep and every network wait watch this pipe. */
	char one = 1;
	while (stop_wr >= 0 && ::write(stop_wr, &one, 1) < 0 && errno == EINTR)
	{
	}
	if (renewer.joinable())
		renewer.join();
}

/* The statement that renews (or releases, or acquires) in one round trip. */
std::string
LeaseImpl::Call(const char *function, Clock::duration time_left, bool with_ttl,
				bool with_token) const
{
	std::string sql = "SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(time_left) +
					  "; SELECT fence." + function + "(" + conn.Literal(name);
	if (with_token)
		sql += ", " + std::to_string(token);
	if (with_ttl)
		sql += ", " + conn.Literal(client_internal::IntervalLiteral(ttl)) + "::interval";
	if (!with_token && !holder.empty())
		sql += ", " + conn.Literal(holder);
	return sql + ")";
}

/*
 * The acquisition, waiting in the server up to `wait` (zero: not at
 * all): lease_acquire or semaphore_acquire, named arguments so that
 * holder may be left out.  The statement is bounded by wait + TTL.
 */
std::string
LeaseImpl::AcquireCall(std::chrono::milliseconds wait) const
{
	std::string sql =
		"SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(wait + ttl) +
		"; SELECT fence.";
	if (campaign)
	{
		/* campaign(name, candidate, ttl, wait): the candidate is the holder */
		sql += "campaign(" + conn.Literal(name) + ", " + conn.Literal(holder) + ", " +
			   conn.Literal(client_internal::IntervalLiteral(ttl)) + "::interval";
		if (wait > std::chrono::milliseconds::zero())
			sql += ", " + conn.Literal(client_internal::IntervalLiteral(wait)) + "::interval";
		return sql + ")";
	}
	sql += permits > 0 ? "semaphore_acquire(" : "lease_acquire(";
	sql += conn.Literal(name);
	if (permits > 0)
		sql += ", " + std::to_string(permits);
	sql += ", " + conn.Literal(client_internal::IntervalLiteral(ttl)) + "::interval";
	if (!holder.empty())
		sql += ", holder => " + conn.Literal(holder);
	if (wait > std::chrono::milliseconds::zero())
		sql += ", wait => " + conn.Literal(client_internal::IntervalLiteral(wait)) + "::interval";
	return sql + ")";
}

PqOutcome
LeaseImpl::Connect(Clock::time_point deadline, int stop_fd)
{
	backend_pid.store(0);
	/* application_name: the holder (candidate), unless the conninfo sets one. */
	PqOutcome c =
		conn.Connect(conninfo, std::min(deadline, Clock::now() + connect_timeout), stop_fd, holder);
	if (c.ok())
		backend_pid.store(conn.backend_pid());
	return c;
}

/* Throws what a failed acquisition or release reports (the documented pqxx types). */
[[noreturn]] void
ThrowOutcome(const PqOutcome &o, const std::string &query)
{
	if (o.kind == PqOutcome::kServerError)
		throw pqxx::sql_error("pg_fence: " + o.message, query, o.sqlstate.c_str());
	throw pqxx::broken_connection("pg_fence: " + Describe(o));
}

} // namespace detail

using detail::Clock;
using detail::LeaseImpl;
using detail::PqOutcome;

bool
LossToken::stop_requested() const noexcept
{
	return !state_ || state_->StopRequested();
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

std::chrono::milliseconds
lease_clock_allowance(std::chrono::milliseconds ttl) noexcept
{
	return std::max(std::chrono::milliseconds::zero(), ttl / 500);
}

std::chrono::steady_clock::time_point
lease_local_deadline(std::chrono::steady_clock::time_point sent, std::chrono::milliseconds ttl,
					 std::chrono::milliseconds safety_margin) noexcept
{
	return sent + ttl - lease_clock_allowance(ttl) - safety_margin;
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
	if (options.safety_margin < std::chrono::milliseconds::zero() ||
		options.safety_margin >= ttl - lease_clock_allowance(ttl))
		throw std::invalid_argument("pg_fence: lease safety margin must be at least zero and less "
									"than the TTL less its clock allowance (TTL/500)");
	if (options.renew_interval < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: renew interval must not be negative");
	if (options.connect_timeout <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: connect timeout must be greater than zero");
	if (options.permits < 0)
		throw std::invalid_argument("pg_fence: permits must not be negative");
	if (options.holder.find('\0') != std::string::npos)
		throw std::invalid_argument("pg_fence: holder must not contain a NUL byte");
	if (options.campaign && options.permits > 0)
		throw std::invalid_argument("pg_fence: a campaign cannot be for a semaphore permit");
	if (options.campaign && options.holder.empty())
		throw std::invalid_argument("pg_fence: a campaign needs a candidate (the holder)");

	auto impl = std::make_shared<LeaseImpl>();
	impl->conninfo = conninfo;
	impl->name = name;
	impl->holder = options.holder;
	impl->ttl = ttl;
	impl->interval = options.renew_interval > std::chrono::milliseconds::zero()
						 ? options.renew_interval
						 : ttl / 3;
	impl->margin = options.safety_margin;
	impl->connect_timeout = options.connect_timeout;
	impl->permits = options.permits;
	impl->campaign = options.campaign;
	impl->on_lost = std::move(options.on_lost);
	impl->on_retry = std::move(options.on_retry);
	const int interrupt_fd = options.interrupt_fd;

	int fds[2];
	if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
		throw std::system_error(errno, std::generic_category(), "pg_fence: pipe");
	impl->stop_rd = fds[0];
	impl->stop_wr = fds[1];

	/*
	 * One call; the server waits (queued, woken at a release or an expiry)
	 * up to what is left of `wait`.  Bounded on this side too: the wait
	 * left + TTL for the statement (its statement_timeout) plus
	 * connect_timeout for the answer to travel.  Once connected, a
	 * transient failure (the connection lost, the server restarting, a
	 * cancel by someone else: IsTransient) is retried after a backoff
	 * (50 ms, doubling up to min(renew interval, 5 s)) while `wait` has
	 * time left, on a new connection when it broke; the first connection
	 * failing, anything else, or a failure with no time left is thrown.
	 */
	const Clock::time_point wait_end = Clock::now() + wait;
	const Clock::duration   max_backoff = std::max<Clock::duration>(
        std::chrono::milliseconds(50),
        std::min<Clock::duration>(impl->interval, std::chrono::seconds(5)));
	Clock::duration   backoff = std::chrono::milliseconds(50);
	bool              ever_connected = false;
	Clock::time_point sent;
	std::string       sql;
	PqOutcome         r;
	for (;;)
	{
		PqOutcome c;
		if (!impl->conn.connected())
		{
			c = impl->Connect(Clock::time_point::max(), interrupt_fd);
			if (c.kind == PqOutcome::kStopped)
				return std::nullopt;
			if (!c.ok() && !ever_connected)
				detail::ThrowOutcome(c, "");
			ever_connected = ever_connected || c.ok();
		}
		if (c.ok())
		{
			sent = Clock::now();
			auto left =
				std::max(std::chrono::milliseconds::zero(),
						 std::chrono::duration_cast<std::chrono::milliseconds>(wait_end - sent));
			sql = impl->AcquireCall(left);
			r = impl->conn.Exec(sql, sent + left + ttl + impl->connect_timeout, interrupt_fd, true);
			if (r.kind == PqOutcome::kStopped)
				return std::nullopt;
			if (r.ok())
				break;
		}
		else
			r = c;
		if (!client_internal::IsTransient(r) || Clock::now() + backoff >= wait_end)
			detail::ThrowOutcome(r, sql);
		/* A session the server is ending, or a standby: a fresh one next time. */
		if (r.kind == PqOutcome::kServerError &&
			(r.sqlstate.rfind("57P", 0) == 0 || r.sqlstate == "25006"))
			impl->conn.Close();
		impl->ReportRetry(std::string(impl->campaign ? "campaign" : "acquisition") +
						  " failed: " + detail::Describe(r) + "; trying again");
		struct pollfd p = {interrupt_fd, POLLIN, 0};
		int           ms = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
		int n;
		while ((n = ::poll(&p, 1, ms)) < 0 && errno == EINTR)
		{
		}
		if (n > 0)
			return std::nullopt; /* interrupted while backing off */
		backoff = std::min(backoff * 2, max_backoff);
	}
	if (!r.value)
		return std::nullopt;
	impl->token = std::stoll(*r.value);

	/*
	 * The server granted at some moment after `sent` and counts the TTL
	 * from there; `sent` is the only instant of ours known not to be later.
	 * After a long wait in the server, sent + TTL may be (nearly) gone
	 * although the lease was just granted: confirm it at once with a
	 * renewal, which gives a deadline counted from now.
	 */
	if (Clock::now() - sent > ttl / 10)
	{
		sent = Clock::now();
		sql = impl->Call("lease_renew", ttl, true, true);
		r = impl->conn.Exec(sql, sent + ttl + impl->connect_timeout, -1);
		if (!r.ok())
			detail::ThrowOutcome(r, sql);
		if (!r.value || *r.value != "t")
			return std::nullopt; /* it expired before the answer reached us */
	}
	std::int64_t d = detail::ToNs(lease_local_deadline(sent, ttl, impl->margin));
	impl->state->last_deadline.store(d);
	impl->state->deadline.store(d);

	LeaseImpl *raw = impl.get();
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

std::uint64_t
Lease::renewals() const noexcept
{
	return impl_ ? impl_->renewals.load() : 0;
}

std::uint64_t
Lease::reconnects() const noexcept
{
	return impl_ ? impl_->reconnects.load() : 0;
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
	return detail::FromNs(impl_->state->last_deadline.load());
}

int
Lease::backend_pid() const noexcept
{
	return impl_ ? impl_->backend_pid.load() : 0;
}

bool
Lease::release()
{
	if (!impl_)
		return false;
	LeaseImpl &im = *impl_;
	if (im.finished)
		return false;
	im.finished = true;
	im.StopRenewer();

	bool        released = false;
	bool        failed = false;
	PqOutcome   r;
	std::string sql;
	if (!im.state->CheckLost())
	{
		/* The renewer is gone: this thread owns the connection now. */
		const Clock::time_point deadline = detail::FromNs(im.state->deadline.load());
		if (!im.conn.connected())
			r = im.Connect(deadline, -1);
		if (r.ok())
		{
			sql = im.Call(im.campaign ? "resign" : im.release_function, deadline - Clock::now(),
						  false, true);
			r = im.conn.Exec(sql, deadline, -1);
		}
		if (r.ok())
			released = r.value && *r.value == "t";
		else
			failed = true;
	}
	im.state->MarkReleased();
	im.conn.Close();
	im.backend_pid.store(0);
	if (failed)
		detail::ThrowOutcome(r, sql);
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
