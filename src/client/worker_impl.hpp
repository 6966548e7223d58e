/*-------------------------------------------------------------------------
 *
 * worker_impl.hpp
 *	  fence::detail::WorkerShared, the state a fence::Worker shares with
 *	  the fence::Jobs it returned: the options, the claimant session and
 *	  the connection that carries Job::complete() and Job::fail() (not
 *	  installed).
 *
 * The claimant session must outlive every Job claimed on it (the server
 * rescues a job at once when its claimant's session ends), so the Worker
 * and each Job hold a shared_ptr to this object.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/worker_impl.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "pg_fence/worker.hpp"

#include "pq_conn.hpp"

namespace fence::detail {

using client_internal::PqConn;
using client_internal::PqOutcome;

struct WorkerShared
{
	std::string               conninfo;
	std::string               queue;
	std::string               holder;
	std::chrono::milliseconds ttl{0};
	std::chrono::milliseconds interval{0};
	std::chrono::milliseconds margin{0};
	std::chrono::milliseconds connect_timeout{0};
	JobLossCallback           on_lost;
	RetryCallback             on_retry;
	int                       interrupt_fd = -1;

	std::mutex       claim_mu; /* claim_conn: the claimant session */
	PqConn           claim_conn;
	std::atomic<int> claim_pid{0};

	std::mutex finish_mu; /* finish_conn: complete() and fail() without a transaction */
	PqConn     finish_conn;

	/*
	 * Idle heartbeat connections of finished Jobs, lent to the next Jobs
	 * claimed (at most kMaxIdle kept), so that a steady worker opens one
	 * per job it runs at once, not one per job.
	 */
	static constexpr std::size_t         kMaxIdle = 16;
	std::mutex                           pool_mu;
	std::vector<std::unique_ptr<PqConn>> pool;

	/* Moves an idle connection into `c` (unconnected); false if none is left. */
	bool Lend(PqConn &c) noexcept;

	/* Takes `c`'s connection back into the pool if it is connected and there is room. */
	void Recycle(PqConn &c) noexcept;

	/*
	 * Runs the statement `build` makes (it may quote with the connection)
	 * on finish_conn, connecting first if needed (a broken connection is
	 * closed, and the next call connects again).  Bounded by
	 * connect_timeout + TTL.
	 * *sql receives the statement, for error reports.
	 */
	PqOutcome RunFinish(const std::function<std::string(const PqConn &)> &build, std::string *sql);
};

} // namespace fence::detail
