/*-------------------------------------------------------------------------
 *
 * pq_conn.cpp
 *	  Deadline-bounded, interruptible libpq calls for the client library.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/pq_conn.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pq_conn.hpp"

#include <poll.h>

#include <cerrno>
#include <memory>
#include <stdexcept>

#include <libpq-fe.h>

#include "internal.hpp"

namespace fence::client_internal {

namespace {

/* The server's notices and warnings (e.g. "terminating connection due to
 * immediate shutdown command") are not the application's stderr's business:
 * the lease reports what matters through its callbacks. */
void
IgnoreNotice(void *, const char *)
{
}

PqOutcome
Fail(PqOutcome::Kind kind, std::string message)
{
	PqOutcome o;
	o.kind = kind;
	o.message = OneLine(std::move(message));
	return o;
}

} // namespace

bool
IsTransient(const PqOutcome &o)
{
	if (o.kind == PqOutcome::kConnectionLost)
		return true;
	if (o.kind != PqOutcome::kServerError)
		return false;
	const std::string &s = o.sqlstate;
	if (s.rfind("08", 0) == 0 || s.rfind("53", 0) == 0)
		return true;
	return s == "57P01" || s == "57P02" || s == "57P03" || s == "57P04" || s == "57P05" ||
		   s == "40001" || s == "40P01" || s == "55P03" || s == "57014" || s == "25006";
}

PqConn::~PqConn()
{
	Close();
}

void
PqConn::Close()
{
	if (conn_ != nullptr)
		PQfinish(conn_);
	conn_ = nullptr;
}

bool
PqConn::connected() const
{
	return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK;
}

int
PqConn::backend_pid() const
{
	return conn_ != nullptr ? PQbackendPID(conn_) : 0;
}

int
PqConn::socket() const
{
	return connected() ? PQsocket(conn_) : -1;
}

bool
PqConn::Check()
{
	if (!connected())
		return false;
	if (!PQconsumeInput(conn_) || PQstatus(conn_) != CONNECTION_OK)
	{
		Close();
		return false;
	}
	return true;
}

std::string
PqConn::Literal(const std::string &s) const
{
	char *q = PQescapeLiteral(conn_, s.data(), s.size());
	if (q == nullptr)
		throw std::invalid_argument("pg_fence: cannot quote a literal: " +
									OneLine(PQerrorMessage(conn_)));
	std::string out(q);
	PQfreemem(q);
	return out;
}

PqConn::Wait
PqConn::WaitFor(bool for_write, Clock::time_point deadline, int stop_fd)
{
	for (;;)
	{
		auto now = Clock::now();
		if (now >= deadline)
			return Wait::kDeadline;
		auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
		struct pollfd fds[2];
		fds[0].fd = PQsocket(conn_);
		fds[0].events = for_write ? POLLOUT : POLLIN;
		fds[0].revents = 0;
		fds[1].fd = stop_fd;
		fds[1].events = POLLIN;
		fds[1].revents = 0;
		if (fds[0].fd < 0)
			return Wait::kError;
		int n = ::poll(fds, stop_fd >= 0 ? 2 : 1, ms > 60000 ? 60000 : static_cast<int>(ms));
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return Wait::kError;
		}
		if (stop_fd >= 0 && (fds[1].revents & POLLIN))
			return Wait::kStopped;
		if (fds[0].revents != 0)
			return Wait::kReady; /* readable, writable, or an error libpq will report */
	}
}

PqOutcome
PqConn::Connect(const std::string &conninfo, Clock::time_point deadline, int stop_fd,
				const std::string &fallback_application_name)
{
	Close();
	/* fallback_application_name: used unless conninfo or PGAPPNAME sets one. */
	const char *keys[] = {"dbname", "fallback_application_name", nullptr};
	const char *vals[] = {
		conninfo.c_str(),
		fallback_application_name.empty() ? nullptr : fallback_application_name.c_str(), nullptr};
	/* expand_dbname: conninfo may be a connection string or a URI. */
	conn_ = PQconnectStartParams(keys, vals, 1);
	if (conn_ == nullptr)
		return Fail(PqOutcome::kConnectionLost, "out of memory allocating a connection");
	if (PQstatus(conn_) == CONNECTION_BAD)
	{
		PqOutcome o = Fail(PqOutcome::kConnectionLost, PQerrorMessage(conn_));
		Close();
		return o;
	}
	PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	for (;;)
	{
		if (st == PGRES_POLLING_OK)
			return PqOutcome{};
		if (st == PGRES_POLLING_FAILED)
		{
			PqOutcome o = Fail(PqOutcome::kConnectionLost, PQerrorMessage(conn_));
			Close();
			return o;
		}
		Wait w = WaitFor(st == PGRES_POLLING_WRITING, deadline, stop_fd);
		if (w == Wait::kDeadline || w == Wait::kStopped)
		{
			Close();
			return Fail(w == Wait::kDeadline ? PqOutcome::kDeadline : PqOutcome::kStopped,
						w == Wait::kDeadline ? "connection attempt did not finish in time"
											 : "connection attempt stopped");
		}
		st = PQconnectPoll(conn_);
	}
}

PqOutcome
PqConn::Exec(const std::string &sql, Clock::time_point deadline, int stop_fd, bool cancel_on_stop,
			 bool want_rows, bool keep_session_on_stop)
{
	if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK)
		return Fail(PqOutcome::kConnectionLost, "not connected");
	auto lost = [this](const char *what) {
		std::string msg = PQerrorMessage(conn_);
		PqOutcome   o = Fail(PqOutcome::kConnectionLost, msg.empty() ? what : msg);
		Close();
		return o;
	};
	if (!PQsendQuery(conn_, sql.c_str()))
		return lost("could not send the query");
	/* Small queries: PQsendQuery has written them unless the socket is full. */
	for (;;)
	{
		int f = PQflush(conn_);
		if (f == 0)
			break;
		if (f < 0)
			return lost("could not send the query");
		Wait w = WaitFor(true, deadline, keep_session_on_stop ? -1 : stop_fd);
		if (w != Wait::kReady)
		{
			Close();
			return Fail(w == Wait::kStopped ? PqOutcome::kStopped : PqOutcome::kDeadline,
						"the call did not finish in time");
		}
	}

	PqOutcome out;
	bool      have_error = false;
	for (;;)
	{
		while (PQisBusy(conn_))
		{
			Wait w = WaitFor(false, deadline, stop_fd);
			if (w == Wait::kStopped && keep_session_on_stop)
			{
				/* Cancel, then read the answer as usual: 57014, or the rows if it won the race. */
				if (PGcancel *c = PQgetCancel(conn_))
				{
					char err[256];
					PQcancel(c, err, sizeof err);
					PQfreeCancel(c);
				}
				stop_fd = -1;
				continue;
			}
			if (w == Wait::kDeadline || w == Wait::kStopped)
			{
				if (w == Wait::kStopped && cancel_on_stop)
				{
					if (PGcancel *c = PQgetCancel(conn_))
					{
						char err[256];
						PQcancel(c, err, sizeof err); /* best effort: the session ends anyway */
						PQfreeCancel(c);
					}
				}
				Close();
				return Fail(w == Wait::kStopped ? PqOutcome::kStopped : PqOutcome::kDeadline,
							w == Wait::kStopped ? "the call was stopped"
												: "the call did not finish in time");
			}
			if (!PQconsumeInput(conn_))
				return lost("lost the connection to the server");
		}
		std::unique_ptr<PGresult, void (*)(PGresult *)> res(PQgetResult(conn_), PQclear);
		if (!res)
			break;
		switch (PQresultStatus(res.get()))
		{
			case PGRES_TUPLES_OK:
				if (!have_error)
				{
					out.value.reset();
					if (PQntuples(res.get()) > 0 && PQnfields(res.get()) > 0 &&
						!PQgetisnull(res.get(), 0, 0))
						out.value = PQgetvalue(res.get(), 0, 0);
					if (want_rows)
					{
						out.rows.clear();
						for (int r = 0; r < PQntuples(res.get()); r++)
						{
							std::vector<std::optional<std::string>> row;
							for (int c = 0; c < PQnfields(res.get()); c++)
							{
								if (PQgetisnull(res.get(), r, c))
									row.emplace_back();
								else
									row.emplace_back(std::string(PQgetvalue(res.get(), r, c),
																 PQgetlength(res.get(), r, c)));
							}
							out.rows.push_back(std::move(row));
						}
					}
				}
				break;
			case PGRES_COMMAND_OK:
			case PGRES_EMPTY_QUERY:
				break;
			default:
				if (!have_error)
				{
					have_error = true;
					const char *state = PQresultErrorField(res.get(), PG_DIAG_SQLSTATE);
					const char *primary = PQresultErrorField(res.get(), PG_DIAG_MESSAGE_PRIMARY);
					out.kind = PqOutcome::kServerError;
					out.sqlstate = state != nullptr ? state : "";
					out.message =
						OneLine(primary != nullptr ? primary : PQresultErrorMessage(res.get()));
				}
				break;
		}
	}
	if (PQstatus(conn_) != CONNECTION_OK)
	{
		/* A FATAL error (terminated backend) arrives as a result, then EOF. */
		PqOutcome o = lost("lost the connection to the server");
		if (have_error && !out.message.empty())
			o.message = out.message;
		return o;
	}
	return out;
}

PqOutcome
PqConn::WaitNotify(const std::string &channel, Clock::time_point deadline, int stop_fd,
				   std::vector<std::string> *payloads)
{
	if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK)
		return Fail(PqOutcome::kConnectionLost, "not connected");
	bool waited = false;
	for (;;)
	{
		if (!PQconsumeInput(conn_))
		{
			PqOutcome o = Fail(PqOutcome::kConnectionLost, PQerrorMessage(conn_));
			Close();
			return o;
		}
		bool got = false;
		while (PGnotify *n = PQnotifies(conn_))
		{
			if (channel == n->relname)
			{
				payloads->emplace_back(n->extra != nullptr ? n->extra : "");
				got = true;
			}
			PQfreemem(n);
		}
		if (got || (waited && Clock::now() >= deadline))
			return PqOutcome{};
		Wait w = WaitFor(false, deadline, stop_fd);
		if (w == Wait::kStopped)
			return Fail(PqOutcome::kStopped, "stopped");
		if (w == Wait::kDeadline)
			return PqOutcome{};
		if (w == Wait::kError)
		{
			Close();
			return Fail(PqOutcome::kConnectionLost, "lost the connection to the server");
		}
		waited = true;
	}
}

} // namespace fence::client_internal
