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
 * without epochs, both hand out the same numbers.
 *
 * The arithmetic.  A token is a plain bigint t; its epoch is t >> 40
 * (kEpochBits): each epoch holds 2^40 (about 1.1e12) tokens, and epochs run
 * from 0 to kMaxEpoch = 2^23 - 2 (the last range ends at (2^23 - 1) << 40,
 * below 2^63).  A server issues tokens on its current timeline T
 * (GetWALInsertionTimeLine) from one epoch E only: every token t satisfies
 * E << 40 <= t < (E + 1) << 40, and reaching the top raises 2200H instead of
 * spilling into the next epoch.  E is chosen when the token counter starts
 * (after a server start or a promotion; without the shared block once per
 * backend and timeline) from what this server knows durably:
 *
 *	 V        = the token sequence's value >> 40 (the epoch of the last
 *	            token handed out, or of what an administrator set);
 *	 (Ec, Tc) = fence.token_epoch: the last epoch claimed and the timeline
 *	            that claimed it; Sc = fence.token_lineage: the system
 *	            identifier (pg_controldata) of the cluster that claimed it;
 *	 S        = this cluster's system identifier.
 *
 *	   same lineage (S = Sc, a claim exists, T >= Tc, V <= Ec):
 *	       E = Ec + (T - Tc)
 *	   otherwise (first use, a restore or pg_upgrade into a new cluster,
 *	   a sequence set above the claim):
 *	       E = max(V, Ec) + T - 1
 *
 * and, if (E, T, S) differs from the record, writes fence.token_epoch, then
 * fence.token_lineage, flushes that WAL, lifts the token sequence to
 * E << 40 (flushed too) and only then hands out tokens of E.
 *
 * Why it holds.  Within a lineage E - T is a constant B (the base), so the
 * epoch of timeline T is B + T.  A standby promoted from timeline T picks a
 * timeline T' > T; whatever WAL it missed, the record it replayed carries
 * the same B (or an older claim of the same lineage, same B), so its epoch
 * B + T' > B + T, and every token the old primary issued on T, before or
 * after the promotion, is below (B + T + 1) << 40 <= (B + T') << 40: below
 * every token of the new primary.  A promotion of a promoted server's
 * standby continues the same way.  The "otherwise" branch only ever
 * chooses a higher epoch than the same-lineage rule would (T >= 1), and is
 * itself increasing in T for fixed inputs, so a standby that replayed the
 * inputs of that branch but not the claim it led to (the claim is written
 * before its first token, not necessarily received by an asynchronous
 * standby) computes a higher epoch on its higher timeline.  The record is
 * written before the lineage, so a standby that saw only the first of the
 * two takes the "otherwise" branch: a higher epoch again.
 *
 * Upgrades and restores.  0.1.0 and early 0.2.0 databases have no claim:
 * the first counter start uses max(V, 0) + T - 1, which on timeline 1 keeps
 * the current numbers (tokens < 2^40 stay in epoch 0) and never goes lower
 * than an existing token.  pg_dump/restore into a fresh cluster (new system
 * identifier, timeline 1) continues in the epoch of the dumped tokens (or
 * above it); its standbys' promotions then go above that.  A database whose
 * extension SQL predates these sequences (ALTER EXTENSION UPDATE not run)
 * issues tokens as 0.1.0 did, without epochs.
 *
 * Limits (README "Tokens across failover"): 2^40 tokens per timeline; each
 * timeline uses one epoch (a restore or a sequence set above the claim uses
 * T - 1 more), so the 2^23 - 1 epochs last about 8.4 million timelines.  A
 * promotion of a standby that has not replayed an administrator's setval
 * above the claim, or a restore, is not covered: wait for replay first.
 * A token_seq lowered below fence.token_mark is refused (55000) at the
 * next counter start (TokenMarkSequenceOid); without the shared block the
 * mark moves only with an epoch's floor, so a new backend cannot tell a
 * lowering below tokens drawn with nextval() since then.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  include/ext/token_epoch.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "ext/pg.hpp"

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
 * extension's SQL predates epochs.  Cached, reset by relcache invalidation.
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
 * forgets what shared memory remembered.  In another cluster than the one
 * that claimed the epoch (fence.token_lineage differs: a pg_dump/restore,
 * whose dump may read the mark after token_seq moved on), it lifts
 * token_seq to the mark instead: the dumped database issued tokens up to it.
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
 * in the cluster that claimed the epoch (in another one, lifts token_seq to
 * the mark); lifts the mark with the sequence to the epoch's floor.  With no epoch
 * sequence (epoch_seq invalid), returns the unbounded range of 0.1.0.
 * Raises 2200H when the epochs are exhausted.  The caller holds token_seq's
 * RowExclusiveLock and LockEpochSequences(epoch_seq) (both taken before any
 * LWLock, so that setval never waits under one).  PostgreSQL-style (raises
 * ERROR).
 */
TokenEpoch ClaimTokenEpoch(Oid token_seq, Oid epoch_seq);

/*
 * Lock the epoch sequences for a claim: a self-conflicting lock on
 * epoch_seq (one claimer at a time), and the locks setval takes on both
 * and on fence.token_mark.
 * UnlockEpochSequences releases the first (the others, like setval's, last
 * until transaction end).  No-ops for an invalid epoch_seq.
 */
void LockEpochSequences(Oid epoch_seq);
void UnlockEpochSequences(Oid epoch_seq);

/*
 * Raise 2200H: the tokens of this timeline's epoch are used up.  Says what
 * to do (README "Tokens across failover").
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
