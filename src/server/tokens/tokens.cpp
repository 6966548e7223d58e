/*-------------------------------------------------------------------------
 *
 * tokens.cpp
 *	  Fencing tokens from fence.token_seq, made durable before they are used.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/tokens.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "tokens/tokens.hpp"

#include "pg/commit.hpp"
#include "pg/shared_block.hpp"
#include "tokens/token_shmem.hpp"
#include "tokens/sync_wait.hpp"
#include "tokens/token_epoch.hpp"

extern "C" {
#include "commands/sequence.h"
}

namespace fence {

namespace {

/* OID of fence.token_seq in this database, or InvalidOid if not looked up. */
Oid  token_seq_oid = InvalidOid;
bool inval_registered = false;

void
TokenSeqInvalidate(Datum arg, Oid relid)
{
	/* any relcache reset, or a change to the sequence (DROP EXTENSION...) */
	if (relid == InvalidOid || relid == token_seq_oid)
		token_seq_oid = InvalidOid;
}

/*
 * The shared token allocator (its part of the shared block, token_shmem.hpp).
 *
 * Drawing every token with nextval() makes every backend that gets a value
 * covered by a freshly logged sequence record wait for that record's flush
 * (nextval logs only 32 values ahead), which stalls all clients once per 32
 * tokens.  With shared memory, tokens are handed out from a per-database
 * counter (TokenShared::token_*) below a durable ceiling instead:
 *
 *	 - every token t handed out satisfies t < ceiling, and the sequence's
 *	   durable value (WAL flushed) is >= ceiling - 1, so after a crash,
 *	   pg_dump/restore or a failover nextval() returns more than any token
 *	   handed out;
 *	 - the ceiling is moved kChunk tokens ahead (setval + one WAL flush) by
 *	   one backend at a time, as soon as fewer than kLowWater tokens are left,
 *	   so the others keep drawing meanwhile and nobody waits for a flush in
 *	   the steady state;
 *	 - the counter is started from nextval() (above every durable value) the
 *	   first time a database draws a token after the server starts (or is
 *	   promoted), or after the sequence was replaced (DROP/CREATE
 *	   EXTENSION), never going down; before that, this timeline's epoch is
 *	   claimed and the sequence lifted to its floor (token_epoch.hpp), and
 *	   the ceiling never passes the epoch's cap;
 *	 - a ceiling move refuses (55000) a sequence found below the value this
 *	   server last made durable (an administrator's setval lower or
 *	   RESTART), and every start and move checks the sequence's settings;
 *	 - every ceiling move and start also sets fence.token_mark to the value
 *	   made durable (after the sequence, same flush), and a start refuses
 *	   (55000) a sequence found below the mark: a lowering is caught after a
 *	   restart too, when the slot has forgotten what it made durable.
 *
 * Tokens strictly increase in the order they are drawn, across sessions
 * (one counter under a spinlock), as guarantee 2 (docs/guarantees.md) needs.  After a
 * restart tokens jump by up to kChunk: gaps are allowed, reuse is not.
 * Databases beyond kDbSlots (pg/db_slots.hpp), and servers without the
 * shared block, draw every token with nextval() (a database never switches
 * within a server's life: the block's mode is fixed at server start, and a
 * database's slot, once claimed, is never given up).
 */
constexpr int64 kChunk = 4096;
constexpr int64 kLowWater = kChunk / 2;

/*
 * Is the slot's counter started for this token sequence, epoch sequence
 * and timeline?  Caller holds the slot's mutex.
 */
bool
StartedFor(const TokenShared *slot, Oid seq, Oid epoch_seq, TimeLineID tli)
{
	return slot->token_ready && slot->token_seq == seq && slot->token_epoch_seq == epoch_seq &&
		   slot->token_tli == tli;
}

/*
 * Move the slot's ceiling to at least kChunk above what is handed out, but
 * never past the epoch's cap: setval as the sequence's owner, then flush.
 * Refuses (55000) a sequence altered or moved below what this server made
 * durable.  Caller holds the slot's LWLock (one mover at a time).
 */
void
MoveCeiling(TokenShared *slot, Oid seq, Oid mark_seq)
{
	CheckTokenSequence(seq);

	SpinLockAcquire(&slot->token_mutex);
	int64 ceiling = slot->token_ceiling;
	int64 target = Min(Max(ceiling, slot->token_next) + kChunk, slot->token_cap);
	int64 durable = slot->token_durable;

	SpinLockRelease(&slot->token_mutex);
	if (target <= ceiling)
		return; /* at the epoch's cap: DrawFromSlot raises when it is reached */

	int64 found = SequenceLastValue(seq);

	if (found < durable)
		RaiseSequenceLowered(found, durable);

	/* never lower it: an administrator may have set it higher */
	if (found < target - 1)
		SetSequence(seq, target - 1, true);

	/* then the mark, so that it is never above the sequence; one flush for both */
	XLogRecPtr mark_lsn = SetTokenMark(mark_seq, target - 1);
	XLogRecPtr lsn = Max(SequenceLSN(seq), mark_lsn);

	XLogFlush(lsn);

	SpinLockAcquire(&slot->token_mutex);
	slot->token_ceiling = target;
	slot->token_ceiling_lsn = lsn;
	slot->token_durable = Max(found, target - 1);
	SpinLockRelease(&slot->token_mutex);
}

/*
 * Start (or restart) the slot's counter above every durable value of seq,
 * in this timeline's epoch (claimed first, token_epoch.hpp).
 */
void
StartCounter(TokenShared *slot, Oid seq, Oid epoch_seq, Oid mark_seq)
{
	CheckTokenSequence(seq);

	/* refuses a sequence lowered below fence.token_mark */
	TokenEpoch range = ClaimTokenEpoch(seq, epoch_seq);
	int64      v = nextval_internal(seq, false);
	XLogRecPtr lsn = SequenceLSN(seq);

	if (v < range.cap)
	{
		XLogRecPtr mark_lsn = SetTokenMark(mark_seq, v);

		lsn = Max(lsn, mark_lsn);
	}
	XLogFlush(lsn);

	if (v >= range.cap)
	{
		/* handed out nothing: back to the cap, so the epoch's claim stays exact */
		(void) SetSequenceDurably(seq, range.cap - 1, true);
		RaiseEpochExhausted(range);
	}

	SpinLockAcquire(&slot->token_mutex);
	/* never down: a replaced sequence may start lower than tokens handed out */
	if (!slot->token_ready || v > slot->token_next)
		slot->token_next = v;
	/* v itself is durable; nothing above it is yet */
	slot->token_ceiling = slot->token_next == v ? v + 1 : slot->token_next;
	slot->token_ceiling = Min(slot->token_ceiling, range.cap);
	slot->token_ceiling_lsn = lsn;
	slot->token_durable = v;
	slot->token_seq = seq;
	slot->token_epoch_seq = epoch_seq;
	slot->token_tli = range.tli;
	slot->token_epoch = range.epoch;
	slot->token_floor = range.floor;
	slot->token_cap = range.cap;
	slot->token_ready = true;
	SpinLockRelease(&slot->token_mutex);
}

/*
 * As the one mover of the slot's ceiling (waiting for its LWLock if wait,
 * else only if it is free at once): start the counter if it is not started
 * for seq on this timeline, else move the ceiling if fewer than low_water
 * tokens are left.  The sequences' locks (which setval takes) are taken
 * first, where a wait is interruptible and deadlock-checked, never while
 * the LWLock is held; the epoch sequences' only when a start is due (a
 * start found due only under the LWLock is left to the caller's next turn).
 */
void
AsMover(TokenShared *slot, Oid seq, Oid epoch_seq, TimeLineID tli, bool wait, int64 low_water)
{
	LWLock *mover = &slot->token_mover;
	Oid     mark_seq = TokenMarkSequenceOid();

	SpinLockAcquire(&slot->token_mutex);
	bool may_start = !StartedFor(slot, seq, epoch_seq, tli);

	SpinLockRelease(&slot->token_mutex);

	LockRelationOid(seq, RowExclusiveLock);
	LockTokenMark(mark_seq);
	if (may_start)
		LockEpochSequences(epoch_seq);
	if (wait)
		LWLockAcquire(mover, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(mover, LW_EXCLUSIVE))
	{
		if (may_start)
			UnlockEpochSequences(epoch_seq);
		return;
	}

	/*
	 * An error below leaves the LWLock to the (sub)transaction's abort,
	 * which releases every LWLock (LWLockReleaseAll), as PostgreSQL's own
	 * code does: by the time a PG_CATCH block runs, errfinish has reset
	 * InterruptHoldoffCount, and releasing it there trips an assertion.
	 */
	SpinLockAcquire(&slot->token_mutex);
	bool  started = StartedFor(slot, seq, epoch_seq, tli);
	int64 left = slot->token_ceiling - slot->token_next;

	SpinLockRelease(&slot->token_mutex);
	if (!started)
	{
		if (may_start)
			StartCounter(slot, seq, epoch_seq, mark_seq);
	}
	else if (left < low_water)
		MoveCeiling(slot, seq, mark_seq);
	LWLockRelease(mover);
	if (may_start)
		UnlockEpochSequences(epoch_seq);
}

/* Draw a token from the slot.  PostgreSQL-style: raises ERROR. */
int64
DrawFromSlot(TokenShared *slot, Oid seq, Oid epoch_seq, TimeLineID tli)
{
	for (;;)
	{
		int64      token = 0;
		int64      left = 0;
		bool       exhausted = false;
		TokenEpoch range{};
		XLogRecPtr lsn = InvalidXLogRecPtr;

		SpinLockAcquire(&slot->token_mutex);
		if (StartedFor(slot, seq, epoch_seq, tli))
		{
			if (slot->token_next < slot->token_ceiling)
			{
				token = slot->token_next++;
				left = slot->token_ceiling - slot->token_next;
				lsn = slot->token_ceiling_lsn;
			}
			else if (slot->token_next >= slot->token_cap)
			{
				exhausted = true;
				range = TokenEpoch{slot->token_tli, slot->token_epoch, slot->token_floor,
								   slot->token_cap};
			}
		}
		SpinLockRelease(&slot->token_mutex);

		if (token != 0)
		{
			/* running low: move the ceiling now, unless someone else is */
			if (left < kLowWater)
				AsMover(slot, seq, epoch_seq, tli, false, kLowWater);
			WaitForSyncStandbys(lsn);
			return token;
		}
		if (exhausted)
			RaiseEpochExhausted(range);

		/* not started, sequence replaced, or ceiling reached: wait for the mover */
		AsMover(slot, seq, epoch_seq, tli, true, 1);
	}
}

/*
 * Without the shared block: this backend's epoch, claimed once per
 * timeline (and token sequence), and the last token it drew.
 */
struct BackendEpoch
{
	bool       valid = false;
	Oid        seq = InvalidOid;
	Oid        epoch_seq = InvalidOid;
	TokenEpoch range{};
	int64      last = 0; /* tokens drawn here are above it */
};

BackendEpoch mine;

/* Draw a token with nextval().  PostgreSQL-style: raises ERROR. */
int64
DrawWithNextval(Oid seq, Oid epoch_seq, TimeLineID tli)
{
	if (!mine.valid || mine.seq != seq || mine.epoch_seq != epoch_seq || mine.range.tli != tli)
	{
		mine.valid = false;
		CheckTokenSequence(seq);
		LockRelationOid(seq, RowExclusiveLock);
		LockEpochSequences(epoch_seq);
		mine.range = ClaimTokenEpoch(seq, epoch_seq);
		UnlockEpochSequences(epoch_seq);
		mine.last = SequenceLastValue(seq);
		mine.seq = seq;
		mine.epoch_seq = epoch_seq;
		mine.valid = true;
	}
	CheckTokenSequence(seq);

	/* The sequence's owner is the extension; callers need no USAGE on it. */
	int64 token = nextval_internal(seq, false);

	if (token >= mine.range.cap)
	{
		/* handed out nothing: back to the cap, so the epoch's claim stays exact */
		(void) SetSequenceDurably(seq, mine.range.cap - 1, true);
		RaiseEpochExhausted(mine.range);
	}
	if (token <= mine.last)
		RaiseSequenceLowered(token - 1, mine.last);
	mine.last = token;

	/*
	 * Make the WAL record covering this value durable before anyone sees
	 * the value; nearly free when it already is (31 calls in 32).
	 */
	WaitForSyncStandbys(FlushSequence(seq));
	return token;
}

} /* namespace */

int64
HighestIssuedToken()
{
	Oid          seq = TokenSequenceOid();
	TokenShared *slot = AttachShared() ? MyTokenShared() : nullptr;

	if (slot != nullptr)
	{
		SpinLockAcquire(&slot->token_mutex);
		bool  ready = slot->token_ready;
		Oid   slot_seq = slot->token_seq;
		int64 next = slot->token_next;

		SpinLockRelease(&slot->token_mutex);

		/*
		 * Started for this sequence: every token of this server's life is
		 * below token_next, and every token of an earlier life is at most
		 * the sequence's durable value, which the counter started above.
		 */
		if (ready && slot_seq == seq)
			return next - 1;

		/*
		 * Started for a sequence since replaced (DROP and CREATE EXTENSION):
		 * its tokens were issued by this database too.
		 */
		if (ready)
			return Max(next - 1, SequenceLastValue(seq));
	}

	/*
	 * No counter in this server's life (yet): every token is from nextval()
	 * or from an earlier life's counter, all at most the sequence's value,
	 * or, if an administrator lowered it since (the start refuses then),
	 * at most fence.token_mark's.
	 */
	Oid   mark_seq = TokenMarkSequenceOid();
	int64 value = SequenceLastValue(seq);

	return OidIsValid(mark_seq) ? Max(value, SequenceLastValue(mark_seq)) : value;
}

Oid
TokenSequenceOid()
{
	if (!inval_registered)
	{
		CacheRegisterRelcacheCallback(TokenSeqInvalidate, (Datum) 0);
		inval_registered = true;
	}
	if (!OidIsValid(token_seq_oid))
	{
		Oid nsp = get_namespace_oid("fence", true);
		Oid seq = OidIsValid(nsp) ? get_relname_relid("token_seq", nsp) : InvalidOid;

		if (!OidIsValid(seq))
			ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							errmsg("pg_fence is not installed in this database"),
							errhint("Run CREATE EXTENSION pg_fence.")));
		token_seq_oid = seq;
	}
	return token_seq_oid;
}

int64
IssueToken()
{
	if (RecoveryInProgress())
		ereport(
			ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot issue a fencing token during recovery"),
			 errdetail(
				 "A standby's lock space is its own; locks and leases are granted only by the primary.")));

	Oid seq = TokenSequenceOid();

	WalMark      before = WalMarkNow();
	TokenShared *slot = AttachShared() ? MyTokenShared() : nullptr;
	Oid          epoch_seq = TokenEpochSequenceOid();
	TimeLineID   tli = GetWALInsertionTimeLine();

	RequireSyncCommitForTokens();

	int64 token = slot != nullptr ? DrawFromSlot(slot, seq, epoch_seq, tli)
								  : DrawWithNextval(seq, epoch_seq, tli);

	/*
	 * The sequence's WAL is durable now, whatever becomes of the transaction
	 * (sequence changes are not transactional), so a transaction that only
	 * draws tokens need not wait for its commit record's flush as well.
	 */
	AllowAsyncCommitSince(before);
	return token;
}

} /* namespace fence */
