/*-------------------------------------------------------------------------
 *
 * guard_trigger.cpp
 *	  Fenced writes for every client: the guard trigger function
 *	  fence.guard_trigger(), which fence.guard installs (guard.cpp).
 *
 * A guarded table has a BEFORE UPDATE OR DELETE FOR EACH ROW trigger named
 * "fence_guard" that runs fence.guard_trigger('<fence column>') (guarded
 * with resource columns, BEFORE INSERT too, with more arguments: INSERTs
 * are checked against their resource's mark, src/server/writes/marks_check.cpp).  For
 * each updated or deleted row it finds the token the write presents:
 *
 *	 - an UPDATE that changes the fence column's value (to a non-NULL value)
 *	   presents the new value;
 *	 - otherwise (an UPDATE that leaves the fence column unchanged, any
 *	   DELETE) the write presents the token of a running fence.fenced_update
 *	   or fence.token set in the current transaction (TokenPresentedByWrite,
 *	   presented_token.hpp), and an UPDATE then stamps the row's fence with
 *	   it.
 *
 * The write goes ahead iff the row's fence accepts the token under the
 * fence rule (fence_rule.hpp), with equal tokens allowed: the token is not
 * lower than the row's current fence, or the fence is NULL.  A lower token
 * raises FN001, none FN003, and a token this database never issued FN004
 * (RequireIssuedToken, issued_token.hpp, checked before the fence rule).
 * fence.fenced_update sets fence = token WHERE fence < token, so the rows
 * it changes present a higher token and pass.  The trigger runs once
 * per row, so set-based writes (UPDATE ... FROM, CTEs, ON CONFLICT DO
 * UPDATE, MERGE) are checked row by row.
 *
 * Guarded with resource columns, the trigger first checks that its guard
 * number (public, in pg_trigger.tgargs) is registered to its table
 * (guard_registry.hpp): fence.guard registers it after the owner check.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; the SQL entry point runs it through fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/guard_trigger.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/guard.hpp"

#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "tokens/fence_rule.hpp"
#include "writes/marks_check.hpp"
#include "writes/guard_registry.hpp"
#include "tokens/issued_token.hpp"
#include "pg/messages.hpp"
#include "writes/presented_token.hpp"
#include "observability/stats.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
}

#define ERRCODE_FENCE_STALE_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '1')
#define ERRCODE_FENCE_NO_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '3')

namespace fence {

namespace {

/* A guarded row accepts its own fence's token again (fence_rule.hpp). */
constexpr bool kGuardAllowsEqual = true;

/*
 * The row's key for messages: its primary key values, "(id)=(42)", when the
 * table has one and the user may see them (BuildIndexValueDescription
 * checks column privileges and row-level security), else "ctid (0,1)".
 * Clipped: key values can be kilobytes long.
 */
const char *
RowDescription(Relation rel, HeapTuple tuple)
{
	char *desc = nullptr;
	Oid   pk = compat::PrimaryKeyIndex(rel);

	if (OidIsValid(pk))
	{
		Relation idx = index_open(pk, AccessShareLock);
		int      nkeys = IndexRelationGetNumberOfKeyAttributes(idx);
		Datum    values[INDEX_MAX_KEYS];
		bool     isnull[INDEX_MAX_KEYS];

		for (int i = 0; i < nkeys; i++)
			values[i] = heap_getattr(tuple, idx->rd_index->indkey.values[i], RelationGetDescr(rel),
									 &isnull[i]);
		desc = BuildIndexValueDescription(idx, values, isnull);
		index_close(idx, AccessShareLock);
	}
	if (desc == nullptr)
		desc = psprintf("ctid (%u,%u)", ItemPointerGetBlockNumberNoCheck(&tuple->t_self),
						(unsigned) ItemPointerGetOffsetNumberNoCheck(&tuple->t_self));
	return ClipForMessage(desc);
}

void
RaiseStale(Relation rel, HeapTuple row, const char *op, int64 presented, int64 current)
{
	char       *table = QualifiedName(rel);
	const char *key = RowDescription(rel, row);

	ReportStaleWrite("guard", psprintf("%s %s", table, key), presented, current);
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_STALE_TOKEN),
		 errmsg("fencing token " INT64_FORMAT " is older than the fence " INT64_FORMAT
				" of row %s in table %s",
				presented, current, key, table),
		 errdetail(
			 "The %s was rejected: a guarded row accepts only writes whose token is not lower than its fence, and a newer lock holder has written it.",
			 op),
		 errhint("Acquire the lock again to obtain a new fencing token, then re-read the row.")));
}

/*
 * No token: the write presents none (setting: why fence.token does not
 * supply one).  sets_null: an UPDATE that sets a non-NULL fence to NULL
 * (which presents no token, like an unchanged one).
 */
void
RaiseNoToken(Relation rel, HeapTuple row, bool is_update, bool sets_null, const char *column,
			 TokenSettingState setting)
{
	char       *table = QualifiedName(rel);
	const char *key = RowDescription(rel, row);

	StatsCountRejected(StatKind::kMissingTokens);
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_NO_TOKEN),
		 errmsg("no fencing token presented for %s of row %s in table %s",
				is_update ? "UPDATE" : "DELETE", key, table),
		 setting == TokenSettingState::kSetInOtherTransaction
			 ? errdetail(
				   "fence.token was set in an earlier transaction; it counts only in the transaction that set it.")
		 : is_update && sets_null
			 ? errdetail(
				   "The UPDATE sets the fence column \"%s\" to NULL, which presents no token, and fence.token is not set in this transaction.",
				   column)
		 : is_update
			 ? errdetail(
				   "The UPDATE leaves the fence column \"%s\" unchanged and fence.token is not set in this transaction.",
				   column)
			 : errdetail("fence.token is not set in this transaction."),
		 is_update
			 ? errhint(
				   "Set the fence column \"%s\" to the token in the UPDATE, or run SET LOCAL fence.token = <token> in the same transaction.",
				   column)
			 : errhint(
				   "Run SET LOCAL fence.token = <token> in the same transaction before the DELETE.")));
}

/*
 * With resource columns, an UPDATE or DELETE is a write of its row's
 * resource (and an UPDATE that moves the row to another resource, of that
 * one too): the token must also pass, and raises, their marks.
 */
void
CheckResourceMarks(TriggerData *td, int64 guard_id, HeapTuple old_row, HeapTuple new_row,
				   int64 token)
{
	if (!GuardsInserts(td->tg_trigger))
		return;
	const char *op = new_row != nullptr ? "UPDATE" : "DELETE";

	CheckResourceMark(td, guard_id, old_row, token, op);
	if (new_row != nullptr && !SameResource(td, old_row, new_row))
		CheckResourceMark(td, guard_id, new_row, token, op);
}

/* The body of fence.guard_trigger(). */
Datum
GuardTrigger(FunctionCallInfo fcinfo)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
						errmsg("fence.guard_trigger() must be called as a trigger"),
						errhint("Use fence.guard(table) to install it.")));

	TriggerData *td = reinterpret_cast<TriggerData *>(fcinfo->context);
	TriggerEvent ev = td->tg_event;
	bool         is_update = TRIGGER_FIRED_BY_UPDATE(ev);
	bool         is_insert = TRIGGER_FIRED_BY_INSERT(ev);
	int          nargs = td->tg_trigger->tgnargs;

	if (!TRIGGER_FIRED_BEFORE(ev) || !TRIGGER_FIRED_FOR_ROW(ev) ||
		!(is_update || is_insert || TRIGGER_FIRED_BY_DELETE(ev)) ||
		!(nargs == 1 || GuardsInserts(td->tg_trigger)) ||
		(is_insert && !GuardsInserts(td->tg_trigger)))
		ereport(
			ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg(
				 "fence.guard_trigger() must run BEFORE UPDATE OR DELETE (and INSERT, with resource columns) FOR EACH ROW with the arguments that fence.guard gives it"),
			 errhint("Use fence.guard(table) to install it.")));

	/*
	 * With resource columns, before anything else: the guard number must be
	 * registered to this table (39P01), or the trigger would act on another
	 * table's marks.
	 */
	int64 guard_id = GuardsInserts(td->tg_trigger) ? RegisteredGuardId(td) : 0;

	Relation    rel = td->tg_relation;
	TupleDesc   tupdesc = RelationGetDescr(rel);
	const char *column = td->tg_trigger->tgargs[0];
	int         attnum = SPI_fnumber(tupdesc, column);

	if (attnum <= 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("fence column \"%s\" of guarded table %s does not exist", column,
					QualifiedName(rel)),
			 errhint("Run fence.unguard and fence.guard again with the current fence column.")));
	if (TupleDescAttr(tupdesc, attnum - 1)->atttypid != INT8OID)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("fence column \"%s\" of guarded table %s is not of type bigint",
							   column, QualifiedName(rel))));

	if (is_insert)
		return PointerGetDatum(GuardInsertRow(td, guard_id, attnum));

	HeapTuple   old_row = td->tg_trigtuple;
	bool        old_null;
	int64       current = DatumGetInt64(heap_getattr(old_row, attnum, tupdesc, &old_null));
	StoredFence fence = {current, old_null};

	if (is_update)
	{
		HeapTuple new_row = td->tg_newtuple;
		bool      new_null;
		int64     fresh = DatumGetInt64(heap_getattr(new_row, attnum, tupdesc, &new_null));

		/* The UPDATE changes the fence column: the new value is its token. */
		if (!new_null && (old_null || fresh != current))
		{
			RequireIssuedToken(fresh, "a guarded UPDATE");
			if (!FenceAccepts(fence, fresh, kGuardAllowsEqual))
				RaiseStale(rel, old_row, "UPDATE", fresh, current);
			CheckResourceMarks(td, guard_id, old_row, new_row, fresh);
			return PointerGetDatum(new_row);
		}

		/*
		 * Otherwise the write presents its token (fenced_update's or
		 * fence.token); stamp the row with it.
		 */
		int64             token;
		TokenSettingState setting;

		if (!TokenPresentedByWrite(&token, &setting))
			RaiseNoToken(rel, old_row, true, new_null && !old_null, column, setting);
		RequireIssuedToken(token, "a guarded UPDATE");
		if (!FenceAccepts(fence, token, kGuardAllowsEqual))
			RaiseStale(rel, old_row, "UPDATE", token, current);
		CheckResourceMarks(td, guard_id, old_row, new_row, token);

		int   cols[1] = {attnum};
		Datum values[1] = {Int64GetDatum(token)};
		bool  nulls[1] = {false};

		return PointerGetDatum(heap_modify_tuple_by_cols(new_row, tupdesc, 1, cols, values, nulls));
	}

	int64             token;
	TokenSettingState setting;

	if (!TokenPresentedByWrite(&token, &setting))
		RaiseNoToken(rel, old_row, false, false, column, setting);
	RequireIssuedToken(token, "a guarded DELETE");
	if (!FenceAccepts(fence, token, kGuardAllowsEqual))
		RaiseStale(rel, old_row, "DELETE", token, current);
	CheckResourceMarks(td, guard_id, old_row, nullptr, token);
	return PointerGetDatum(old_row);
}

} /* namespace */

} /* namespace fence */

/*
 * fence.guard_trigger() RETURNS trigger
 *	 BEFORE UPDATE OR DELETE FOR EACH ROW; argument: the fence column.
 *	 Raises FN001 (stale token), FN003 (no token) and 39P01 (not run as the
 *	 trigger fence.guard installed; with resource columns, on a table its
 *	 guard number is not registered to).  Takes no locks of its own (with
 *	 resource columns: src/server/writes/insert_marks.cpp's).
 */
FENCE_SQL_FUNCTION(fence_guard_trigger)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::GuardTrigger(fc); });
}
