/*-------------------------------------------------------------------------
 *
 * mark_cache.hpp
 *	  A backend's copies of the guarded-INSERT marks it has read, and the
 *	  shared change counts that tell when a copy may still be used
 *	  (src/server/writes/mark_cache.cpp).  Internal to
 *	  src/server/writes/insert_marks.cpp, but for the change counts' part of
 *	  the shared block, which src/server/shmem.cpp composes.
 *
 * Every change of a mark (a raise or a creation) counts one change of its
 * stripe, a shared counter that many marks share (a hash of guard number
 * and resource hash picks it), before the change is written and while the
 * writer holds the resource's lock (insert_marks.cpp says which).  A copy
 * remembers the stripe's count when it was read: while the count has not
 * moved, nobody has changed the mark since, and a writer that holds the
 * resource's lock may compare a token with the copy instead of reading
 * fence.insert_marks.  A change of another mark of the stripe only costs a
 * read.
 *
 * Copies are forgotten at any abort (of a transaction or a subtransaction)
 * and at PREPARE TRANSACTION, since they may hold this transaction's own
 * raises, and when fence.insert_marks is another table (a new OID after
 * DROP EXTENSION and CREATE EXTENSION).  Without the shared block (15/16
 * without the preload) there are no counts and nothing is cached.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/mark_cache.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "port/atomics.h"
}

namespace fence {

/* Change counts of guarded-INSERT marks per database: the stripes. */
constexpr int kMarkStripes = 256;

/*
 * The change counts' part of the shared block, kMarkStripes per database
 * slot (pg/db_slots.hpp); composed by src/server/shmem.cpp.
 */
Size MarkStripesShmemSize();
void MarkStripesShmemInit(void *ptr, int tranche_id);
void MarkStripesShmemAttach(void *ptr);

/*
 * The change count of the stripe of mark (guard_id, resource_hash) in this
 * database's share of the shared block, or nullptr when there is none.
 * May raise ERROR (attaching the block): call it before taking anything.
 */
pg_atomic_uint64 *MarkStripe(int64 guard_id, int64 resource_hash);

/* Counts one change of a mark of the stripe; returns the new count. */
uint64 CountMarkChange(pg_atomic_uint64 *stripe);

/* The stripe's current count (after a read barrier). */
uint64 MarkChanges(pg_atomic_uint64 *stripe);

/*
 * This backend's copy of the mark, if it has one that was read when the
 * stripe's count was `changes` in the table `marks_relid`: true with its
 * token in *token.
 */
bool CachedMark(Oid marks_relid, int64 guard_id, int64 resource_hash, uint64 changes, int64 *token);

/* Keeps a copy of the mark: its token as read when the stripe's count was `changes`. */
void CacheMark(Oid marks_relid, int64 guard_id, int64 resource_hash, uint64 changes, int64 token);

} /* namespace fence */
