/*-------------------------------------------------------------------------
 *
 * sync_wait.cpp
 *	  Tokens wait for the synchronous standbys, and fail when that wait is
 *	  cut short (see sync_wait.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/sync_wait.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "tokens/sync_wait.hpp"

#include "pg/compat.hpp"

extern "C" {
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
}

namespace fence {

namespace {

/* Does this session's configuration name synchronous standbys? */
bool
SyncStandbysConfigured()
{
	return max_wal_senders > 0 && SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0';
}

/* The confirmation level this session's synchronous_commit waits for. */
int
WaitMode()
{
	switch (synchronous_commit)
	{
		case SYNCHRONOUS_COMMIT_REMOTE_WRITE:
			return SYNC_REP_WAIT_WRITE;
		case SYNCHRONOUS_COMMIT_REMOTE_APPLY:
			return SYNC_REP_WAIT_APPLY;
		default:
			return SYNC_REP_WAIT_FLUSH;
	}
}

} /* namespace */

void
RequireSyncCommitForTokens()
{
	if (!SyncStandbysConfigured() || synchronous_commit > SYNCHRONOUS_COMMIT_LOCAL_FLUSH)
		return;
	ereport(
		ERROR,
		(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		 errmsg("cannot issue a fencing token with synchronous_commit = %s",
				GetConfigOption("synchronous_commit", false, false)),
		 errdetail(
			 "synchronous_standby_names is set, and a token is returned only after the synchronous standbys have its WAL; this setting skips that wait."),
		 errhint(
			 "Set synchronous_commit to on, remote_write or remote_apply for the calls that grant locks or leases.")));
}

/*
 * Waits in a loop on the confirmed position, not in PostgreSQL's queue of
 * committing backends (SyncRepWaitForLSN): that queue holds each LSN at
 * most once (syncrep.c asserts it, SyncRepQueueIsOrderedByLSN), which
 * commit records keep, each ending at its own position, but tokens do not:
 * every backend drawing from one reserved range of tokens waits for the
 * same record.  The walsenders wake only the queue, so the loop looks
 * again every millisecond; a cancel, statement_timeout or termination ends
 * it, as it ends PostgreSQL's wait.
 */
void
WaitForSyncStandbys(XLogRecPtr lsn)
{
	if (XLogRecPtrIsInvalid(lsn) || !SyncStandbysConfigured())
		return;
	RequireSyncCommitForTokens();

	int        mode = WaitMode();
	bool       in_effect;
	XLogRecPtr confirmed;

	for (;;)
	{
		LWLockAcquire(SyncRepLock, LW_SHARED);
		in_effect = compat::SyncStandbysInEffect(WalSndCtl);
		confirmed = WalSndCtl->lsn[mode];
		LWLockRelease(SyncRepLock);

		/* as SyncRepWaitForLSN decides: no standby list in effect, or confirmed */
		if (!in_effect || lsn <= confirmed)
			return;
		if (ProcDiePending || QueryCancelPending)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
						 WAIT_EVENT_SYNC_REP);
		ResetLatch(MyLatch);
	}
	/* the cancel is answered here (a termination still ends the session) */
	QueryCancelPending = false;
	ereport(
		ERROR,
		(errcode(ERRCODE_QUERY_CANCELED),
		 errmsg("fencing token withheld: the wait for synchronous replication was canceled"),
		 errdetail(
			 "The token's WAL (up to %X/%X) is durable here but not confirmed by the synchronous standbys (confirmed up to %X/%X), so the token is not returned. A cancel request, statement_timeout or termination ended the wait.",
			 (uint32) (lsn >> 32), (uint32) lsn, (uint32) (confirmed >> 32), (uint32) confirmed),
		 errhint("Retry once the synchronous standbys are connected and keeping up.")));
}

} /* namespace fence */
