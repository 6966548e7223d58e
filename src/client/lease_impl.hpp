/*-------------------------------------------------------------------------
 *
 * lease_impl.hpp
 *	  fence::detail::LeaseImpl, the state behind one fence::Lease, shared
 *	  by its acquisition and release (lease.cpp) and its renewer thread
 *	  (lease_renewer.cpp) (not installed).
 *
 * Who touches what.  Until the renewer starts, only the acquiring thread
 * uses the object; then the connection belongs to the renewer until
 * release() has joined it, and to release() after that.  The counters,
 * backend_pid and the loss state (loss_state.hpp) are atomics, read by any
 * thread through the Lease's accessors.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/lease_impl.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "pg_fence/lease.hpp"

#include "loss_state.hpp"
#include "pq_conn.hpp"

namespace fence::detail {

using client_internal::PqConn;
using client_internal::PqOutcome;

/* "connection lost: <libpq>", "<message> (SQLSTATE 57P01)", for messages. */
std::string Describe(const PqOutcome &o);

/* Throws what a failed acquisition or release reports (the documented pqxx types). */
[[noreturn]] void ThrowOutcome(const PqOutcome &o, const std::string &query);

struct LeaseImpl
{
	std::string               conninfo;
	std::string               name;
	std::string               holder;
	std::chrono::milliseconds ttl{0};
	std::chrono::milliseconds interval{0};
	std::chrono::milliseconds margin{0};
	std::chrono::milliseconds connect_timeout{0};
	int                       permits = 0;      /* 0: a lease; else a semaphore permit */
	bool                      campaign = false; /* fence.campaign / fence.resign */
	/*
	 * The functions that renew and release: fence.<renew_function>(name,
	 * token, ttl) -> boolean and fence.<release_function>(name, token) ->
	 * boolean.  A lease's and a semaphore permit's; fence::Once (once.cpp)
	 * renews a key it owns with once_renew and gives it up with
	 * once_release through the same renewer.
	 */
	const char         *renew_function = "lease_renew";
	const char         *release_function = "lease_release";
	Lease::LossCallback on_lost;
	RetryCallback       on_retry;
	std::int64_t        token = 0;

	PqConn                     conn; /* the renewer's, then release()'s */
	std::atomic<int>           backend_pid{0};
	std::atomic<std::uint64_t> renewals{0};
	std::atomic<std::uint64_t> reconnects{0};

	std::shared_ptr<LossState> state = std::make_shared<LossState>();
	std::atomic<bool>          loss_reported{false};

	int         stop_rd = -1; /* readable once release()/the destructor asks */
	int         stop_wr = -1;
	bool        finished = false; /* released or destroyed */
	std::thread renewer;

	~LeaseImpl();

	/* Marks the lease lost and calls on_lost, once; never throws (lease_renewer.cpp). */
	void ReportLoss(Lease::LossReason reason, const std::string &message) noexcept;

	/* Calls on_retry, if set; never throws (lease_renewer.cpp). */
	void ReportRetry(const std::string &message) noexcept;

	/* Sleeps until `t` or a stop request; false on a stop request (lease_renewer.cpp). */
	bool SleepUntil(Clock::time_point t) const noexcept;

	/*
	 * The statement that renews or releases in one round trip (lease.cpp):
	 * SET LOCAL statement_timeout = time_left; SELECT fence.<function>(name
	 * [, token] [, ttl] [, holder when without the token]).
	 */
	std::string Call(const char *function, Clock::duration time_left, bool with_ttl,
					 bool with_token) const;

	/*
	 * The acquisition, waiting in the server up to `wait` (zero: not at
	 * all): lease_acquire, semaphore_acquire or campaign (lease.cpp).
	 */
	std::string AcquireCall(std::chrono::milliseconds wait) const;

	/* Connects `conn`, bounded by `deadline` and connect_timeout; sets backend_pid (lease.cpp). */
	PqOutcome Connect(Clock::time_point deadline, int stop_fd);

	/* Asks the renewer to stop and joins it; idempotent, never throws (lease.cpp). */
	void StopRenewer() noexcept;

	/* The renewer thread's body; nothing escapes it (lease_renewer.cpp). */
	void RenewerLoop() noexcept;

private:
	void RenewerLoopBody();
};

} // namespace fence::detail
