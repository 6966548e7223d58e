/*-------------------------------------------------------------------------
 *
 * token_setting.cpp
 *	  The setting fence.token (a string GUC), its check and assign hooks,
 *	  and the transaction each of its values was set in (see
 *	  token_setting.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/token_setting.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "tokens/token_setting.hpp"

#include "pg/compat.hpp"

extern "C" {
#include "utils/guc.h"
#include "utils/guc_tables.h"
}

namespace fence {

namespace {

/* The GUC's "extra": the parsed value and the transaction that set it. */
struct TokenExtra
{
	bool               has_token;
	int64              token;
	LocalTransactionId lxid; /* InvalidLocalTransactionId: no transaction */
};

char             *token_string = nullptr;
const TokenExtra *token_current = nullptr;

/* While DefineCustomStringVariable converts a placeholder (see InitTokenSetting). */
bool defining_token = false;
bool placeholder_set_in_xact = false;

LocalTransactionId
CurrentLxid()
{
	if (MyProc == nullptr || !IsTransactionState())
		return InvalidLocalTransactionId;
	return compat::MyLocalXid();
}

/*
 * Check hook: parse the value and remember the transaction that sets it.
 * The check hook runs only when a new value is set (SET, SET LOCAL,
 * set_config, a function's SET clause, the configuration file, connection
 * options), never when a saved value is restored at (sub)transaction end:
 * restored values come back with their own extra.
 */
bool
CheckToken(char **newval, void **extra, GucSource source)
{
	const char *s = *newval;
	int64       value = 0;
	bool        has = false;

	if (s != nullptr)
	{
		while (isspace((unsigned char) *s))
			s++;
		if (*s != '\0')
		{
			char *end;

			errno = 0;
			value = strtoi64(s, &end, 10);
			while (isspace((unsigned char) *end))
				end++;
			if (errno != 0 || end == s || *end != '\0')
			{
				GUC_check_errdetail(
					"fence.token must be a fencing token (a bigint), or empty for none.");
				return false;
			}
			has = true;
		}
	}

	/* guc.c frees it: from its own allocator */
	TokenExtra *e = static_cast<TokenExtra *>(compat::GucExtraAlloc(sizeof(TokenExtra)));

	if (e == nullptr)
		return false;
	e->has_token = has;
	e->token = value;
	e->lxid = InvalidLocalTransactionId;
	if (has)
	{
		/*
		 * When the library is loaded after the session SET fence.token (no
		 * shared_preload_libraries), the placeholder's values (the session
		 * value and each saved level) are applied again here.  None of them
		 * counts yet: InitTokenSetting then marks the current value alone,
		 * if the placeholder was set in this transaction.
		 */
		if (!defining_token)
			e->lxid = CurrentLxid();
	}
	*extra = e;
	return true;
}

void
AssignToken(const char *newval, void *extra)
{
	token_current = static_cast<const TokenExtra *>(extra);
}

/* Was the placeholder of fence.token set in the current transaction? */
bool
PlaceholderSetInTransaction()
{
	struct config_generic *gen = compat::FindGuc("fence.token");

	return gen != nullptr && gen->stack != nullptr && IsTransactionState();
}

} /* namespace */

TokenSettingState
ReadTokenSetting(int64 *token)
{
	if (token_current == nullptr || !token_current->has_token)
		return TokenSettingState::kUnset;

	LocalTransactionId lxid = CurrentLxid();

	if (lxid == InvalidLocalTransactionId || token_current->lxid != lxid)
		return TokenSettingState::kSetInOtherTransaction;
	*token = token_current->token;
	return TokenSettingState::kSetInThisTransaction;
}

void
InitTokenSetting()
{
	placeholder_set_in_xact = PlaceholderSetInTransaction();
	defining_token = true;
	DefineCustomStringVariable(
		"fence.token", "Fencing token presented by UPDATE and DELETE of guarded tables.",
		"Counts only in the transaction that set it: use SET LOCAL fence.token = <token>. "
		"A value set in an earlier transaction is ignored.",
		&token_string, "", PGC_USERSET, GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE, CheckToken,
		AssignToken, nullptr);
	defining_token = false;

	/*
	 * The value in force now was set in this transaction if the placeholder
	 * had a GUC stack: it counts.  Values saved under it (the session value,
	 * outer savepoint levels) do not, even when a ROLLBACK TO brings one
	 * back: ignoring a token set earlier in this transaction only fails
	 * closed (FN003), counting a leftover one would not.
	 */
	if (placeholder_set_in_xact && token_current != nullptr && token_current->has_token)
		const_cast<TokenExtra *>(token_current)->lxid = CurrentLxid();
}

} /* namespace fence */
