/*-------------------------------------------------------------------------
 *
 * test_util.hpp
 *	  What the Catch2 tests share: the extension in the test database,
 *	  names no other test uses, waiting for a condition, and a recorder
 *	  for loss callbacks.
 *
 * The tests connect with libpq's environment (PGHOST, PGPORT, PGUSER,
 * PGDATABASE), e.g. under scripts/temp-cluster.sh.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/cpp/test_util.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <unistd.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <pqxx/pqxx>

namespace fence_test {

/* CREATE EXTENSION IF NOT EXISTS pg_fence in the test database. */
inline void
EnsureExtension()
{
	pqxx::connection     c("");
	pqxx::nontransaction tx(c);
	tx.exec("CREATE EXTENSION IF NOT EXISTS pg_fence");
}

/*
 * Creates the extension if needed; true if the function `signature`
 * (regprocedure text, e.g. "fence.lease_acquire(text,interval,text,interval)")
 * exists, so a test can skip what an older server-side pg_fence lacks.
 */
inline bool
HasFunction(const std::string &signature)
{
	pqxx::connection     c("");
	pqxx::nontransaction tx(c);
	tx.exec("CREATE EXTENSION IF NOT EXISTS pg_fence");
	pqxx::result r = tx.exec("SELECT to_regprocedure(" + tx.quote(signature) + ") IS NOT NULL");
	return r[0][0].as<bool>();
}

/* A lock or lease name no other test (or concurrent run) uses: "suite/base/pid/n". */
inline std::string
Unique(const std::string &suite, const std::string &base)
{
	static int n = 0;
	return suite + "/" + base + "/" + std::to_string(getpid()) + "/" + std::to_string(++n);
}

/* Polls pred every 5 ms until it holds or limit passes; returns its last value. */
template <typename Pred>
bool
WaitFor(Pred pred, std::chrono::milliseconds limit)
{
	auto until = std::chrono::steady_clock::now() + limit;
	while (std::chrono::steady_clock::now() < until)
	{
		if (pred())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	return pred();
}

/* Records the calls of a loss callback (Lease's or SessionMonitor's). */
template <typename Reason> struct LossLog
{
	std::mutex  mu;
	int         calls = 0;
	Reason      reason{};
	std::string message;

	std::function<void(Reason, const std::string &)>
	callback()
	{
		return [this](Reason r, const std::string &m) {
			std::lock_guard<std::mutex> lk(mu);
			calls++;
			reason = r;
			message = m;
		};
	}
	int
	count()
	{
		std::lock_guard<std::mutex> lk(mu);
		return calls;
	}
};

} // namespace fence_test
