/*-------------------------------------------------------------------------
 *
 * token_epoch.cpp
 *	  Token epochs, one per timeline (the arithmetic is in token_epoch.hpp),
 *	  and the checks of fence.token_seq's settings.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/tokens/token_epoch.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "tokens/token_epoch.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_sequence.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "utils/syscache.h"
}

namespace fence {

namespace {

/* Per-backend caches, reset by any relcache invalidation of theirs. */
Oid  epoch_seq_oid = InvalidOid;
Oid  lineage_seq_oid = InvalidOid;    /* fence.token_lineage */
Oid  lineage_db_seq_oid = InvalidOid; /* fence.token_lineage_db */
Oid  mark_seq_oid = InvalidOid;
Oid  checked_token_seq = InvalidOid; /* settings found right */
bool inval_registered = false;

void
EpochInvalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == epoch_seq_oid || relid == lineage_seq_oid ||
		relid == lineage_db_seq_oid)
	{
		epoch_seq_oid = InvalidOid;
		lineage_seq_oid = InvalidOid;
		lineage_db_seq_oid = InvalidOid;
	}
	if (relid == InvalidOid || relid == mark_seq_oid)
		mark_seq_oid = InvalidOid;
	if (relid == InvalidOid || relid == checked_token_seq)
		checked_token_seq = InvalidOid;
}

void
RegisterInval()
{
	if (!inval_registered)
	{
		CacheRegisterRelcacheCallback(EpochInvalidate, (Datum) 0);
		inval_registered = true;
	}
}

Oid
FenceSequence(const char *name)
{
	Oid nsp = get_namespace_oid("fence", true);

	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

/* The sequence's last_value as stored, whatever is_called says. */
int64
RawSequenceValue(Oid seq, bool *called)
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

	*called = data->is_called;
	UnlockReleaseBuffer(buf);
	relation_close(rel, AccessShareLock);
	return last;
}

/* The epoch E's range on timeline tli. */
TokenEpoch
EpochRange(TimeLineID tli, int64 epoch)
{
	return TokenEpoch{tli, epoch, epoch << kEpochBits, (epoch + 1) << kEpochBits};
}

} /* namespace */

Oid
TokenEpochSequenceOid()
{
	RegisterInval();
	if (!OidIsValid(epoch_seq_oid))
	{
		Oid epoch = FenceSequence("token_epoch");
		Oid lineage = FenceSequence("token_lineage");
		Oid lineage_db = FenceSequence("token_lineage_db");

		if (!OidIsValid(epoch) || !OidIsValid(lineage) || !OidIsValid(lineage_db))
			return InvalidOid;
		epoch_seq_oid = epoch;
		lineage_seq_oid = lineage;
		lineage_db_seq_oid = lineage_db;
	}
	return epoch_seq_oid;
}

Oid
TokenMarkSequenceOid()
{
	RegisterInval();
	if (!OidIsValid(mark_seq_oid))
		mark_seq_oid = FenceSequence("token_mark");
	return mark_seq_oid;
}

void
LockTokenMark(Oid mark_seq)
{
	if (OidIsValid(mark_seq))
		LockRelationOid(mark_seq, RowExclusiveLock);
}

void
LockEpochSequences(Oid epoch_seq)
{
	if (!OidIsValid(epoch_seq))
		return;

	LockTokenMark(TokenMarkSequenceOid());

	/* one claimer at a time: ShareUpdateExclusiveLock conflicts with itself */
	LockRelationOid(epoch_seq, ShareUpdateExclusiveLock);
	/* what setval takes, so that it never waits under the caller's LWLock */
	LockRelationOid(epoch_seq, RowExclusiveLock);
	for (const char *name : {"token_lineage", "token_lineage_db"})
	{
		Oid lineage_seq = FenceSequence(name);

		if (OidIsValid(lineage_seq))
			LockRelationOid(lineage_seq, RowExclusiveLock);
	}
}

void
UnlockEpochSequences(Oid epoch_seq)
{
	if (OidIsValid(epoch_seq))
		UnlockRelationOid(epoch_seq, ShareUpdateExclusiveLock);
}

int64
SequenceLastValue(Oid seq)
{
	bool  called;
	int64 last = RawSequenceValue(seq, &called);

	return called ? last : last - 1;
}

XLogRecPtr
SequenceLSN(Oid seq)
{
	Relation   rel = relation_open(seq, NoLock);
	XLogRecPtr lsn = InvalidXLogRecPtr;

	if (RelationNeedsWAL(rel))
	{
		Buffer buf = ReadBuffer(rel, 0);

		lsn = BufferGetLSNAtomic(buf);
		ReleaseBuffer(buf);
	}
	relation_close(rel, NoLock);
	return lsn;
}

XLogRecPtr
FlushSequence(Oid seq)
{
	XLogRecPtr lsn = SequenceLSN(seq);

	if (!XLogRecPtrIsInvalid(lsn))
		XLogFlush(lsn);
	return lsn;
}

void
SetSequence(Oid seq, int64 value, bool is_called)
{
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
	DirectFunctionCall3(setval3_oid, ObjectIdGetDatum(seq), Int64GetDatum(value),
						BoolGetDatum(is_called));
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

XLogRecPtr
SetSequenceDurably(Oid seq, int64 value, bool is_called)
{
	SetSequence(seq, value, is_called);
	return FlushSequence(seq);
}

XLogRecPtr
SetTokenMark(Oid mark_seq, int64 value)
{
	if (!OidIsValid(mark_seq) || SequenceLastValue(mark_seq) >= value)
		return InvalidXLogRecPtr;
	SetSequence(mark_seq, value, true);
	return SequenceLSN(mark_seq);
}

void
CheckTokenMark(Oid token_seq, Oid mark_seq)
{
	if (!OidIsValid(mark_seq))
		return;

	int64 mark = SequenceLastValue(mark_seq);
	int64 found = SequenceLastValue(token_seq);

	if (found < mark)
		RaiseSequenceLowered(found, mark);
}

TokenEpoch
ClaimTokenEpoch(Oid token_seq, Oid epoch_seq)
{
	TimeLineID tli = GetWALInsertionTimeLine();

	if (!OidIsValid(epoch_seq))
		return TokenEpoch{tli, -1, 0, PG_INT64_MAX};

	Oid lineage_seq = FenceSequence("token_lineage");
	Oid lineage_db_seq = FenceSequence("token_lineage_db");

	if (!OidIsValid(lineage_seq) || !OidIsValid(lineage_db_seq))
		elog(ERROR, "sequence fence.token_lineage or fence.token_lineage_db is missing");

	Oid   mark_seq = TokenMarkSequenceOid();
	bool  called;
	int64 record = RawSequenceValue(epoch_seq, &called);
	int64 lineage = RawSequenceValue(lineage_seq, &called);
	int64 lineage_db = RawSequenceValue(lineage_db_seq, &called);
	int64 system = (int64) GetSystemIdentifier();
	int64 database = (int64) MyDatabaseId;
	bool  ours = lineage == system && lineage_db == database;
	int64 value = SequenceLastValue(token_seq);

	/*
	 * token_seq below fence.token_mark.  In the database that wrote the mark
	 * only an administrator lowers it: refuse, before anything is lifted.
	 * In a copy of it (a restore: pg_dump reads each sequence on its own,
	 * so a dump taken while tokens were issued may hold a mark above
	 * token_seq), the source handed out tokens up to the mark: continue
	 * above it.
	 */
	if (OidIsValid(mark_seq) && value < SequenceLastValue(mark_seq))
	{
		if (ours)
			CheckTokenMark(token_seq, mark_seq);
		value = SequenceLastValue(mark_seq);
		(void) SetSequenceDurably(token_seq, value, true);
	}

	int64 v_epoch = value >= 0 ? value >> kEpochBits : 0;
	int64 c_epoch = record >> 32;
	int64 c_tli = record & INT64CONST(0xFFFFFFFF);
	int64 epoch;

	if (record != 0 && ours && (int64) tli >= c_tli && v_epoch <= c_epoch)
		epoch = c_epoch + ((int64) tli - c_tli);
	else if (record != 0 && !ours)
	{
		/*
		 * A copy of another database: above the highest epoch its source
		 * issues tokens in on the timeline of its claim (its own rules,
		 * applied to what it had when the copy was taken).
		 */
		int64 source = v_epoch <= c_epoch ? c_epoch : v_epoch + c_tli - 1;

		epoch = source + (int64) tli;
	}
	else
		epoch = Max(v_epoch, c_epoch) + (int64) tli - 1;

	if (epoch > kMaxEpoch)
		ereport(
			ERROR,
			(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
			 errmsg("fencing token epochs are exhausted"),
			 errdetail("Timeline %u would issue tokens in epoch " INT64_FORMAT
					   ", above the last one (" INT64_FORMAT
					   "): a token is at most 2^63 - 1 and each epoch holds 2^40 tokens.",
					   tli, epoch, kMaxEpoch),
			 errhint(
				 "No new token can be higher than every token already issued. Start a new lock space: fence every resource anew from a fresh database's tokens.")));

	TokenEpoch range = EpochRange(tli, epoch);
	int64      claim = (epoch << 32) | (int64) tli;

	/* the claim first, then the lineage, then the tokens (token_epoch.hpp) */
	if (record != claim || !ours)
	{
		(void) SetSequenceDurably(epoch_seq, claim, true);
		SetSequence(lineage_db_seq, database, true);
		SetSequence(lineage_seq, system, true);
		XLogFlush(Max(SequenceLSN(lineage_db_seq), SequenceLSN(lineage_seq)));
	}
	if (value < range.floor)
	{
		/* the sequence first, then the mark (fence.token_mark stays <= it) */
		SetSequence(token_seq, range.floor, false);
		XLogRecPtr mark_lsn = SetTokenMark(mark_seq, range.floor - 1);

		XLogFlush(Max(SequenceLSN(token_seq), mark_lsn));
	}
	return range;
}

void
RaiseEpochExhausted(const TokenEpoch &e)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
		 errmsg("fencing tokens of timeline %u are exhausted", e.tli),
		 errdetail("Timeline %u issues tokens from " INT64_FORMAT " to " INT64_FORMAT
				   " (epoch " INT64_FORMAT "), and the last one has been handed out.",
				   e.tli, e.floor, e.cap - 1, e.epoch),
		 errhint(
			 "Each timeline issues at most 2^40 tokens, so that a promoted standby's tokens beat the old primary's. Promote a standby (or run a point-in-time recovery) to start a new timeline, whose tokens are higher.")));
}

void
CheckTokenSequence(Oid token_seq)
{
	RegisterInval();
	if (token_seq == checked_token_seq)
		return;

	HeapTuple tup = SearchSysCache1(SEQRELID, ObjectIdGetDatum(token_seq));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for sequence %u", token_seq);

	Form_pg_sequence s = (Form_pg_sequence) GETSTRUCT(tup);
	const char      *wrong = nullptr;

	if (s->seqtypid != INT8OID)
		wrong = "it is no longer a bigint sequence";
	else if (s->seqincrement != 1)
		wrong = "its INCREMENT is no longer 1";
	else if (s->seqcycle)
		wrong = "it was set to CYCLE";
	else if (s->seqcache != 1)
		wrong = "its CACHE is no longer 1";
	ReleaseSysCache(tup);

	if (wrong != nullptr)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot issue a fencing token: fence.token_seq was altered"),
			 errdetail(
				 "Tokens must be strictly increasing in the order they are drawn and never repeat, but %s.",
				 wrong),
			 errhint(
				 "Run ALTER SEQUENCE fence.token_seq AS bigint INCREMENT 1 CACHE 1 NO CYCLE as its owner.")));
	checked_token_seq = token_seq;
}

void
RaiseSequenceLowered(int64 found, int64 value)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot issue a fencing token: fence.token_seq was moved backwards"),
			 errdetail("Its value is " INT64_FORMAT ", below " INT64_FORMAT
					   ", which tokens already handed out have reached; continuing would hand "
					   "them out again.",
					   found, value),
			 errhint("As the sequence's owner, run SELECT setval('fence.token_seq', " INT64_FORMAT
					 "); never lower it.",
					 value)));
}

} /* namespace fence */
