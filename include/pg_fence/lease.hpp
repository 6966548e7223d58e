/*-------------------------------------------------------------------------
 *
 * lease.hpp
 *	  fence::Lease: a pg_fence lease (fence.lease_acquire / lease_renew /
 *	  lease_release) held on its own connection and renewed by a background
 *	  thread that rides out restarts and broken connections; its loss is
 *	  seen by lost(), a fence::LossToken (loss.hpp) and a callback.
 *
 * A lease is a lock with a time to live (TTL): the server forgets it at
 * expiry unless it is renewed, so it survives disconnects, server restarts
 * and transaction pooling but not a holder that stops renewing.  The holder
 * must therefore stop acting on the lease as soon as it can no longer be
 * sure it still has it.  This class decides that on the client's own
 * monotonic clock (std::chrono::steady_clock), never on the server's
 * answer alone:
 *
 *	 local deadline = (moment the last successful acquire/renew request was
 *	                   *sent*) + TTL - TTL/500 - safety_margin
 *
 * (lease_local_deadline below).  The server computes its expiry from the
 * moment it *executes* the request, which is later by at least the trip
 * there, so counting from the moment the request was sent is the side that
 * never overstates what is left.  TTL/500 (2000 parts per million) allows
 * for the two clocks running at different rates while the TTL elapses:
 * NTP slews each of them by at most 500 ppm, and a free-running oscillator
 * is off by tens of ppm; a step of the server's wall clock is not covered
 * (run NTP in slew mode on the database server).  safety_margin is the
 * holder's own: the time it needs to stop acting once it sees the loss
 * (pg_fence run: its SIGTERM grace period plus the time signals take).
 *
 * Renewals are sent every TTL/3 (the usual rule for leases: two renewals
 * can fail or be slow before the TTL runs out), each in one round trip and
 * bounded by the time left before the deadline, both on the server (SET
 * LOCAL statement_timeout) and on the client (every wait of the renewer
 * thread ends at the deadline).  A renewal that fails for a reason that can
 * pass (the connection broke, the server restarted or is shutting down or
 * recovering, too many connections, a statement timeout, a standby not yet
 * promoted: see LossReason) is not a loss: the renewer connects again and
 * retries, with backoff from 50 ms up to the renew interval, until the
 * deadline.  The lease itself is in the server's table, so it survives a
 * restart of the server or a broken connection, and a renewal that gets
 * through in time keeps it.  The lease is reported lost only when
 *   - the server refuses the renewal (lease_renew returned false: it
 *     expired and someone may have taken it over): LossReason::kRefused;
 *   - the server rejects it with an error that retrying cannot cure
 *     (e.g. 3F000 or 42883 after DROP EXTENSION, 42501 after a REVOKE):
 *     LossReason::kRenewError;
 *   - the local deadline passes without a successful renewal, e.g. the
 *     server stayed down or the network dead: LossReason::kDeadline.
 * Once lost, a Lease never becomes held again.
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

#include "pg_fence/loss.hpp"

namespace fence {

namespace detail {
struct LeaseImpl;
} // namespace detail

/**
 * The part of a lease's TTL a holder must not count on because its clock
 * and the server's may run at different rates: TTL/500, i.e. 2000 parts
 * per million (each clock may be slewed by NTP by up to 500 ppm, plus the
 * oscillators' error; Linux adjtimex(2), MAXFREQ).  `ttl` and the result
 * are in milliseconds, rounded down (so zero for a TTL under 500 ms);
 * never negative, never throws.
 */
std::chrono::milliseconds lease_clock_allowance(std::chrono::milliseconds ttl) noexcept;

/**
 * The local deadline of a lease whose acquire or renew request was sent at
 * `sent` (steady_clock, read *before* the request left): sent + ttl -
 * lease_clock_allowance(ttl) - safety_margin.  The server counts the TTL
 * from the moment it executes the request, which is later, so a holder
 * that has stopped acting by this instant has stopped before the server
 * can grant the lease to anyone else.  fence::Lease and `pg_fence run`
 * both use it (the rule: Gray & Cheriton, "Leases", 1989: the holder's
 * term starts when it sent the request, less an allowance for clock drift).
 */
std::chrono::steady_clock::time_point
lease_local_deadline(std::chrono::steady_clock::time_point sent, std::chrono::milliseconds ttl,
					 std::chrono::milliseconds safety_margin) noexcept;

/** Why a lease was lost, as passed to the callback. */
enum class LossReason
{
	/** lease_renew returned false: the lease expired, maybe taken over. */
	kRefused,
	/**
	 * The server rejected the renewal with an error that retrying cannot
	 * cure (any SQLSTATE but the transient ones: class 08, 53, 57P01-57P05,
	 * 40001, 40P01, 55P03, 57014, 25006, after which the renewer retries).
	 */
	kRenewError,
	/**
	 * The local deadline passed without a successful renewal: renewals kept
	 * failing (connection lost, server down: the message names the last
	 * error) or did not answer in time.
	 */
	kDeadline,
};

/**
 * Called once, when the loss is detected, from the renewer thread (never
 * from the thread that calls lost()).  It must return quickly, must not
 * call release() or destroy the Lease, and should not throw (an exception
 * is caught and ignored).  `message` is a one-line explanation, e.g.
 * "lease renewal refused: the lease expired or was taken over by another
 * holder", or "lease deadline passed without a successful renewal (local
 * clock); last error: connection lost: ...".
 */
using LossCallback = std::function<void(LossReason reason, const std::string &message)>;

/**
 * Called after each renewal attempt that failed but will be retried,
 * from the renewer thread, with a one-line message such as "lease renewal
 * failed: connection lost: server closed the connection unexpectedly;
 * retrying until 12:00:03.214 (local time)".  Same rules as LossCallback;
 * meant for logging.
 */
using RetryCallback = std::function<void(const std::string &message)>;

/**
 * What a Lease is told at acquisition (Lease::try_acquire,
 * Lease::try_acquire_for).  Every field has a default; a value out of its
 * range makes the acquisition throw std::invalid_argument.
 */
struct LeaseOptions
{
	/**
	 * Stored as fence.leases.holder (fence.locks.holder); empty: NULL.
	 * Non-empty, it is also the application_name of the lease's
	 * connections (pg_stat_activity) unless the conninfo or PGAPPNAME
	 * sets one (libpq's fallback_application_name).
	 */
	std::string holder;
	/** See fence::LossCallback; may be empty. */
	LossCallback on_lost;
	/** See fence::RetryCallback; may be empty. */
	RetryCallback on_retry;
	/**
	 * Limit on making a connection (the first one, and each one the
	 * renewer makes again after a failure, which is also bounded by the
	 * lease's deadline).  Must be positive.  Default 10 s.
	 */
	std::chrono::milliseconds connect_timeout{10000};
	/**
	 * Time between renewals; zero (the default) means TTL/3.  Must be
	 * less than TTL - safety_margin for the lease to survive; a longer
	 * interval is allowed (tests use it to stop renewals on purpose) and
	 * then the lease is lost at its deadline.
	 */
	std::chrono::milliseconds renew_interval{0};
	/**
	 * Subtracted from the local deadline (with lease_clock_allowance), so
	 * that the loss is reported this much before the server-side expiry;
	 * e.g. pg_fence run uses its kill grace period plus the time a signal
	 * takes, so a command is killed before another holder can get the
	 * lease.  Must be at least zero and less than TTL -
	 * lease_clock_allowance(TTL).  Default zero.
	 */
	std::chrono::milliseconds safety_margin{0};
	/**
	 * Zero (the default): acquire the lease `name` (fence.lease_acquire).
	 * N >= 1: acquire one permit of the semaphore `name` with N permits
	 * (fence.semaphore_acquire(name, N, ttl, holder, wait)): granted iff
	 * fewer than N unexpired holders exist, with its own token, renewed,
	 * released and lost exactly like a lease.  Server errors of its own:
	 * sql_error 22023 for N above 10000, 42809 when `name` is held as a
	 * lease (and, with permits zero, when it is held as a semaphore).
	 * Must not be negative.
	 */
	int permits = 0;
	/**
	 * False (the default): a lease or a semaphore permit, as above.  True:
	 * campaign for leadership of the election `name` with `holder` as the
	 * candidate (fence.campaign(name, candidate, ttl, wait), which needs a
	 * non-empty holder): the lease obtained is the leadership, its token the
	 * term; it is renewed and lost like any lease, and release() resigns
	 * (fence.resign(name, term)).  Not with permits.  fence::Election
	 * (election.hpp) builds on it; `pg_fence elect` uses it directly.
	 */
	bool campaign = false;
	/**
	 * -1 (the default), or a descriptor, e.g. the read end of a
	 * self-pipe that a signal handler writes to: once it is readable,
	 * an acquisition in progress (connecting, or waiting in the server in
	 * try_acquire_for) stops at once, the server-side wait is cancelled
	 * (a cancel request), and try_acquire_for returns std::nullopt, as when
	 * `wait` elapses: the caller tells the two apart by its descriptor.
	 * The descriptor is only polled, never read.  A cancel that crosses a
	 * grant on its way leaves that grant unknown to the caller: it expires
	 * after its TTL.  pg_fence elect and run --lease use it so that a
	 * signal ends a wait at once and the server grants nothing to a
	 * candidate that is gone.
	 */
	int interrupt_fd = -1;
};

/**
 * A held lease, renewed in the background until it is released or lost.
 *
 * Construction (try_acquire / try_acquire_for) opens a connection of its
 * own (libpq, not libpqxx: every wait must be bounded by the deadline) from
 * a libpq connection string or URI ("" = libpq defaults: PG* environment
 * variables; a multi-host string with target_session_attrs=read-write
 * follows a failover), calls fence.lease_acquire, and on success starts
 * one thread, the renewer: fence.lease_renew every renew_interval (TTL/3
 * by default), reconnecting after failures, and declaring the loss at the
 * local deadline.  No other code uses that connection.
 *
 * Thread safety: lost(), token(), name(), deadline(), loss_token() and
 * backend_pid() may be called from any thread at any time.  release(), the
 * move operations and the destructor must not run concurrently with any
 * other call on the same object, nor from inside the loss callback.
 *
 * Errors: std::invalid_argument for an empty or over-long name (> 1024
 * bytes), a TTL below 3 ms, or a bad option; pqxx::broken_connection
 * when the connection cannot be made within connect_timeout or breaks
 * during the acquisition (what() is libpq's reason); pqxx::sql_error (with
 * sqlstate()) for server errors, e.g. 3F000 when the extension is not
 * installed in the database (schema "fence" does not exist), 42883 when an
 * older version without leases is, 25006 on a standby, 42501 without
 * privileges, 22023 for a TTL the server refuses.  Once acquired, nothing
 * the renewer meets is thrown: it is a retry or a loss, reported by
 * lost(), the LossToken and the callbacks.
 */
class Lease
{
public:
	/** See fence::LossReason, fence::LossCallback, fence::LeaseOptions. */
	using LossReason = fence::LossReason;
	using LossCallback = fence::LossCallback;
	using Options = LeaseOptions;

	/**
	 * One attempt (fence.lease_acquire(name, ttl, holder), or
	 * fence.semaphore_acquire with Options::permits): returns the held
	 * lease, or std::nullopt when an unexpired lease on `name` is held by
	 * someone else (for a semaphore: all permits are held).  `conninfo`: a
	 * libpq connection string or URI ("" = the PG* environment variables);
	 * `name`: 1 to 1024 bytes; `ttl`: the lease's time to live, millisecond
	 * resolution, at least 3 ms.  The connection is closed again when the
	 * lease is not obtained.  At most one holder of a name at a time
	 * (docs/guarantees.md, guarantee 1, as it applies to leases).  Throws
	 * as described for the class.
	 */
	static std::optional<Lease> try_acquire(const std::string &conninfo, const std::string &name,
											std::chrono::milliseconds ttl, Options options = {});

	/**
	 * Like try_acquire, but while the lease is busy waits up to `wait` for
	 * it, in the server (fence.lease_acquire(name, ttl, holder, wait): one
	 * call, no polling; queued first come, first served and woken as soon
	 * as a release commits or the holder expires).  Returns std::nullopt if
	 * the lease is still busy after `wait`.  Bounded on the client too:
	 * the call has statement_timeout wait + TTL, and the client gives up
	 * on an answer after wait + TTL + connect_timeout (broken_connection).
	 * When the wait took long, the grant is confirmed at once with one
	 * lease_renew, so that the local deadline counts from the confirmation
	 * (nullopt in the rare case that it expired before the answer arrived).
	 * A transient failure during the wait, once the first connection was
	 * made (the connection lost or terminated, the server restarting or
	 * failing over, a cancel of the wait by someone else: 57014, 57P01...,
	 * class 08), does not end it: the call is made again, on a new
	 * connection if needed, after a backoff (50 ms, doubling up to the
	 * renew interval or 5 s, whichever is less; on_retry says so each
	 * time), for the part of `wait` that is left (fence.campaign of the
	 * same candidate returns the same term if the lost call had won).
	 * Only when `wait` has no time left for another try is the failure
	 * thrown.  With a zero `wait` it is try_acquire.  Errors as
	 * try_acquire's, and sql_error 57014 if the wait is cancelled on the
	 * server too late to try again.
	 */
	static std::optional<Lease> try_acquire_for(const std::string        &conninfo,
												const std::string        &name,
												std::chrono::milliseconds ttl,
												std::chrono::milliseconds wait,
												Options                   options = {});

	/**
	 * Takes over `other`'s lease (and its renewer); `other` is left empty:
	 * token() 0, lost() false, release() false, an always-stopped
	 * loss_token().
	 */
	Lease(Lease &&other) noexcept;
	/** Releases this object's lease (as the destructor does), then takes over `other`'s. */
	Lease &operator=(Lease &&other) noexcept;
	Lease(const Lease &) = delete;
	Lease &operator=(const Lease &) = delete;

	/**
	 * Stops the renewer (interrupting a renewal or a connection attempt in
	 * flight), then calls fence.lease_release unless the lease is already
	 * lost, and closes the connection.  Never throws and never waits for
	 * the network longer than the time left on the lease.
	 */
	~Lease();

	/**
	 * The fencing token of this grant (> 0; 0 for a moved-from Lease): larger
	 * than the token of every grant of the name that ended before this one
	 * began (docs/guarantees.md, guarantee 2).  Present it with every write
	 * made under the lease, so that the writes of a holder whose lease was
	 * taken over are rejected (docs/guarantees.md, guarantee 6; Kleppmann,
	 * "How to do distributed locking", 2016).
	 */
	std::int64_t token() const noexcept;

	/** The lease's name (empty for a moved-from Lease). */
	const std::string &name() const noexcept;

	/** The TTL it was acquired with (zero for a moved-from Lease). */
	std::chrono::milliseconds ttl() const noexcept;

	/** Successful renewals so far (0 for a moved-from Lease). */
	std::uint64_t renewals() const noexcept;

	/** Connections the renewer made again after a failure, so far (0 for a moved-from Lease). */
	std::uint64_t reconnects() const noexcept;

	/**
	 * True once the lease is lost (see the file comment): a renewal was
	 * refused or rejected, or the local deadline has passed, checked on the clock at
	 * each call, so it is true at the deadline even if the renewer thread
	 * has not run yet.  Stays true.  False after a clean release(), and
	 * for a moved-from Lease.
	 */
	bool lost() const noexcept;

	/**
	 * A token whose stop_requested() turns true at loss or release; always
	 * stopped for a moved-from Lease.  Copies a shared pointer: does not throw.
	 */
	LossToken loss_token() const;

	/**
	 * The current local deadline (steady_clock; lease_local_deadline of the
	 * last successful acquire or renew request): the lease is considered
	 * lost from this moment unless a renewal succeeds before it.  A
	 * default-constructed time_point for a moved-from Lease.
	 */
	std::chrono::steady_clock::time_point deadline() const noexcept;

	/**
	 * The server process id of the lease's connection (for monitoring,
	 * and for tests that kill it with pg_terminate_backend); it changes
	 * when the renewer connects again, and is 0 while it is disconnected.
	 */
	int backend_pid() const noexcept;

	/**
	 * Stops renewing and releases the lease now (fence.lease_release),
	 * connecting again first if the renewer had lost its connection.
	 * Returns true if the server released it; false if it was no longer
	 * this token's (lost, expired, taken over) or was already released.
	 * Afterwards the LossToken reports stop_requested(), lost() keeps its
	 * value, and the destructor does nothing more.  Blocks at most until
	 * the lease's local deadline (a release the server does not answer by
	 * then is abandoned).  Throws pqxx::broken_connection /
	 * pqxx::sql_error if the release call fails (the lease then expires at
	 * its TTL: nobody else can take it before then).
	 */
	bool release();

private:
	explicit Lease(std::shared_ptr<detail::LeaseImpl> impl) noexcept;
	void Shutdown() noexcept;

	std::shared_ptr<detail::LeaseImpl> impl_;
};

} // namespace fence
