/*-------------------------------------------------------------------------
 *
 * presented_token.hpp
 *	  Which fencing token a write presents: the one rule
 *	  (TokenPresented), and the token a running fence.fenced_update
 *	  presents to the guard triggers its UPDATE fires.
 *
 * A guarded write presents
 *
 *	 1. the token its own row carries, when it carries one:
 *		- an INSERT: the new row's fence when it is neither NULL nor 0 (a
 *		  DEFAULT 0 presents none; a negative value is presented, and
 *		  refused as never issued, FN004);
 *		- an UPDATE that changes the fence column to a non-NULL value: the
 *		  new value;
 *	 2. else (an UPDATE that leaves the fence column as it is or sets it
 *		to NULL, a DELETE, an INSERT without a token in its row) the token
 *		of the fence.fenced_update that is running, which pushes it for
 *		the length of its UPDATE (PushPresentedToken);
 *	 3. else fence.token, if the current transaction set it
 *		(tokens/token_setting.hpp);
 *
 * and otherwise no token at all (FN003).  A token from 2 or 3 is stored in
 * the fence column of the row an INSERT or UPDATE writes.
 * fence.fenced_update and fence.advance present their token argument.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/presented_token.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/fence_errors.hpp"
#include "pg/pg.hpp"
#include "tokens/fence_rule.hpp"

namespace fence {

/* The kind of a guarded write. */
enum class WriteOp
{
	kInsert,
	kUpdate,
	kDelete,
};

/* "INSERT", "UPDATE" or "DELETE", for messages. */
inline const char *
WriteOpName(WriteOp op)
{
	return op == WriteOp::kInsert ? "INSERT" : op == WriteOp::kUpdate ? "UPDATE" : "DELETE";
}

/* The token a write presents, if any (TokenPresented). */
struct PresentedToken
{
	bool          presents; /* false: no token (FN003) */
	int64         token;    /* when presents */
	bool          from_row; /* the row carries it (1. above); else the row is stamped with it */
	NoTokenReason why_none; /* when !presents */
};

/*
 * The one rule above.  old_fence is the fence of the row before the write
 * (UPDATE, DELETE; ignored for INSERT), new_fence the one the write gives
 * it (INSERT, UPDATE; ignored for DELETE).
 */
PresentedToken TokenPresented(WriteOp op, StoredFence old_fence, StoredFence new_fence);

/*
 * fence.fenced_update presents its token to the guard triggers its UPDATE
 * fires (where the new row cannot carry it: allow_equal, a row moved to
 * another partition, writes of triggers fired by the UPDATE), ahead of
 * fence.token and without the cost of a GUC change per call.  It pushes
 * only a token that has passed the issued check (CheckFence,
 * fence_check.hpp, checks it before the UPDATE runs).  Calls nest:
 * PushPresentedToken returns what was pushed before, which the caller gives
 * back to PopPresentedToken on every path (also on error).
 */
struct PushedToken
{
	bool  active; /* a fenced_update is running */
	int64 token;  /* its token */
};

PushedToken PushPresentedToken(int64 token);
/* previous may be volatile: callers keep it across PG_TRY (longjmp). */
void PopPresentedToken(const volatile PushedToken &previous);

/*
 * Is token the one a running fence.fenced_update presents?  Then its
 * issued check (FN004) is made already, in this statement, before the
 * UPDATE that fires the guard (fence_check.hpp).
 */
bool PresentedByRunningUpdate(int64 token);

} /* namespace fence */
