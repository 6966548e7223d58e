/*-------------------------------------------------------------------------
 *
 * fence_check.hpp
 *	  The one fence check of every write path: the guard trigger's UPDATE,
 *	  DELETE and INSERT, the resource-mark check (marks_check.hpp),
 *	  fence.fenced_update and fence.advance (src/server/writes/fence_check.cpp).
 *
 * A write presents one token (presented_token.hpp) and meets one or more
 * fences: a guarded row's fence column, the marks of the resources it
 * writes, the row fence.fenced_update updates, a resource of fence.advance.
 * For each fence, CheckFence runs, in this order:
 *
 *	 0. no token: counted (missing_tokens) and FN003;
 *	 1. the issued check (FN004, tokens/issued_token.hpp), once per write:
 *		the first fence makes it and the next ones of the same write skip
 *		it (FencedWrite.issued_checked);
 *	 2. the fence rule (tokens/fence_rule.hpp), applied by the fence's own
 *		function: in C against the stored fence (the guard), under the
 *		mark's locks (a mark), or by the statement that writes (the WHERE
 *		of fenced_update's UPDATE, advance's ON CONFLICT DO UPDATE);
 *	 3. a refused write is reported: counted (stale_writes_rejected) and
 *		logged, ReportStaleWrite (observability/stats.hpp);
 *	 4. and raises FN001 (the guard) or makes the call return false
 *		(fenced_update, advance).
 *
 * A token is checked once per write.  fence.fenced_update on a guarded
 * table is one write seen twice: the function checks its token (1.) before
 * its UPDATE, whose rows the guard trigger then checks again with the same
 * token, pushed by fenced_update (presented_token.hpp) or carried in the
 * new fence value.  The guard recognises that token
 * (PresentedByRunningUpdate) and skips step 1: the check was made in this
 * statement, for this token, and a token once issued stays issued (the
 * bound only grows).  It still applies the rule (2.) to its own fence: the
 * guard's fence column may be another column than fenced_update's, and the
 * trigger cannot tell the row that the UPDATE's WHERE accepted from a row
 * that a trigger fired by the UPDATE writes with the same token, which
 * must meet its own fence.  For fenced_update's own row the rule always
 * holds there (the WHERE wrote only rows whose fence accepts the token), so
 * such a write is reported and refused at most once.
 *
 * PostgreSQL-style code (raises ERROR); runs inside fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/fence_check.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/fence_errors.hpp"
#include "pg/pg.hpp"
#include "writes/presented_token.hpp"

namespace fence {

/* One write's token, as CheckFence checks it against each fence it meets. */
struct FencedWrite
{
	const char   *presenter; /* FN004's "presented by": "a guarded UPDATE", "fence.advance"... */
	bool          presents;  /* false: the write presents no token (FN003) */
	int64         token;     /* when presents */
	NoTokenReason why_none;  /* when !presents */
	bool          issued_checked; /* step 1 is made (for this write, or by fenced_update) */
};

/* A write of a guard trigger, presenting p (TokenPresented). */
FencedWrite GuardedWrite(const PresentedToken &p, const char *presenter);

/* A write of a function that presents its token argument (fenced_update, advance). */
FencedWrite CallWrite(int64 token, const char *presenter);

/* What the fence rule made of a write. */
enum class FenceOutcome
{
	kAccepted,   /* the fence accepts the token (and the write went ahead) */
	kStale,      /* the fence refuses it: *current is the fence */
	kNotApplied, /* not applied for another reason, which the rule has reported */
};

/* A fence, and how a write meets it. */
struct Fence
{
	const char *path; /* ReportStaleWrite's where: "guard", "fenced_update", "advance" */
	bool        raise_when_stale; /* FN001 (the guard), or return false */
	/* Step 2: apply the fence rule to token (and write, where the writing statement applies it). */
	FenceOutcome (*apply)(const Fence *fence, int64 token, int64 *current);
	/*
	 * The refused write for the report and the errors (called only then):
	 * for the report, "table key", or key alone when table is nullptr.
	 */
	RefusedWrite (*describe)(const Fence *fence);
	void *state; /* the fence's own data, for apply and describe */
};

/*
 * Steps 0 to 4 above.  True iff the fence accepted the write; false for a
 * stale write of a fence that does not raise, or kNotApplied.
 */
bool CheckFence(FencedWrite *write, const Fence *fence);

} /* namespace fence */
