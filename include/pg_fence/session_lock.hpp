/*-------------------------------------------------------------------------
 *
 * session_lock.hpp
 *	  fence::SessionLock: an RAII hold of a pg_fence session lock
 *	  (fence.try_lock / fence.lock / fence.unlock) on a libpqxx connection.
 *
 * A session lock belongs to the database session (backend) that took it: it
 * is released by fence.unlock or, whatever happens to the client, when that
 * session ends (disconnect, pg_terminate_backend, client crash).  Its fencing
 * token is a bigint that strictly increases in grant order; present it with
 * every write to a resource that checks it (fence.fenced_update, the guard
 * trigger, fence.advance), so that a holder that paused past the end of its
 * hold cannot overwrite the work of the next one (Kleppmann, "How to do
 * distributed locking", 2016).
 *
 * The hold is the server's: at most one session holds a name at a time
 * (docs/guarantees.md, guarantee 1), and nothing is held past the end of
 * the session (guarantee 4: PostgreSQL releases a session's advisory locks
 * when it ends, PostgreSQL docs, "Advisory Locks").
 *
 * The session can end under the holder: pg_terminate_backend, a server
 * restart or crash, idle_session_timeout.  The server closes the connection
 * then, and a SessionLock sees that on the socket within milliseconds,
 * without a query and whatever the application is doing with the
 * connection: lost() turns true, its LossToken requests a stop, and the
 * loss callback runs (reason SessionLossReason::kConnectionClosed).  The
 * watch costs no thread per lock (one process-wide thread waits for the
 * hang-ups of all of them).  A dead network or a frozen server closes
 * nothing and is not seen this way: for that, let a fence::SessionMonitor
 * check the connection (as `pg_fence run --session` does), or set libpq's
 * TCP keepalive options.
 *
 * The connection is a pqxx::connection, with libpqxx 6.4 as with 7 (with 6.4,
 * not a lazyconnection or asyncconnection).
 *
 * Thread safety: a SessionLock uses its connection, and a libpqxx
 * connection must be used by one thread at a time; so must a SessionLock.
 * Distinct SessionLock objects on distinct connections are independent.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/session_lock.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <pqxx/connection>

#include "pg_fence/loss.hpp"

namespace fence {

namespace detail {
struct LossState;
} // namespace detail

/** What a SessionLock is told at acquisition. */
struct SessionLockOptions
{
	/**
	 * Called once if the session ends while the lock is held (see the
	 * file comment); may be empty.  Rules as for fence::SessionLossCallback;
	 * not called after release() or destruction has begun.
	 */
	SessionLossCallback on_lost;
};

/**
 * One hold of the session lock `name` on a connection, with its fencing token.
 *
 * Obtained from try_acquire (never waits), try_acquire_for (waits at most a
 * std::chrono duration) or acquire (waits without a client-side limit).
 * Move-only: the hold has exactly one owner.  The destructor releases the
 * hold (fence.unlock) and never throws; release() does the same and reports
 * failures.
 *
 * Re-entrancy follows the server: a session that already holds `name` gets
 * the same token back and one more hold; each SessionLock object releases
 * the one hold it took, and the lock is free when the last one is released.
 *
 * Requirements on the connection: it must outlive the SessionLock, and no
 * libpqxx transaction may be open on it while a SessionLock is acquired,
 * released or destroyed (each call runs in a pqxx::nontransaction, which
 * libpqxx refuses to open next to another transaction; the destructor then
 * leaves the hold to be released at session end).  If the session ends
 * (or libpqxx 6 silently re-establishes the connection, which gives a new
 * session), the hold is gone: lost() and held() report it.
 *
 * Errors: std::invalid_argument for an empty name, a name longer than 1024
 * bytes, or a timeout that is not positive; pqxx::broken_connection when the
 * connection fails; pqxx::sql_error (with sqlstate()) for server errors,
 * e.g. 40P01 deadlock, 57014 statement timeout or cancel, 25006 on a
 * standby, 3F000 when the extension is not installed in the database
 * (schema "fence" does not exist); std::system_error if the loss watch
 * cannot be set up (the lock is released again then).
 */
class SessionLock
{
public:
	/**
	 * Takes the lock if it is free, without waiting (fence.try_lock), on
	 * `conn` (the connection's session holds it; see the class comment for
	 * what that requires).  `name`: 1 to 1024 bytes.  Returns the hold, or
	 * std::nullopt when another session holds `name`.  Throws as described
	 * for the class.
	 */
	static std::optional<SessionLock> try_acquire(pqxx::connection &conn, const std::string &name,
												  SessionLockOptions options = {});

	/**
	 * Takes the lock, waiting at most `timeout` for it (fence.lock with a
	 * timeout; the wait happens in the server's lock manager, so waiters are
	 * queued and deadlocks are detected: PostgreSQL docs, "Deadlocks").
	 * Returns std::nullopt when the timeout expires (SQLSTATE 55P03 from
	 * the server).  The timeout has microsecond resolution; it must be > 0
	 * (std::invalid_argument otherwise).  statement_timeout, when set, still
	 * applies.  Other errors as described for the class.
	 */
	static std::optional<SessionLock> try_acquire_for(pqxx::connection         &conn,
													  const std::string        &name,
													  std::chrono::microseconds timeout,
													  SessionLockOptions        options = {});

	/**
	 * Takes the lock, waiting as long as it takes (fence.lock without a
	 * timeout; statement_timeout and a cancel from another thread with
	 * pqxx::connection::cancel_query() still end the wait, as a
	 * pqxx::sql_error).  Never returns without the lock.  Other errors as
	 * described for the class.
	 */
	static SessionLock acquire(pqxx::connection &conn, const std::string &name,
							   SessionLockOptions options = {});

	/**
	 * Takes over `other`'s hold; `other` holds nothing afterwards (held()
	 * and lost() false, release() false, an always-stopped loss_token()).
	 */
	SessionLock(SessionLock &&other) noexcept;
	/** Releases the lock this object holds (as the destructor does), then takes over `other`'s. */
	SessionLock &operator=(SessionLock &&other) noexcept;
	SessionLock(const SessionLock &) = delete;
	SessionLock &operator=(const SessionLock &) = delete;

	/**
	 * Releases the hold like release(), swallowing every error: if the
	 * unlock cannot be sent (broken connection, open transaction), the
	 * server releases the lock when the session ends.
	 */
	~SessionLock();

	/**
	 * The fencing token of this grant (> 0).  Still readable after
	 * release().  Larger than the token of every grant of the name that
	 * ended before this one began (docs/guarantees.md, guarantee 2); present
	 * it with every write made under the lock (guarantee 6; Kleppmann,
	 * "How to do distributed locking", 2016).
	 */
	std::int64_t
	token() const noexcept
	{
		return token_;
	}

	/** The lock's name. */
	const std::string &
	name() const noexcept
	{
		return name_;
	}

	/**
	 * True while this object holds the lock: not released, not moved from,
	 * not lost(), and the connection is open on the same backend that took
	 * it.  No round trip; thread-safe against the loss watch.
	 */
	bool held() const noexcept;

	/**
	 * True once the session was seen to end while this object held the
	 * lock (the server closed the connection; see the file comment).
	 * Stays true.  False after a release() made while it was held, and
	 * for a moved-from object.  Never throws; may be called from any
	 * thread.
	 */
	bool lost() const noexcept;

	/**
	 * A token whose stop_requested() turns true when the lock is lost or
	 * released (release(), destruction, or a move-assignment over this
	 * object); for worker threads.  A moved-from object gives an
	 * always-stopped token.  Copies a shared pointer: does not throw.
	 */
	LossToken loss_token() const;

	/**
	 * Releases the hold now (fence.unlock).  Returns true if the server
	 * released it, false if this session no longer held it under this token
	 * (e.g. after fence.unlock_all) or if the session that took it is gone.
	 * Afterwards held() is false and the destructor does nothing.  Calling it
	 * again returns false.  Throws pqxx::broken_connection / pqxx::sql_error
	 * when the call fails (the object is released locally all the same).
	 */
	bool release();

private:
	SessionLock(pqxx::connection &conn, std::string name, std::int64_t token) noexcept;
	static SessionLock Watched(pqxx::connection &conn, const std::string &name, std::int64_t token,
							   SessionLockOptions &options);
	void               StopWatch() noexcept;
	void               ReleaseNoThrow() noexcept;

	pqxx::connection                  *conn_ = nullptr; /* nullptr: moved from or released */
	std::string                        name_;
	std::int64_t                       token_ = 0;
	int                                backend_pid_ = 0;
	std::shared_ptr<detail::LossState> state_;
	std::uint64_t                      watch_id_ = 0; /* 0: not watched */
};

} // namespace fence
