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
#include "commands/sequence.h"
#include "replication/syncrep.h"
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

	/* The sequence's owner is the extension; callers need no USAGE on it. */
	int64		token = nextval_internal(seq, false);

	/*
	 * Make the WAL record covering this value durable before anyone sees the
	 * value.  The sequence page's LSN is the end of the last record that
	 * logged this sequence, which covers every value handed out up to
	 * last_value + log_cnt, so flushing to it is both sufficient and, when it
	 * is already flushed, nearly free.
	 */
	Relation	rel = relation_open(seq, NoLock);	/* locked by nextval */

	if (RelationNeedsWAL(rel))
	{
		Buffer		buf = ReadBuffer(rel, 0);
		XLogRecPtr	lsn = BufferGetLSNAtomic(buf);

		ReleaseBuffer(buf);
		XLogFlush(lsn);
		/* Like a commit: a promoted synchronous standby must know it too. */
		SyncRepWaitForLSN(lsn, false);
	}
	relation_close(rel, NoLock);

	/*
	 * The sequence's WAL is durable now, whatever becomes of the transaction
	 * (sequence changes are not transactional), so a transaction that only
	 * draws tokens need not wait for its commit record's flush as well.
	 */
	AllowAsyncCommitSince(before);
	return token;
}

}							/* namespace fence */
