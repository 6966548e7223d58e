/*-------------------------------------------------------------------------
 *
 * guard_registry.hpp
 *	  Which table each guard number belongs to (fence.insert_guards), and
 *	  the guard trigger's check that its number is its table's
 *	  (src/server/writes/guard_registry.cpp).
 *
 * A guard number keys a table's marks in fence.insert_marks, and it is
 * readable by everyone in pg_trigger.tgargs.  So the number in a trigger's
 * arguments proves nothing: anyone may create a trigger of their own
 * table that runs fence.guard_trigger with another table's number.  The
 * registry binds each number to the table fence.guard guarded, and the
 * trigger runs only where its number is registered to its own table (or,
 * for a partition's cloned trigger, to the table of the trigger it was
 * cloned from) and where it, and every trigger it was cloned from, is the
 * trigger "fence_guard" running fence.guard_trigger.  Only the table's
 * owner, through fence.guard and fence.unguard, writes the registry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/guard_registry.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace fence {

/*
 * The guard number of the firing trigger (guarded with resource columns),
 * once it is known to be registered to the trigger's table (39P01
 * otherwise).  Checked once per trigger and backend: the answer is kept
 * until a relcache invalidation of the table, of the table it was cloned
 * from, or of fence.insert_guards.
 */
int64 RegisteredGuardId(TriggerData *td);

/*
 * Binds guard_id to relid (fence.guard, after its ownership check), after
 * forgetting every number registered to relid before (ForgetGuardsOf).
 */
void RegisterGuard(int64 guard_id, Oid relid);

/*
 * Forgets every guard number registered to relid, and their marks
 * (fence.unguard; fence.guard, of a table whose trigger was dropped by
 * hand).
 */
void ForgetGuardsOf(Oid relid);

} /* namespace fence */
