/*-------------------------------------------------------------------------
 *
 * election.cpp
 *	  fence::Election: a candidacy whose leadership is a fence::Lease
 *	  acquired with fence.campaign (LeaseOptions::campaign) and released
 *	  with fence.resign; observing goes through a fence::LeaderWatch
 *	  (leader_watch.cpp).
 *
 * The current leadership is a shared_ptr<Lease> swapped under a mutex, so
 * that is_leader(), term() and friends may be called from any thread while
 * campaign() replaces a lost or resigned leadership with a new one.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/election.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/election.hpp"

#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "internal.hpp"

namespace fence {

namespace {

std::string
DefaultCandidate()
{
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		std::strcpy(host, "unknown-host");
	return std::string(host) + ":" + std::to_string(getpid());
}

} // namespace

Election::Election(std::string conninfo, std::string name, std::chrono::milliseconds ttl,
				   ElectionOptions options)
	: conninfo_(std::move(conninfo)), name_(std::move(name)), ttl_(ttl),
	  options_(std::move(options))
{
	client_internal::CheckName(name_);
	if (ttl_ < std::chrono::milliseconds(3))
		throw std::invalid_argument("pg_fence: election TTL must be at least 3 milliseconds");
	if (options_.candidate.empty())
		options_.candidate = DefaultCandidate();
	if (options_.candidate.find('\0') != std::string::npos)
		throw std::invalid_argument("pg_fence: candidate must not contain a NUL byte");
	if (options_.safety_margin < std::chrono::milliseconds::zero() ||
		options_.safety_margin >= ttl_)
		throw std::invalid_argument(
			"pg_fence: safety margin must be at least zero and less than the TTL");
	if (options_.renew_interval < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: renew interval must not be negative");
	if (options_.connect_timeout <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: connect timeout must be greater than zero");
	if (options_.on_leader)
	{
		LeaderWatchOptions wo;
		wo.connect_timeout = options_.connect_timeout;
		wo.on_retry = options_.on_retry;
		watch_ = std::make_unique<LeaderWatch>(conninfo_, name_, options_.on_leader, wo);
	}
}

Election::~Election()
{
	try
	{
		resign();
	}
	catch (...)
	{
		/* The term expires at its TTL. */
	}
	watch_.reset();
	std::shared_ptr<Lease> l;
	{
		std::lock_guard<std::mutex> lk(mu_);
		l = std::move(lease_);
	}
}

std::shared_ptr<Lease>
Election::Current() const
{
	std::lock_guard<std::mutex> lk(mu_);
	return lease_;
}

bool
Election::campaign(std::chrono::milliseconds wait)
{
	if (wait < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: wait must not be negative");
	if (is_leader())
		return true;
	LeaseOptions lo;
	lo.holder = options_.candidate;
	lo.campaign = true;
	lo.on_lost = options_.on_lost;
	lo.on_retry = options_.on_retry;
	lo.connect_timeout = options_.connect_timeout;
	lo.renew_interval = options_.renew_interval;
	lo.safety_margin = options_.safety_margin;
	std::optional<Lease> got = Lease::try_acquire_for(conninfo_, name_, ttl_, wait, std::move(lo));
	if (!got)
		return false;
	auto                   fresh = std::make_shared<Lease>(std::move(*got));
	std::int64_t           term = fresh->token();
	std::shared_ptr<Lease> old;
	{
		std::lock_guard<std::mutex> lk(mu_);
		old = std::move(lease_);
		lease_ = std::move(fresh);
		resigned_ = false;
	}
	old.reset(); /* lost or resigned: its destructor sends nothing */
	if (options_.on_elected)
	{
		try
		{
			options_.on_elected(term);
		}
		catch (...)
		{
		}
	}
	return true;
}

bool
Election::resign()
{
	std::shared_ptr<Lease> l = Current();
	if (!l || resigned_.load() || l->lost())
		return false;
	resigned_ = true;
	return l->release();
}

bool
Election::is_leader() const noexcept
{
	std::shared_ptr<Lease> l = Current();
	return l && !resigned_.load() && !l->lost();
}

bool
Election::lost() const noexcept
{
	std::shared_ptr<Lease> l = Current();
	return l && !resigned_.load() && l->lost();
}

std::int64_t
Election::term() const noexcept
{
	std::shared_ptr<Lease> l = Current();
	return l ? l->token() : 0;
}

LossToken
Election::loss_token() const
{
	std::shared_ptr<Lease> l = Current();
	return l ? l->loss_token() : LossToken();
}

int
Election::backend_pid() const noexcept
{
	std::shared_ptr<Lease> l = Current();
	return l && !resigned_.load() ? l->backend_pid() : 0;
}

const std::string &
Election::name() const noexcept
{
	return name_;
}

const std::string &
Election::candidate() const noexcept
{
	return options_.candidate;
}

std::optional<Leader>
Election::observed_leader() const
{
	return watch_ ? watch_->leader() : std::nullopt;
}

} // namespace fence
