/*-------------------------------------------------------------------------
 *
 * election.hpp
 *	  fence::Election: leader election on pg_fence (fence.campaign /
 *	  fence.leader / fence.resign), and fence::LeaderWatch, which follows an
 *	  election's leader as it changes (LISTEN pg_fence).
 *
 * The model is etcd's election API (Campaign / Leader / Resign / Observe,
 * go.etcd.io/etcd/client/v3/concurrency): a leader is the holder of the
 * lease `name`; campaigning waits in the server until the candidate is
 * elected; each leadership has a term, a fencing token that beats every
 * earlier term's, so a deposed leader that has not noticed yet (a pause, a
 * partition) has its writes rejected by fence.fenced_update or a guarded
 * table (Kleppmann, "How to do distributed locking", 2016).  Present
 * term() with every write made as leader.
 *
 * The leadership is a fence::Lease (lease.hpp, LeaseOptions::campaign):
 * renewed every TTL/3 in the background, riding out reconnects and server
 * restarts until its local deadline, and reported lost on the client's
 * monotonic clock before the server could elect anyone else.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/pg_fence/election.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pg_fence/lease.hpp"
#include "pg_fence/loss.hpp"

namespace fence {

namespace detail {
struct LeaderWatchImpl;
} // namespace detail

/** An election's leader, as fence.leader(name) reports it (times are the server's clock). */
struct Leader
{
	/**
	 * The candidate ID the leader campaigned with; std::nullopt when the
	 * leadership is a lease acquired without a holder (fence.lease_acquire
	 * with holder NULL: fence.leader's candidate is NULL then).
	 */
	std::optional<std::string> candidate;
	/** Its term: the fencing token of this leadership (> 0). */
	std::int64_t term = 0;
	/** When it was elected. */
	std::chrono::system_clock::time_point elected_at;
	/** When its leadership expires unless renewed. */
	std::chrono::system_clock::time_point expires_at;
};

/**
 * Called with the leader each time a LeaderWatch sees it change: a new
 * term (someone elected), or std::nullopt (no leader: resigned, expired,
 * or released).  From the watch's thread; must return quickly, must not
 * destroy the LeaderWatch or Election that calls it, should not throw (an
 * exception is caught and ignored).
 */
using LeaderCallback = std::function<void(const std::optional<Leader> &leader)>;

/** What a LeaderWatch is told at construction; every field has a default. */
struct LeaderWatchOptions
{
	/** Limit on each connection attempt.  Must be positive.  Default 10 s. */
	std::chrono::milliseconds connect_timeout{10000};
	/**
	 * Called when the watch's connection failed and it connects again
	 * (after 50 ms, doubling up to 5 s), with a one-line message; changes
	 * are not missed meanwhile: after reconnecting the watch reads the
	 * leader again and reports it if it changed.  May be empty.
	 */
	RetryCallback on_retry;
};

/**
 * Follows the leader of one election on a connection of its own: LISTEN
 * pg_fence (the server notifies at commit every change of a lease's
 * holder: grant, takeover, resign, release; docs/elections.md, "Notifications").  An
 * election, a plain lease's grant (fence.lease_acquire: fence.leader()
 * reports its holder too) or a takeover is reported from the notification
 * itself, so a leader that resigns before anyone could read it is still
 * reported; a
 * resign or release reports "no leader"; and after each notification
 * about `name` the watch reads fence.leader(name) again, which also
 * covers what a notification cannot say.  An expiry without a takeover
 * sends nothing, so the watch also reads the leader once at the current
 * leader's expires_at (the "no leader" report comes then).  No polling
 * otherwise.  Each change of the (candidate, term) pair, including to and
 * from "no leader", is reported once, in order of terms; a notification
 * about a term older than one already reported is skipped.  While
 * reconnecting after a failure, changes are not seen; the read after
 * reconnecting reports the state then.  Needs the server setting
 * fence.notify = on (the default): with it off, only expiries are seen.
 *
 * Thread safety: leader() and changes() from any thread; the destructor
 * not from inside the callback.
 */
class LeaderWatch
{
public:
	/**
	 * Connects (`conninfo`: libpq connection string or URI; "" = PG*
	 * environment), LISTENs, reads the current leader and calls `on_change`
	 * with it once (from the watch's thread), then follows the changes.
	 * Errors: std::invalid_argument for a bad name (empty, > 1024 bytes) or
	 * option; pqxx::broken_connection when the first connection fails;
	 * pqxx::sql_error (sqlstate()) for server errors, e.g. 3F000 without
	 * the extension, 42883 when it has no fence.leader.  Later failures
	 * are retried (LeaderWatchOptions::on_retry), never thrown.
	 */
	LeaderWatch(const std::string &conninfo, const std::string &name, LeaderCallback on_change,
				LeaderWatchOptions options = {});
	/** Stops the thread and closes the connection; never throws. */
	~LeaderWatch();
	LeaderWatch(const LeaderWatch &) = delete;
	LeaderWatch &operator=(const LeaderWatch &) = delete;

	/** The leader as last observed (nullopt: none).  May throw std::bad_alloc. */
	std::optional<Leader> leader() const;

	/** How many times on_change has been called so far (the first report included). */
	std::uint64_t changes() const noexcept;

private:
	std::shared_ptr<detail::LeaderWatchImpl> impl_;
};

/** Called once when this candidate is elected, with its term, from the thread that called campaign(). */
using ElectedCallback = std::function<void(std::int64_t term)>;

/**
 * What an Election is told at construction; every field has a default.
 * The callbacks follow fence::LossCallback's rules (lease.hpp): quick, no
 * calls back into the Election, exceptions caught and ignored.
 */
struct ElectionOptions
{
	/** The candidate ID stored with the leadership (fence.leader's candidate); empty: "HOST:PID". */
	std::string candidate;
	/** See ElectedCallback; may be empty. */
	ElectedCallback on_elected;
	/**
	 * Leadership lost (not after resign()): fence::LossCallback's rules
	 * (lease.hpp), e.g. the renewal was refused because the term expired
	 * and another candidate was elected.  May be empty.
	 */
	LossCallback on_lost;
	/** Renewal failed but will be retried (fence::RetryCallback); may be empty. */
	RetryCallback on_retry;
	/**
	 * Non-empty: observe the election (a fence::LeaderWatch of its own,
	 * started by the constructor) and call this with every new leader
	 * observed, this candidate's own terms included.
	 */
	LeaderCallback on_leader;
	/** As in LeaseOptions (lease.hpp): connection limit, renew interval (0: TTL/3), safety margin. */
	std::chrono::milliseconds connect_timeout{10000};
	std::chrono::milliseconds renew_interval{0};
	std::chrono::milliseconds safety_margin{0};
};

/**
 * One candidate in the election `name`: campaign() until elected, lead
 * while is_leader(), and resign() (or destroy) to hand over.  RAII: the
 * destructor resigns a current leadership, so the next candidate is
 * elected at once rather than at the TTL's end.  At most one candidate
 * leads a name at a time, as at most one holder has a lease
 * (docs/guarantees.md, guarantee 1, as it applies to leases).
 *
 * Thread safety: is_leader(), lost(), term(), loss_token(), backend_pid(),
 * observed_leader() from any thread; campaign(), resign() and the
 * destructor from one thread at a time, never from a callback.
 */
class Election
{
public:
	/**
	 * Prepares a candidacy (nothing is sent yet, except that with
	 * ElectionOptions::on_leader the LeaderWatch connects now).  `ttl`:
	 * the leadership's time to live, millisecond resolution, at least
	 * 3 ms.  Errors: std::invalid_argument for a bad name, TTL or option;
	 * LeaderWatch's errors when observing.
	 */
	Election(std::string conninfo, std::string name, std::chrono::milliseconds ttl,
			 ElectionOptions options = {});
	/** Resigns if leader (errors ignored: the term then expires at its TTL), stops observing. */
	~Election();
	Election(const Election &) = delete;
	Election &operator=(const Election &) = delete;

	/**
	 * Campaigns: fence.campaign(name, candidate, ttl, wait), which waits in
	 * the server, without polling, up to `wait` (zero: not at all) while
	 * another candidate leads, and is woken as soon as that leader resigns
	 * or expires.  Returns true when elected (term() is the new term,
	 * on_elected has been called, the renewer runs), false when `wait`
	 * elapsed with another leader in office.  Already leader: returns true
	 * at once.  After a loss or a resign it campaigns again, for a new and
	 * higher term.  A connection lost, terminated or restarted while
	 * campaigning, or a cancel of the server-side wait by someone else, is
	 * retried with backoff (ElectionOptions::on_retry) until `wait` ends,
	 * as in fence::Lease::try_acquire_for.  The campaign's connections
	 * have the candidate as application_name unless the conninfo sets one.
	 * Errors as fence::Lease::try_acquire_for's:
	 * pqxx::broken_connection, pqxx::sql_error with sqlstate() (3F000 no
	 * extension, 42883 no fence.campaign, 22023 a TTL the server refuses,
	 * 25006 on a standby, 57014 cancelled).
	 */
	bool campaign(std::chrono::milliseconds wait);

	/**
	 * Ends the current term now (fence.resign(name, term)), so that a
	 * waiting candidate is elected at once.  True if the server ended it;
	 * false if this candidate was not leader (never elected, lost,
	 * already resigned).  Throws pqxx::broken_connection /
	 * pqxx::sql_error if the call fails (the term then expires at its TTL).
	 */
	bool resign();

	/** True while elected and neither lost nor resigned (checked on the local clock, as Lease::lost()). */
	bool is_leader() const noexcept;

	/** True once the current (or last) leadership was lost; false after resign(). */
	bool lost() const noexcept;

	/**
	 * The current or last term won by this candidate; 0 if never elected.
	 * A term is a fencing token: every later leader's term is larger
	 * (docs/guarantees.md, guarantee 2), so present it with every write
	 * made as leader.
	 */
	std::int64_t term() const noexcept;

	/** Stop flag of the current leadership (fence::LossToken); "stop requested" when not leader. */
	LossToken loss_token() const;

	/** Server process id of the leadership's renewal connection (0 when not leader). */
	int backend_pid() const noexcept;

	/** The election's name and this candidate's ID (ElectionOptions::candidate, or "HOST:PID"). */
	const std::string &name() const noexcept;
	const std::string &candidate() const noexcept;

	/**
	 * With ElectionOptions::on_leader: the leader last observed; otherwise
	 * nullopt.  May throw std::bad_alloc.
	 */
	std::optional<Leader> observed_leader() const;

private:
	std::shared_ptr<Lease> Current() const;

	std::string                  conninfo_;
	std::string                  name_;
	std::chrono::milliseconds    ttl_;
	ElectionOptions              options_;
	mutable std::mutex           mu_;    /* guards lease_ (the pointer) */
	std::shared_ptr<Lease>       lease_; /* the current or last leadership */
	std::atomic<bool>            resigned_{false};
	std::unique_ptr<LeaderWatch> watch_;
};

/**
 * fence.leader(name) on a short connection of its own (`conninfo`: libpq
 * connection string or URI; "" = PG* environment), bounded by 10 s: the
 * current unexpired leader, or std::nullopt when there is none.  Errors
 * as LeaderWatch's constructor.
 */
std::optional<Leader> current_leader(const std::string &conninfo, const std::string &name);

} // namespace fence
