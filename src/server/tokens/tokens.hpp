/*-------------------------------------------------------------------------
 *
 * tokens.hpp
 *	  Fencing tokens: one sequence per database, durable before use.
 *
 * A fencing token (Kleppmann, "How to do distributed locking", 2016) is a
 * number that grows with every grant, so that a resource can reject writes
 * from a holder whose grant has been superseded.  pg_fence draws tokens from
 * the sequence fence.token_seq (CACHE 1, so values are in time order across
 * sessions) and, before a token is returned, makes the WAL record that covers
 * it durable: see IssueToken().
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/tokens.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/*
 * Draw the next fencing token.  PostgreSQL-style (raises ERROR).
 *
 * nextval() alone does not guarantee a value is never handed out twice: it
 * WAL-logs 32 values ahead and relies on the *transaction's commit* to flush
 * that record, so a value returned in a transaction that rolls back (or
 * commits with synchronous_commit = off, or that was pre-logged by another,
 * still open transaction) can be reissued after a crash.  IssueToken()
 * returns no token before the WAL that puts fence.token_seq at or above it
 * is flushed (and, with synchronous replication, received by the standbys):
 *
 *	 - with the shared block (pg/shared_block.hpp: preloaded, or a named DSM segment
 *	   on 17+), from a per-database shared counter kept
 *	   below a durable ceiling that one backend moves (setval + flush) well
 *	   before it is reached (tokens.cpp explains the rules);
 *	 - otherwise (15/16 without the preload) with nextval(), flushing the WAL up to the sequence page's
 *	   LSN (a no-op 31 calls in 32).
 *
 * Since the token is then durable on its own, a transaction that does
 * nothing but draw tokens commits without a flush of its commit record
 * (AllowAsyncCommitSince, commit.hpp).
 *
 * Across failover (docs/guarantees.md, guarantee 3): every token lies in the epoch of the
 * server's current timeline, [E << 40, (E + 1) << 40), claimed durably when
 * the counter starts (token_epoch.hpp has the arithmetic), so a promoted
 * standby's tokens beat every token of the timeline it left, whatever WAL
 * it received.  With synchronous standbys, the token is returned only once
 * they confirmed its WAL (sync_wait.hpp).
 *
 * Raises 25006 in recovery; 55000 if pg_fence is not installed, if
 * fence.token_seq was altered or moved backwards, or for synchronous_commit
 * local/off with synchronous standbys; 57014 when the wait for them was
 * cut short; 2200H when this timeline's tokens are exhausted.
 */
int64 IssueToken();

/*
 * An upper bound of every token this database has issued, and the tightest
 * one it can read without a round trip or a lock that serializes writers
 * (the check of guarantee 11, issued_token.hpp).  PostgreSQL-style (raises
 * ERROR).
 *
 *	 - With the shared block and the counter started for fence.token_seq in
 *	   this server's life: token_next - 1, the last token handed out (tokens
 *	   of earlier lives are at most the sequence's durable value, and the
 *	   counter started above that, after lifting the sequence to its
 *	   epoch's floor: the tokens skipped by that jump are never issued, so
 *	   accepting them fences nobody out).  Read under the counter's
 *	   spinlock.
 *	 - Otherwise (15/16 without the preload; a database beyond the shared
 *	   block's slots; or no token drawn yet since the server started): the
 *	   sequence's last_value, read from its page.  Without the counter it is
 *	   the last value nextval() handed out.  After a restart, before the first
 *	   draw, it is the ceiling the previous life had made durable, which may
 *	   lie up to one chunk (4096) above the last token really handed out:
 *	   those tokens can never be issued again (the counter starts above
 *	   them), so accepting them fences nobody out.
 */
int64 HighestIssuedToken();

/* OID of fence.token_seq in this database; raises 55000 if not installed. */
Oid TokenSequenceOid();

} /* namespace fence */
