/*-------------------------------------------------------------------------
 *
 * fence_check.cpp
 *	  The one fence check of every write path: issued, rule, report, error
 *	  (see fence_check.hpp).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/fence_check.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/fence_check.hpp"

#include "observability/stats.hpp"
#include "tokens/issued_token.hpp"

namespace fence {

FencedWrite
GuardedWrite(const PresentedToken &p, const char *presenter)
{
	FencedWrite w = {presenter, p.presents, p.token, p.why_none, false};

	/* fence.fenced_update checked this token before its UPDATE (fence_check.hpp) */
	w.issued_checked = p.presents && PresentedByRunningUpdate(p.token);
	return w;
}

FencedWrite
CallWrite(int64 token, const char *presenter)
{
	return FencedWrite{presenter, true, token, NoTokenReason::kDeleteWithoutSetting, false};
}

bool
CheckFence(FencedWrite *write, const Fence *fence)
{
	/* 0. no token */
	if (!write->presents)
	{
		RefusedWrite w = fence->describe(fence);

		StatsCountRejected(StatKind::kMissingTokens);
		RaiseNoToken(w, write->why_none);
	}

	/* 1. issued, once per write */
	if (!write->issued_checked)
	{
		RequireIssuedToken(write->token, write->presenter);
		write->issued_checked = true;
	}

	/* 2. the rule */
	int64        current = 0;
	FenceOutcome outcome = fence->apply(fence, write->token, &current);

	if (outcome != FenceOutcome::kStale)
		return outcome == FenceOutcome::kAccepted;

	/* 3. report */
	RefusedWrite w = fence->describe(fence);

	ReportStaleWrite(fence->path, w.table != nullptr ? psprintf("%s %s", w.table, w.key) : w.key,
					 write->token, current);

	/* 4. error */
	if (fence->raise_when_stale)
		RaiseStaleToken(w, write->token, current);
	return false;
}

} /* namespace fence */
