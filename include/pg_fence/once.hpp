/*-------------------------------------------------------------------------
 *
 * once.hpp
 *	  fence::Once: an idempotency key (fence.once_begin / once_step /
 *	  once_finish / once_release), for an effect that cannot check a
 *	  fencing token (an e-mail, a payment, a call to an external HTTP API):
 *	  of the callers that begin the same key, one owns it and does the
 *	  effect; the others are told it is in progress, or done (with the
 *	  stored response to replay), or used with another request
 *	  (fingerprint mismatch).
 *
 * The model is Stripe's idempotency keys and the IETF HTTP
 * "Idempotency-Key" header draft (draft-ietf-httpapi-idempotency-key-header):
 * a request carries a key chosen by the client; the first request with a
 * key does the work and stores its response; a retry of the same key gets
 * that response again (replay); a retry while the first is still running
 * gets "in progress" (HTTP 409 Conflict); a request that reuses the key
 * for a different payload gets "mismatch" (HTTP 422).  Brandur Leach's
 * "Implementing Stripe-like Idempotency Keys in Postgres"
 * (brandur.org/idempotency-keys) adds recovery points ("steps") and a lock
 * with an expiry, so that a crashed request's key is taken over; that
 * design lets a request whose lock expired keep writing (the zombie), which
 * is what pg_fence's tokens close: each owner of a key gets a fencing
 * token from the same allocator as leases, and the server accepts
 * once_step / once_finish (and fence.fenced_update with that token) only
 * from the key's current owner.
 *
 * While a fence::Once owns its key it keeps it the way fence::Lease keeps a
 * lease (lease.hpp; the same renewer thread, the same rules): renewed
 * every TTL/3 (fence.once_renew(key, token, ttl)), with transient failures
 * retried until the local deadline, and declared lost (lost(), the
 * LossToken, the on_lost callback) when a renewal is refused or the local
 * deadline passes.  A lost key may have been taken over: stop the effect,
 * and expect finish() to return false.  A server whose pg_fence has no
 * fence.once_renew cannot extend an owner's lease: the key is then held
 * for its TTL only (lost at the local deadline), so the TTL must cover the
 * whole effect.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/once.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <pqxx/transaction_base>

#include "pg_fence/lease.hpp"
#include "pg_fence/loss.hpp"

namespace fence {

namespace detail {
struct OnceImpl;
} // namespace detail

/** What fence.once_begin answered (its `status` column). */
enum class OnceStatus
{
	/**
	 * 'new': the caller owns the key now, with a token and a lease of the
	 * TTL.  step() tells a takeover from a first use: the step the
	 * previous owner (expired or released) had reached, or none.
	 */
	kNew,
	/** 'in_progress': another owner's lease is live; try again later (HTTP 409). */
	kInProgress,
	/** 'done': the key's work is finished; response() is the stored response to replay. */
	kDone,
	/** 'mismatch': the key was begun with another fingerprint (HTTP 422); nothing was done. */
	kMismatch,
};

/** "new", "in_progress", "done" or "mismatch": the server's words.  Never throws. */
const char *to_string(OnceStatus status) noexcept;

/**
 * What a Once is told at begin().  Every field has a default; a value out
 * of its range makes begin() throw std::invalid_argument.  The renewal
 * fields mean what they mean for a lease (LeaseOptions).
 */
struct OnceOptions
{
	/**
	 * Called once if the key is lost while owned (renewal refused, renewal
	 * rejected for good, local deadline passed), from the renewer thread;
	 * the rules of fence::LossCallback.  May be empty.
	 */
	LossCallback on_lost;
	/** See fence::RetryCallback; may be empty. */
	RetryCallback on_retry;
	/** Limit on making each connection; must be positive.  Default 10 s. */
	std::chrono::milliseconds connect_timeout{10000};
	/** Time between renewals; zero (the default) means TTL/3.  See LeaseOptions::renew_interval. */
	std::chrono::milliseconds renew_interval{0};
	/**
	 * Subtracted from the local deadline, so that the loss is reported
	 * this much before the server-side expiry (LeaseOptions::safety_margin);
	 * at least zero and less than TTL - TTL/500.  Default zero.
	 */
	std::chrono::milliseconds safety_margin{0};
};

/**
 * One caller's use of an idempotency key.
 *
 * begin() opens a connection of its own (libpqxx; `conninfo` as for a
 * Lease) and calls fence.once_begin.  When the answer is kNew the Once owns
 * the key: a second connection (libpq) belongs to the renewer thread,
 * which renews the key's lease every renew interval (TTL/3) and watches
 * for its loss, exactly like fence::Lease's.  The owner then records
 * recovery points with step(), and ends with finish() (the key is done,
 * its response stored) or release() (the key is given up unfinished and
 * can be begun again at once, e.g. after the effect failed).  Destroying an
 * owner that did neither releases the key (errors ignored: the key's lease
 * then expires after the TTL, and the next begin() takes it over).
 *
 * For any other status the Once owns nothing: it only carries the answer
 * (status(), response(), step()), and its connection is closed.
 *
 * Thread safety: lost(), loss_token(), token(), deadline() may be called
 * from any thread at any time; everything else from one thread at a time,
 * never from the loss callback.
 *
 * Errors of begin(): std::invalid_argument for an empty or over-long key
 * (more than 1024 bytes), a TTL below 3 ms, or a bad option;
 * pqxx::broken_connection when the connection cannot be made;
 * pqxx::sql_error (sqlstate()) for server errors: 22023 for a key, TTL or
 * fingerprint the server refuses (a TTL above fence.max_lease_ttl), 42501
 * for a key owned by a role the caller is not a member of, 3F000 / 42883
 * when pg_fence (0.3 or later) is not installed, 25006 on a standby.
 */
class Once
{
public:
	using Status = OnceStatus;

	/**
	 * Calls fence.once_begin(key, ttl, fingerprint) and returns its answer;
	 * owns the key (and starts renewing it) when the answer is kNew.
	 * `conninfo`: a libpq connection string or URI ("" = the PG* variables);
	 * `key`: 1 to 1024 bytes (scope it by tenant or user in the text, e.g.
	 * "tenant-42:digest:2026-12-02"); `ttl`: the owner's lease, millisecond
	 * resolution, at least 3 ms, renewed every TTL/3 while owned (where the
	 * server has fence.once_renew: see the file comment);
	 * `fingerprint`: what identifies the request's content (e.g. a hash of
	 * its body), or std::nullopt.  A key begun with one fingerprint answers
	 * kMismatch to a begin with another (a NULL fingerprint on either side
	 * never mismatches: docs/once.md).  Throws as described for the class.
	 */
	static Once begin(const std::string &conninfo, const std::string &key,
					  std::chrono::milliseconds         ttl,
					  const std::optional<std::string> &fingerprint = std::nullopt,
					  OnceOptions                       options = {});

	/** Takes over `other` (its key, connection and renewer); `other` is left empty. */
	Once(Once &&other) noexcept;
	/** Ends this object's use of its key (as the destructor does), then takes over `other`. */
	Once &operator=(Once &&other) noexcept;
	Once(const Once &) = delete;
	Once &operator=(const Once &) = delete;

	/**
	 * An owner that did not finish() or release() and did not lose the key
	 * releases it (fence.once_release), so that the key can be begun again
	 * at once; errors are ignored (the key's lease then expires after the
	 * TTL).  Always stops the renewer and closes the connections.  Never
	 * throws.
	 */
	~Once();

	/** The answer of fence.once_begin. */
	Status status() const noexcept;

	/** The key (after --key-per etc. as begun); empty for a moved-from Once. */
	const std::string &key() const noexcept;

	/**
	 * kNew: the owner's fencing token (> 0), larger than every earlier
	 * owner's token of the key: present it with the owner's database
	 * writes (fence.fenced_update) so that a superseded owner's are
	 * rejected.  0 for any other status.
	 */
	std::int64_t token() const noexcept;

	/**
	 * kNew: the step the previous owner had reached (a takeover), or
	 * std::nullopt on first use; kInProgress: the current owner's step, if
	 * any; kDone and kMismatch: as the server answered (usually none).
	 */
	const std::optional<std::string> &step() const noexcept;

	/**
	 * kDone: the stored response (the jsonb finish() was given, as JSON
	 * text), or std::nullopt if it was finished without one; std::nullopt
	 * for the other statuses.
	 */
	const std::optional<std::string> &response() const noexcept;

	/**
	 * True while this object owns the key: kNew, neither finished nor
	 * released, and not lost (checked on the local clock at each call).
	 */
	bool owned() const noexcept;

	/**
	 * True once an owned key is lost: a renewal was refused (the key was
	 * taken over, or is no longer this token's) or rejected for good, the
	 * local deadline passed, or finish()/step() found the token
	 * superseded.  Stays true.  False for a Once that never owned its key.
	 */
	bool lost() const noexcept;

	/**
	 * Stops (stop_requested() true) when the owned key is lost, finished or
	 * released; always stopped for a Once that does not own its key.
	 */
	LossToken loss_token() const;

	/** The owner's current local deadline (lease.hpp); a default time_point when not owned. */
	std::chrono::steady_clock::time_point deadline() const noexcept;

	/**
	 * Records a recovery point, fence.once_step(key, token, step), on the
	 * Once's own connection (committed at once).  Returns true if recorded;
	 * false if the token no longer owns the key (taken over after an
	 * expiry, or finished/released): then lost() turns true.  Throws
	 * std::logic_error unless the Once is kNew and not finished or
	 * released; pqxx errors as begin().
	 */
	bool step(const std::string &name);

	/** The same in the caller's transaction `tx` (committed, or rolled back, with it). */
	bool step(pqxx::transaction_base &tx, const std::string &name);

	/**
	 * Finishes the key, fence.once_finish(key, token, response::jsonb), on
	 * the renewer's connection: `response` is JSON text (stored as jsonb,
	 * replayed by response() to later callers), or std::nullopt for none.
	 * The renewer is stopped first.  A lost connection or a transient error
	 * (a server restart) is retried on a new connection until the key's
	 * local deadline (deadline()), each retry reported to
	 * OnceOptions::on_retry.  Returns true if the key is done now;
	 * false if the token no longer owns it (a superseded owner: its effect
	 * must be considered done by someone else, or not at all): then
	 * lost() turns true.  Throws std::logic_error unless owned (or lost);
	 * pqxx::sql_error with SQLSTATE 22P02 for invalid JSON;
	 * pqxx::broken_connection (or the transient pqxx::sql_error) when the
	 * deadline passed first: lost() is then true, the key is neither
	 * finished nor renewed and is taken over after its TTL.
	 */
	bool finish(const std::optional<std::string> &response = std::nullopt);

	/**
	 * The same in the caller's transaction `tx`, so that the key is done if
	 * and only if the caller's own writes (made with token() through
	 * fence.fenced_update, say) commit.  From this call the key is no
	 * longer renewed: commit promptly.  If `tx` rolls back, the key stays
	 * owned by this token until its lease expires, and is then taken over
	 * (with its last step) by the next begin().
	 */
	bool finish(pqxx::transaction_base           &tx,
				const std::optional<std::string> &response = std::nullopt);

	/**
	 * Gives the key up unfinished, fence.once_release(key, token): the next
	 * begin() gets kNew at once (with a larger token and the step reached).
	 * Returns true if released; false if it was no longer this token's (or
	 * not owned, finished or released already).  Stops the renewer; retried
	 * on a new connection as finish() is, until the key's local deadline.
	 * Throws pqxx errors if the call still fails (the key then expires
	 * after its TTL).
	 */
	bool release();

private:
	explicit Once(std::unique_ptr<detail::OnceImpl> impl) noexcept;
	void Shutdown() noexcept;

	std::unique_ptr<detail::OnceImpl> impl_;
};

} // namespace fence
