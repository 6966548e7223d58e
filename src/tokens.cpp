/*-------------------------------------------------------------------------
 *
 * tokens.cpp
 *	  Fencing tokens from fence.token_seq, made durable before they are used.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/tokens.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/tokens.hpp"

#include "ext/commit.hpp"
#include "ext/shmem.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "commands/sequence.h"
#include "replication/syncrep.h"
#include "utils/syscache.h"
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
 * The shared token allocator (with the shared block, shmem.hpp).
 *
 * Drawing every token with nextval() makes every backend that gets a value
 * covered by a freshly logged sequence record wait for that record's flush
 * (nextval logs only 32 values ahead), which stalls all clients once per 32
 * tokens.  With shared memory, tokens are handed out from a per-database
 * counter (DbShared::token_*) below a durable ceiling instead:
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
 *	   first time a database draws a token after the server starts, or after
 *	   the sequence was replaced (DROP/CREATE EXTENSION), never going down.
 *
 * Tokens strictly increase in the order they are drawn, across sessions
 * (one counter under a spinlock), as the SPEC's guarantee 2 needs.  After a
 * restart tokens jump by up to kChunk: gaps are allowed, reuse is not.
 * Databases beyond kDbSlots, and servers without the shared block, draw
 * every token with nextval() (a database never switches within a server's
 * life: the block's mode is fixed at server start, and a database's share,
 * once claimed, is never given up).
 */
constexpr int64 kChunk = 4096;
constexpr int64 kLowWater = kChunk / 2;

/*
 * Flush the WAL up to the sequence page's LSN: the end of the last record
 * that logged the sequence, which covers every value nextval() has handed
 * out (up to last_value + log_cnt) and the last setval().  Returns that LSN
 * (InvalidXLogRecPtr for a sequence without WAL).  The caller has the
 * sequence locked (nextval and setval lock it until transaction end).
 */
XLogRecPtr
FlushSequence(Oid seq)
{
	Relation   rel = relation_open(seq, NoLock);
	XLogRecPtr lsn = InvalidXLogRecPtr;

	if (RelationNeedsWAL(rel))
	{
		Buffer buf = ReadBuffer(rel, 0);

		lsn = BufferGetLSNAtomic(buf);
		ReleaseBuffer(buf);
		XLogFlush(lsn);
	}
	relation_close(rel, NoLock);
	return lsn;
}

/*
 * Move the slot's ceiling to at least kChunk above what is handed out:
 * setval() as the sequence's owner (callers need no privilege on it), then
 * flush.  Caller holds the slot's LWLock (one mover at a time).
 */
void
MoveCeiling(DbShared *slot, Oid seq)
{
	SpinLockAcquire(&slot->token_mutex);
	int64 target = Max(slot->token_ceiling, slot->token_next) + kChunk;

	SpinLockRelease(&slot->token_mutex);

	Oid       save_userid;
	int       save_sec_context;
	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(seq));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", seq);
	Oid owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;

	ReleaseSysCache(tup);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
									  SECURITY_RESTRICTED_OPERATION);
	/* an error restores the user at transaction abort */
	DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq), Int64GetDatum(target - 1));
	SetUserIdAndSecContext(save_userid, save_sec_context);

	XLogRecPtr lsn = FlushSequence(seq);

	SpinLockAcquire(&slot->token_mutex);
	slot->token_ceiling = target;
	slot->token_ceiling_lsn = lsn;
	SpinLockRelease(&slot->token_mutex);
}

/*
 * Like a commit: a promoted synchronous standby must know the token's WAL
 * too.  SyncRepWaitForLSN() runs with interrupts held, as at commit (it
 * asserts so): it handles a cancel or termination itself, by ending the
 * wait with a WARNING.
 */
void
WaitForSyncStandbys(XLogRecPtr lsn)
{
	HOLD_INTERRUPTS();
	SyncRepWaitForLSN(lsn, false);
	RESUME_INTERRUPTS();
}

/* Start (or restart) the slot's counter above every durable value of seq. */
void
StartCounter(DbShared *slot, Oid seq)
{
	int64      v = nextval_internal(seq, false);
	XLogRecPtr lsn = FlushSequence(seq);

	SpinLockAcquire(&slot->token_mutex);
	/* never down: a replaced sequence may start lower than tokens handed out */
	if (!slot->token_ready || v > slot->token_next)
		slot->token_next = v;
	/* v itself is durable; nothing above it is yet */
	slot->token_ceiling = slot->token_next == v ? v + 1 : slot->token_next;
	slot->token_ceiling_lsn = lsn;
	slot->token_seq = seq;
	slot->token_ready = true;
	SpinLockRelease(&slot->token_mutex);
}

/*
 * As the one mover of the slot's ceiling (waiting for its LWLock if wait,
 * else only if it is free at once): start the counter if it is not started
 * for seq, else move the ceiling if fewer than low_water tokens are left.
 * The sequence's lock (which setval takes) is taken first, where a wait is
 * interruptible and deadlock-checked, never while the LWLock is held.
 */
void
AsMover(DbShared *slot, Oid seq, bool wait, int64 low_water)
{
	LWLock *mover = &slot->token_mover;

	LockRelationOid(seq, RowExclusiveLock);
	if (wait)
		LWLockAcquire(mover, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(mover, LW_EXCLUSIVE))
		return;
	PG_TRY();
	{
		SpinLockAcquire(&slot->token_mutex);
		bool  started = slot->token_ready && slot->token_seq == seq;
		int64 left = slot->token_ceiling - slot->token_next;

		SpinLockRelease(&slot->token_mutex);
		if (!started)
			StartCounter(slot, seq);
		else if (left < low_water)
			MoveCeiling(slot, seq);
	}
	PG_CATCH();
	{
		LWLockRelease(mover);
		PG_RE_THROW();
	}
	PG_END_TRY();
	LWLockRelease(mover);
}

/* Draw a token from the slot.  PostgreSQL-style: raises ERROR. */
int64
DrawFromSlot(DbShared *slot, Oid seq)
{
	for (;;)
	{
		int64      token = 0;
		int64      left = 0;
		XLogRecPtr lsn = InvalidXLogRecPtr;

		SpinLockAcquire(&slot->token_mutex);
		if (slot->token_ready && slot->token_seq == seq && slot->token_next < slot->token_ceiling)
		{
			token = slot->token_next++;
			left = slot->token_ceiling - slot->token_next;
			lsn = slot->token_ceiling_lsn;
		}
		SpinLockRelease(&slot->token_mutex);

		if (token != 0)
		{
			/* running low: move the ceiling now, unless someone else is */
			if (left < kLowWater)
				AsMover(slot, seq, false, kLowWater);
			WaitForSyncStandbys(lsn);
			return token;
		}

		/* not started, sequence replaced, or ceiling reached: wait for the mover */
		AsMover(slot, seq, true, 1);
	}
}

/*
 * The highest value the sequence seq has handed out or been set to, read
 * from its page: last_value, or one less while is_called is false (a fresh
 * sequence has handed out nothing).  The buffer's share lock is held only
 * while two fields are copied (nextval and setval change them under its
 * exclusive lock, for as long); AccessShareLock on the sequence conflicts
 * with none of the locks nextval or setval take.  No WAL, no round trip.
 */
int64
SequenceLastValue(Oid seq)
{
	Relation rel = relation_open(seq, AccessShareLock);
	Buffer   buf = ReadBuffer(rel, 0);

	LockBuffer(buf, BUFFER_LOCK_SHARE);

	Page   page = BufferGetPage(buf);
	ItemId lp = PageGetItemId(page, FirstOffsetNumber);

	if (!ItemIdIsNormal(lp))
		elog(ERROR, "sequence \"%s\" has no tuple on its page", RelationGetRelationName(rel));

	HeapTupleHeader       tup = (HeapTupleHeader) PageGetItem(page, lp);
	Form_pg_sequence_data data = (Form_pg_sequence_data) ((char *) tup + tup->t_hoff);
	int64                 last = data->last_value;
	bool                  called = data->is_called;

	UnlockReleaseBuffer(buf);
	relation_close(rel, AccessShareLock);
	return called ? last : last - 1;
}

} /* namespace */

int64
HighestIssuedToken()
{
	Oid       seq = TokenSequenceOid();
	DbShared *slot = AttachShared() ? MyDbShared() : nullptr;

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
	 * or from an earlier life's counter, all at most the sequence's value.
	 */
	return SequenceLastValue(seq);
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

	WalMark   before = WalMarkNow();
	DbShared *slot = AttachShared() ? MyDbShared() : nullptr;
	int64     token;

	if (slot != nullptr)
		token = DrawFromSlot(slot, seq);
	else
	{
		/* The sequence's owner is the extension; callers need no USAGE on it. */
		token = nextval_internal(seq, false);

		/*
		 * Make the WAL record covering this value durable before anyone sees
		 * the value; nearly free when it already is (31 calls in 32).
		 */
		XLogRecPtr lsn = FlushSequence(seq);

		WaitForSyncStandbys(lsn);
	}

	/*
	 * The sequence's WAL is durable now, whatever becomes of the transaction
	 * (sequence changes are not transactional), so a transaction that only
	 * draws tokens need not wait for its commit record's flush as well.
	 */
	AllowAsyncCommitSince(before);
	return token;
}

} /* namespace fence */
