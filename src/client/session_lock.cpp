/*-------------------------------------------------------------------------
 *
 * session_lock.cpp
 *	  fence::SessionLock over fence.try_lock / fence.lock / fence.unlock,
 *	  with the loss watch (hangup_watch.hpp) and its LossState.
 *
 * The watch's callback holds the LossState and the user's callback, not
 * the SessionLock, so moving a SessionLock needs no coordination with it;
 * StopWatch (before any release) waits for a callback in progress, so
 * none runs after release() or destruction has begun.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/session_lock.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg_fence/session_lock.hpp"

#include <stdexcept>
#include <utility>

#include <pqxx/except>
#include <pqxx/nontransaction>

#include "hangup_watch.hpp"
#include "internal.hpp"
#include "loss_state.hpp"
#include "pqxx_compat.hpp"

namespace fence {

using client_internal::CheckName;
using pqxx_compat::ExecParams1;

SessionLock::SessionLock(pqxx::connection &conn, std::string name, std::int64_t token) noexcept
	: conn_(&conn), name_(std::move(name)), token_(token), backend_pid_(conn.backendpid())
{
}

/* The hold, watched; if the watch cannot be set up, the hold is released again. */
SessionLock
SessionLock::Watched(pqxx::connection &conn, const std::string &name, std::int64_t token,
					 SessionLockOptions &options)
{
	SessionLock lock(conn, name, token); /* releases on a throw below */
	auto        state = std::make_shared<detail::LossState>();
	state->deadline.store(detail::kNoDeadline);
	lock.state_ = state;
	lock.watch_id_ = client_internal::WatchHangup(conn.sock(), [state,
																cb = std::move(options.on_lost)]() {
		if (state->MarkLost() && cb)
			cb(SessionLossReason::kConnectionClosed,
			   "the server closed the session's connection: the session and its locks are gone");
	});
	return lock;
}

std::optional<SessionLock>
SessionLock::try_acquire(pqxx::connection &conn, const std::string &name,
						 SessionLockOptions options)
{
	CheckName(name);
	pqxx::nontransaction tx(conn, "fence.try_lock");
	pqxx::row            row = ExecParams1(tx, "SELECT fence.try_lock($1)", name);
	if (row[0].is_null())
		return std::nullopt;
	return Watched(conn, name, row[0].as<std::int64_t>(), options);
}

std::optional<SessionLock>
SessionLock::try_acquire_for(pqxx::connection &conn, const std::string &name,
							 std::chrono::microseconds timeout, SessionLockOptions options)
{
	CheckName(name);
	if (timeout <= std::chrono::microseconds::zero())
		throw std::invalid_argument("pg_fence: lock timeout must be greater than zero");
	pqxx::nontransaction tx(conn, "fence.lock");
	std::int64_t         token = 0;
	try
	{
		pqxx::row row = ExecParams1(tx, "SELECT fence.lock($1, $2::interval)", name,
									client_internal::IntervalLiteral(timeout));
		token = row[0].as<std::int64_t>();
	}
	catch (const pqxx::sql_error &e)
	{
		if (e.sqlstate() == "55P03") /* lock_not_available: the timeout expired */
			return std::nullopt;
		throw;
	}
	return Watched(conn, name, token, options);
}

SessionLock
SessionLock::acquire(pqxx::connection &conn, const std::string &name, SessionLockOptions options)
{
	CheckName(name);
	pqxx::nontransaction tx(conn, "fence.lock");
	pqxx::row            row = ExecParams1(tx, "SELECT fence.lock($1)", name);
	return Watched(conn, name, row[0].as<std::int64_t>(), options);
}

SessionLock::SessionLock(SessionLock &&other) noexcept
	: conn_(std::exchange(other.conn_, nullptr)), name_(std::move(other.name_)),
	  token_(other.token_), backend_pid_(other.backend_pid_), state_(std::move(other.state_)),
	  watch_id_(std::exchange(other.watch_id_, 0))
{
}

SessionLock &
SessionLock::operator=(SessionLock &&other) noexcept
{
	if (this != &other)
	{
		ReleaseNoThrow();
		conn_ = std::exchange(other.conn_, nullptr);
		name_ = std::move(other.name_);
		token_ = other.token_;
		backend_pid_ = other.backend_pid_;
		state_ = std::move(other.state_);
		watch_id_ = std::exchange(other.watch_id_, 0);
	}
	return *this;
}

SessionLock::~SessionLock()
{
	ReleaseNoThrow();
}

bool
SessionLock::held() const noexcept
{
	return conn_ != nullptr && !lost() && conn_->is_open() && conn_->backendpid() == backend_pid_;
}

bool
SessionLock::lost() const noexcept
{
	return state_ && state_->CheckLost();
}

LossToken
SessionLock::loss_token() const
{
	return LossToken(state_); /* none (moved from): always stopped */
}

void
SessionLock::StopWatch() noexcept
{
	client_internal::UnwatchHangup(std::exchange(watch_id_, 0));
	if (state_)
		state_->MarkReleased();
}

bool
SessionLock::release()
{
	if (conn_ == nullptr)
		return false;
	pqxx::connection &conn = *std::exchange(conn_, nullptr);
	const bool        was_lost = lost();
	StopWatch();
	/* Gone with its session; another session (after a reconnect) must not unlock. */
	if (was_lost || !conn.is_open() || conn.backendpid() != backend_pid_)
		return false;
	pqxx::nontransaction tx(conn, "fence.unlock");
	pqxx::row            row = ExecParams1(tx, "SELECT fence.unlock($1, $2)", name_, token_);
	return !row[0].is_null() && row[0].as<bool>();
}

void
SessionLock::ReleaseNoThrow() noexcept
{
	try
	{
		release();
	}
	catch (...)
	{
		/* The server releases the hold when the session ends. */
		conn_ = nullptr;
		StopWatch();
	}
}

} // namespace fence
