/*-------------------------------------------------------------------------
 *
 * commit.cpp
 *	  Asynchronous commit of transactions whose only WAL needs no flush
 *	  (see src/server/pg/commit.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/commit.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/commit.hpp"

namespace fence {

namespace {

bool callback_registered = false;

/* armed: every WAL record of this transaction so far needs no commit flush */
bool    armed = false;
WalMark armed_at = {InvalidTransactionId, InvalidXLogRecPtr};

bool overridden = false;
int  saved_synchronous_commit = 0;

void
CommitCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* re-check: no XID change and no WAL since the last marked call */
			if (armed && GetTopTransactionIdIfAny() == armed_at.xid &&
				XactLastRecEnd == armed_at.end && synchronous_commit > SYNCHRONOUS_COMMIT_OFF)
			{
				saved_synchronous_commit = synchronous_commit;
				synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
				overridden = true;
			}
			armed = false;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PRE_PREPARE:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			if (overridden)
			{
				synchronous_commit = saved_synchronous_commit;
				overridden = false;
			}
			armed = false;
			break;
		default:
			break;
	}
}

} /* namespace */

WalMark
WalMarkNow()
{
	return WalMark{GetTopTransactionIdIfAny(), XactLastRecEnd};
}

void
AllowAsyncCommitSince(WalMark before)
{
	bool clean_before = (!TransactionIdIsValid(before.xid) && before.end == InvalidXLogRecPtr) ||
						(armed && before.xid == armed_at.xid && before.end == armed_at.end);

	if (!clean_before)
	{
		armed = false;
		return;
	}
	if (!callback_registered)
	{
		RegisterXactCallback(CommitCallback, nullptr);
		callback_registered = true;
	}
	armed = true;
	armed_at = WalMarkNow();
}

} /* namespace fence */
