/*-------------------------------------------------------------------------
 *
 * test_util.hpp
 *	  What the Catch2 tests share: the extension in the test database,
 *	  skipping what an older server lacks, names no other test uses,
 *	  releasing a lease, waiting for a condition, a recorder for loss
 *	  callbacks, and freezing a backend.  A call that waits in a thread of
 *	  its own: waiter.hpp.
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

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "pqxx_compat.hpp"

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

/* fence.lease_release(name, token) (a lease or a semaphore permit) on `c`. */
inline bool
ReleaseLease(pqxx::connection &c, const std::string &name, std::int64_t token)
{
	pqxx::nontransaction tx(c);
	return fence::pqxx_compat::ExecParams1(tx, "SELECT fence.lease_release($1, $2)", name, token)[0]
		.as<bool>();
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

/*
 * SIGSTOPs a backend of the test server until destroyed (or Thaw()), as a
 * dead network would look: no answer, no error.  frozen() is false when
 * that is not possible here: the pid must be a PostgreSQL process on this
 * machine (its /proc command line says "postgres"), and we must be allowed
 * to signal it (root, or the server's OS user).
 */
class FrozenBackend
{
public:
	explicit FrozenBackend(int pid) : pid_(pid)
	{
		std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
		std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
		frozen_ = cmdline.find("postgres") != std::string::npos && kill(pid, SIGSTOP) == 0;
	}
	~FrozenBackend() { Thaw(); }
	FrozenBackend(const FrozenBackend &) = delete;
	FrozenBackend &operator=(const FrozenBackend &) = delete;

	bool
	frozen() const
	{
		return frozen_;
	}
	void
	Thaw()
	{
		if (frozen_)
			kill(pid_, SIGCONT);
		frozen_ = false;
	}

private:
	int  pid_;
	bool frozen_ = false;
};

} // namespace fence_test

/*
 * Ends the test case with a warning, "skipped: SIGNATURE is missing", unless
 * the server's pg_fence has that function (HasFunction).  For use in a
 * TEST_CASE body (Catch2's WARN).
 */
#define FENCE_TEST_SKIP_UNLESS_FUNCTION(signature)                        \
	do                                                                    \
	{                                                                     \
		if (!fence_test::HasFunction(signature))                          \
		{                                                                 \
			WARN("skipped: " << std::string(signature) << " is missing"); \
			return;                                                       \
		}                                                                 \
	} while (0)

/* Ends the test case with a warning unless the FrozenBackend `fb` of backend `pid` is frozen. */
#define FENCE_TEST_SKIP_UNLESS_FROZEN(fb, pid)                                                \
	do                                                                                        \
	{                                                                                         \
		if (!(fb).frozen())                                                                   \
		{                                                                                     \
			WARN("skipped: cannot stop backend "                                              \
				 << (pid) << " (not on this machine, or not root nor the server's OS user)"); \
			return;                                                                           \
		}                                                                                     \
	} while (0)
