/*-------------------------------------------------------------------------
 *
 * pq.hpp
 *	  The chaos worker's thin libpq layer: one connection that reconnects
 *	  (through a multi-host conninfo with target_session_attrs=read-write,
 *	  so it finds whichever node is primary now), and one statement's result
 *	  classified the way the history needs it.
 *
 * libpq directly, not libpqxx: the worker must tell "the server said no"
 * (an SQLSTATE: the statement did not apply) from "the connection was lost"
 * (the outcome of a COMMIT in flight is unknown), which a C API shows most
 * plainly.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/pq.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_PQ_HPP
#define PG_FENCE_CHAOS_PQ_HPP

#include <libpq-fe.h>

#include <chrono>
#include <string>
#include <thread>

namespace chaos {

inline int64_t
NowMicros()
{
	using namespace std::chrono;
	return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

/* What one statement did. */
struct Reply
{
	bool        ok = false;   /* the server ran it */
	bool        lost = false; /* the connection broke: no answer */
	std::string sqlstate;     /* when !ok and !lost */
	std::string message;
	std::string value;  /* first column of the first row ("" for NULL) */
	std::string value2; /* its second column, if any */
	std::string value3; /* its third column, if any */
	bool        null = true;
	std::string status; /* command status ("COMMIT", "UPDATE 1"...) */
};

class Conn
{
public:
	explicit Conn(std::string conninfo) : conninfo_(std::move(conninfo)) {}
	~Conn() { Close(); }
	Conn(const Conn &) = delete;
	Conn &operator=(const Conn &) = delete;

	/* Connects if not connected; false if it could not (try again later). */
	bool
	Ensure()
	{
		if (conn_ && PQstatus(conn_) == CONNECTION_OK)
			return true;
		Close();
		conn_ = PQconnectdb(conninfo_.c_str());
		if (PQstatus(conn_) != CONNECTION_OK)
		{
			Close();
			return false;
		}
		PQsetNoticeProcessor(
			conn_, [](void *, const char *) {}, nullptr);
		return true;
	}

	void
	Close()
	{
		if (conn_)
			PQfinish(conn_);
		conn_ = nullptr;
	}

	/* Backend pid of the current connection (0 when none). */
	int
	Pid() const
	{
		return conn_ ? PQbackendPID(conn_) : 0;
	}

	Reply
	Exec(const std::string &sql)
	{
		Reply r;
		if (!conn_)
		{
			r.lost = true;
			return r;
		}
		PGresult      *res = PQexec(conn_, sql.c_str());
		ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
		if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		{
			r.ok = true;
			r.status = PQcmdStatus(res);
			if (st == PGRES_TUPLES_OK && PQntuples(res) > 0 && PQnfields(res) > 0)
			{
				r.null = PQgetisnull(res, 0, 0);
				r.value = r.null ? "" : PQgetvalue(res, 0, 0);
				if (PQnfields(res) > 1)
					r.value2 = PQgetvalue(res, 0, 1);
				if (PQnfields(res) > 2)
					r.value3 = PQgetvalue(res, 0, 2);
			}
		}
		else
		{
			const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
			r.sqlstate = state ? state : "";
			r.message = PQerrorMessage(conn_);
			/* Lost: libpq says so, or the server ended the session. */
			r.lost = PQstatus(conn_) != CONNECTION_OK || r.sqlstate.empty() ||
					 r.sqlstate.compare(0, 2, "08") == 0 || r.sqlstate.compare(0, 3, "57P") == 0;
		}
		if (res)
			PQclear(res);
		if (r.lost)
			Close();
		return r;
	}

	/* Ends an open (possibly failed) transaction; ignores the result. */
	void
	Rollback()
	{
		if (conn_ && PQtransactionStatus(conn_) != PQTRANS_IDLE)
			Exec("ROLLBACK");
	}

private:
	std::string conninfo_;
	PGconn     *conn_ = nullptr;
};

} // namespace chaos

#endif /* PG_FENCE_CHAOS_PQ_HPP */
