/*-------------------------------------------------------------------------
 *
 * burst.hpp
 *	  chaos_worker --burst: the nemesis' token burst (nemesis.sh, an
 *	  asynchronous failover).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/burst.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_BURST_HPP
#define PG_FENCE_CHAOS_BURST_HPP

#include "history.hpp"
#include "pq.hpp"

#include <cstdio>
#include <string>

namespace chaos {

/*
 * --burst N: one transaction that takes N xact locks (chaos/burst/1..N) in
 * one statement and records every token it saw as a grant of worker
 * "burst".  The nemesis runs it while an asynchronous standby lags before
 * a failover: N above the token allocator's chunk (4096) makes the primary
 * log a new ceiling the standby never receives, so a promoted server that
 * only continued the token sequence would hand these tokens out again.
 */
inline int
Burst(const std::string &conninfo, int n, FILE *out)
{
	PGconn *c = PQconnectdb(conninfo.c_str());
	if (PQstatus(c) != CONNECTION_OK)
	{
		PQfinish(c);
		return 1;
	}
	Event e;
	e.type = "grant";
	e.kind = "xact";
	e.worker = "burst";
	e.invoke = NowMicros();
	PQclear(PQexec(c, "BEGIN"));
	std::string sql = "SELECT i, fence.try_xact_lock('chaos/burst/' || i) FROM "
					  "pg_catalog.generate_series(1, " +
					  std::to_string(n) + ") AS i";
	PGresult *res = PQexec(c, sql.c_str());
	e.complete = NowMicros();
	int rc = 1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
	{
		for (int i = 0; i < PQntuples(res); i++)
		{
			e.name = std::string("chaos/burst/") + PQgetvalue(res, i, 0);
			e.token = std::stoll(PQgetvalue(res, i, 1));
			WriteEvent(out, e);
		}
		rc = 0;
	}
	PQclear(res);
	PQclear(PQexec(c, "COMMIT"));
	PQfinish(c);
	return rc;
}

} // namespace chaos

#endif /* PG_FENCE_CHAOS_BURST_HPP */
