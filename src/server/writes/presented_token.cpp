/*-------------------------------------------------------------------------
 *
 * presented_token.cpp
 *	  The fencing token a write presents to guard triggers: the one pushed by
 *	  a running fence.fenced_update, else fence.token set in this
 *	  transaction (see presented_token.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/presented_token.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/presented_token.hpp"

namespace fence {

namespace {

/* The token of the innermost running fence.fenced_update, if any. */
PushedToken pushed = {false, 0};

} /* namespace */

PushedToken
PushPresentedToken(int64 token)
{
	PushedToken previous = pushed;

	pushed.active = true;
	pushed.token = token;
	return previous;
}

void
PopPresentedToken(const volatile PushedToken &previous)
{
	pushed.active = previous.active;
	pushed.token = previous.token;
}

bool
TokenPresentedByWrite(int64 *token, TokenSettingState *setting)
{
	if (pushed.active)
	{
		*token = pushed.token;
		return true;
	}
	*setting = ReadTokenSetting(token);
	return *setting == TokenSettingState::kSetInThisTransaction;
}

} /* namespace fence */
