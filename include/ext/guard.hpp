/*-------------------------------------------------------------------------
 *
 * guard.hpp
 *	  The guard trigger (fence.guard / fence.unguard) and the fence.token
 *	  setting through which a write presents its fencing token.
 *
 * fence.token counts only in the transaction that set it.  Each value of the
 * setting remembers the local transaction id (PGPROC lxid) of the
 * transaction whose SET / SET LOCAL / set_config() produced it; the guard
 * trigger accepts the value only while that transaction is still the
 * current one.  A value restored by ROLLBACK (TO SAVEPOINT) or at transaction
 * end keeps the transaction it was set in, so a session-level SET from an
 * earlier transaction (a pooler's leftover), a value from postgresql.conf,
 * ALTER ROLE ... SET or PGOPTIONS is never accepted.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/guard.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "ext/pg.hpp"

namespace fence {

/* Name of the trigger that fence.guard() installs. */
constexpr const char *kGuardTriggerName = "fence_guard";

/* Define the fence.token setting (from _PG_init). */
void		InitGuard();

/* State of fence.token as seen by the current transaction. */
enum class TokenState
{
	kUnset,						/* empty (RESET, never set) */
	kOtherTransaction,			/* set, but not in the current transaction */
	kValid						/* set in the current transaction */
};

/*
 * The token guard triggers see: one presented by a running fence.fenced_update
 * (below), else the current transaction's fence.token; *token is set when
 * kValid.
 */
TokenState	CurrentTokenSetting(int64 *token);

/*
 * fence.fenced_update presents its token to the guard triggers its UPDATE
 * fires (where the new row cannot carry it: allow_equal, a row moved to
 * another partition, writes of triggers fired by the UPDATE), as if
 * fence.token were set, without the cost of a GUC change per call.  Calls
 * nest: PushPresentedToken returns the previous state, which the caller
 * gives back to PopPresentedToken on every path (also on error).
 */
struct PresentedToken
{
	bool		active;
	int64		token;
};

PresentedToken PushPresentedToken(int64 token);
/* previous may be volatile: callers keep it across PG_TRY (longjmp). */
void		PopPresentedToken(const volatile PresentedToken &previous);

}							/* namespace fence */
