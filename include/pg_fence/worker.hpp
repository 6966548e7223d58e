/*-------------------------------------------------------------------------
 *
 * worker.hpp
 *	  fence::Worker and fence::Job: the client side of pg_fence's fenced
 *	  job queue (fence.claim / heartbeat / complete / fail; docs/queue.md).
 *
 * A Worker claims jobs of one queue (fence.claim, waiting in the server
 * for one to become runnable); each claimed job is a fence::Job, an RAII
 * claim: the job's id, its attempt number, its payload (JSON text) and
 * the claim's fencing token, kept alive by a heartbeat thread
 * (fence.heartbeat every TTL/3, the lease renewer of lease.hpp: the same
 * local deadline, retries and loss rules) until the job is completed or
 * failed.  The token is drawn fresh for every claim of the job, so a
 * worker whose claim expired or whose session died, and whose job was
 * claimed again, is refused by heartbeat, fail and complete (SQLSTATE
 * FN001 for complete), and its fenced writes lose to the new claimant's
 * (docs/guarantees.md, guarantee 13; Kleppmann, "How to do distributed
 * locking", 2016).
 *
 * The worker pattern: write the job's effects and complete it in one
 * transaction (Job::complete(pqxx::work&, ...)): a superseded claim's
 * completion raises FN001, which rolls the effects back with it, so the
 * effects of a job are applied at most once whatever the timing.  Effects
 * outside the database: present token() with every write
 * (fence::fenced_update, the guard), or use fence::Once.
 *
 * Connections.  A Worker opens one connection, its claimant session, for
 * fence.claim: the server rescues a running job at once when the session
 * that claimed it ends, so this session lives as long as the Worker or
 * any Job it returned (the Jobs share it).  A second connection, opened
 * when first needed and shared the same way, carries Job::complete() and
 * Job::fail() without a transaction of the caller's.  Each Job's
 * heartbeat thread has a connection of its own: the idle one of an earlier
 * Job of the same Worker that has been destroyed (up to 16 are kept), or a
 * new one it opens as soon as it starts, so that a steady worker holds one
 * heartbeat connection per job it runs at once.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/worker.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/transaction>

#include "pg_fence/lease.hpp"
#include "pg_fence/loss.hpp"

namespace fence {

namespace detail {
struct LeaseImpl;
struct WorkerShared;
} // namespace detail

/**
 * Called once when a job's claim is lost, from the job's heartbeat thread:
 * `job_id`, the reason (fence::LossReason: kRefused when fence.heartbeat
 * returned false — the claim expired and the job was claimed again, or it
 * was cancelled —, kRenewError, kDeadline) and a one-line message.  Same
 * rules as fence::LossCallback: return quickly, do not destroy the Job,
 * do not throw.
 */
using JobLossCallback =
	std::function<void(std::int64_t job_id, LossReason reason, const std::string &message)>;

/**
 * What a Worker is told at construction.  Every field has a default; a
 * value out of range makes the constructor throw std::invalid_argument.
 */
struct WorkerOptions
{
	/**
	 * The claim's time to live (fence.claim's ttl), renewed by each job's
	 * heartbeat; millisecond resolution, at least 3 ms; the server caps it
	 * with fence.max_lease_ttl (22023 above it).  Default 30 s.
	 */
	std::chrono::milliseconds ttl{30000};
	/**
	 * fence.claim's holder (shown in fence.jobs.holder) and, unless the
	 * conninfo or PGAPPNAME sets one, the application_name of the Worker's
	 * connections.  Empty: NULL.
	 */
	std::string holder;
	/** Time between heartbeats; zero (the default) means TTL/3. */
	std::chrono::milliseconds heartbeat_interval{0};
	/**
	 * Subtracted from each job's local deadline, as LeaseOptions::
	 * safety_margin: the loss is reported this much before the server can
	 * let another worker claim the job (`pg_fence work` uses its kill
	 * grace period plus the time a signal takes).  At least zero, less
	 * than TTL - TTL/500.  Default zero.
	 */
	std::chrono::milliseconds safety_margin{0};
	/** Limit on making each connection.  Must be positive.  Default 10 s. */
	std::chrono::milliseconds connect_timeout{10000};
	/** See fence::JobLossCallback; may be empty. */
	JobLossCallback on_lost;
	/** Called after each failed heartbeat that will be retried (fence::RetryCallback); may be empty. */
	RetryCallback on_retry;
	/**
	 * -1 (the default), or a descriptor (e.g. a self-pipe a signal handler
	 * writes to): once readable, a claim() waiting in the server is
	 * cancelled (a cancel request) and returns what the server answers:
	 * no jobs, or the jobs it had granted before the cancel landed, so no
	 * grant goes unseen.  The claimant session stays open.  Only polled,
	 * never read.
	 */
	int interrupt_fd = -1;
};

class Worker;

/**
 * One claimed job: an RAII claim kept alive by a heartbeat thread until
 * complete(), fail() or destruction.
 *
 * Thread safety: id(), token(), attempt(), payload(), queue(), lost(),
 * loss_token(), deadline() and heartbeats() may be called from any thread.
 * complete(), fail(), the move operations and the destructor must not run
 * concurrently with another call on the same Job, nor from its loss
 * callback.
 *
 * Destruction of an unfinished Job (neither completed nor failed, e.g. the
 * handler threw) whose claim is not lost: the heartbeats stop and the job is failed
 * (fence.fail(id, token, "abandoned: ...", NULL): an attempt used, retried
 * after the server's backoff unless it was the last).  If that call cannot
 * be made (the server is unreachable), the claim expires at its TTL and
 * the job is claimed again then.  Never throws.
 */
class Job
{
public:
	/** Takes over `other`'s claim and heartbeat; `other` is left empty (id() 0). */
	Job(Job &&other) noexcept;
	/** Abandons this object's claim (as the destructor does), then takes over `other`'s. */
	Job &operator=(Job &&other) noexcept;
	Job(const Job &) = delete;
	Job &operator=(const Job &) = delete;
	/** See the class comment: an unfinished job is failed ("abandoned"). */
	~Job();

	/** The job's id (fence.enqueue's result; fence.jobs.id); 0 for a moved-from Job. */
	std::int64_t id() const noexcept;

	/**
	 * The fencing token of this claim (> 0): larger than the token of every
	 * earlier claim of this job and of every grant that ended before the
	 * claim.  Present it with every write the job makes (fence::fenced_update,
	 * the guard's fence column or fence.token), so that a worker whose claim
	 * was rescued cannot overwrite the new claimant's writes
	 * (docs/guarantees.md, guarantees 6 and 13).
	 */
	std::int64_t token() const noexcept;

	/** The attempt this claim is: 1 on the job's first claim, n on its n-th. */
	int attempt() const noexcept;

	/** The job's payload, as JSON text (jsonb's output). */
	const std::string &payload() const noexcept;

	/** The queue it was claimed from. */
	const std::string &queue() const noexcept;

	/**
	 * True once the claim is lost: a heartbeat was refused or failed for
	 * good, or the local deadline (lease_local_deadline of the last claim or
	 * heartbeat sent, TTL, safety_margin) has passed.  The worker must then
	 * stop: its completion will raise FN001 once the job was claimed again.
	 * False after complete() or fail(), and for a moved-from Job.
	 */
	bool lost() const noexcept;

	/** stop_requested() turns true at the loss, or when the job is finished. */
	LossToken loss_token() const;

	/** The current local deadline of the claim (steady_clock); see lost(). */
	std::chrono::steady_clock::time_point deadline() const noexcept;

	/** Successful heartbeats so far. */
	std::uint64_t heartbeats() const noexcept;

	/** True once complete() or fail() has been called successfully (or refused). */
	bool finished() const noexcept;

	/**
	 * Completes the job on the Worker's second connection (its own
	 * transaction): fence.complete(id, token, result), `result` a JSON text
	 * or std::nullopt (SQL NULL).  Stops the heartbeats first.  Returns true
	 * once the job is completed, also when a repeated call (after a
	 * broken_connection that hid the first call's answer) finds it already
	 * completed under this token.  Throws pqxx::sql_error with
	 * sqlstate() "FN001" when the claim was superseded, cancelled or ended
	 * (docs/guarantees.md, guarantee 13; the Job is then lost()),
	 * 22P02 for a result that is not JSON, P0002 if the job no longer
	 * exists (purged), 42501 without privilege on it; pqxx::
	 * broken_connection if the server cannot be reached (the heartbeats
	 * resume and the call may be repeated: an expired claim that nobody
	 * claimed again still completes).  std::logic_error on a finished or
	 * moved-from Job.
	 */
	bool complete(const std::optional<std::string> &result = std::nullopt);

	/**
	 * Completes the job in the caller's transaction `tx`, so that the
	 * job's effects written in `tx` and its completion commit together:
	 * if the claim was superseded, fence.complete raises FN001 (thrown as
	 * pqxx::sql_error) and the effects roll back with `tx`.  The job row
	 * stays locked by `tx` until it ends, so nobody can claim the job
	 * meanwhile; commit promptly.  The heartbeats stop when this returns
	 * (the job is finished() whatever `tx` does next): if `tx` rolls back
	 * instead of committing, the job is not completed and is claimed again
	 * once its claim expires (TTL).  Returns and throws as complete().
	 */
	bool complete(pqxx::work &tx, const std::optional<std::string> &result = std::nullopt);

	/**
	 * Records a failed attempt on the Worker's second connection:
	 * fence.fail(id, token, error, retry_at).  The job is retried at
	 * `retry_at` (system_clock, sent as a UTC timestamptz) or, when nullopt,
	 * after the server's exponential backoff, until its max_attempts are
	 * used up; then it is failed for good (docs/queue.md).  Stops the
	 * heartbeats first.  Returns true if recorded, false if the claim was no
	 * longer this token's (superseded or finished: the job is then lost()
	 * unless this token finished it).  Throws pqxx::sql_error (P0002 unknown
	 * job, 42501 privilege) or pqxx::broken_connection (the heartbeats
	 * resume; the call may be repeated); std::logic_error on a finished or
	 * moved-from Job.
	 */
	bool fail(const std::string                                   &error,
			  std::optional<std::chrono::system_clock::time_point> retry_at = std::nullopt);

private:
	friend class Worker;
	Job() = default;
	void Abandon() noexcept;
	void StopHeartbeat() noexcept;
	void ResumeHeartbeat();
	bool Finish(bool complete, const std::optional<std::string> &text,
				std::optional<std::chrono::system_clock::time_point> retry_at);

	std::shared_ptr<detail::WorkerShared> worker_;
	std::shared_ptr<detail::LeaseImpl>    hb_;
	std::string                           payload_;
	int                                   attempt_ = 0;
	bool                                  finished_ = false;
};

/**
 * Claims jobs of one queue (fence.claim) on its own connection, the
 * claimant session (see the file comment), and hands them out as Jobs.
 *
 * Thread safety: claim() may be called from several threads (the calls
 * take turns on the connection); the destructor must not run concurrently
 * with claim().  Jobs may outlive the Worker (they keep its connections).
 */
class Worker
{
public:
	/**
	 * Connects to `conninfo` (a libpq connection string or URI; "" = the
	 * PG* environment variables) for the queue `queue` (1 to 1024 bytes).
	 * Throws std::invalid_argument for a bad queue name or option,
	 * pqxx::broken_connection if the connection cannot be made within
	 * connect_timeout.
	 */
	Worker(const std::string &conninfo, const std::string &queue, WorkerOptions options = {});
	~Worker();
	Worker(const Worker &) = delete;
	Worker &operator=(const Worker &) = delete;

	/**
	 * Claims up to `max_jobs` (1 to 1000) runnable jobs, highest priority
	 * first, then run_at, then id (fence.claim(queue, ttl, max_jobs, wait,
	 * holder): SKIP LOCKED, each claim with a fresh token), and starts each
	 * job's heartbeat.  With a positive `wait` and nothing runnable, waits
	 * in the server up to `wait` for a job to become runnable (a committed
	 * enqueue, a run_at arriving, a claim expiring or its session ending);
	 * zero: does not wait.  Returns the jobs claimed (maybe none: nothing
	 * runnable after `wait`, or the wait interrupted through
	 * WorkerOptions::interrupt_fd).  A claim granted after a long wait is
	 * confirmed at once with a heartbeat, so that its local deadline counts
	 * from then.  Throws std::invalid_argument (max_jobs, wait < 0),
	 * pqxx::sql_error (22023 for a TTL above fence.max_lease_ttl, 25006 on
	 * a standby, 42883 / 3F000 when the queue is not installed, 42501),
	 * pqxx::broken_connection when the claimant session is lost (its jobs
	 * are then rescued by the server at once: they are lost; the next
	 * claim() connects again).
	 */
	std::vector<Job> claim(int                       max_jobs = 1,
						   std::chrono::milliseconds wait = std::chrono::milliseconds::zero());

	/** The queue's name. */
	const std::string &queue() const noexcept;

	/** The server process id of the claimant session (0 while disconnected). */
	int backend_pid() const noexcept;

	/**
	 * The claimant session's socket, -1 while disconnected: between
	 * claims, poll it for reading and then call check_session(), to learn
	 * at once that the session ended (pg_terminate_backend, a server
	 * restart), which makes the server rescue every job this Worker holds.
	 * Only polled, never read; valid until the next claim() or
	 * check_session().
	 */
	int claimant_socket() const;

	/**
	 * Reads what the server sent on the claimant session, without
	 * blocking; false once the session is gone (or was never opened):
	 * every job claimed on it is then lost, rescued by the server at
	 * once, though its heartbeat may not have noticed yet.  The next
	 * claim() connects again.  Not to be called during a claim().
	 */
	bool check_session();

private:
	std::shared_ptr<detail::WorkerShared> shared_;
};

} // namespace fence
