/*-------------------------------------------------------------------------
 *
 * fence_errors.cpp
 *	  The errors of pg_fence's own SQLSTATEs, each worded here once (see
 *	  fence_errors.hpp).
 *
 * PostgreSQL-style code: trivially destructible locals only.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/fence_errors.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/fence_errors.hpp"

namespace fence {

namespace {

/* "row" or "resource": what the key in a message names. */
const char *
KeyNoun(FenceKind kind)
{
	return kind == FenceKind::kRow ? "row" : "resource";
}

/* FN003's detail: why the write presents no token. */
int
NoTokenDetail(const RefusedWrite &w, NoTokenReason why)
{
	switch (why)
	{
		case NoTokenReason::kSetInEarlierTransaction:
			return errdetail(
				"fence.token was set in an earlier transaction; it counts only in the transaction that set it.");
		case NoTokenReason::kUpdateSetsFenceNull:
			return errdetail(
				"The UPDATE sets the fence column \"%s\" to NULL, which presents no token, and fence.token is not set in this transaction.",
				w.fence_column);
		case NoTokenReason::kUpdateLeavesFence:
			return errdetail(
				"The UPDATE leaves the fence column \"%s\" unchanged and fence.token is not set in this transaction.",
				w.fence_column);
		case NoTokenReason::kInsertFenceNull:
		case NoTokenReason::kInsertFenceZero:
			return errdetail(
				"The new row's fence column \"%s\" is %s, which presents no token, and fence.token is not set in this transaction.",
				w.fence_column, why == NoTokenReason::kInsertFenceNull ? "NULL" : "0");
		case NoTokenReason::kDeleteWithoutSetting:
			break;
	}
	return errdetail("fence.token is not set in this transaction.");
}

/* FN003's hint: where the write can present its token. */
int
NoTokenHint(const RefusedWrite &w)
{
	if (strcmp(w.op, "UPDATE") == 0)
		return errhint(
			"Set the fence column \"%s\" to the token in the UPDATE, or run SET LOCAL fence.token = <token> in the same transaction.",
			w.fence_column);
	if (strcmp(w.op, "INSERT") == 0)
		return errhint(
			"Put the token into the fence column \"%s\" of the new row, or run SET LOCAL fence.token = <token> in the same transaction.",
			w.fence_column);
	return errhint(
		"Run SET LOCAL fence.token = <token> in the same transaction before the DELETE.");
}

} /* namespace */

void
RaiseStaleCompletion(int64 job_id, int64 presented, int64 current, const char *state)
{
	ereport(ERROR,
			(errcode(ERRCODE_FENCE_STALE_TOKEN),
			 errmsg("stale fencing token: job " INT64_FORMAT
					" is not claimed under token " INT64_FORMAT,
					job_id, presented),
			 current == 0
				 ? errdetail("The job is %s and has never been claimed.", state)
				 : errdetail("The job is %s; its current claim's token is " INT64_FORMAT ".", state,
							 current),
			 errhint("The claim was rescued (it expired or its session ended), cancelled or "
					 "finished: this worker must stop, and whatever it wrote in this transaction "
					 "is rolled back with the error.")));
}

void
RaiseStaleToken(const RefusedWrite &w, int64 presented, int64 current)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_STALE_TOKEN),
		 errmsg("fencing token " INT64_FORMAT " is older than the fence " INT64_FORMAT
				" of %s %s in table %s",
				presented, current, KeyNoun(w.kind), w.key, w.table),
		 w.kind == FenceKind::kRow
			 ? errdetail(
				   "The %s was rejected: a guarded row accepts only writes whose token is not lower than its fence, and a newer lock holder has written it.",
				   w.op)
			 : errdetail(
				   "The %s was rejected: a table guarded with resource columns accepts a write of a resource only with a token not lower than the highest that has written a row of it, and a newer lock holder has.",
				   w.op),
		 w.kind == FenceKind::kRow
			 ? errhint(
				   "Acquire the lock again to obtain a new fencing token, then re-read the row.")
			 : errhint("Acquire the lock again to obtain a new fencing token.")));
	pg_unreachable();
}

void
RaiseNoToken(const RefusedWrite &w, NoTokenReason why)
{
	ereport(ERROR, (errcode(ERRCODE_FENCE_NO_TOKEN),
					errmsg("no fencing token presented for %s of %s %s in table %s", w.op,
						   KeyNoun(w.kind), w.key, w.table),
					NoTokenDetail(w, why), NoTokenHint(w)));
	pg_unreachable();
}

void
RaiseNonPositiveToken(int64 token, const char *presenter)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_TOKEN_NOT_ISSUED),
		 errmsg("fencing token " INT64_FORMAT " was never issued", token),
		 errdetail(
			 "It was presented by %s. Fencing tokens are greater than zero: zero or a negative number is never a lock holder's token.",
			 presenter),
		 errhint("Present the token returned by a lock or lease function.")));
	pg_unreachable();
}

void
RaiseTokenNotIssued(int64 token, const char *presenter, int64 highest)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_TOKEN_NOT_ISSUED),
		 errmsg("fencing token " INT64_FORMAT " was never issued by this database", token),
		 errdetail(
			 "It was presented by %s. The highest token this database has issued is " INT64_FORMAT
			 "; a fence that stored a higher one would refuse every later holder.",
			 presenter, highest),
		 errhint(
			 "Present the token returned by a lock or lease function of this database. If this resource is fenced with tokens issued by another database, a superuser can turn off fence.require_issued_tokens.")));
	pg_unreachable();
}

} /* namespace fence */
