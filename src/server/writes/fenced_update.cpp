/*-------------------------------------------------------------------------
 *
 * fenced_update.cpp
 *	  fence.fenced_update: an UPDATE of one row that is applied only when the
 *	  presented fencing token beats the row's stored fence.
 *
 *	  fence.fenced_update(rel regclass, key jsonb, token bigint, changes jsonb,
 *						  fence_column name DEFAULT 'fence',
 *						  allow_equal boolean DEFAULT false,
 *						  expect_fence bigint DEFAULT NULL) RETURNS boolean
 *
 * refuses a token this database never issued (FN004, through the one fence
 * check of the write paths, CheckFence, fence_check.hpp) and runs, as the
 * caller (SECURITY INVOKER: privileges and row-level security
 * apply), the one statement
 *
 *	  UPDATE rel SET <changes>, fence_column = token
 *	   WHERE <key> AND fence_column < token		(<= with allow_equal)
 *		 [AND fence_column = expect_fence]		(with expect_fence)
 *
 * (its fence condition is the fence rule, src/server/tokens/fence_rule.hpp)
 * with the token also presented to guard triggers for the duration of the
 * UPDATE (PushPresentedToken; see RunUpdate),
 * and returns true if it updated the row, false if the row exists but its
 * fence is too high (a stale token: reported through ReportStaleWrite) or,
 * with expect_fence, its fence accepts the token but is no longer the one
 * the caller read (a lost race: its own LOG line, ReportLostRace).  It
 * raises P0002 when no row (visible to the caller) matches key and 21000
 * when key matches more than one row; the error undoes the UPDATE.
 *
 * The call runs in steps (FencedUpdate, at the end of this file): read the
 * arguments and look up what they name (fenced_update_columns.cpp), get the
 * prepared statements for the call's shape (fenced_update_plan.cpp),
 * convert the values into parameters, run the UPDATE, and check its
 * outcome.  A second prepared statement, SELECT fence_column FROM rel WHERE
 * <key> LIMIT 2, runs only when the UPDATE did not apply (missing vs
 * stale), or after a one-row UPDATE when the key columns are not provably
 * unique.
 *
 * Locks taken: those of the UPDATE (RowExclusiveLock on rel, the row lock
 * on the updated row; a concurrent writer of the same row waits for it and
 * then re-checks the fence against the committed row) and of the SELECT.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals, so PostgreSQL errors may longjmp through them; the
 * SQL entry point runs it through fence::Entry (see boundary.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/fenced_update.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/fenced_update.hpp"

#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/messages.hpp"
#include "tokens/fence_rule.hpp"
#include "writes/fence_check.hpp"
#include "writes/presented_token.hpp"

namespace fence {

namespace {

/* Argument positions of fence.fenced_update. */
constexpr int kArgRel = 0;
constexpr int kArgKey = 1;
constexpr int kArgToken = 2;
constexpr int kArgChanges = 3;
constexpr int kArgFenceColumn = 4;
constexpr int kArgAllowEqual = 5;
constexpr int kArgExpectFence = 6; /* 0.2.0; the 0.1.0 function has 6 arguments */

/*
 * The arguments (none may be NULL but expect_fence, NULL meaning "not
 * given") and what they name in the catalog (ReadRequest,
 * fenced_update_columns.cpp).
 */
void
ReadArguments(FunctionCallInfo fcinfo, UpdateRequest *req, Jsonb **key, int64 *token, int64 *expect)
{
	RequireArg(fcinfo, kArgRel, "rel");
	RequireArg(fcinfo, kArgKey, "key");
	RequireArg(fcinfo, kArgToken, "token");
	RequireArg(fcinfo, kArgChanges, "changes");
	RequireArg(fcinfo, kArgFenceColumn, "fence_column");
	RequireArg(fcinfo, kArgAllowEqual, "allow_equal");

	Oid    relid = PG_GETARG_OID(kArgRel);
	Jsonb *changes = PG_GETARG_JSONB_P(kArgChanges);
	Name   fence_name = PG_GETARG_NAME(kArgFenceColumn);
	bool   allow_equal = PG_GETARG_BOOL(kArgAllowEqual);

	*key = PG_GETARG_JSONB_P(kArgKey);
	*token = PG_GETARG_INT64(kArgToken);
	ReadRequest(relid, *key, changes, NameStr(*fence_name), allow_equal, req);
	req->has_expect = PG_NARGS() > kArgExpectFence && !PG_ARGISNULL(kArgExpectFence);
	*expect = req->has_expect ? PG_GETARG_INT64(kArgExpectFence) : 0;
}

/*
 * The parameter values for the statements of e (palloc'd arrays): the
 * changes, the token, the key values, each converted to its column's type,
 * and the expected fence.
 */
void
BindParameters(PlanEntry *e, const UpdateRequest *req, int64 token, int64 expect,
			   Datum **values_out, char **nulls_out)
{
	Datum *values = (Datum *) palloc(sizeof(Datum) * e->nparams);
	char  *nulls = (char *) palloc(sizeof(char) * e->nparams);

	for (int i = 0; i < req->nchanges; i++)
	{
		int p = ChangeParam(i);

		ConvertValue(&e->params[p], &req->changes[i], &values[p], &nulls[p]);
	}
	values[TokenParam(e->nchanges)] = Int64GetDatum(token);
	nulls[TokenParam(e->nchanges)] = ' ';
	for (int i = 0; i < req->nkeys; i++)
	{
		int p = KeyParam(e->nchanges, i);

		ConvertValue(&e->params[p], &req->keys[i], &values[p], &nulls[p]);
	}
	if (e->has_expect)
	{
		values[ExpectParam(e->nchanges, e->nkeys)] = Int64GetDatum(expect);
		nulls[ExpectParam(e->nchanges, e->nkeys)] = ' ';
	}
	*values_out = values;
	*nulls_out = nulls;
}

/* Run the UPDATE of e; returns the number of rows it updated. */
uint64
RunUpdate(PlanEntry *e, int64 token, Datum *values, char *nulls)
{
	/*
	 * Present the token to guard triggers (fence.guard) for the duration of
	 * the UPDATE, as if fence.token were set, wherever the new row cannot
	 * carry it: with allow_equal, a row already fenced at token keeps its
	 * fence value; an UPDATE that moves a row to another partition runs as a
	 * DELETE of the old row (which fires the BEFORE DELETE trigger) and an
	 * INSERT.  Writes made by triggers fired by the UPDATE see it too: they
	 * write on behalf of the same holder.  The caller's fence.token is not
	 * touched.
	 */
	volatile PushedToken previous = PushPresentedToken(token);
	volatile int         rc = 0;

	PG_TRY();
	{
		rc = SPI_execute_plan(e->update_plan, values, nulls, false, 0);
	}
	PG_CATCH();
	{
		PopPresentedToken(previous);
		PG_RE_THROW();
	}
	PG_END_TRY();
	PopPresentedToken(previous);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * Run the SELECT on the key: sets *nrows (0, 1 or 2 meaning "more than
 * one") and, for one row, *fence / *fence_null.
 */
void
SelectByKey(PlanEntry *e, Datum *values, char *nulls, int *nrows, int64 *fence, bool *fence_null)
{
	int rc = SPI_execute_plan(SelectPlan(e), values, nulls, false, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	*nrows = (int) SPI_processed;
	*fence = 0;
	*fence_null = true;
	if (SPI_processed == 1)
	{
		Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, fence_null);

		if (!*fence_null)
			*fence = DatumGetInt64(d);
	}
}

/* The key for messages, clipped (a key can be megabytes long). */
const char *
KeyText(Jsonb *key)
{
	return ClipForMessage(JsonbToCString(nullptr, &key->root, VARSIZE(key)));
}

void
RaiseNotUnique(const PlanEntry *e, Jsonb *key)
{
	ereport(ERROR, (errcode(ERRCODE_CARDINALITY_VIOLATION),
					errmsg("key %s matches more than one row of relation \"%s\"", KeyText(key),
						   e->relname),
					errdetail("fence.fenced_update updates exactly one row; nothing was changed."),
					errhint("Give the columns of a primary key or unique constraint as the key.")));
}

/*
 * The UPDATE changed one row.  Unless the key is provably unique, make sure
 * no other row matches it (one could have been left out because its fence
 * is too high): else 21000, which undoes the UPDATE.
 */
void
RequireOnlyMatch(PlanEntry *e, Jsonb *key, Datum *values, char *nulls)
{
	if (KeyIsUnique(e))
		return;

	int   nrows;
	int64 current;
	bool  current_null;

	SelectByKey(e, values, nulls, &nrows, &current, &current_null);
	if (nrows > 1)
		RaiseNotUnique(e, key);
}

/*
 * With expect_fence, the row's fence accepts the token but is not the one
 * the caller read: another write got in between the caller's read and its
 * write.  The token is not stale (the caller may still hold its lock), so
 * this is not a stale write: it has its own LOG line,
 *	 pg_fence: lost race: fenced_update <resource>: expected fence <e>, current fence <c>, token <t>
 * (not counted in fence.stats(), which counts stale writes only).
 */
void
ReportLostRace(const char *resource, int64 expect, int64 current, int64 token)
{
	ereport(LOG, (errmsg("pg_fence: lost race: fenced_update %s: expected fence " INT64_FORMAT
						 ", current fence " INT64_FORMAT ", token " INT64_FORMAT,
						 ClipForMessage(resource), expect, current, token),
				  errhidestmt(true)));
}

/*
 * The UPDATE changed no row: find out why.  No row (P0002), several rows
 * (21000), a NULL fence (22004), or a row whose fence accepts the token
 * (the fence rule, fence_rule.hpp) and equals expect_fence (if given) but
 * that the UPDATE could not see (P0002 with a detail) raise an error; a
 * lost race (a fence that accepts the token but is no longer the expected
 * one) is logged here (kNotApplied); a stale token is kStale, with the
 * row's fence in *stale_fence, which CheckFence reports (counted and
 * logged).  The call then returns false.
 */
FenceOutcome
ExplainNotApplied(PlanEntry *e, Jsonb *key, int64 token, int64 expect, Datum *values, char *nulls,
				  int64 *stale_fence)
{
	int   nrows;
	int64 current;
	bool  current_null;

	SelectByKey(e, values, nulls, &nrows, &current, &current_null);
	if (nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("no row of relation \"%s\" matches key %s", e->relname, KeyText(key))));
	if (nrows > 1)
		RaiseNotUnique(e, key);
	if (current_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fence column \"%s\" is null in the row of relation \"%s\" with key %s",
						e->fence_column, e->relname, KeyText(key)),
				 errhint("Declare the fence column NOT NULL DEFAULT 0.")));
	if (FenceAccepts({current, false}, token, e->allow_equal) && e->has_expect && current != expect)
	{
		ReportLostRace(psprintf("%s %s", e->qualname, KeyText(key)), expect, current, token);
		return FenceOutcome::kNotApplied;
	}
	if (FenceAccepts({current, false}, token, e->allow_equal))
		ereport(
			ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND),
			 errmsg("no row of relation \"%s\" matches key %s", e->relname, KeyText(key)),
			 errdetail(
				 "A row with this key is visible but could not be updated: row-level security hides it from UPDATE, or it was changed concurrently.")));
	*stale_fence = current;
	return FenceOutcome::kStale;
}

/* The row a call of fence.fenced_update writes, as a fence (fence_check.hpp). */
struct UpdateFence
{
	UpdateRequest req;
	Jsonb        *key;
	int64         expect;
	const char   *qualname; /* of a stale write, set by ApplyUpdate */
};

/*
 * The rule of fence.fenced_update, applied by its UPDATE's WHERE: prepare,
 * bind and run the UPDATE, and check its outcome (kStale and the row's
 * fence when the token is stale).
 */
FenceOutcome
ApplyUpdate(const Fence *fence, int64 token, int64 *current)
{
	UpdateFence  *u = static_cast<UpdateFence *>(fence->state);
	MemoryContext caller = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	PlanEntry   *e = GetPlanEntry(&u->req);
	Datum       *values;
	char        *nulls;
	FenceOutcome outcome = FenceOutcome::kAccepted;

	BindParameters(e, &u->req, token, u->expect, &values, &nulls);

	uint64 updated = RunUpdate(e, token, values, nulls);

	if (updated > 1)
		RaiseNotUnique(e, u->key);
	else if (updated == 1)
		RequireOnlyMatch(e, u->key, values, nulls);
	else
		outcome = ExplainNotApplied(e, u->key, token, u->expect, values, nulls, current);
	if (outcome == FenceOutcome::kStale)
		u->qualname = MemoryContextStrdup(caller, e->qualname); /* for DescribeUpdate */

	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
	return outcome;
}

/* The stale write's report names "schema.table key". */
RefusedWrite
DescribeUpdate(const Fence *fence)
{
	const UpdateFence *u = static_cast<const UpdateFence *>(fence->state);

	return RefusedWrite{FenceKind::kRow, "UPDATE", KeyText(u->key), u->qualname, u->req.fence.name};
}

/* The body of fence.fenced_update: the one fence check of its token. */
Datum
FencedUpdate(FunctionCallInfo fcinfo)
{
	UpdateFence u;
	int64       token;

	u.qualname = nullptr;
	ReadArguments(fcinfo, &u.req, &u.key, &token, &u.expect);

	FencedWrite write = CallWrite(token, "fence.fenced_update");
	Fence       fence = {"fenced_update", false, ApplyUpdate, DescribeUpdate, &u};

	return BoolGetDatum(CheckFence(&write, &fence));
}

} /* namespace */

} /* namespace fence */

/*
 * fence.fenced_update(rel regclass, key jsonb, token bigint, changes jsonb,
 *					   fence_column name DEFAULT 'fence',
 *					   allow_equal boolean DEFAULT false,
 *					   expect_fence bigint DEFAULT NULL) RETURNS boolean
 *
 * Errors: 22023 (NULL or malformed argument, changes naming the fence
 * column, null key value), FN004 (a token this database never issued),
 * 42P01 (no such relation), 42809 (not a table), 42703 (unknown column or
 * fence column), 42804 (fence column not bigint), 42883 (key type without
 * equality), 22P02 etc. (value conversion), 42501 (privileges), P0002 (no
 * row matches key), 21000 (key matches several rows), 22004 (the row's
 * fence is NULL).
 */
FENCE_SQL_FUNCTION(fence_fenced_update_0_2)
{
	return fence::Entry(fcinfo,
						[](FunctionCallInfo fc) -> Datum { return fence::FencedUpdate(fc); });
}

/*
 * The 0.1.0 function, without expect_fence: kept exported so that a
 * database still at 0.1.0 (before ALTER EXTENSION pg_fence UPDATE) keeps
 * working with this library.  Same body; the FN004 check applies too.
 */
FENCE_SQL_FUNCTION(fence_fenced_update)
{
	return fence::Entry(fcinfo,
						[](FunctionCallInfo fc) -> Datum { return fence::FencedUpdate(fc); });
}
