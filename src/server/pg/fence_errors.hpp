/*-------------------------------------------------------------------------
 *
 * fence_errors.hpp
 *	  pg_fence's own SQLSTATEs (class FN) and the wording of the errors
 *	  that raise them, each written once (fence_errors.cpp).
 *
 *	  FN001  stale fencing token: a fence refused a write whose token is
 *	         lower than the fence (RaiseStaleToken); a job completed with
 *	         a token that is not its current claim's (RaiseStaleCompletion)
 *	  FN002  lock not held: reserved for an operation that needs a lock
 *	         the caller does not hold; no function raises it today
 *	         (fence.unlock, lease_renew and lease_release return false)
 *	  FN003  no fencing token presented: a guarded write presented none
 *	         (RaiseNoToken)
 *	  FN004  token never issued: zero, a negative number, or a token
 *	         higher than every token this database has issued
 *	         (RaiseNonPositiveToken, RaiseTokenNotIssued)
 *
 * The documentation's SQLSTATEs table says which call raises which.  The
 * write paths reach FN001, FN003 and FN004 through one check
 * (writes/fence_check.hpp), which counts and logs a refusal before it
 * raises.
 *
 * PostgreSQL-style code: the Raise* functions raise ERROR (longjmp); call
 * them where no C++ object is alive.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/fence_errors.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

#define ERRCODE_FENCE_STALE_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '1')
#define ERRCODE_FENCE_LOCK_NOT_HELD MAKE_SQLSTATE('F', 'N', '0', '0', '2')
#define ERRCODE_FENCE_NO_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '3')
#define ERRCODE_FENCE_TOKEN_NOT_ISSUED MAKE_SQLSTATE('F', 'N', '0', '0', '4')

namespace fence {

/* Which fence a guarded write met: the wording of FN001's and FN003's detail. */
enum class FenceKind
{
	kRow,          /* a guarded row's fence column */
	kResourceMark, /* the mark of a resource (a table guarded with resource columns) */
	kResource,     /* a resource of fence.advance (which returns false, raises nothing) */
};

/* A refused guarded write, as the messages name it. */
struct RefusedWrite
{
	FenceKind   kind;
	const char *op;    /* "UPDATE", "DELETE" or "INSERT" */
	const char *key;   /* the row's key "(id)=(42)" or resource "(stream)=(orders)", clipped */
	const char *table; /* "schema.table", quoted as needed */
	const char *fence_column; /* the guard's fence column */
};

/* Why a guarded write presents no token (FN003's detail). */
enum class NoTokenReason
{
	kSetInEarlierTransaction, /* fence.token was set, but not in this transaction */
	kDeleteWithoutSetting,    /* a DELETE, fence.token not set */
	kUpdateLeavesFence,       /* an UPDATE leaves the fence column as it is */
	kUpdateSetsFenceNull,     /* an UPDATE sets a non-NULL fence to NULL */
	kInsertFenceNull,         /* an INSERT's new row has a NULL fence */
	kInsertFenceZero,         /* an INSERT's new row has the fence 0 */
};

/* FN001: the write's token `presented` is lower than the fence `current`. */
[[noreturn]] void RaiseStaleToken(const RefusedWrite &w, int64 presented, int64 current);

/*
 * FN001: fence.complete of job `job_id` with token `presented`, which is not
 * its current claim's (the job's token is `current`, 0 if never claimed,
 * and its state `state`).
 */
[[noreturn]] void RaiseStaleCompletion(int64 job_id, int64 presented, int64 current,
									   const char *state);

/* FN003: the write presented no token. */
[[noreturn]] void RaiseNoToken(const RefusedWrite &w, NoTokenReason why);

/*
 * FN004: token is zero or negative, never a holder's token.  presenter
 * names who presented it: "fence.fenced_update", "a guarded UPDATE"...
 */
[[noreturn]] void RaiseNonPositiveToken(int64 token, const char *presenter);

/* FN004: token is higher than highest, the highest token this database has issued. */
[[noreturn]] void RaiseTokenNotIssued(int64 token, const char *presenter, int64 highest);

} /* namespace fence */
