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

extern "C" {
#include "catalog/pg_class.h"
#include "commands/sequence.h"
#include "port/atomics.h"
#include "replication/syncrep.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/syscache.h"
}

namespace fence {

namespace {

/* OID of fence.token_seq in this database, or InvalidOid if not looked up. */
Oid			token_seq_oid = InvalidOid;
bool		inval_registered = false;

void
TokenSeqInvalidate(Datum arg, Oid relid)
{
	/* any relcache reset, or a change to the sequence (DROP EXTENSION...) */
	if (relid == InvalidOid || relid == token_seq_oid)
		token_seq_oid = InvalidOid;
}

/*
 * The shared token allocator (only with shared_preload_libraries).
 *
 * Drawing every token with nextval() makes every backend that gets a value
 * covered by a freshly logged sequence record wait for that record's flush
 * (nextval logs only 32 values ahead), which stalls all clients once per 32
 * tokens.  With shared memory, tokens are handed out from a per-database
 * counter below a durable ceiling instead:
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
 * Databases beyond kTokenSlots, and servers without the preload, draw every
 * token with nextval() (a database never switches within a server's life).
 */
constexpr int kTokenSlots = 128;
constexpr int64 kChunk = 4096;
constexpr int64 kLowWater = kChunk / 2;
constexpr const char *kTokenTranche = "pg_fence tokens";

struct TokenSlot
{
	pg_atomic_uint32 dboid;		/* 0: free; claimed once, never freed */
	slock_t		mutex;			/* protects the fields below */
	bool		initialized;
	Oid			seq_oid;		/* the sequence the ceiling was written to */
	int64		next;			/* next token to hand out */
	int64		ceiling;		/* tokens below it are durable */
	XLogRecPtr	ceiling_lsn;	/* end of the WAL that made ceiling durable */
};

struct TokenShared
{
	LWLock	   *locks;			/* kTokenSlots locks: who moves a ceiling */
	TokenSlot	slots[kTokenSlots];
};

TokenShared *token_shared = nullptr;
TokenSlot  *my_token_slot = nullptr;
int			my_token_slot_index = -1;
bool		my_token_slot_searched = false;

#if PG_VERSION_NUM >= 150000
shmem_request_hook_type prev_token_shmem_request_hook = nullptr;
#endif
shmem_startup_hook_type prev_token_shmem_startup_hook = nullptr;

void
TokenShmemRequest()
{
#if PG_VERSION_NUM >= 150000
	if (prev_token_shmem_request_hook)
		prev_token_shmem_request_hook();
#endif
	RequestAddinShmemSpace(MAXALIGN(sizeof(TokenShared)));
	RequestNamedLWLockTranche(kTokenTranche, kTokenSlots);
}

void
TokenShmemStartup()
{
	if (prev_token_shmem_startup_hook)
		prev_token_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	bool		found;
	TokenShared *ts = static_cast<TokenShared *>(
		ShmemInitStruct("pg_fence token allocator", sizeof(TokenShared), &found));

	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche(kTokenTranche);

		ts->locks = &locks[0].lock;
		for (int i = 0; i < kTokenSlots; i++)
		{
			TokenSlot  *slot = &ts->slots[i];

			pg_atomic_init_u32(&slot->dboid, 0);
			SpinLockInit(&slot->mutex);
			slot->initialized = false;
			slot->seq_oid = InvalidOid;
			slot->next = 0;
			slot->ceiling = 0;
			slot->ceiling_lsn = InvalidXLogRecPtr;
		}
	}
	token_shared = ts;
	LWLockRelease(AddinShmemInitLock);
}

/* This database's allocator slot, claimed on first use; nullptr: none. */
TokenSlot *
MyTokenSlot()
{
	if (my_token_slot_searched)
		return my_token_slot;
	my_token_slot_searched = true;
	if (token_shared == nullptr || !OidIsValid(MyDatabaseId))
		return nullptr;
	for (int i = 0; i < kTokenSlots; i++)
	{
		TokenSlot  *slot = &token_shared->slots[i];
		uint32		owner = pg_atomic_read_u32(&slot->dboid);

		if (owner == 0)
		{
			uint32		expected = 0;

			owner = pg_atomic_compare_exchange_u32(&slot->dboid, &expected, MyDatabaseId)
				? MyDatabaseId : expected;
		}
		if (owner == MyDatabaseId)
		{
			my_token_slot = slot;
			my_token_slot_index = i;
			break;
		}
	}
	return my_token_slot;
}

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
	Relation	rel = relation_open(seq, NoLock);
	XLogRecPtr	lsn = InvalidXLogRecPtr;

	if (RelationNeedsWAL(rel))
	{
		Buffer		buf = ReadBuffer(rel, 0);

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
MoveCeiling(TokenSlot *slot, Oid seq)
{
	SpinLockAcquire(&slot->mutex);
	int64		target = Max(slot->ceiling, slot->next) + kChunk;

	SpinLockRelease(&slot->mutex);

	Oid			save_userid;
	int			save_sec_context;
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(seq));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", seq);
	Oid			owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;

	ReleaseSysCache(tup);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	/* an error restores the user at transaction abort */
	DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq), Int64GetDatum(target - 1));
	SetUserIdAndSecContext(save_userid, save_sec_context);

	XLogRecPtr	lsn = FlushSequence(seq);

	SpinLockAcquire(&slot->mutex);
	slot->ceiling = target;
	slot->ceiling_lsn = lsn;
	SpinLockRelease(&slot->mutex);
}

/* Start (or restart) the slot's counter above every durable value of seq. */
void
StartCounter(TokenSlot *slot, Oid seq)
{
	int64		v = nextval_internal(seq, false);
	XLogRecPtr	lsn = FlushSequence(seq);

	SpinLockAcquire(&slot->mutex);
	/* never down: a replaced sequence may start lower than tokens handed out */
	if (!slot->initialized || v > slot->next)
		slot->next = v;
	/* v itself is durable; nothing above it is yet */
	slot->ceiling = slot->next == v ? v + 1 : slot->next;
	slot->ceiling_lsn = lsn;
	slot->seq_oid = seq;
	slot->initialized = true;
	SpinLockRelease(&slot->mutex);
}

/*
 * Draw a token from the slot.  PostgreSQL-style: raises ERROR (then the
 * slot's LWLock, if held, is released by the caller's PG_CATCH below or at
 * transaction abort).
 */
int64
DrawFromSlot(TokenSlot *slot, Oid seq)
{
	LWLock	   *mover = &token_shared->locks[my_token_slot_index];

	for (;;)
	{
		bool		ready;
		int64		token = 0;
		int64		left = 0;
		XLogRecPtr	lsn = InvalidXLogRecPtr;

		SpinLockAcquire(&slot->mutex);
		ready = slot->initialized && slot->seq_oid == seq;
		if (ready && slot->next < slot->ceiling)
		{
			token = slot->next++;
			left = slot->ceiling - slot->next;
			lsn = slot->ceiling_lsn;
		}
		SpinLockRelease(&slot->mutex);

		if (token != 0)
		{
			/*
			 * Running low: move the ceiling now, unless someone else is.  The
			 * sequence's lock (which setval takes) is taken first, where a
			 * wait is interruptible and deadlock-checked, never while the
			 * LWLock is held.
			 */
			if (left < kLowWater)
				LockRelationOid(seq, RowExclusiveLock);
			if (left < kLowWater && LWLockConditionalAcquire(mover, LW_EXCLUSIVE))
			{
				PG_TRY();
				{
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
			/* like a commit: a promoted synchronous standby must know it */
			SyncRepWaitForLSN(lsn, false);
			return token;
		}

		/* not started, sequence replaced, or ceiling reached: wait for the mover */
		LockRelationOid(seq, RowExclusiveLock);
		LWLockAcquire(mover, LW_EXCLUSIVE);
		PG_TRY();
		{
			SpinLockAcquire(&slot->mutex);
			bool		started = slot->initialized && slot->seq_oid == seq;
			bool		exhausted = slot->next >= slot->ceiling;

			SpinLockRelease(&slot->mutex);
			if (!started)
				StartCounter(slot, seq);
			else if (exhausted)
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
}

}							/* namespace */

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
		Oid			nsp = get_namespace_oid("fence", true);
		Oid			seq = OidIsValid(nsp) ? get_relname_relid("token_seq", nsp) : InvalidOid;

		if (!OidIsValid(seq))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
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
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot issue a fencing token during recovery"),
				 errdetail("A standby's lock space is its own; locks and leases are granted only by the primary.")));

	Oid			seq = TokenSequenceOid();

	WalMark		before = WalMarkNow();
	TokenSlot  *slot = MyTokenSlot();
	int64		token;

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
		XLogRecPtr	lsn = FlushSequence(seq);

		/* Like a commit: a promoted synchronous standby must know it too. */
		SyncRepWaitForLSN(lsn, false);
	}

	/*
	 * The sequence's WAL is durable now, whatever becomes of the transaction
	 * (sequence changes are not transactional), so a transaction that only
	 * draws tokens need not wait for its commit record's flush as well.
	 */
	AllowAsyncCommitSince(before);
	return token;
}

void
InitTokens()
{
	if (!process_shared_preload_libraries_in_progress)
		return;
#if PG_VERSION_NUM >= 150000
	prev_token_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = TokenShmemRequest;
#else
	TokenShmemRequest();
#endif
	prev_token_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = TokenShmemStartup;
}

}							/* namespace fence */
