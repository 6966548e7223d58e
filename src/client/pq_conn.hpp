/*-------------------------------------------------------------------------
 *
 * pq_conn.hpp
 *	  A libpq connection whose every wait is bounded by a deadline and can
 *	  be interrupted (not installed).  Used by fence::Lease, whose renewer
 *	  must never block past the lease's local deadline, nor keep release()
 *	  or the destructor waiting on a dead network, including while it
 *	  connects again.
 *
 * Everything runs on libpq's asynchronous API (PQconnectStart /
 * PQconnectPoll, PQsendQuery / PQconsumeInput) with poll(2) on the
 * connection's socket and on a caller's "stop" descriptor: when that
 * descriptor becomes readable, the wait ends at once with kStopped.  The
 * simple query protocol is used, so a call may hold several statements,
 * which then run in one implicit transaction in one round trip (PostgreSQL
 * docs, "Multiple Statements in a Simple Query"): SET LOCAL applies to the
 * statements after it.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/pq_conn.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

typedef struct pg_conn PGconn;

namespace fence::client_internal {

/* How a call ended. */
struct PqOutcome
{
	enum Kind
	{
		kOk,             /* done; `value` is set */
		kServerError,    /* the server raised an error (sqlstate, message) */
		kConnectionLost, /* could not connect, or the connection broke (message) */
		kDeadline,       /* the deadline passed first (the connection is closed) */
		kStopped,        /* the stop descriptor fired (the connection is closed) */
	};
	Kind        kind = kOk;
	std::string sqlstate; /* kServerError: the SQLSTATE; otherwise "" */
	std::string message;  /* one line: libpq's or the server's message */
	/* kOk: the first column of the last row returned (nullopt: NULL or no row). */
	std::optional<std::string> value;
	/* kOk, when Exec was asked for rows: every row of the last result, each column (nullopt: NULL). */
	std::vector<std::vector<std::optional<std::string>>> rows;

	bool
	ok() const
	{
		return kind == kOk;
	}
};

/*
 * True for errors after which the same call may succeed later: the
 * connection failed or the server could not serve it for now (class 08,
 * 57P01-57P05 shutdowns and recovery, 53 out of resources, 40001 / 40P01,
 * 55P03 lock not available, 57014 statement timeout or cancel, 25006 a
 * standby that is not promoted yet).
 */
bool IsTransient(const PqOutcome &outcome);

class PqConn
{
public:
	using Clock = std::chrono::steady_clock;

	PqConn() = default;
	~PqConn();
	PqConn(const PqConn &) = delete;
	PqConn &operator=(const PqConn &) = delete;

	/*
	 * Connects (closing any previous connection) with `conninfo` (libpq
	 * connection string or URI; "" = PG* environment).  kOk with an empty
	 * value, kConnectionLost with libpq's reason, kDeadline or kStopped.
	 * A non-empty `fallback_application_name` is the session's
	 * application_name unless conninfo or PGAPPNAME sets one.
	 */
	PqOutcome Connect(const std::string &conninfo, Clock::time_point deadline, int stop_fd,
					  const std::string &fallback_application_name = "");

	/*
	 * Runs `sql` (one or more statements, no parameters) and waits for
	 * every result.  On kDeadline and kStopped the connection is closed
	 * (a call still running on the server ends with its session, or, for
	 * a call waiting in the server, when the wait ends); on
	 * kConnectionLost it is closed too.  With `cancel_on_stop`, kStopped
	 * first sends the server a cancel request (PQcancel: one short
	 * connection, blocking), so that a call waiting in the server stops
	 * waiting at once.  With `keep_session_on_stop` (implies the cancel
	 * request), the stop descriptor instead sends the cancel request and
	 * then keeps reading the call's answer until `deadline`, on the same
	 * session: the call ends with its own result (57014 if the cancel
	 * stopped it, its rows if it had already finished), so nothing it was
	 * granted goes unseen and the session (and what it holds) survives.
	 * `want_rows`: fill PqOutcome::rows with the last result's rows.
	 */
	PqOutcome Exec(const std::string &sql, Clock::time_point deadline, int stop_fd,
				   bool cancel_on_stop = false, bool want_rows = false,
				   bool keep_session_on_stop = false);

	/*
	 * Waits until a notification arrives (after LISTEN), `deadline` or the
	 * stop descriptor, and appends the payloads of those received on
	 * `channel` to *payloads (notifications already read by Exec count
	 * too).  kOk (maybe with nothing appended, at the deadline),
	 * kConnectionLost (the connection is closed) or kStopped.
	 */
	PqOutcome WaitNotify(const std::string &channel, Clock::time_point deadline, int stop_fd,
						 std::vector<std::string> *payloads);

	/* A quoted SQL literal for `s` (PQescapeLiteral); needs a connection. */
	std::string Literal(const std::string &s) const;

	/* Exchanges the connections of two PqConns (fence::Worker's pool of heartbeat connections). */
	void
	Swap(PqConn &other) noexcept
	{
		PGconn *c = conn_;
		conn_ = other.conn_;
		other.conn_ = c;
	}

	bool connected() const;
	int  backend_pid() const;
	/* The connection's socket (PQsocket); -1 while not connected. */
	int socket() const;
	/*
	 * Reads what the server sent meanwhile (PQconsumeInput, never blocks);
	 * false, the connection closed, once the session is gone.
	 */
	bool Check();
	void Close();

private:
	enum class Wait
	{
		kReady,
		kDeadline,
		kStopped,
		kError
	};
	Wait WaitFor(bool for_write, Clock::time_point deadline, int stop_fd);

	PGconn *conn_ = nullptr;
};

} // namespace fence::client_internal
