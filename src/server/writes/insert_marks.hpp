/*-------------------------------------------------------------------------
 *
 * insert_marks.hpp
 *	  The marks of guarded INSERTs in fence.insert_marks: the highest token
 *	  that has written a row of each resource (src/server/writes/insert_marks.cpp).
 *	  Internal to the guard (src/server/writes/marks_check.cpp, src/server/writes/guard.cpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/insert_marks.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/*
 * Applies the fence rule (equal accepted) to the mark of (guard_id,
 * resource_hash): creates the mark or raises it to token and returns true,
 * or returns false with the stored token in *stored.  Writers of one
 * resource serialize until they end (on the resource's lock in the lock
 * manager and on the mark's row lock; src/server/writes/insert_marks.cpp says which a
 * writer holds), so a stale writer commits before a newer holder's raise
 * or waits for it and is rejected, and a rollback takes the change with
 * it.  The common case (the token the mark holds, again) reads a copy of
 * the mark kept by this backend (mark_cache.hpp).  The marks are read and
 * written as the table's owner: the caller needs no privilege on
 * fence.insert_marks.
 */
bool RaiseMark(int64 guard_id, int64 resource_hash, int64 token, int64 *stored);

/* A new guard number (fence.guard_id_seq). */
int64 NextGuardId();

/* Deletes the marks of guard number `guard_id` (fence.unguard). */
void ForgetInsertMarks(int64 guard_id);

} /* namespace fence */
