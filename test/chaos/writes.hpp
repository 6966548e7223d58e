/*-------------------------------------------------------------------------
 *
 * writes.hpp
 *	  The chaos worker's four ways of writing a resource with a token
 *	  (worker.cpp), each one applied write leaving its row in chaos.audit
 *	  (schema.sql) in the same transaction:
 *
 *   guarded  SET LOCAL fence.token; UPDATE chaos.guarded ...
 *   fu       fence.fenced_update(chaos.fu, ..., allow_equal => true)
 *   ledger   SET LOCAL fence.token; INSERT INTO chaos.ledger ... (guarded
 *            with resource_columns)
 *   advance  fence.advance('chaos/<resource>', token); the audit row
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/writes.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_WRITES_HPP
#define PG_FENCE_CHAOS_WRITES_HPP

#include "pq.hpp"

#include <string>

namespace chaos {

const char *const kTargets[] = {"guarded", "fu", "ledger", "advance"};

/*
 * The statements of one write (target, resource, token, unique op id),
 * inside an open transaction; seq is fu's new value.  Returns "applied"
 * (not yet committed), "stale", "notoken" or "error"; a lost connection is
 * "error" here: without COMMIT nothing was applied.
 */
inline std::string
WriteBody(Conn &c, const std::string &target, const std::string &res, int64_t token,
		  const std::string &op, long seq)
{
	std::string t = std::to_string(token);
	Reply       r;
	if (target == "guarded" || target == "ledger")
	{
		r = c.Exec("SET LOCAL fence.token = " + t);
		if (r.ok)
			r = c.Exec(target == "guarded" ? "UPDATE chaos.guarded SET val = val + 1, op = '" + op +
												 "' WHERE id = '" + res + "'"
										   : "INSERT INTO chaos.ledger (stream, op) VALUES ('" +
												 res + "', '" + op + "')");
		if (r.ok)
			return r.status == "UPDATE 1" || r.status == "INSERT 0 1" ? "applied" : "error";
	}
	else if (target == "fu")
	{
		r = c.Exec("SELECT fence.fenced_update('chaos.fu', '{\"id\": \"" + res + "\"}', " + t +
				   ", '{\"val\": " + std::to_string(seq) + ", \"op\": \"" + op +
				   "\"}', allow_equal => true)");
		if (r.ok)
			return r.value == "t" ? "applied" : "stale";
	}
	else
	{
		r = c.Exec("SELECT fence.advance('chaos/" + res + "', " + t + ")");
		if (r.ok && r.value != "t")
			return "stale";
		if (r.ok)
			r = c.Exec("INSERT INTO chaos.audit (target, resource, token, op) VALUES "
					   "('advance', '" +
					   res + "', " + t + ", '" + op + "')");
		if (r.ok)
			return "applied";
	}
	if (r.sqlstate == "FN001")
		return "stale";
	if (r.sqlstate == "FN003")
		return "notoken";
	return "error";
}

/* COMMIT of a transaction whose writes applied: applied, unknown or error. */
inline std::string
Commit(Conn &c)
{
	Reply r = c.Exec("COMMIT");
	if (r.ok)
		return r.status == "COMMIT" ? "applied" : "error";
	return r.lost ? "unknown" : "error";
}

} // namespace chaos

#endif /* PG_FENCE_CHAOS_WRITES_HPP */
