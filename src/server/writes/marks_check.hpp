/*-------------------------------------------------------------------------
 *
 * marks_check.hpp
 *	  Guarded INSERTs: the insert path of the guard trigger, and what
 *	  fence.guard / fence.unguard need for it (src/server/writes/marks_check.cpp).
 *
 * The trigger "fence_guard" of a table guarded with resource_columns has
 * the arguments
 *
 *	 [0] the fence column   [1] the guard number   [2..] the resource columns
 *
 * (a guard without resource_columns has only [0]).  The guard number keys
 * the table's marks in fence.insert_marks; partitions share it, since
 * CREATE TRIGGER clones the partitioned table's trigger with its arguments.
 * The trigger uses it only where fence.insert_guards registers it to the
 * table (guard_registry.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/marks_check.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "writes/insert_marks.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "commands/trigger.h"
#include "utils/array.h"
}

namespace fence {

/* Index of the guard number in the trigger's arguments, and the first resource column. */
constexpr int kGuardIdArg = 1;
constexpr int kFirstResourceArg = 2;

/* Does this trigger (fence.guard's) fence INSERTs? */
inline bool
GuardsInserts(const Trigger *t)
{
	return t->tgnargs > kFirstResourceArg;
}

/*
 * The BEFORE INSERT body for one row of the table whose guard number
 * guard_id is (RegisteredGuardId, guard_registry.hpp): finds the token the row presents,
 * checks it against its resource's mark and raises the mark to it, and
 * returns the row to insert (with fence.token stamped into the fence
 * column when the row presented none of its own).  FN001 / FN003.
 */
HeapTuple GuardInsertRow(TriggerData *td, int64 guard_id, int fence_attnum);

/*
 * On a table guarded with resource columns, guard number guard_id
 * (RegisteredGuardId): checks `token` against the mark of `row`'s resource and raises the mark to it (FN001 if lower).
 * The UPDATE and DELETE paths call it too, after the row's own fence has
 * accepted the token: a write of any row counts for its resource.  `op`
 * names the write in the message ("INSERT", "UPDATE", "DELETE").
 */
void CheckResourceMark(TriggerData *td, int64 guard_id, HeapTuple row, int64 token, const char *op);

/* Do two rows of the table belong to the same resource (same resource hash)? */
bool SameResource(TriggerData *td, HeapTuple a, HeapTuple b);

/*
 * The resource column names of fence.guard's resource_columns argument,
 * checked against rel (exist, distinct, not the fence column, not
 * generated, hashable): a List of palloc'd C strings.
 */
List *CheckResourceColumns(Relation rel, const char *fence_column, ArrayType *columns);

} /* namespace fence */
