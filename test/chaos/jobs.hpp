/*-------------------------------------------------------------------------
 *
 * jobs.hpp
 *	  The chaos worker's statements for the job queue and idempotency keys
 *	  (worker.cpp): a job's effect written with its claim's token and the
 *	  completion in one transaction, and a key's effect written with its
 *	  owner's token together with the recovery point that says it was done.
 *
 *   job effect   guard  SET LOCAL fence.token; INSERT INTO chaos.job_effects
 *                       (fenced per job by the guard's insert marks)
 *                fu     fence.fenced_update(chaos.job_rows, job's row)
 *                then fence.complete(job, token) in the same transaction
 *   key effect   SET LOCAL fence.token; INSERT INTO chaos.once_effects
 *                (fenced per key), then fence.once_step(key, token,
 *                'effect'): rolled back unless it returned true
 *
 * Every applied effect leaves a row in chaos.job_effect_audit or is a row
 * of chaos.once_effects (schema.sql), committed with it.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  test/chaos/jobs.hpp
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FENCE_CHAOS_JOBS_HPP
#define PG_FENCE_CHAOS_JOBS_HPP

#include "pq.hpp"
#include "writes.hpp"

#include <string>

namespace chaos {

/* The chaos test's one queue. */
const char *const kQueue = "chaos";

/*
 * The outcome of a statement that failed inside a job's or a key's
 * transaction: stale (FN001: the token was superseded), or error.
 */
inline std::string
Refusal(const Reply &r)
{
	if (r.sqlstate == "FN001")
		return "stale";
	if (r.sqlstate == "FN003")
		return "notoken";
	return "error";
}

/*
 * Writes job_id's effect (target guard or fu) with the claim's token and
 * completes the job in the same transaction, on c.  Returns applied
 * (committed), stale (FN001 from the effect or the completion: rolled
 * back), false (complete returned false: rolled back), unknown (the
 * connection was lost at COMMIT) or error.
 */
inline std::string
EffectAndComplete(Conn &c, const std::string &target, const std::string &job_id, int64_t token,
				  const std::string &op)
{
	std::string t = std::to_string(token);
	Reply       r = c.Exec("BEGIN");
	if (r.lost && c.Ensure())
		r = c.Exec("BEGIN");
	if (!r.ok)
		return "error";
	if (target == "guard")
	{
		r = c.Exec("SET LOCAL fence.token = " + t);
		if (r.ok)
			r = c.Exec("INSERT INTO chaos.job_effects (job_id, op) VALUES (" + job_id + ", '" + op +
					   "')");
	}
	else
	{
		r = c.Exec("SELECT fence.fenced_update('chaos.job_rows', '{\"job_id\": " + job_id + "}', " +
				   t + ", '{\"op\": \"" + op + "\"}')");
		if (r.ok && r.value != "t")
		{
			c.Rollback();
			return "stale";
		}
	}
	if (r.ok)
		r = c.Exec("SELECT fence.complete(" + job_id + ", " + t + ", '{\"op\": \"" + op + "\"}')");
	if (!r.ok)
	{
		c.Rollback();
		return r.lost ? "error" : Refusal(r);
	}
	if (r.value != "t")
	{
		c.Rollback();
		return "false";
	}
	return Commit(c);
}

/*
 * A key's effect with its owner's token, and the recovery point 'effect'
 * in the same transaction.  Returns applied, stale (FN001 from the guard:
 * a newer owner wrote), false (once_step said the token no longer owns
 * the key: rolled back), unknown or error.
 */
inline std::string
KeyEffect(Conn &c, const std::string &key, int64_t token, const std::string &op)
{
	std::string t = std::to_string(token);
	Reply       r = c.Exec("BEGIN");
	if (r.lost && c.Ensure())
		r = c.Exec("BEGIN");
	if (!r.ok)
		return "error";
	r = c.Exec("SET LOCAL fence.token = " + t);
	if (r.ok)
		r = c.Exec("INSERT INTO chaos.once_effects (key, op) VALUES ('" + key + "', '" + op + "')");
	if (r.ok)
		r = c.Exec("SELECT fence.once_step('" + key + "', " + t + ", 'effect')");
	if (!r.ok)
	{
		c.Rollback();
		return r.lost ? "error" : Refusal(r);
	}
	if (r.value != "t")
	{
		c.Rollback();
		return "false";
	}
	return Commit(c);
}

} // namespace chaos

#endif /* PG_FENCE_CHAOS_JOBS_HPP */
