/*-------------------------------------------------------------------------
 *
 * job.cpp
 *	  fence::Job: one claimed job, its heartbeat (the lease renewer of
 *	  lease_renewer.cpp, calling fence.heartbeat), complete(), fail(), and
 *	  what an unfinished Job does when it is destroyed.
 *
 * The heartbeat thread is stopped before fence.complete or fence.fail is
 * sent: a heartbeat that crossed a completion would find the job finished,
 * be refused, and report a loss that never happened.  A call that fails
 * without an answer (the connection broke) resumes it, since the job is
 * still ours until its claim expires.  An answer settles the Job:
 *   - true, or complete's FN001 "already completed by this token" (a
 *     repeated call whose first answer was lost with the connection):
 *     finished, lost() false from then on;
 *   - false from fail, any other FN001 from complete (superseded, ended,
 *     cancelled), P0002 (the job is gone): finished and lost();
 *   - any other server error: nothing changed, the heartbeat resumes.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/job.cpp
 *
 *-------------------------------------------------------------------------
 */
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include <pqxx/except>

#include "lease_impl.hpp"
#include "pg_fence/worker.hpp"
#include "pqxx_compat.hpp"
#include "worker_impl.hpp"

namespace fence {

using detail::Clock;
using detail::LeaseImpl;
using detail::PqConn;
using detail::PqOutcome;

namespace {

/* A failure that settles the job: the claim is not ours any more, or the job is gone. */
bool
Settles(const std::string &sqlstate)
{
	return sqlstate == "FN001" || sqlstate == "P0002";
}

/*
 * fence.complete's FN001 for a job this very token already completed
 * (src/server/pg/fence_errors.cpp, RaiseStaleCompletion): the first call
 * went through and only its answer was lost.
 */
bool
AlreadyCompletedByUs(const std::string &sqlstate, const std::string &message)
{
	return sqlstate == "FN001" &&
		   message.find("already completed by this token") != std::string::npos;
}

/* "1767312000.123456": seconds since the epoch, for pg_catalog.to_timestamp. */
std::string
EpochSeconds(std::chrono::system_clock::time_point t)
{
	long long us =
		std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
	char buf[48];
	std::snprintf(buf, sizeof buf, "%s%lld.%06lld", us < 0 ? "-" : "",
				  (us < 0 ? -us : us) / 1000000, (us < 0 ? -us : us) % 1000000);
	return buf;
}

} // namespace

Job::Job(Job &&other) noexcept
	: worker_(std::move(other.worker_)), hb_(std::move(other.hb_)),
	  payload_(std::move(other.payload_)), attempt_(other.attempt_), finished_(other.finished_)
{
}

Job &
Job::operator=(Job &&other) noexcept
{
	if (this != &other)
	{
		Abandon();
		worker_ = std::move(other.worker_);
		hb_ = std::move(other.hb_);
		payload_ = std::move(other.payload_);
		attempt_ = other.attempt_;
		finished_ = other.finished_;
	}
	return *this;
}

Job::~Job()
{
	Abandon();
}

/* An unfinished job is failed ("abandoned"); then the heartbeat stops for good. */
void
Job::Abandon() noexcept
{
	if (!hb_)
		return;
	if (!finished_ && !hb_->state->CheckLost())
	{
		try
		{
			fail("abandoned: the worker dropped the job unfinished (fence::Job destroyed)");
		}
		catch (...)
		{
			/* the claim expires at its TTL and the job is claimed again */
		}
	}
	StopHeartbeat();
	hb_->state->MarkReleased();
	worker_->Recycle(hb_->conn); /* the heartbeat connection, for the next Job */
	hb_.reset();
	worker_.reset();
}

std::int64_t
Job::id() const noexcept
{
	return hb_ ? hb_->job_id : 0;
}

std::int64_t
Job::token() const noexcept
{
	return hb_ ? hb_->token : 0;
}

int
Job::attempt() const noexcept
{
	return attempt_;
}

const std::string &
Job::payload() const noexcept
{
	return payload_;
}

const std::string &
Job::queue() const noexcept
{
	static const std::string empty;
	return hb_ ? hb_->name : empty;
}

bool
Job::lost() const noexcept
{
	return hb_ && hb_->state->CheckLost();
}

LossToken
Job::loss_token() const
{
	return hb_ ? LossToken(hb_->state) : LossToken();
}

std::chrono::steady_clock::time_point
Job::deadline() const noexcept
{
	return hb_ ? detail::FromNs(hb_->state->last_deadline.load()) : Clock::time_point();
}

std::uint64_t
Job::heartbeats() const noexcept
{
	return hb_ ? hb_->renewals.load() : 0;
}

bool
Job::finished() const noexcept
{
	return finished_;
}

/* Stops the heartbeat thread (its sleep and network waits watch the pipe) and waits for it. */
void
Job::StopHeartbeat() noexcept
{
	if (!hb_ || !hb_->renewer.joinable())
		return;
	char one = 1;
	while (::write(hb_->stop_wr, &one, 1) < 0 && errno == EINTR)
	{
	}
	hb_->renewer.join();
}

/* After a call that got no answer: the claim is still ours until it expires. */
void
Job::ResumeHeartbeat()
{
	if (!hb_ || hb_->renewer.joinable() || hb_->state->CheckLost())
		return;
	char buf[16];
	while (::read(hb_->stop_rd, buf, sizeof buf) > 0)
	{
	}
	LeaseImpl *raw = hb_.get();
	hb_->renewer = std::thread([raw] { raw->RenewerLoop(); });
}

/* fence.complete or fence.fail on the Worker's second connection; see the file comment. */
bool
Job::Finish(bool complete, const std::optional<std::string> &text,
			std::optional<std::chrono::system_clock::time_point> retry_at)
{
	if (!hb_)
		throw std::logic_error("pg_fence: this Job was moved from");
	if (finished_)
		throw std::logic_error("pg_fence: job " + std::to_string(id()) + " is already finished");
	StopHeartbeat();
	std::string sql;
	PqOutcome   r;
	try
	{
		r = worker_->RunFinish(
			[&](const PqConn &c) {
				std::string q = std::string("SELECT fence.") + (complete ? "complete(" : "fail(") +
								std::to_string(id()) + ", " + std::to_string(token());
				if (complete && text)
					q += ", " + c.Literal(*text) + "::jsonb";
				if (!complete)
				{
					q += ", " + c.Literal(text.value_or(""));
					if (retry_at)
						q += ", pg_catalog.to_timestamp(" + EpochSeconds(*retry_at) + ")";
				}
				return q + ")";
			},
			&sql);
	}
	catch (...)
	{
		ResumeHeartbeat();
		throw;
	}
	if (r.ok())
	{
		const bool t = r.value && *r.value == "t";
		finished_ = true;
		if (t || complete)
			hb_->state->MarkReleased();
		else
			hb_->state->MarkLost(); /* fail refused: the claim is someone else's */
		return t;
	}
	if (complete && r.kind == PqOutcome::kServerError &&
		AlreadyCompletedByUs(r.sqlstate, r.message))
	{
		finished_ = true;
		hb_->state->MarkReleased();
		return true;
	}
	if (r.kind == PqOutcome::kServerError && Settles(r.sqlstate))
	{
		finished_ = true;
		hb_->state->MarkLost();
	}
	else
		ResumeHeartbeat();
	detail::ThrowOutcome(r, sql);
}

bool
Job::complete(const std::optional<std::string> &result)
{
	return Finish(true, result, std::nullopt);
}

bool
Job::fail(const std::string &error, std::optional<std::chrono::system_clock::time_point> retry_at)
{
	return Finish(false, error, retry_at);
}

bool
Job::complete(pqxx::work &tx, const std::optional<std::string> &result)
{
	if (!hb_)
		throw std::logic_error("pg_fence: this Job was moved from");
	if (finished_)
		throw std::logic_error("pg_fence: job " + std::to_string(id()) + " is already finished");
	/* A heartbeat would wait for tx's row lock, then find the job completed: stop it first. */
	StopHeartbeat();
	bool done;
	try
	{
		pqxx::row row =
			result ? pqxx_compat::ExecParams1(tx, "SELECT fence.complete($1, $2, $3::jsonb)", id(),
											  token(), *result)
				   : pqxx_compat::ExecParams1(tx, "SELECT fence.complete($1, $2)", id(), token());
		done = row[0].as<bool>();
	}
	catch (const pqxx::sql_error &e)
	{
		if (Settles(e.sqlstate()))
		{
			finished_ = true;
			hb_->state->MarkLost();
		}
		else
			ResumeHeartbeat();
		throw;
	}
	catch (...)
	{
		ResumeHeartbeat();
		throw;
	}
	finished_ = true;
	hb_->state->MarkReleased();
	return done;
}

} // namespace fence
