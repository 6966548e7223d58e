/*-------------------------------------------------------------------------
 *
 * presented_token.hpp
 *	  The fencing token a write presents to guard triggers when its new row
 *	  does not carry one.
 *
 * The guard trigger (src/server/writes/guard.cpp) takes the token of an UPDATE that
 * changes the fence column from the new row.  Every other write it checks
 * (an UPDATE that leaves the fence column as it is, a DELETE) presents
 *
 *	 1. the token of the fence.fenced_update that is running, which pushes
 *		it for the length of its UPDATE (PushPresentedToken); else
 *	 2. fence.token, if the current transaction set it (token_setting.hpp);
 *
 * and otherwise no token at all.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/presented_token.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"
#include "tokens/token_setting.hpp"

namespace fence {

/*
 * The token a write presents, if any: true and *token when it presents one;
 * otherwise false, and *setting tells why fence.token did not supply one
 * (kUnset or kSetInOtherTransaction), for the error message.
 */
bool TokenPresentedByWrite(int64 *token, TokenSettingState *setting);

/*
 * fence.fenced_update presents its token to the guard triggers its UPDATE
 * fires (where the new row cannot carry it: allow_equal, a row moved to
 * another partition, writes of triggers fired by the UPDATE), ahead of
 * fence.token and without the cost of a GUC change per call.  Calls nest:
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

} /* namespace fence */
