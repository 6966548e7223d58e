/*-------------------------------------------------------------------------
 *
 * once.cpp
 *	  fence::Once: begin an idempotency key, keep it while owned, record
 *	  its steps, finish or release it.
 *
 * Two connections while the key is owned, one when it is not:
 *  - the Once's own (libpqxx), made by begin(): fence.once_begin, and
 *    later once_step, once_finish and once_release from the caller's
 *    thread.  Closed at once when the key is not owned;
 *  - the renewer's (libpq, every wait bounded by the local deadline):
 *    the renewer of fence::Lease (lease_impl.hpp, lease_renewer.cpp), set
 *    to call fence.once_renew(key, token, ttl) instead of lease_renew.  It
 *    keeps the key, and its loss state (loss_state.hpp) is what lost(),
 *    the LossToken and the callback report, with the same rules as a
 *    lease's: the local deadline counts from the moment once_begin or the
 *    last successful renewal was *sent*.
 * finish() and release() stop the renewer first (through its stop pipe),
 * so that no renewal runs after the key is done or given up (it would be
 * refused, and reported as a loss).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/once.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/once.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/pqxx>

#include "internal.hpp"
#include "lease_impl.hpp"
#include "pqxx_compat.hpp"

namespace fence {

namespace detail {

struct OnceImpl
{
	std::string                       key;
	OnceStatus                        status = OnceStatus::kMismatch;
	std::int64_t                      token = 0;
	std::optional<std::string>        step;
	std::optional<std::string>        response;
	std::unique_ptr<pqxx::connection> conn; /* the Once's own; null when not owned */
	/* The renewer and the loss state; null unless the key was owned (kNew). */
	std::shared_ptr<LeaseImpl> lease;
	bool                       ended = false; /* finished or released (or given up) */
};

namespace {

/* SQL literal of an optional text: 'quoted' or NULL. */
std::string
OptLiteral(pqxx::transaction_base &tx, const std::optional<std::string> &v)
{
	return v ? tx.quote(*v) : std::string("NULL");
}

/*
 * Rethrows a server error of fence.once_begin or once_step with its
 * SQLSTATE: libpqxx 6 throws insufficient_privilege without one (so a
 * caller, pg_fence once among them, would print "SQLSTATE " empty).
 */
template <typename F>
auto
WithSqlState(F &&call) -> decltype(call())
{
	try
	{
		return call();
	}
	catch (const pqxx::insufficient_privilege &e)
	{
		if (!e.sqlstate().empty())
			throw;
		throw pqxx::insufficient_privilege(e.what(), e.query(), "42501");
	}
}

/*
 * SQL literal of `v` without a connection (finish and release may have to
 * connect first): E'...', backslashes and quotes doubled, which reads the
 * same whatever standard_conforming_strings is.
 */
std::string
Literal(const std::string &v)
{
	std::string out = "E'";
	for (char ch : v)
	{
		if (ch == '\\' || ch == '\'')
			out += ch;
		out += ch;
	}
	return out + "'";
}

} // namespace

} // namespace detail

using detail::Clock;
using detail::LeaseImpl;
using detail::Literal;
using detail::OnceImpl;
using detail::PqOutcome;

const char *
to_string(OnceStatus status) noexcept
{
	switch (status)
	{
		case OnceStatus::kNew:
			return "new";
		case OnceStatus::kInProgress:
			return "in_progress";
		case OnceStatus::kDone:
			return "done";
		case OnceStatus::kMismatch:
			return "mismatch";
	}
	return "unknown";
}

Once::Once(std::unique_ptr<OnceImpl> impl) noexcept : impl_(std::move(impl))
{
}

Once::Once(Once &&other) noexcept = default;

Once &
Once::operator=(Once &&other) noexcept
{
	if (this != &other)
	{
		Shutdown();
		impl_ = std::move(other.impl_);
	}
	return *this;
}

Once::~Once()
{
	Shutdown();
}

Once
Once::begin(const std::string &conninfo, const std::string &key, std::chrono::milliseconds ttl,
			const std::optional<std::string> &fingerprint, OnceOptions options)
{
	if (key.empty())
		throw std::invalid_argument("pg_fence: idempotency key must not be empty");
	if (key.size() > client_internal::kMaxNameBytes)
		throw std::invalid_argument("pg_fence: idempotency key is longer than 1024 bytes");
	if (key.find('\0') != std::string::npos)
		throw std::invalid_argument("pg_fence: idempotency key must not contain a NUL byte");
	if (fingerprint && fingerprint->find('\0') != std::string::npos)
		throw std::invalid_argument("pg_fence: fingerprint must not contain a NUL byte");
	if (ttl < std::chrono::milliseconds(3))
		throw std::invalid_argument(
			"pg_fence: idempotency key TTL must be at least 3 milliseconds");
	if (options.safety_margin < std::chrono::milliseconds::zero() ||
		options.safety_margin >= ttl - lease_clock_allowance(ttl))
		throw std::invalid_argument("pg_fence: safety margin must be at least zero and less than "
									"the TTL less its clock allowance (TTL/500)");
	if (options.renew_interval < std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: renew interval must not be negative");
	if (options.connect_timeout <= std::chrono::milliseconds::zero())
		throw std::invalid_argument("pg_fence: connect timeout must be greater than zero");

	auto impl = std::make_unique<OnceImpl>();
	impl->key = key;
	impl->conn = std::make_unique<pqxx::connection>(conninfo);
	pqxx_compat::NoReactivation(*impl->conn);

	/* The local deadline counts from here: the server's TTL starts later. */
	const Clock::time_point sent = Clock::now();
	std::string             status;
	bool                    can_renew = false;
	{
		pqxx::nontransaction tx(*impl->conn);
		const std::string    sql =
			"SELECT status, token, response::text, step, "
			"pg_catalog.to_regprocedure('fence.once_renew(text,bigint,interval)') IS NOT NULL "
			"FROM fence.once_begin(" +
			tx.quote(key) + ", " + tx.quote(client_internal::IntervalLiteral(ttl)) +
			"::interval, " + detail::OptLiteral(tx, fingerprint) + ")";
		pqxx::row r = detail::WithSqlState([&] { return pqxx_compat::Exec1(tx, sql); });
		status = r[0].c_str();
		if (!r[1].is_null())
			impl->token = r[1].as<std::int64_t>();
		if (!r[2].is_null())
			impl->response = r[2].c_str();
		if (!r[3].is_null())
			impl->step = r[3].c_str();
		can_renew = r[4].as<bool>();
	}
	if (status == "new")
		impl->status = OnceStatus::kNew;
	else if (status == "in_progress")
		impl->status = OnceStatus::kInProgress;
	else if (status == "done")
		impl->status = OnceStatus::kDone;
	else if (status == "mismatch")
		impl->status = OnceStatus::kMismatch;
	else
		throw std::runtime_error("pg_fence: fence.once_begin returned an unknown status \"" +
								 status + "\"");

	if (impl->status != OnceStatus::kNew)
	{
		impl->token = 0;
		impl->ended = true;
		pqxx_compat::Close(*impl->conn);
		impl->conn.reset();
		return Once(std::move(impl));
	}
	if (impl->token <= 0)
		throw std::runtime_error("pg_fence: fence.once_begin returned 'new' without a token");

	/* Owned: the lease renewer keeps the key, with once_renew / once_release. */
	auto lease = std::make_shared<LeaseImpl>();
	lease->conninfo = conninfo;
	lease->name = key;
	lease->ttl = ttl;
	lease->interval = options.renew_interval > std::chrono::milliseconds::zero()
						  ? options.renew_interval
						  : ttl / 3;
	/*
	 * A server without fence.once_renew: no renewals, so the renewer only
	 * waits for the local deadline and reports the loss there (the key is
	 * held for its TTL).
	 */
	if (!can_renew)
		lease->interval = std::chrono::hours(24 * 365 * 100);
	lease->margin = options.safety_margin;
	lease->connect_timeout = options.connect_timeout;
	lease->on_lost = std::move(options.on_lost);
	lease->on_retry = std::move(options.on_retry);
	lease->token = impl->token;
	lease->renew_function = "once_renew";
	lease->release_function = "once_release";
	int fds[2];
	if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
		throw std::system_error(errno, std::generic_category(), "pg_fence: pipe");
	lease->stop_rd = fds[0];
	lease->stop_wr = fds[1];
	std::int64_t d = detail::ToNs(lease_local_deadline(sent, ttl, lease->margin));
	lease->state->last_deadline.store(d);
	lease->state->deadline.store(d);
	impl->lease = lease;
	/*
	 * The renewer's connection now rather than at the first renewal, TTL/3
	 * away: a slow connection then eats no renewal time.  A failure here is
	 * the renewer's to retry, until the deadline.
	 */
	(void) lease->Connect(detail::FromNs(d), lease->stop_rd);
	/*
	 * From here the key is ours: should starting the thread fail, the
	 * destructor of `once` releases it.
	 */
	Once       once(std::move(impl));
	LeaseImpl *raw = lease.get();
	lease->renewer = std::thread([raw] { raw->RenewerLoop(); });
	return once;
}

Once::Status
Once::status() const noexcept
{
	return impl_ ? impl_->status : OnceStatus::kMismatch;
}

const std::string &
Once::key() const noexcept
{
	static const std::string empty;
	return impl_ ? impl_->key : empty;
}

std::int64_t
Once::token() const noexcept
{
	return impl_ ? impl_->token : 0;
}

const std::optional<std::string> &
Once::step() const noexcept
{
	static const std::optional<std::string> none;
	return impl_ ? impl_->step : none;
}

const std::optional<std::string> &
Once::response() const noexcept
{
	static const std::optional<std::string> none;
	return impl_ ? impl_->response : none;
}

bool
Once::owned() const noexcept
{
	return impl_ && impl_->lease && !impl_->ended && !impl_->lease->state->CheckLost();
}

bool
Once::lost() const noexcept
{
	return impl_ && impl_->lease && impl_->lease->state->CheckLost();
}

LossToken
Once::loss_token() const
{
	return impl_ && impl_->lease ? LossToken(impl_->lease->state) : LossToken();
}

std::chrono::steady_clock::time_point
Once::deadline() const noexcept
{
	if (!impl_ || !impl_->lease)
		return {};
	return detail::FromNs(impl_->lease->state->last_deadline.load());
}

namespace {

/* step() and finish() need the key still in hand (lost is allowed: the server decides). */
void
RequireOwner(const std::unique_ptr<OnceImpl> &impl, const char *what)
{
	if (!impl || !impl->lease)
		throw std::logic_error(std::string("pg_fence: Once::") + what +
							   ": the key is not owned (once_begin did not answer 'new')");
	if (impl->ended)
		throw std::logic_error(std::string("pg_fence: Once::") + what +
							   ": the key was already finished or released");
}

/*
 * Runs `sql` (fence.once_finish or once_release, one boolean) on the
 * renewer's connection, the renewer being stopped: a lost connection (a
 * server restart, the server down for a while) is reconnected and the call
 * retried, transient errors too, until the key's local deadline.  Past it
 * the last failure is returned (the key can then be taken over).  When an
 * attempt's answer was lost with its connection, the call may have
 * committed: a false answer on a later attempt is checked against
 * fence.once_keys (`done_state`, our token) before it counts as refused.
 */
PqOutcome
CallUntilDeadline(OnceImpl &im, const std::string &sql, const char *done_state)
{
	LeaseImpl              &l = *im.lease;
	const Clock::time_point deadline = detail::FromNs(l.state->deadline.load());
	bool                    uncertain = false;
	for (;;)
	{
		/*
		 * One attempt at least, even past the deadline (a key already lost:
		 * the server decides, by the token); retries only before it.
		 */
		const Clock::time_point until =
			std::max(deadline, Clock::now() + std::chrono::milliseconds(l.connect_timeout));
		PqOutcome r;
		if (!l.conn.connected())
			r = l.Connect(until, -1);
		if (r.ok())
			r = l.conn.Exec(sql, until, -1);
		if (r.ok() && uncertain && !(r.value && *r.value == "t"))
		{
			const std::string check =
				"SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 FROM fence.once_keys "
				"WHERE key OPERATOR(pg_catalog.=) " +
				Literal(im.key) + " AND token OPERATOR(pg_catalog.=) " + std::to_string(im.token) +
				" AND state OPERATOR(pg_catalog.=) '" + done_state + "'";
			PqOutcome c = l.conn.Exec(check, until, -1);
			if (c.ok() && c.value && *c.value == "t")
				return c;
			if (!c.ok())
				r = c;
		}
		if (r.ok() || !client_internal::IsTransient(r) || r.kind == PqOutcome::kDeadline ||
			Clock::now() >= deadline)
			return r;
		uncertain = uncertain || r.kind == PqOutcome::kConnectionLost;
		l.conn.Close();
		l.ReportRetry(
			std::string(done_state == std::string("done") ? "once_finish" : "once_release") +
			" failed: " + r.message + "; retrying on a new connection until " +
			"the key's local deadline");
		/* Not l.SleepUntil: the renewer's stop pipe, readable since it stopped, would end it. */
		std::this_thread::sleep_until(
			std::min(deadline, Clock::now() + std::chrono::milliseconds(250)));
	}
}

/* A token refused by the server: the key is not ours any more. */
void
Superseded(OnceImpl &im)
{
	if (im.lease->state->MarkLost())
		im.lease->ReportLoss(LossReason::kRefused,
							 "the idempotency key is no longer this token's: it expired and was "
							 "taken over, or was finished or released");
}

} // namespace

bool
Once::step(pqxx::transaction_base &tx, const std::string &name)
{
	RequireOwner(impl_, "step");
	const std::string sql = "SELECT fence.once_step(" + tx.quote(impl_->key) + ", " +
							std::to_string(impl_->token) + ", " + tx.quote(name) + ")";
	pqxx::row r = detail::WithSqlState([&] { return pqxx_compat::Exec1(tx, sql); });
	bool      ok = !r[0].is_null() && r[0].as<bool>();
	if (!ok)
		Superseded(*impl_);
	return ok;
}

bool
Once::step(const std::string &name)
{
	RequireOwner(impl_, "step");
	pqxx::nontransaction tx(*impl_->conn);
	return step(tx, name);
}

bool
Once::finish(pqxx::transaction_base &tx, const std::optional<std::string> &response)
{
	RequireOwner(impl_, "finish");
	OnceImpl &im = *impl_;
	/* No renewal after this: it would find the key done and call that a loss. */
	im.lease->StopRenewer();
	im.ended = true;
	pqxx::row r = pqxx_compat::Exec1(
		tx, "SELECT fence.once_finish(" + tx.quote(im.key) + ", " + std::to_string(im.token) +
				", " + (response ? tx.quote(*response) + "::jsonb" : std::string("NULL::jsonb")) +
				")");
	bool ok = !r[0].is_null() && r[0].as<bool>();
	if (ok)
		im.lease->state->MarkReleased();
	else
		Superseded(im);
	im.lease->conn.Close();
	im.lease->backend_pid.store(0);
	return ok;
}

bool
Once::finish(const std::optional<std::string> &response)
{
	RequireOwner(impl_, "finish");
	OnceImpl &im = *impl_;
	/* No renewal after this: it would find the key done and call that a loss. */
	im.lease->StopRenewer();
	im.ended = true;
	const std::string sql =
		"SELECT fence.once_finish(" + Literal(im.key) + ", " + std::to_string(im.token) + ", " +
		(response ? Literal(*response) + "::jsonb" : std::string("NULL::jsonb")) + ")";
	PqOutcome r = CallUntilDeadline(im, sql, "done");
	im.lease->conn.Close();
	im.lease->backend_pid.store(0);
	if (!r.ok())
	{
		/*
		 * Not recorded, and the key cannot be kept (the server was not
		 * reached in time): it will be taken over.  A server error that
		 * retrying cannot cure (invalid JSON) leaves the key as it is.
		 */
		if ((r.kind != PqOutcome::kServerError || client_internal::IsTransient(r)) &&
			im.lease->state->MarkLost())
			im.lease->ReportLoss(LossReason::kDeadline,
								 "the result could not be recorded before the key's local "
								 "deadline: " +
									 r.message);
		detail::ThrowOutcome(r, sql);
	}
	bool ok = r.value && *r.value == "t";
	if (ok)
		im.lease->state->MarkReleased();
	else
		Superseded(im);
	return ok;
}

bool
Once::release()
{
	if (!impl_ || !impl_->lease || impl_->ended)
		return false;
	OnceImpl &im = *impl_;
	im.lease->StopRenewer();
	im.ended = true;
	bool released = false;
	if (!im.lease->state->CheckLost())
	{
		const std::string sql =
			"SELECT fence.once_release(" + Literal(im.key) + ", " + std::to_string(im.token) + ")";
		PqOutcome r = CallUntilDeadline(im, sql, "released");
		if (!r.ok())
		{
			im.lease->state->MarkReleased();
			im.lease->conn.Close();
			im.lease->backend_pid.store(0);
			detail::ThrowOutcome(r, sql);
		}
		released = r.value && *r.value == "t";
	}
	im.lease->state->MarkReleased();
	im.lease->conn.Close();
	im.lease->backend_pid.store(0);
	return released;
}

void
Once::Shutdown() noexcept
{
	if (!impl_)
		return;
	try
	{
		release();
	}
	catch (...)
	{
		/* The key's lease expires after its TTL; the next begin() takes it over. */
	}
	if (impl_->lease)
	{
		impl_->lease->StopRenewer();
		impl_->lease->state->MarkReleased();
	}
	if (impl_->conn)
	{
		try
		{
			pqxx_compat::Close(*impl_->conn);
		}
		catch (...)
		{
		}
	}
	impl_.reset();
}

} // namespace fence
