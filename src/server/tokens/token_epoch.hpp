/*-------------------------------------------------------------------------
 *
 * token_epoch.hpp
 *	  Token epochs: every timeline issues tokens in a range of its own, above
 *	  every range of the timelines it descends from (like a Raft term).
 *
 * Why.  A promoted standby continues from the token sequence's value it has
 * replayed.  An asynchronous standby (or a synchronous one whose wait was
 * skipped) may not have received the WAL of the last tokens the old primary
 * handed out, and an old primary cut off by a network split keeps granting:
 * without epochs, both hand out the same numbers.  Likewise a copy of a
 * database (pg_dump/restore into another database or cluster, CREATE
 * DATABASE ... TEMPLATE, pg_upgrade) continues from the token sequence it
 * was given, while its source keeps granting from the same values.
 *
 * The arithmetic.  A token is a plain bigint t; its epoch is t >> 40
 * (kEpochBits): each epoch holds 2^40 (about 1.1e12) tokens, and epochs run
 * from 0 to kMaxEpoch = 2^23 - 2 (the last range ends at (2^23 - 1) << 40,
 * below 2^63).  A server issues tokens on its current timeline T
 * (GetWALInsertionTimeLine) from one epoch E only: every token t satisfies
 * E << 40 <= t < (E + 1) << 40, and reaching the top raises 2200H instead of
 * spilling into the next epoch.  E is chosen when the token counter starts
 * (after a server start or a promotion; without the shared block once per
 * backend and timeline) from what this database holds durably:
 *
 *	 V        = the token sequence's value >> 40 (the epoch of the last
 *	            token handed out, or of what an administrator set);
 *	 (Ec, Tc) = fence.token_epoch: the last epoch claimed and the timeline
 *	            that claimed it;
 *	 L        = the lineage of the claim: fence.token_lineage, the system
 *	            identifier (pg_controldata) of the cluster that claimed
 *	            it, and fence.token_lineage_db, the OID of the database
 *	            that did.  L is "ours" when it names this cluster and this
 *	            database: the database itself, a standby of it, or a
 *	            point-in-time recovery of it.
 *
 *	   same lineage (a claim exists, L ours, T >= Tc, V <= Ec):
 *	       E = Ec + (T - Tc)
 *	   a copy (a claim exists, L not ours: a restore into another database
 *	   or cluster, CREATE DATABASE ... TEMPLATE, pg_upgrade):
 *	       E = Es + T, where Es = Ec if V <= Ec, else V + Tc - 1
 *	   otherwise (no claim: first use, 0.1.0's tokens; a sequence set above
 *	   the claim):
 *	       E = max(V, Ec) + T - 1
 *
 * and, if (E, T) or L differs from the record, writes fence.token_epoch,
 * then fence.token_lineage_db and fence.token_lineage, flushes that WAL,
 * lifts the token sequence to E << 40 (flushed too) and only then hands
 * out tokens of E.
 *
 * Why it holds across promotions.  Within a lineage E - T is a constant B
 * (the base), so the epoch of timeline T is B + T.  A standby promoted from
 * timeline T picks a timeline T' > T; whatever WAL it missed, the record it
 * replayed carries the same B (or an older claim of the same lineage, same
 * B), so its epoch B + T' > B + T, and every token the old primary issued
 * on T, before or after the promotion, is below (B + T + 1) << 40 <=
 * (B + T') << 40: below every token of the new primary.  A promotion of a
 * promoted server's standby continues the same way.  For the same inputs
 * the three rules are ordered: with a claim, Es >= max(V, Ec), so
 * Es + T > max(V, Ec) + T - 1 >= Ec + (T - Tc) (T >= 1, Tc >= 1); and the
 * other two rules increase with T for fixed inputs.  A standby replays a
 * prefix of the primary's WAL: if it replayed the inputs of a claim but not
 * the claim (the claim is written before the first token of its epoch, not
 * necessarily received by an asynchronous standby), it applies the same
 * rule to the same inputs on a higher timeline: a higher epoch.  If it
 * replayed the record but not the lineage written after it (a first claim,
 * or a copy's), the lineage is not ours and a claim exists: the copy rule,
 * Es + T' >= Ec' + T' with the new claim's Ec', above the primary's Ec'.
 *
 * Why it holds for copies.  A copy holds its source's claim (Ec, Tc),
 * lineage and token sequence as they were when it was taken.  As long as
 * the source stays on timeline Tc it issues tokens in epoch Es at most: Ec
 * (its same-lineage rule) or, when V > Ec, max(V, Ec) + Tc - 1 (its
 * "otherwise" rule on Tc).  V > Ec arises from an administrator's setval
 * above the claim, or from a dump that read token_seq after a newer claim
 * than the one it read from fence.token_epoch (pg_dump reads each sequence
 * on its own; the lift follows the claim): then the source issues in
 * epoch V <= Es.  Tokens the source handed out before the copy are at most
 * the copied token_seq, or fence.token_mark, which a copy's counter start
 * lifts token_seq to.  The copy's epoch Es + T >= Es + 1: each of its
 * tokens beats every token its source issued before and after the copy on
 * Tc.  Its later claims are of its own lineage, higher still.  In the same
 * cluster a copy and its source share the timelines: the source's claim on
 * a later timeline T' (including one it was promoted to before the copy,
 * without a grant since) is at most Es + T' - Tc, the copy's Es + T'; the
 * copy stays ahead of its source through every failover of the cluster.
 *
 * Not covered (docs/limits.md):
 *   - in another cluster, tokens the source issues on a timeline above Tc
 *     (a promotion or point-in-time recovery of the source after the copy,
 *     or before it with no grant since): they can pass the copy's;
 *   - a copy of a database that has no claim (a dump of 0.1.0, or of a
 *     database that issued no token since CREATE or ALTER EXTENSION UPDATE
 *     to 0.2.0): it takes the "otherwise" rule like its source would, on
 *     timeline 1 the same epoch;
 *   - a restore over the source database itself (pg_restore --clean into
 *     it: same lineage), and a file-level copy of the cluster started as a
 *     primary without a promotion (a disk snapshot: same cluster, same
 *     timeline): both continue in the source's epoch.
 *
 * Upgrades.  0.1.0 databases updated to 0.2.0 have no claim: the first
 * counter start uses max(V, 0) + T - 1, which on timeline 1 keeps the
 * current numbers (tokens < 2^40 stay in epoch 0) and never goes lower than
 * an existing token.  pg_upgrade makes a new cluster (a new system
 * identifier; PostgreSQL 15 and later keep the database OIDs) and so a
 * copy: the first grant after it starts a new epoch, so the old cluster,
 * if started again, stays below it.  A database whose extension SQL
 * predates these sequences (ALTER EXTENSION UPDATE not run) issues tokens
 * as 0.1.0 did, without epochs.
 *
 * Limits (docs/failover.md, "Tokens across failover"): 2^40 tokens per timeline; each
 * timeline uses one epoch (a copy uses T more, plus Tc - 1 when V > Ec; a
 * sequence set above the claim T - 1 more), so the 2^23 - 1 epochs last
 * about 8.4 million timelines.  A promotion of a standby that has not
 * replayed an administrator's setval above the claim, or a restore, is not
 * covered: wait for replay first.  A token_seq lowered below
 * fence.token_mark is refused (55000) at the next counter start
 * (TokenMarkSequenceOid); without the shared block the mark moves only
 * with an epoch's floor, so a new backend cannot tell a lowering below
 * tokens drawn with nextval() since then.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/token_epoch.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Low bits of a token within its epoch: 2^40 tokens per epoch. */
constexpr int kEpochBits = 40;

/* The highest epoch: its tokens end at (2^23 - 1) << 40, below 2^63. */
constexpr int64 kMaxEpoch = (INT64CONST(1) << (63 - kEpochBits)) - 2;

/* The epoch a server issues tokens in, on one timeline. */
struct TokenEpoch
{
	TimeLineID tli;   /* the timeline it was chosen for */
	int64      epoch; /* -1: no epochs (extension SQL older than 0.2.0) */
	int64      floor; /* epoch << 40: the lowest token of the epoch */
	int64      cap;   /* (epoch + 1) << 40: every token is below it */
};

/*
 * OID of fence.token_epoch in this database, or InvalidOid when the
 * extension's SQL predates epochs (or lacks a lineage sequence).  Cached, reset by relcache invalidation.
 */
Oid TokenEpochSequenceOid();

/*
 * OID of fence.token_mark in this database, or InvalidOid when the
 * extension's SQL predates it (then nothing is checked against it).
 * Cached, reset by relcache invalidation.
 *
 * fence.token_mark is the highest value of fence.token_seq the token
 * allocator has made durable (every ceiling move and counter start sets it,
 * after token_seq and under the same WAL flush, so it is never above
 * token_seq's durable value, on this server or on a standby that replayed
 * both), and an epoch claim lifts it with the sequence.  A counter start
 * (ClaimTokenEpoch) finds token_seq below it only if an administrator
 * lowered token_seq (setval, ALTER SEQUENCE RESTART) since: it raises 55000
 * then instead of handing out tokens again, even after a restart, which
 * forgets what shared memory remembered.  In a copy of the database that
 * claimed the epoch (the lineage is not this database's: a pg_dump/restore,
 * whose dump may read the mark after token_seq moved on), it lifts
 * token_seq to the mark instead: the source issued tokens up to it.
 */
Oid TokenMarkSequenceOid();

/*
 * Lock fence.token_mark as setval does (RowExclusiveLock, until
 * transaction end), before any LWLock.  No-op for an invalid mark_seq.
 */
void LockTokenMark(Oid mark_seq);

/*
 * Raise 55000 (RaiseSequenceLowered) if fence.token_seq's value is below
 * fence.token_mark's.  No-op for an invalid mark_seq.
 */
void CheckTokenMark(Oid token_seq, Oid mark_seq);

/*
 * setval(mark_seq, value) as its owner, without a flush, unless the mark is
 * already at least value.  Returns the LSN the caller must flush
 * (InvalidXLogRecPtr if nothing was written).  Set token_seq first.
 */
XLogRecPtr SetTokenMark(Oid mark_seq, int64 value);

/*
 * Choose this timeline's epoch (the rules above), make its claim durable,
 * and lift token_seq to at least the epoch's floor (flushed), so that the
 * next nextval() of token_seq returns a token of the epoch.  First raises
 * 55000 (CheckTokenMark) if token_seq was lowered below fence.token_mark
 * in the database that claimed the epoch (in a copy of it, lifts token_seq
 * to the mark); lifts the mark with the sequence to the epoch's floor.
 * With no epoch sequence (epoch_seq invalid), returns the unbounded range
 * of 0.1.0.
 * Raises 2200H when the epochs are exhausted.  The caller holds token_seq's
 * RowExclusiveLock and LockEpochSequences(epoch_seq) (both taken before any
 * LWLock, so that setval never waits under one).  PostgreSQL-style (raises
 * ERROR).
 */
TokenEpoch ClaimTokenEpoch(Oid token_seq, Oid epoch_seq);

/*
 * Lock the epoch sequences for a claim: a self-conflicting lock on
 * epoch_seq (one claimer at a time), and the locks setval takes on it, on
 * the two lineage sequences and on fence.token_mark.
 * UnlockEpochSequences releases the first (the others, like setval's, last
 * until transaction end).  No-ops for an invalid epoch_seq.
 */
void LockEpochSequences(Oid epoch_seq);
void UnlockEpochSequences(Oid epoch_seq);

/*
 * Raise 2200H: the tokens of this timeline's epoch are used up.  Says what
 * to do (docs/failover.md, "Tokens across failover").
 */
[[noreturn]] void RaiseEpochExhausted(const TokenEpoch &e);

/*
 * Raise 55000 unless fence.token_seq still has the settings tokens rely on
 * (bigint, INCREMENT 1, CACHE 1, NO CYCLE).  Cached per backend, reset by
 * relcache invalidation (ALTER SEQUENCE sends one).
 */
void CheckTokenSequence(Oid token_seq);

/*
 * Raise 55000: fence.token_seq was set (setval, ALTER SEQUENCE RESTART)
 * below value, a token this server has already handed out or made durable.
 */
[[noreturn]] void RaiseSequenceLowered(int64 found, int64 value);

/*
 * The highest value the sequence has handed out or been set to, read from
 * its page: last_value, or one less while is_called is false.  No WAL, no
 * round trip, no lock that conflicts with nextval or setval.
 */
int64 SequenceLastValue(Oid seq);

/*
 * setval(seq, value, is_called) as the sequence's owner (callers need no
 * privilege on it), without flushing its WAL.
 */
void SetSequence(Oid seq, int64 value, bool is_called);

/*
 * SetSequence, then flush the WAL up to the sequence page's LSN.  Returns
 * that LSN.
 */
XLogRecPtr SetSequenceDurably(Oid seq, int64 value, bool is_called);

/*
 * The sequence page's LSN: the end of the last record that logged it
 * (InvalidXLogRecPtr for a sequence without WAL).  Flushes nothing.
 */
XLogRecPtr SequenceLSN(Oid seq);

/*
 * Flush the WAL up to the sequence page's LSN: the end of the last record
 * that logged the sequence, which covers every value nextval() has handed
 * out and the last setval().  Returns that LSN (InvalidXLogRecPtr for a
 * sequence without WAL).
 */
XLogRecPtr FlushSequence(Oid seq);

} /* namespace fence */
