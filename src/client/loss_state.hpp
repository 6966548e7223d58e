/*-------------------------------------------------------------------------
 *
 * loss_state.hpp
 *	  The state behind fence::LossToken, Lease::lost() and
 *	  SessionLock::lost(): one atomic word (not installed).
 *
 * The word is the local deadline in steady_clock nanoseconds, with two
 * sentinels: kLost (lost, for good) and kReleased (released cleanly).  A
 * session lock has no deadline (kNoDeadline).  Everybody who decides
 * something compares the clock with that word and changes it only by
 * compare-and-swap, so the answers are linearizable: once any thread has
 * seen the hold lost, no late renewal can extend it again, and a renewal
 * that extended it before the deadline is seen by every later lost() call.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/loss_state.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace fence::detail {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kLost = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kReleased = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kNoDeadline = kReleased - 1;

inline std::int64_t
ToNs(Clock::time_point t)
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

inline Clock::time_point
FromNs(std::int64_t ns)
{
	return Clock::time_point(std::chrono::nanoseconds(ns));
}

inline std::int64_t
NowNs()
{
	return ToNs(Clock::now());
}

struct LossState
{
	/* Local deadline (ns on steady_clock), or kLost / kReleased / kNoDeadline. */
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

	/* Moves the deadline to `next` if the hold is not lost yet. */
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

	/* Lost for good, unless released already; true if this call made it lost. */
	bool
	MarkLost() noexcept
	{
		std::int64_t d = deadline.load();
		while (d != kReleased && d != kLost)
			if (deadline.compare_exchange_weak(d, kLost))
				return true;
		return false;
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

	bool
	StopRequested() const noexcept
	{
		return ended.load() || CheckLost();
	}
};

} // namespace fence::detail
