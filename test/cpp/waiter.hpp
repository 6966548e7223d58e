/*-------------------------------------------------------------------------
 *
 * waiter.hpp
 *	  A waiter for the Catch2 tests: a call that blocks waiting for a
 *	  lock, lease, semaphore permit or leadership, run in a thread of its
 *	  own so that the test's main thread can act (release, resign, cancel)
 *	  while it waits, then see when it was granted.
 *
 * Catch2 assertions are not thread-safe: the waiter's thread only records
 * what the call returned or threw and when; the main thread asserts, once
 * Finished() has said the call returned.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/waiter.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <pqxx/pqxx>

namespace fence_test {

/*
 * Start(call) runs call() in a new thread; Finished(within) waits up to
 * `within` for it to return.  Afterwards `result` holds what it returned,
 * or, if it threw, `error` holds what() ("" when it did not throw) and
 * `sqlstate` the SQLSTATE of a pqxx::sql_error; `done_at` is the moment it
 * returned or threw.  The destructor waits for the thread, so a waiter
 * must be declared after what its call uses.
 */
template <typename T> class Waiter
{
public:
	T                                     result{};
	std::string                           error;
	std::string                           sqlstate;
	std::chrono::steady_clock::time_point done_at;

	Waiter() = default;
	Waiter(const Waiter &) = delete;
	Waiter &operator=(const Waiter &) = delete;

	~Waiter()
	{
		if (thread_.joinable())
			thread_.join();
	}

	void
	Start(std::function<T()> call)
	{
		thread_ = std::thread([this, call = std::move(call)]() {
			try
			{
				result = call();
			}
			catch (const pqxx::sql_error &e)
			{
				sqlstate = e.sqlstate();
				error = Message(e);
			}
			catch (const std::exception &e)
			{
				error = Message(e);
			}
			catch (...)
			{
				error = "unknown exception";
			}
			done_at = std::chrono::steady_clock::now();
			done_.store(true);
		});
	}

	/* Has the call returned within `within` (polled every 5 ms)?  Joins the thread when it has. */
	bool
	Finished(std::chrono::milliseconds within)
	{
		auto until = std::chrono::steady_clock::now() + within;
		while (!done_.load() && std::chrono::steady_clock::now() < until)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		if (!done_.load())
			return false;
		if (thread_.joinable())
			thread_.join();
		return true;
	}

private:
	static std::string
	Message(const std::exception &e)
	{
		std::string m = e.what();
		return m.empty() ? "exception without a message" : m;
	}

	std::thread       thread_;
	std::atomic<bool> done_{false};
};

/* The connection of a SqlWaiter: a base class, so it outlives the waiter's thread. */
struct WaiterConnection
{
	pqxx::connection conn{""};
	int              pid = conn.backendpid();
};

/*
 * A waiter on a connection of its own (libpq defaults), for a call of the
 * SQL API that waits in the server and returns a token or NULL
 * (lease_acquire, semaphore_acquire, campaign, with a wait).  `pid` is its
 * backend, for pg_stat_activity, pg_cancel_backend and
 * pg_terminate_backend; `conn` stays usable afterwards, e.g. to release
 * what the call got.
 */
struct SqlWaiter : WaiterConnection, Waiter<std::optional<std::int64_t>>
{
	/* Runs call(conn) in the waiter's thread. */
	void
	StartOn(std::function<std::optional<std::int64_t>(pqxx::connection &)> call)
	{
		Start([this, call = std::move(call)]() { return call(conn); });
	}
};

} // namespace fence_test
