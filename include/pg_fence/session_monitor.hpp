/*-------------------------------------------------------------------------
 *
 * session_monitor.hpp
 *	  fence::SessionMonitor: notices, within seconds, that a database
 *	  session (and so every session lock it holds) is gone, by checking its
 *	  connection in the background with SELECT 1.
 *
 * A session lock (fence::SessionLock) lives exactly as long as its session:
 * the server frees it when the connection ends, for whatever reason
 * (pg_terminate_backend, a server restart, a network failure that the
 * server notices first).  The client is not told: an idle libpq connection
 * reads nothing, so a holder that only runs a long job never finds out.
 * This class finds out for it, by the same rule as lease-loss detection
 * (fence::Lease): the holder decides on its own monotonic clock
 * (std::chrono::steady_clock), never waiting on the network for the answer.
 *
 *	 - every check_interval (default 1 s) after the previous answer, a
 *	   background thread (the checker) runs SELECT 1 on the connection;
 *	 - the session is lost when a check fails (error, broken connection, or
 *	   with libpqxx 6 a connection re-established in a new session), or when
 *	   no check has succeeded for check_interval + check_timeout (default
 *	   1 s + 3 s), i.e. a check went unanswered for check_timeout: a dead
 *	   network or a frozen server does not answer, and does not fail either.
 *	   A second thread (the watchdog) declares that loss at that moment and
 *	   shuts the connection's socket down, so that the hung check ends.
 *	   The time counts even while this process itself is frozen (SIGSTOP,
 *	   a VM pause): frozen that long, it cannot know that the session was
 *	   there all along, so it is lost when the process continues, and an
 *	   answer that arrives after that moment does not count.  A process
 *	   that stops itself on purpose says so with suspend() and resume().
 *
 * The loss is reported once, by a callback, and from then on by lost(),
 * which also reads the clock on each call.  Once lost, a monitor never
 * reports the session alive again.  A check that fails means the session
 * is gone or unusable; a check that does not answer means the client can
 * no longer be sure it holds anything.  Either way, stop acting on the lock.
 * As with leases, losing it does not undo work already done: present the
 * lock's fencing token with every write (Kleppmann, "How to do distributed
 * locking", 2016).
 *
 * The monitor borrows the caller's connection; see SessionMonitor for what
 * that requires.  `pg_fence run --session` uses it with the defaults.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/session_monitor.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <pqxx/connection>

#include "pg_fence/loss.hpp"

namespace fence {

namespace detail {
struct SessionMonitorImpl;
} // namespace detail

/*
 * fence::SessionLossReason (kCheckFailed, kCheckTimeout for a monitor) and
 * fence::SessionLossCallback are declared in pg_fence/loss.hpp.
 */

/** What a SessionMonitor is told at construction; every field has a default. */
struct SessionMonitorOptions
{
	/**
	 * Time from the end of one check to the start of the next.  Must be
	 * positive.  The default, 1 s, costs one round trip per second.
	 */
	std::chrono::milliseconds check_interval{1000};
	/**
	 * How long a check may go unanswered before the session is considered
	 * lost (measured from check_interval after the last successful answer).
	 * Must be positive.  Default 3 s.
	 */
	std::chrono::milliseconds check_timeout{3000};
	/** See fence::SessionLossCallback; may be empty (then poll lost()). */
	SessionLossCallback on_lost;
};

/**
 * Watches one connection's session until stop() or destruction, and
 * reports once if the session is lost (see the file comment for the rule).
 *
 * The connection is borrowed, not owned.  From construction until stop()
 * returns, the monitor's thread uses it: no other thread may use it
 * (libpqxx connections are used by one thread at a time), no transaction
 * may be open on it, and it must stay alive.  Take the lock first, start
 * the monitor, run the job (writing through other connections, or none),
 * stop the monitor, then release the lock on the connection.  The monitor
 * does not change the connection's settings; with libpqxx 6, switch off
 * silent reconnection yourself (connection::inhibit_reactivation) if you
 * want the first failed check to leave the connection broken; either way
 * a reconnection is a loss, since the new session holds none of the old
 * one's locks.
 *
 * Thread safety: lost() and message() may be called from any thread at any
 * time.  stop(), suspend(), resume(), the move operations and the
 * destructor must not run concurrently with each other on the same object,
 * nor from inside the loss callback.
 *
 * Errors: the constructor throws std::invalid_argument when check_interval
 * or check_timeout is not positive, pqxx::broken_connection when the
 * connection is not open, and std::system_error when the socket cannot be
 * duplicated or a thread cannot be started.  Once started, nothing the
 * checks meet is thrown: it is a loss, reported by lost(), message() and
 * the callback.
 */
class SessionMonitor
{
public:
	using Options = SessionMonitorOptions;
	using LossReason = SessionLossReason;
	using LossCallback = SessionLossCallback;

	/**
	 * Starts watching `conn`: the first check runs check_interval from now.
	 * Remembers the connection's backend pid (a check answered by another
	 * backend is a loss) and keeps a duplicate of its socket, through which
	 * a hung check is aborted.  Throws as described for the class.
	 */
	explicit SessionMonitor(pqxx::connection &conn, Options options = {});

	/** Takes over `other`'s watch; `other` is left empty (lost() false, stop() does nothing). */
	SessionMonitor(SessionMonitor &&other) noexcept;
	/** Stops this object's watch (as stop() does), then takes over `other`'s. */
	SessionMonitor &operator=(SessionMonitor &&other) noexcept;
	SessionMonitor(const SessionMonitor &) = delete;
	SessionMonitor &operator=(const SessionMonitor &) = delete;

	/** Stops the monitor as stop() does.  Never throws. */
	~SessionMonitor();

	/**
	 * Stops checking and joins the monitor's threads; afterwards the caller
	 * may use the connection again, lost() and message() keep their current
	 * answers, and no callback is made.  A check in flight is waited for, at
	 * most check_timeout; one still unanswered then is aborted by shutting
	 * the connection's socket down (the connection is then broken, as it
	 * would be at a loss).  So it returns at once on a healthy connection
	 * and within check_timeout on a hung one.  Idempotent; never throws.
	 */
	void stop() noexcept;

	/**
	 * True once the session is lost: a check failed, or no check has
	 * succeeded for check_interval + check_timeout, checked on the clock at
	 * each call, so it is true at that moment even if the watchdog thread
	 * has not run yet (except while suspended, see suspend()).  Stays true.
	 * After stop() it keeps the value it had.  Cheap (no round trip, no
	 * lock); never throws.
	 */
	bool lost() const noexcept;

	/**
	 * Why the session was lost (the message given to the callback), or ""
	 * while it is not.  May allocate (std::bad_alloc).
	 */
	std::string message() const;

	/**
	 * For a process that is about to stop itself on purpose (job control:
	 * raise(SIGSTOP) after the user pressed ^Z): from now until resume(),
	 * time without a successful check is not a loss, because no thread of
	 * a stopped process can check.  Failed checks still are.  Without it,
	 * a stop longer than check_interval + check_timeout would be reported
	 * as an unanswered check the moment the process continues.  Never
	 * throws; does nothing after stop().
	 */
	void suspend() noexcept;

	/**
	 * Ends suspend(): checks the connection now and waits for the answer,
	 * at most check_timeout (then the unanswered check is aborted as in
	 * stop(), which makes it fail, and waits at most 1 s more for that), so
	 * that the caller knows whether the session survived before it carries
	 * on.  Returns !lost().  Blocks the calling thread for one round trip;
	 * after stop() returns !lost() at once.  Never throws.
	 */
	bool resume() noexcept;

private:
	std::unique_ptr<detail::SessionMonitorImpl> impl_;
};

} // namespace fence
