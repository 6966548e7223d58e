/*-------------------------------------------------------------------------
 *
 * presented_token.cpp
 *	  Which fencing token a write presents: its row's, else the one pushed
 *	  by a running fence.fenced_update, else fence.token set in this
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

#include "tokens/token_setting.hpp"

namespace fence {

namespace {

/* The token of the innermost running fence.fenced_update, if any. */
PushedToken pushed = {false, 0};

/* Does the write's own row carry its token (rule 1)? */
bool
RowCarriesToken(WriteOp op, StoredFence old_fence, StoredFence new_fence)
{
	switch (op)
	{
		case WriteOp::kInsert:
			return !new_fence.is_null && new_fence.value != 0;
		case WriteOp::kUpdate:
			return !new_fence.is_null && (old_fence.is_null || new_fence.value != old_fence.value);
		case WriteOp::kDelete:
			break;
	}
	return false;
}

/* Why a write whose row carries no token, and fence.token none, presents none. */
NoTokenReason
WhyNone(WriteOp op, StoredFence old_fence, StoredFence new_fence)
{
	switch (op)
	{
		case WriteOp::kInsert:
			return new_fence.is_null ? NoTokenReason::kInsertFenceNull
									 : NoTokenReason::kInsertFenceZero;
		case WriteOp::kUpdate:
			return new_fence.is_null && !old_fence.is_null ? NoTokenReason::kUpdateSetsFenceNull
														   : NoTokenReason::kUpdateLeavesFence;
		case WriteOp::kDelete:
			break;
	}
	return NoTokenReason::kDeleteWithoutSetting;
}

} /* namespace */

PresentedToken
TokenPresented(WriteOp op, StoredFence old_fence, StoredFence new_fence)
{
	PresentedToken p = {true, 0, false, NoTokenReason::kDeleteWithoutSetting};

	if (RowCarriesToken(op, old_fence, new_fence))
	{
		p.token = new_fence.value;
		p.from_row = true;
		return p;
	}
	if (pushed.active)
	{
		p.token = pushed.token;
		return p;
	}

	TokenSettingState setting = ReadTokenSetting(&p.token);

	if (setting == TokenSettingState::kSetInThisTransaction)
		return p;
	p.presents = false;
	p.why_none = setting == TokenSettingState::kSetInOtherTransaction
					 ? NoTokenReason::kSetInEarlierTransaction
					 : WhyNone(op, old_fence, new_fence);
	return p;
}

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
PresentedByRunningUpdate(int64 token)
{
	return pushed.active && pushed.token == token;
}

} /* namespace fence */
