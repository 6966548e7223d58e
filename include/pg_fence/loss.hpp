/*-------------------------------------------------------------------------
 *
 * loss.hpp
 *	  fence::LossToken, the flag a worker loop checks to stop acting on a
 *	  lock it may no longer hold, shared by fence::Lease and
 *	  fence::SessionLock; the reasons a session is reported lost.
 *
 * A holder that loses its lock must stop acting on it; a holder that
 * paused and did not notice is stopped by fencing instead (present the
 * grant's token with every write: Kleppmann, "How to do distributed
 * locking", 2016).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/loss.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace fence {

namespace detail {
struct LossState;
} // namespace detail

/**
 * A cheap, copyable view of a hold's end, for worker loops: like C++20's
 * std::stop_token, `while (!tok.stop_requested()) { ...one step... }`.
 *
 * stop_requested() becomes true, and stays true, when the lock is lost
 * (Lease::lost(), SessionLock::lost(), Once::lost()) or released (release()
 * or destruction of the Lease or SessionLock, or a move-assignment over it;
 * Once::finish() and Once::release()).
 * A default-constructed LossToken is always "stop requested".
 * Thread-safe: any number of threads may call it at once, before and after
 * the Lease or SessionLock is destroyed.  Never throws.
 */
class LossToken
{
public:
	/** An empty token, whose stop_requested() is always true. */
	LossToken() = default;

	/**
	 * True once the hold this token watches is lost or released (see the
	 * class comment), and from then on; checked on the local clock at each
	 * call for a lease.  Never throws.
	 */
	bool stop_requested() const noexcept;

private:
	friend class Lease;
	friend class Once;
	friend class SessionLock;
	explicit LossToken(std::shared_ptr<const detail::LossState> state) : state_(std::move(state)) {}
	std::shared_ptr<const detail::LossState> state_;
};

/** Why a session (and every session lock it held) was reported lost. */
enum class SessionLossReason
{
	/** SessionMonitor: SELECT 1 failed (broken connection, server error, new session). */
	kCheckFailed,
	/** SessionMonitor: no check succeeded for check_interval + check_timeout. */
	kCheckTimeout,
	/**
	 * SessionLock: the server closed the session's connection
	 * (pg_terminate_backend, a server shutdown or crash, idle-session
	 * timeout); seen on the socket, without a query.
	 */
	kConnectionClosed,
};

/**
 * Called once, when the loss of a session is detected, from a background
 * thread of the library (never from a thread that calls lost()).  It must
 * return quickly, must not stop or destroy the object that reports it, must
 * not use the connection, and should not throw (an exception is caught and
 * ignored).  `message` is a one-line explanation, e.g. "the server closed
 * the connection" or libpq's reason.  Writing a byte to a pipe, setting a
 * flag or notifying a condition variable are the intended uses.
 */
using SessionLossCallback =
	std::function<void(SessionLossReason reason, const std::string &message)>;

} // namespace fence
