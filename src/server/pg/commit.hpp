/*-------------------------------------------------------------------------
 *
 * commit.hpp
 *	  Skip the commit's WAL flush for transactions whose only WAL needs none.
 *
 * A transaction that did nothing but draw fencing tokens (their WAL is
 * flushed by IssueToken before the token is returned) or release a lease
 * (losing a release in a crash only makes the next holder wait for the TTL)
 * or claim queue jobs (a lost claim only puts the job back as it was:
 * queue/claim.cpp) gains nothing from waiting for its commit record to reach disk: its commit
 * is made asynchronous.  Anything else the transaction wrote makes the
 * commit synchronous as the caller configured it.
 *
 * The C variable behind synchronous_commit is changed at PRE_COMMIT (after
 * every deferred trigger and portal of the transaction has run: no SQL of
 * the caller runs after it) and restored by the COMMIT/ABORT callback, which
 * runs before the GUC machinery's end-of-transaction work; no setting the
 * caller can see changes (docs/guarantees.md, guarantee 8).  The commit record is still
 * written and visible at once; only the wait for its flush (and for
 * synchronous standbys) is skipped.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/commit.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Where the transaction's WAL stood before a call. */
struct WalMark
{
	TransactionId xid; /* top-level XID, or invalid */
	XLogRecPtr    end; /* XactLastRecEnd */
};

/* The current transaction's WAL position (take it before writing). */
WalMark WalMarkNow();

/*
 * The WAL this transaction wrote since `before` needs no commit flush.  If
 * nothing it wrote before that needed one either (it had no XID and no WAL,
 * or everything up to `before` was itself marked so), its commit will be
 * asynchronous unless it writes more WAL before committing.
 */
void AllowAsyncCommitSince(WalMark before);

} /* namespace fence */
