/*-------------------------------------------------------------------------
 *
 * token_setting.hpp
 *	  The setting fence.token: the fencing token that a plain UPDATE or
 *	  DELETE of a guarded table presents (see writes/presented_token.hpp).
 *
 * fence.token counts only in the transaction that set it.  Each value of the
 * setting remembers the local transaction id (PGPROC lxid) of the
 * transaction whose SET / SET LOCAL / set_config() produced it; the value
 * counts only while that transaction is still the current one.  A value
 * restored by ROLLBACK (TO SAVEPOINT) or at transaction end keeps the
 * transaction it was set in, so a session-level SET from an earlier
 * transaction (a pooler's leftover), a value from postgresql.conf, ALTER
 * ROLE ... SET or PGOPTIONS never counts.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/token_setting.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Define the setting fence.token (from _PG_init). */
void InitTokenSetting();

/* fence.token as the current transaction sees it. */
enum class TokenSettingState
{
	kUnset,                 /* empty (RESET, never set) */
	kSetInOtherTransaction, /* set, but not in the current transaction */
	kSetInThisTransaction   /* set in the current transaction: it counts */
};

/* The state of fence.token; *token is set when kSetInThisTransaction. */
TokenSettingState ReadTokenSetting(int64 *token);

} /* namespace fence */
