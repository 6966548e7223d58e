/*-------------------------------------------------------------------------
 *
 * worker.cpp
 *	  fence::Worker: the claimant session and fence.claim; the connection
 *	  shared by the Jobs for complete() and fail().  The Job itself (its
 *	  heartbeat, completion, failure) is in job.cpp.
 *
 * A claim is one round trip on the claimant session:
 *
 *	 SET LOCAL statement_timeout = <wait + TTL>;
 *	 SELECT job_id, token, attempt, payload
 *	   FROM fence.claim(queue, ttl, max_jobs, wait, holder)
 *
 * The moment it was sent is the start of each claim's local deadline
 * (lease_local_deadline, lease.hpp), the side that never overstates what
 * is left; when the server waited long before granting, the claims are
 * confirmed at once with one fence.heartbeat each, so that the deadline
 * counts from that confirmation instead.  An interrupt (WorkerOptions::
 * interrupt_fd) sends a cancel request and reads the answer as usual
 * (PqConn::Exec's keep_session_on_stop), so a grant that crossed the
 * cancel is still returned and the session, which keeps the Worker's
 * other jobs from being rescued, stays open.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/worker.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/worker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <pqxx/except>

#include "internal.hpp"
#include "lease_impl.hpp"
#include "worker_impl.hpp"

namespace fence {

namespace detail {

PqOutcome
WorkerShared::RunFinish(const std::function<std::string(const PqConn &)> &build, std::string *sql)
{
	std::lock_guard<std::mutex> lk(finish_mu);
	const Clock::time_point     deadline = Clock::now() + connect_timeout + ttl;
	if (!finish_conn.connected())
	{
		PqOutcome c = finish_conn.Connect(conninfo, Clock::now() + connect_timeout, -1, holder);
		if (!c.ok())
			return c;
	}
	*sql =
		"SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(deadline - Clock::now()) +
		"; " + build(finish_conn);
	return finish_conn.Exec(*sql, deadline, -1);
}

bool
WorkerShared::Lend(PqConn &c) noexcept
{
	std::lock_guard<std::mutex> lk(pool_mu);
	while (!pool.empty())
	{
		std::unique_ptr<PqConn> idle = std::move(pool.back());
		pool.pop_back();
		if (idle->connected())
		{
			c.Swap(*idle);
			return true;
		}
	}
	return false;
}

void
WorkerShared::Recycle(PqConn &c) noexcept
{
	if (!c.connected())
		return;
	try
	{
		std::lock_guard<std::mutex> lk(pool_mu);
		if (pool.size() >= kMaxIdle)
			return;
		auto idle = std::make_unique<PqConn>();
		idle->Swap(c);
		pool.push_back(std::move(idle));
	}
	catch (...)
	{
		/* out of memory: the connection is closed with its Job */
	}
}

} // namespace detail

using detail::Clock;
using detail::LeaseImpl;
using detail::PqConn;
using detail::PqOutcome;
using detail::WorkerShared;

Worker::Worker(const std::string &conninfo, const std::string &queue, WorkerOptions options)
{
	client_internal::CheckName(queue);
	const auto ttl = options.ttl;
	if (ttl < std::chrono::milliseconds(3))
		throw std::invalid_argument("pg_fence: claim TTL must be at least 3 milliseconds");
	if (options.safety_margin < std::chrono::milliseconds::zero() ||
		options.safety_margin >= ttl - lease_clock_allowance(ttl))
		throw std::invalid_argument("pg_fence: claim safety margin must be at least zero and less "
									"than the TTL less its clock allowance (TTL/500)");
	if (options.heartbeat_interval < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: heartbeat interval must not be negative");
	if (options.connect_timeout <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: connect timeout must be greater than zero");
	if (options.holder.find('\0') != std::string::npos)
		throw std::invalid_argument("pg_fence: holder must not contain a NUL byte");

	auto s = std::make_shared<WorkerShared>();
	s->conninfo = conninfo;
	s->queue = queue;
	s->holder = options.holder;
	s->ttl = ttl;
	s->interval = options.heartbeat_interval > std::chrono::milliseconds::zero()
					  ? options.heartbeat_interval
					  : ttl / 3;
	s->margin = options.safety_margin;
	s->connect_timeout = options.connect_timeout;
	s->on_lost = std::move(options.on_lost);
	s->on_retry = std::move(options.on_retry);
	s->interrupt_fd = options.interrupt_fd;
	PqOutcome c = s->claim_conn.Connect(conninfo, Clock::now() + s->connect_timeout, -1, s->holder);
	if (!c.ok())
		detail::ThrowOutcome(c, "");
	s->claim_pid.store(s->claim_conn.backend_pid());
	shared_ = std::move(s);
}

/* The Jobs keep the claimant session open (shared_ptr): nothing to do here. */
Worker::~Worker() = default;

const std::string &
Worker::queue() const noexcept
{
	return shared_->queue;
}

int
Worker::backend_pid() const noexcept
{
	return shared_->claim_pid.load();
}

int
Worker::claimant_socket() const
{
	std::lock_guard<std::mutex> lk(shared_->claim_mu);
	return shared_->claim_conn.socket();
}

bool
Worker::check_session()
{
	WorkerShared               &s = *shared_;
	std::lock_guard<std::mutex> lk(s.claim_mu);
	if (s.claim_conn.Check())
		return true;
	s.claim_pid.store(0);
	return false;
}

namespace {

std::string
Interval(const PqConn &c, std::chrono::milliseconds d)
{
	return c.Literal(client_internal::IntervalLiteral(d)) + "::interval";
}

} // namespace

std::vector<Job>
Worker::claim(int max_jobs, std::chrono::milliseconds wait)
{
	if (max_jobs < 1 || max_jobs > 1000)
		throw std::invalid_argument("pg_fence: max_jobs must be from 1 to 1000");
	if (wait < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: wait must not be negative");
	WorkerShared               &s = *shared_;
	std::lock_guard<std::mutex> lk(s.claim_mu);
	if (!s.claim_conn.connected())
	{
		/* The old session is gone, and the server rescued its jobs: start a new one. */
		s.claim_pid.store(0);
		PqOutcome c =
			s.claim_conn.Connect(s.conninfo, Clock::now() + s.connect_timeout, -1, s.holder);
		if (!c.ok())
			detail::ThrowOutcome(c, "");
		s.claim_pid.store(s.claim_conn.backend_pid());
	}
	std::string sql =
		"SET LOCAL statement_timeout = " + client_internal::TimeoutMillis(wait + s.ttl) +
		"; SELECT job_id, token, attempt, payload FROM fence.claim(" +
		s.claim_conn.Literal(s.queue) + ", " + Interval(s.claim_conn, s.ttl) + ", " +
		std::to_string(max_jobs);
	if (wait > std::chrono::milliseconds::zero())
		sql += ", wait => " + Interval(s.claim_conn, wait);
	if (!s.holder.empty())
		sql += ", holder => " + s.claim_conn.Literal(s.holder);
	sql += ")";
	Clock::time_point sent = Clock::now();
	PqOutcome r = s.claim_conn.Exec(sql, sent + wait + s.ttl + s.connect_timeout, s.interrupt_fd,
									false, true, true);
	if (!r.ok())
	{
		if (!s.claim_conn.connected())
			s.claim_pid.store(0);
		/* Our own cancel (interrupt_fd): no jobs, not an error. */
		if (r.kind == PqOutcome::kServerError && r.sqlstate == "57014" && s.interrupt_fd >= 0)
			return {};
		detail::ThrowOutcome(r, sql);
	}
	if (r.rows.empty())
		return {};

	/* Granted long after it was sent: confirm with one heartbeat each, counted from now. */
	std::vector<bool> confirmed(r.rows.size(), true);
	if (Clock::now() - sent > s.ttl / 10)
	{
		std::string ids, tokens;
		for (const auto &row : r.rows)
		{
			ids += (ids.empty() ? "" : ",") + row[0].value_or("0");
			tokens += (tokens.empty() ? "" : ",") + row[1].value_or("0");
		}
		std::string hb = "SELECT fence.heartbeat(u.j, u.t, " + Interval(s.claim_conn, s.ttl) +
						 ") FROM unnest('{" + ids + "}'::bigint[], '{" + tokens +
						 "}'::bigint[]) WITH ORDINALITY AS u(j, t, n) ORDER BY u.n";
		sent = Clock::now();
		PqOutcome h = s.claim_conn.Exec(hb, sent + s.ttl + s.connect_timeout, -1, false, true);
		if (!h.ok())
			detail::ThrowOutcome(h, hb); /* the claims expire at their TTL */
		for (std::size_t i = 0; i < h.rows.size() && i < confirmed.size(); i++)
			confirmed[i] = h.rows[i][0] && *h.rows[i][0] == "t";
	}

	std::vector<Job>   jobs;
	const std::int64_t d = detail::ToNs(lease_local_deadline(sent, s.ttl, s.margin));
	for (std::size_t i = 0; i < r.rows.size(); i++)
	{
		if (!confirmed[i])
			continue; /* expired before the answer reached us: another worker's now */
		const auto &row = r.rows[i];
		auto        hb = std::make_shared<LeaseImpl>();
		hb->conninfo = s.conninfo;
		hb->name = s.queue;
		hb->holder = s.holder;
		hb->ttl = s.ttl;
		hb->interval = s.interval;
		hb->margin = s.margin;
		hb->connect_timeout = s.connect_timeout;
		hb->job_id = std::stoll(row[0].value_or("0"));
		hb->token = std::stoll(row[1].value_or("0"));
		if (s.on_lost)
		{
			JobLossCallback cb = s.on_lost;
			std::int64_t    id = hb->job_id;
			hb->on_lost = [cb, id](LossReason reason, const std::string &message) {
				cb(id, reason, message);
			};
		}
		hb->on_retry = s.on_retry;
		int fds[2];
		if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
			throw std::system_error(errno, std::generic_category(), "pg_fence: pipe");
		hb->stop_rd = fds[0];
		hb->stop_wr = fds[1];
		hb->state->last_deadline.store(d);
		hb->state->deadline.store(d);

		Job job;
		job.worker_ = shared_;
		job.payload_ = row[3].value_or("null");
		job.attempt_ = std::stoi(row[2].value_or("0"));
		job.hb_ = hb;
		/* A finished Job's idle connection, or one opened by the heartbeat thread at once. */
		if (s.Lend(hb->conn))
			hb->backend_pid.store(hb->conn.backend_pid());
		else
			hb->connect_first = true;
		LeaseImpl *raw = hb.get();
		hb->renewer = std::thread([raw] { raw->RenewerLoop(); });
		jobs.push_back(std::move(job));
	}
	return jobs;
}

} // namespace fence
