/*-------------------------------------------------------------------------
 *
 * guard_trigger.cpp
 *	  Fenced writes for every client: the guard trigger function
 *	  fence.guard_trigger(), which fence.guard installs (guard.cpp).
 *
 * A guarded table has a BEFORE UPDATE OR DELETE FOR EACH ROW trigger named
 * "fence_guard" that runs fence.guard_trigger('<fence column>') (guarded
 * with resource columns, BEFORE INSERT too, with more arguments).  For each
 * row it finds the token the write presents (TokenPresented,
 * presented_token.hpp: an UPDATE that changes the fence column presents
 * the new value; otherwise the token of a running fence.fenced_update or
 * fence.token set in the current transaction, which an UPDATE then stamps
 * into the row's fence), and checks it with the one fence check
 * (CheckFence, fence_check.hpp): none raises FN003, a token this database
 * never issued FN004, and then the row's fence must accept it under the
 * fence rule (fence_rule.hpp), with equal tokens allowed: the token is not
 * lower than the row's current fence, or the fence is NULL; a lower token
 * is reported and raises FN001.  fence.fenced_update sets fence = token
 * WHERE fence < token, so the rows it changes present a higher token and
 * pass (and their token's issued check, made by fenced_update, is not made
 * again: fence_check.hpp).  The trigger runs once per row, so set-based
 * writes (UPDATE ... FROM, CTEs, ON CONFLICT DO UPDATE, MERGE) are checked
 * row by row.
 *
 * Guarded with resource columns, the trigger first checks that its guard
 * number (public, in pg_trigger.tgargs) is registered to its table
 * (guard_registry.hpp): fence.guard registers it after the owner check.
 * Then every write also meets the marks of the resources it writes
 * (marks_check.hpp): an INSERT only them, an UPDATE or DELETE after its
 * row's fence.
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
#include "pg/messages.hpp"
#include "tokens/fence_rule.hpp"
#include "writes/fence_check.hpp"
#include "writes/guard_registry.hpp"
#include "writes/marks_check.hpp"
#include "writes/presented_token.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
}

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

/* The fence column of a row: its value, or NULL. */
StoredFence
FenceOf(HeapTuple row, int attnum, TupleDesc desc)
{
	StoredFence f;

	f.value = DatumGetInt64(heap_getattr(row, attnum, desc, &f.is_null));
	return f;
}

/* row with token stored in its fence column (a new tuple). */
HeapTuple
StampFence(HeapTuple row, TupleDesc desc, int attnum, int64 token)
{
	int   cols[1] = {attnum};
	Datum values[1] = {Int64GetDatum(token)};
	bool  nulls[1] = {false};

	return heap_modify_tuple_by_cols(row, desc, 1, cols, values, nulls);
}

/* A guarded row's fence, as met by an UPDATE or DELETE of it (fence_check.hpp). */
struct RowFence
{
	TriggerData *td;
	HeapTuple    row;    /* the row before the write */
	StoredFence  stored; /* its fence */
	WriteOp      op;
};

/* The row's rule: the fence rule in C, equal tokens allowed. */
FenceOutcome
ApplyRowFence(const Fence *fence, int64 token, int64 *current)
{
	const RowFence *r = static_cast<const RowFence *>(fence->state);

	if (FenceAccepts(r->stored, token, kGuardAllowsEqual))
		return FenceOutcome::kAccepted;
	*current = r->stored.value;
	return FenceOutcome::kStale;
}

RefusedWrite
DescribeRow(const Fence *fence)
{
	const RowFence *r = static_cast<const RowFence *>(fence->state);
	Relation        rel = r->td->tg_relation;

	return RefusedWrite{FenceKind::kRow, WriteOpName(r->op), RowDescription(rel, r->row),
						QualifiedName(rel), r->td->tg_trigger->tgargs[0]};
}

/*
 * An UPDATE or DELETE of a guarded row: the one fence check of its token
 * against the row's fence, then against its resources' marks; returns the
 * row to write (an UPDATE's new row, stamped with the token when the row
 * did not carry it).
 */
HeapTuple
GuardUpdateOrDelete(TriggerData *td, int64 guard_id, int attnum)
{
	TupleDesc   desc = RelationGetDescr(td->tg_relation);
	bool        is_update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	WriteOp     op = is_update ? WriteOp::kUpdate : WriteOp::kDelete;
	HeapTuple   old_row = td->tg_trigtuple;
	HeapTuple   new_row = is_update ? td->tg_newtuple : nullptr;
	StoredFence old_fence = FenceOf(old_row, attnum, desc);
	StoredFence new_fence = is_update ? FenceOf(new_row, attnum, desc) : StoredFence{0, true};

	PresentedToken p = TokenPresented(op, old_fence, new_fence);
	FencedWrite    write = GuardedWrite(p, is_update ? "a guarded UPDATE" : "a guarded DELETE");
	RowFence       row_fence = {td, old_row, old_fence, op};
	Fence          fence = {"guard", true, ApplyRowFence, DescribeRow, &row_fence};

	(void) CheckFence(&write, &fence);
	CheckResourceMarks(&write, td, guard_id, op, old_row, new_row);

	if (!is_update)
		return old_row;
	return p.from_row ? new_row : StampFence(new_row, desc, attnum, p.token);
}

/*
 * An INSERT into a table guarded with resource columns: the one fence
 * check of its token against the new row's resource mark; returns the row
 * to insert, stamped with the token when the row did not carry it.
 */
HeapTuple
GuardInsert(TriggerData *td, int64 guard_id, int attnum)
{
	TupleDesc      desc = RelationGetDescr(td->tg_relation);
	HeapTuple      row = td->tg_trigtuple;
	PresentedToken p =
		TokenPresented(WriteOp::kInsert, StoredFence{0, true}, FenceOf(row, attnum, desc));
	FencedWrite write = GuardedWrite(p, "a guarded INSERT");

	CheckResourceMarks(&write, td, guard_id, WriteOp::kInsert, nullptr, row);
	return p.from_row ? row : StampFence(row, desc, attnum, p.token);
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
		return PointerGetDatum(GuardInsert(td, guard_id, attnum));
	return PointerGetDatum(GuardUpdateOrDelete(td, guard_id, attnum));
}

} /* namespace */

} /* namespace fence */

/*
 * fence.guard_trigger() RETURNS trigger
 *	 BEFORE UPDATE OR DELETE FOR EACH ROW; argument: the fence column.
 *	 Raises FN001 (stale token), FN003 (no token), FN004 (a token never
 *	 issued) and 39P01 (not run as the
 *	 trigger fence.guard installed; with resource columns, on a table its
 *	 guard number is not registered to).  Takes no locks of its own (with
 *	 resource columns: src/server/writes/insert_marks.cpp's).
 */
FENCE_SQL_FUNCTION(fence_guard_trigger)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::GuardTrigger(fc); });
}
