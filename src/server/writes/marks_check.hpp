/*-------------------------------------------------------------------------
 *
 * marks_check.hpp
 *	  The resource-mark check of every write to a table guarded with
 *	  resource_columns (src/server/writes/marks_check.cpp), and the guard
 *	  trigger's arguments that name the resource.
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

#include "pg/pg.hpp"
#include "writes/fence_check.hpp"
#include "writes/presented_token.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace fence {

/* Index of the guard number in the trigger's arguments, and the first resource column. */
constexpr int kGuardIdArg = 1;
constexpr int kFirstResourceArg = 2;

/* Does this trigger (fence.guard's) name resource columns, and so fence INSERTs too? */
inline bool
GuardsInserts(const Trigger *t)
{
	return t->tgnargs > kFirstResourceArg;
}

/*
 * Does a write that fires this guard trigger raise its resource's mark?
 * Every write (INSERT, UPDATE, DELETE) of a table guarded with resource
 * columns does.
 */
bool WriteRaisesMark(const TriggerData *td);

/*
 * If the write raises marks (WriteRaisesMark), checks its token against
 * the mark of each resource it writes, through the one fence check
 * (CheckFence; FN003 for an INSERT without a token, FN004, FN001 if lower),
 * and raises the marks to it: new_row's for an INSERT (old_row nullptr),
 * old_row's for a DELETE (new_row nullptr), and for an UPDATE old_row's
 * and, when the UPDATE moves the row to another resource, new_row's too.
 * guard_id is the table's guard number (RegisteredGuardId,
 * guard_registry.hpp).  An UPDATE or DELETE calls it after the row's own
 * fence has accepted the token.
 */
void CheckResourceMarks(FencedWrite *write, TriggerData *td, int64 guard_id, WriteOp op,
						HeapTuple old_row, HeapTuple new_row);

} /* namespace fence */
