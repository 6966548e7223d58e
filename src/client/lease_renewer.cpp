/*-------------------------------------------------------------------------
 *
 * lease_renewer.cpp
 *	  The renewer thread of a fence::Lease: renews until release, loss or
 *	  destruction, and reports retries and the loss.
 *
 * One thread sleeps until the next renewal or the deadline, whichever
 * comes first, on poll(2) over a "stop" pipe; release() and the
 * destructor write to that pipe.  Every network wait (connecting, sending,
 * reading: pq_conn.hpp) is bounded by the deadline and watches the same
 * pipe, so nothing can keep the renewer past the deadline or release()
 * waiting on a dead network.  A renewal is one round trip:
 *
 *	 SET LOCAL statement_timeout = <time left>;
 *	 SELECT fence.lease_renew(name, token, ttl)
 *
 * (one implicit transaction), the same for a lease, a semaphore permit
 * and a leadership.  A transient failure closes a broken connection and
 * tries again after a backoff (50 ms, doubling, at most the renew
 * interval), connecting first if needed; the deadline stays where the
 * last successful renewal put it.  Anything else ends the lease.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/lease_renewer.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "lease_impl.hpp"

namespace fence::detail {

/* Wall-clock time of a steady_clock instant, "12:00:03.214", for messages. */
static std::string
LocalTimeOf(Clock::time_point t)
{
	auto      wall = std::chrono::system_clock::now() + (t - Clock::now());
	auto      ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch());
	time_t    secs = static_cast<time_t>(ms.count() / 1000);
	struct tm tmv;
	char      buf[32];
	localtime_r(&secs, &tmv);
	std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d", tmv.tm_hour, tmv.tm_min, tmv.tm_sec,
				  static_cast<int>(ms.count() % 1000));
	return buf;
}

void
LeaseImpl::ReportLoss(Lease::LossReason reason, const std::string &message) noexcept
{
	state->MarkLost();
	if (loss_reported.exchange(true) || !on_lost)
		return;
	try
	{
		on_lost(reason, message);
	}
	catch (...)
	{
	}
}

void
LeaseImpl::ReportRetry(const std::string &message) noexcept
{
	if (!on_retry)
		return;
	try
	{
		on_retry(message);
	}
	catch (...)
	{
	}
}

/* Sleeps until `t` or a stop request; false on a stop request. */
bool
LeaseImpl::SleepUntil(Clock::time_point t) const noexcept
{
	for (;;)
	{
		auto now = Clock::now();
		if (now >= t)
			return true;
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
		struct pollfd p = {stop_rd, POLLIN, 0};
		int           n = ::poll(&p, 1, ms > 60000 ? 60000 : static_cast<int>(ms));
		if (n > 0)
			return false;
		if (n < 0 && errno != EINTR)
			return false;
	}
}

/* The renewer thread's top: nothing may escape it (it would call std::terminate). */
void
LeaseImpl::RenewerLoop() noexcept
{
	try
	{
		RenewerLoopBody();
	}
	catch (...)
	{
		ReportLoss(Lease::LossReason::kRenewError, "lease renewal failed: internal error");
	}
}

void
LeaseImpl::RenewerLoopBody()
{
	constexpr std::chrono::milliseconds kFirstBackoff(50);
	Clock::time_point                   next = Clock::now() + interval;
	Clock::duration                     backoff = kFirstBackoff;
	std::string                         last_error;

	for (;;)
	{
		std::int64_t d = state->deadline.load();
		if (d == kReleased)
			return;
		if (d != kLost && !SleepUntil(std::min(next, FromNs(d))))
			return; /* release or destruction: not a loss */
		if (state->CheckLost())
		{
			std::string msg = "lease deadline passed without a successful renewal (local clock)";
			if (!last_error.empty())
				msg += "; last error: " + last_error;
			ReportLoss(Lease::LossReason::kDeadline, msg);
			return;
		}
		if (Clock::now() < next)
			continue;

		const Clock::time_point deadline = FromNs(state->deadline.load());
		PqOutcome               r;
		Clock::time_point       sent = Clock::now();
		if (!conn.connected())
		{
			r = Connect(deadline, stop_rd);
			if (r.ok())
				reconnects++;
		}
		if (r.ok())
		{
			sent = Clock::now();
			std::string sql;
			try
			{
				sql = Call(renew_function, deadline - sent, true, true);
			}
			catch (...)
			{
				ReportLoss(Lease::LossReason::kRenewError, "lease renewal failed: out of memory");
				return;
			}
			r = conn.Exec(sql, deadline, stop_rd);
		}

		switch (r.kind)
		{
			case PqOutcome::kStopped:
				return;
			case PqOutcome::kDeadline:
				last_error = "no answer before the deadline";
				continue; /* the check above reports it */
			case PqOutcome::kOk:
				if (r.value && *r.value == "t")
				{
					if (!state->Extend(ToNs(lease_local_deadline(sent, ttl, margin))))
						continue; /* the deadline passed while it was in flight */
					renewals++;
					last_error.clear();
					backoff = kFirstBackoff;
					next = sent + interval;
					continue;
				}
				ReportLoss(
					Lease::LossReason::kRefused,
					"lease renewal refused: the lease expired or was taken over by another holder");
				return;
			case PqOutcome::kServerError:
			case PqOutcome::kConnectionLost:
				break;
		}
		if (!client_internal::IsTransient(r))
		{
			ReportLoss(Lease::LossReason::kRenewError, "lease renewal failed: " + Describe(r));
			return;
		}
		if (r.kind == PqOutcome::kServerError && r.sqlstate.rfind("08", 0) != 0)
		{
			/* Server up but not serving us now (shutdown, standby...): a fresh session next time. */
			if (r.sqlstate.rfind("57P", 0) == 0 || r.sqlstate == "25006")
				conn.Close();
		}
		last_error = Describe(r);
		ReportRetry("lease renewal failed: " + last_error + "; retrying until " +
					LocalTimeOf(FromNs(state->last_deadline.load())) + " (local time)");
		next = Clock::now() + backoff;
		backoff = std::min<Clock::duration>(backoff * 2, interval);
	}
}

} // namespace fence::detail
