/*-------------------------------------------------------------------------
 *
 * session_lock.cpp
 *	  fence::SessionLock over fence.try_lock / fence.lock / fence.unlock.
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

#include "internal.hpp"
#include "pqxx_compat.hpp"

namespace fence {

using client_internal::CheckName;
using pqxx_compat::ExecParams1;

SessionLock::SessionLock(pqxx::connection &conn, std::string name, std::int64_t token) noexcept
	: conn_(&conn), name_(std::move(name)), token_(token), backend_pid_(conn.backendpid())
{
}

std::optional<SessionLock>
SessionLock::try_acquire(pqxx::connection &conn, const std::string &name)
{
	CheckName(name);
	pqxx::nontransaction tx(conn, "fence.try_lock");
	pqxx::row            row = ExecParams1(tx, "SELECT fence.try_lock($1)", name);
	if (row[0].is_null())
		return std::nullopt;
	return SessionLock(conn, name, row[0].as<std::int64_t>());
}

std::optional<SessionLock>
SessionLock::try_acquire_for(pqxx::connection &conn, const std::string &name,
							 std::chrono::microseconds timeout)
{
	CheckName(name);
	if (timeout <= std::chrono::microseconds::zero())
		throw std::invalid_argument("pg_fence: lock timeout must be greater than zero");
	pqxx::nontransaction tx(conn, "fence.lock");
	try
	{
		pqxx::row row = ExecParams1(tx, "SELECT fence.lock($1, $2::interval)", name,
									client_internal::IntervalLiteral(timeout));
		return SessionLock(conn, name, row[0].as<std::int64_t>());
	}
	catch (const pqxx::sql_error &e)
	{
		if (e.sqlstate() == "55P03") /* lock_not_available: the timeout expired */
			return std::nullopt;
		throw;
	}
}

SessionLock
SessionLock::acquire(pqxx::connection &conn, const std::string &name)
{
	CheckName(name);
	pqxx::nontransaction tx(conn, "fence.lock");
	pqxx::row            row = ExecParams1(tx, "SELECT fence.lock($1)", name);
	return SessionLock(conn, name, row[0].as<std::int64_t>());
}

SessionLock::SessionLock(SessionLock &&other) noexcept
	: conn_(std::exchange(other.conn_, nullptr)), name_(std::move(other.name_)),
	  token_(other.token_), backend_pid_(other.backend_pid_)
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
	return conn_ != nullptr && conn_->is_open() && conn_->backendpid() == backend_pid_;
}

bool
SessionLock::release()
{
	if (conn_ == nullptr)
		return false;
	pqxx::connection &conn = *std::exchange(conn_, nullptr);
	/* Another session (after a reconnect) must not unlock: it holds nothing. */
	if (!conn.is_open() || conn.backendpid() != backend_pid_)
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
	}
}

} // namespace fence
