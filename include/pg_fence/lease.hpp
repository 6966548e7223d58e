/*-------------------------------------------------------------------------
 *
 * lease.hpp
 *	  fence::Lease: a pg_fence lease (fence.lease_acquire / lease_renew /
 *	  lease_release) held on its own connection and renewed by a background
 *	  thread; fence::LossToken, a flag a worker loop checks.
 *
 * A lease is a lock with a time to live (TTL): the server forgets it at
 * expiry unless it is renewed, so it survives disconnects and transaction
 * pooling but not a holder that stops renewing.  The holder must therefore
 * stop acting on the lease as soon as it can no longer be sure it still has
 * it.  This class decides that on the client's own monotonic clock
 * (std::chrono::steady_clock), never on the server's answer alone:
 *
 *	 local deadline = (moment the last successful acquire/renew request was
 *	                   *sent*) + TTL - safety_margin
 *
 * The server computes its expiry from the moment it *executes* the request,
 * which is later, so the local deadline falls before the server-side expiry
 * (up to the two clocks' rate difference, a few parts per million).  The
 * lease is reported lost as soon as a renewal fails (error, broken
 * connection, timeout) or is refused (lease_renew returned false: the lease
 * expired and someone may have taken it over), or the deadline passes
 * without a successful renewal, e.g. because a renewal hangs on a dead
 * network.  Renewals are sent every TTL/3 (the usual rule for leases: two
 * renewals can fail or be slow before the TTL runs out), each bounded by the
 * time left before the deadline, both on the server (SET LOCAL
 * statement_timeout) and on the client (a watchdog thread that declares the
 * loss at the deadline and aborts the hung call).  Once lost, a Lease never
 * becomes held again.
 *
 * Losing a lease does not undo work already done.  Fencing does: present
 * token() with every write (fence.fenced_update etc.) and the resource
 * rejects the writes of a holder whose lease was taken over (Kleppmann,
 * "How to do distributed locking", 2016).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/lease.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace fence {

namespace detail {
struct LeaseState;
struct LeaseImpl;
} // namespace detail

/**
 * A cheap, copyable view of a lease's end, for worker loops: like C++20's
 * std::stop_token, `while (!tok.stop_requested()) { ...one step... }`.
 *
 * stop_requested() becomes true, and stays true, when the lease is lost
 * (same rule as Lease::lost(), including the local deadline) or released
 * (Lease::release() or destruction).  A default-constructed LossToken is
 * always "stop requested".  Thread-safe: any number of threads may call it
 * at once, before and after the Lease is destroyed.  Never throws.
 */
class LossToken
{
public:
	LossToken() = default;
	bool stop_requested() const noexcept;

private:
	friend class Lease;
	explicit LossToken(std::shared_ptr<const detail::LeaseState> state) : state_(std::move(state))
	{
	}
	std::shared_ptr<const detail::LeaseState> state_;
};

/** Why a lease was lost, as passed to the callback. */
enum class LossReason
{
	kRefused,    /**< lease_renew returned false: expired, maybe taken over */
	kRenewError, /**< the renewal failed: broken connection, server error, statement timeout */
	kDeadline,   /**< the local deadline passed without a successful renewal */
};

/**
 * Called once, when the loss is detected, from the renewer or the
 * watchdog thread (never from the thread that calls lost()).  It must
 * return quickly, must not call release() or destroy the Lease, and
 * should not throw (an exception is caught and ignored).  `message` is a
 * human-readable explanation (e.g. the server's error).
 */
using LossCallback = std::function<void(LossReason reason, const std::string &message)>;

struct LeaseOptions
{
	/** Stored as fence.leases.holder (fence.locks.holder); empty: NULL. */
	std::string holder;
	/** See fence::LossCallback; may be empty. */
	LossCallback on_lost;
	/**
	 * Time between renewals; zero (the default) means TTL/3.  Must be
	 * less than TTL - safety_margin for the lease to survive; a longer
	 * interval is allowed (tests use it to stop renewals on purpose) and
	 * then the lease is lost at its deadline.
	 */
	std::chrono::milliseconds renew_interval{0};
	/**
	 * Subtracted from the local deadline, so that the loss is reported
	 * this much before the server-side expiry; e.g. pg_fence run uses its
	 * kill grace period, so a command is killed before another holder
	 * can get the lease.  Must be < TTL.  Default zero.
	 */
	std::chrono::milliseconds safety_margin{0};
};

/**
 * A held lease, renewed in the background until it is released or lost.
 *
 * Construction (try_acquire / try_acquire_for) opens a connection of its
 * own from a libpq connection string ("" = libpq defaults: PG* environment
 * variables), calls fence.lease_acquire, and on success starts two threads:
 * the renewer (fence.lease_renew every renew_interval, TTL/3 by default)
 * and the watchdog (declares the loss at the local deadline).  No other
 * code uses that connection.
 *
 * Thread safety: lost(), token(), name(), deadline(), loss_token() and
 * backend_pid() may be called from any thread at any time.  release(), the
 * move operations and the destructor must not run concurrently with any
 * other call on the same object, nor from inside the loss callback.
 *
 * Errors: std::invalid_argument for an empty or over-long name (> 1024
 * bytes) or a TTL below 3 ms; pqxx::broken_connection when the connection
 * cannot be made or breaks during the acquisition; pqxx::sql_error (with
 * sqlstate()) for server errors, e.g. 42883 when the extension (or its
 * lease functions) is not installed, 25006 on a standby, 42501 without
 * privileges.  Once acquired, nothing the renewer meets is thrown: it is a
 * loss, reported by lost(), the LossToken and the callback.
 */
class Lease
{
public:
	/** See fence::LossReason, fence::LossCallback, fence::LeaseOptions. */
	using LossReason = fence::LossReason;
	using LossCallback = fence::LossCallback;
	using Options = LeaseOptions;

	/**
	 * One attempt (fence.lease_acquire(name, ttl, holder)): returns the held
	 * lease, or std::nullopt when an unexpired lease on `name` is held by
	 * someone else.  TTL has millisecond resolution, at least 3 ms.  The
	 * connection is closed again when the lease is not obtained.
	 */
	static std::optional<Lease> try_acquire(const std::string &conninfo, const std::string &name,
											std::chrono::milliseconds ttl, Options options = {});

	/**
	 * Like try_acquire, but while the lease is busy tries again (on the same
	 * connection, at intervals growing from 50 ms to 1 s) until `wait` has
	 * passed: lease_acquire never waits in the server, so waiting is polling
	 * here.  Returns std::nullopt if the lease is still busy after `wait`.
	 */
	static std::optional<Lease> try_acquire_for(const std::string        &conninfo,
												const std::string        &name,
												std::chrono::milliseconds ttl,
												std::chrono::milliseconds wait,
												Options                   options = {});

	Lease(Lease &&other) noexcept;
	/** Releases this object's lease (as the destructor does), then takes over `other`'s. */
	Lease &operator=(Lease &&other) noexcept;
	Lease(const Lease &) = delete;
	Lease &operator=(const Lease &) = delete;

	/**
	 * Stops the renewer and the watchdog (aborting a renewal still in flight
	 * by shutting down its socket), then calls fence.lease_release unless the
	 * lease is already lost, and closes the connection.  Never throws and
	 * never waits for the network longer than the time left on the lease.
	 */
	~Lease();

	/** The fencing token of this grant (> 0). */
	std::int64_t token() const noexcept;

	/** The lease's name. */
	const std::string &name() const noexcept;

	/** The TTL it was acquired with. */
	std::chrono::milliseconds ttl() const noexcept;

	/**
	 * True once the lease is lost (see the file comment): a renewal failed or
	 * was refused, or the local deadline has passed, checked on the clock at
	 * each call, so it is true at the deadline even if the watchdog thread
	 * has not run yet.  Stays true.  False after a clean release().
	 */
	bool lost() const noexcept;

	/** A token whose stop_requested() turns true at loss or release. */
	LossToken loss_token() const;

	/**
	 * The current local deadline (steady_clock): the lease is considered
	 * lost from this moment unless a renewal succeeds before it.
	 */
	std::chrono::steady_clock::time_point deadline() const noexcept;

	/**
	 * The server process id of the lease's connection (for monitoring,
	 * and for tests that kill it with pg_terminate_backend).
	 */
	int backend_pid() const noexcept;

	/**
	 * Stops renewing and releases the lease now (fence.lease_release).
	 * Returns true if the server released it; false if it was no longer
	 * this token's (lost, expired, taken over) or was already released.
	 * Afterwards the LossToken reports stop_requested(), lost() keeps its
	 * value, and the destructor does nothing more.  Throws
	 * pqxx::broken_connection / pqxx::sql_error if the release call fails
	 * (the lease then expires at its TTL).
	 */
	bool release();

private:
	explicit Lease(std::shared_ptr<detail::LeaseImpl> impl) noexcept;
	void Shutdown() noexcept;

	std::shared_ptr<detail::LeaseImpl> impl_;
};

} // namespace fence
