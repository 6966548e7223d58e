/*-------------------------------------------------------------------------
 *
 * fence_rule.hpp
 *	  The fence rule: which writes a fence accepts.  It is written here once,
 *	  and every write path of pg_fence applies it through these functions.
 *
 * A fenced resource keeps a fence: the token of the latest write it
 * accepted (a guarded row's fence column, the fence column that
 * fence.fenced_update sets, a resource's row in fence.resources for
 * fence.advance).  A write that presents the fencing token T is accepted
 * iff
 *
 *	   T >= fence	when equal tokens are allowed (allow_equal), or
 *	   T >  fence	when they are not,
 *
 * and a NULL fence (never fenced) accepts any token.  Tokens grow with every
 * grant of a lock or lease, so once a newer holder has written, a write of
 * an older holder (paused, partitioned, its lease expired) is refused by the
 * storage itself, however late it arrives: the fencing token of Martin
 * Kleppmann, "How to do distributed locking" (2016),
 * https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html
 *
 * Equal tokens are allowed by
 *	 - the guard trigger, always: a holder may write a row several times
 *	   with its one token;
 *	 - fence.advance, always: presenting the stored token again succeeds;
 *	 - fence.fenced_update only with allow_equal => true.
 *
 * The rule has two forms, both below:
 *	 - FenceAccepts, for C code with the fence in hand (the guard trigger,
 *	   fenced_update explaining a write that did not apply);
 *	 - FenceConditionSql, the same comparison as SQL text, for statements
 *	   that let the executor apply the rule to the stored row as it writes
 *	   it (fenced_update's UPDATE ... WHERE, advance's INSERT ... ON
 *	   CONFLICT DO UPDATE ... WHERE).  It is a plain comparison, so for a
 *	   NULL fence it is NULL, not true, and the statement writes nothing:
 *	   fence.fenced_update then raises 22004 for the row's NULL fence
 *	   instead of accepting it, and fence.resources.token is NOT NULL.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/fence_rule.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* A fence as stored: its value, or NULL. */
struct StoredFence
{
	int64 value;
	bool  is_null;
};

/* The fence rule (C form): does fence accept a write presenting token? */
inline bool
FenceAccepts(StoredFence fence, int64 token, bool allow_equal)
{
	if (fence.is_null)
		return true;
	return allow_equal ? fence.value <= token : fence.value < token;
}

/*
 * The fence rule (SQL form): the condition "fence_expr OPERATOR(pg_catalog.<)
 * token_expr" (<= with allow_equal), true iff FenceAccepts for a non-NULL
 * fence (NULL for a NULL fence; see above).  fence_expr and token_expr are
 * SQL expressions of type bigint, already quoted; the result is palloc'd.
 */
inline char *
FenceConditionSql(const char *fence_expr, const char *token_expr, bool allow_equal)
{
	return psprintf("%s OPERATOR(pg_catalog.%s) %s", fence_expr, allow_equal ? "<=" : "<",
					token_expr);
}

} /* namespace fence */
