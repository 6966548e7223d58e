/*-------------------------------------------------------------------------
 *
 * marks_check.cpp
 *	  The resource-mark check of every write to a table guarded with
 *	  resource_columns: the written row presents a fencing token not lower
 *	  than the highest token that has written a row of the same resource,
 *	  and raises that mark to it.
 *
 * An append-only table (an event log, a ledger, an outbox) has no row for
 * a zombie to overwrite; the fence it must respect is the resource's: the
 * values of its resource columns (e.g. the stream a log entry belongs to).
 * Its mark, the highest token that has written a row of that resource,
 * lives in fence.insert_marks under (guard number, resource hash).  Every
 * write of such a table raises the mark of each resource it writes
 * (WriteRaisesMark): an INSERT its new row's, a DELETE its old row's, an
 * UPDATE its old row's and, when it moves the row to another resource, its
 * new row's too.
 *
 * For each such row, the guard trigger (guard_trigger.cpp) has found the
 * token the write presents (presented_token.hpp); here, through the one
 * fence check (CheckFence, fence_check.hpp: no token FN003, never issued
 * FN004, once per write), the mark's rule:
 *	 1. hashes the resource columns, each with its type's extended hash
 *	    function under the column's collation (values equal by the type's
 *	    equality hash alike; collisions merge two resources' marks, which
 *	    can only reject more, never accept a stale token);
 *	 2. locks the resource and compares the token with its mark: equal is
 *	    accepted (the same holder appending again: nothing is written,
 *	    and the backend's copy of the mark usually spares reading it),
 *	    higher raises the mark, none yet creates it, lower is reported and
 *	    raises FN001 (RaiseMark, src/server/writes/insert_marks.cpp).
 * Writers of one resource serialize until they end, so a zombie's INSERT
 * that was not yet committed when a newer holder raised the mark either
 * commits first (and is ordered before it) or waits and is rejected.  A
 * rollback takes the mark's change with it.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry (the guard trigger's).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/marks_check.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/marks_check.hpp"

#include "pg/messages.hpp"
#include "writes/guard.hpp"
#include "writes/insert_marks.hpp"

extern "C" {
#include "access/htup_details.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
}

namespace fence {

namespace {

/* The column's number in rel, or an error naming the guard's broken argument. */
int
ResourceAttnum(Relation rel, const char *column)
{
	int attnum = SPI_fnumber(RelationGetDescr(rel), column);

	if (attnum <= 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("resource column \"%s\" of guarded table %s does not exist", column,
					RelationGetRelationName(rel)),
			 errhint(
				 "Run fence.unguard and fence.guard again with the current resource columns.")));
	return attnum;
}

/* The resource's hash: its columns' extended hashes, combined in order. */
int64
ResourceHash(TriggerData *td, HeapTuple row)
{
	Relation  rel = td->tg_relation;
	TupleDesc desc = RelationGetDescr(rel);
	uint64    h = 0;

	for (int i = kFirstResourceArg; i < td->tg_trigger->tgnargs; i++)
	{
		int               attnum = ResourceAttnum(rel, td->tg_trigger->tgargs[i]);
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
		bool              isnull;
		Datum             value = heap_getattr(row, attnum, desc, &isnull);
		uint64            ch;

		if (isnull)
			ch = UINT64CONST(0x9e3779b97f4a7c15); /* NULL: one fixed value */
		else
		{
			TypeCacheEntry *tc =
				lookup_type_cache(att->atttypid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);

			if (!OidIsValid(tc->hash_extended_proc))
				ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
								errmsg("could not identify an extended hash function for type %s",
									   format_type_be(att->atttypid))));
			ch = DatumGetUInt64(FunctionCall2Coll(&tc->hash_extended_proc_finfo, att->attcollation,
												  value, UInt64GetDatum(0)));
		}
		h = hash_combine64(h, ch);
	}
	return (int64) h;
}

/* "(stream, shard)=(orders, 3)" for messages, clipped. */
const char *
ResourceDescription(TriggerData *td, HeapTuple row)
{
	Relation       rel = td->tg_relation;
	TupleDesc      desc = RelationGetDescr(rel);
	StringInfoData cols;
	StringInfoData vals;

	initStringInfo(&cols);
	initStringInfo(&vals);
	for (int i = kFirstResourceArg; i < td->tg_trigger->tgnargs; i++)
	{
		const char *column = td->tg_trigger->tgargs[i];
		char       *value = SPI_getvalue(row, desc, ResourceAttnum(rel, column));

		if (i > kFirstResourceArg)
		{
			appendStringInfoString(&cols, ", ");
			appendStringInfoString(&vals, ", ");
		}
		appendStringInfoString(&cols, quote_identifier(column));
		appendStringInfoString(&vals, value != nullptr ? value : "null");
	}
	return ClipForMessage(psprintf("(%s)=(%s)", cols.data, vals.data));
}

/* The mark of one written row's resource, as a fence (fence_check.hpp). */
struct MarkFence
{
	TriggerData *td;
	int64        guard_id;
	HeapTuple    row;
	WriteOp      op;
};

/* The mark's rule: RaiseMark (insert_marks.hpp) accepts and raises, or refuses. */
FenceOutcome
ApplyMark(const Fence *fence, int64 token, int64 *current)
{
	const MarkFence *m = static_cast<const MarkFence *>(fence->state);

	if (RaiseMark(m->guard_id, ResourceHash(m->td, m->row), token, current))
		return FenceOutcome::kAccepted;
	return FenceOutcome::kStale;
}

RefusedWrite
DescribeMark(const Fence *fence)
{
	const MarkFence *m = static_cast<const MarkFence *>(fence->state);

	return RefusedWrite{FenceKind::kResourceMark, WriteOpName(m->op),
						ResourceDescription(m->td, m->row), QualifiedName(m->td->tg_relation),
						m->td->tg_trigger->tgargs[0]};
}

/* The one fence check of write against the mark of row's resource. */
void
CheckMark(FencedWrite *write, TriggerData *td, int64 guard_id, WriteOp op, HeapTuple row)
{
	MarkFence m = {td, guard_id, row, op};
	Fence     fence = {"guard", true, ApplyMark, DescribeMark, &m};

	(void) CheckFence(write, &fence);
}

} /* namespace */

bool
WriteRaisesMark(const TriggerData *td)
{
	return GuardsInserts(td->tg_trigger);
}

void
CheckResourceMarks(FencedWrite *write, TriggerData *td, int64 guard_id, WriteOp op,
				   HeapTuple old_row, HeapTuple new_row)
{
	if (!WriteRaisesMark(td))
		return;
	if (old_row != nullptr)
		CheckMark(write, td, guard_id, op, old_row);
	if (new_row != nullptr &&
		(old_row == nullptr || ResourceHash(td, old_row) != ResourceHash(td, new_row)))
		CheckMark(write, td, guard_id, op, new_row);
}

} /* namespace fence */
