/*-------------------------------------------------------------------------
 *
 * insert_marks.cpp
 *	  The marks of guarded INSERTs (fence.insert_marks): lock, compare,
 *	  raise or create one per written row (src/server/writes/insert_marks.hpp).
 *
 * RaiseMark runs for every row written to a table guarded with resource
 * columns.  Its rule: the writers of one resource serialize until they
 * commit, so that a stale holder's write either commits before a newer
 * holder's raise of the mark or waits for it and is rejected.  Its common
 * case is a holder appending to its stream again (the row presents the
 * token the mark holds), and that case writes nothing and reads no table:
 *
 *	 1. the resource's lock in the lock manager (an advisory lock,
 *	    lock_tag.hpp kMarkLockTagClass, ExclusiveLock), held until the
 *	    transaction ends: a raise waits for every writer that holds it;
 *	 2. this backend's copy of the mark (mark_cache.hpp), valid while the
 *	    change count of the mark's stripe has not moved since the copy was
 *	    read: equal to the token, the row is accepted (READ COMMITTED only;
 *	    under REPEATABLE READ and SERIALIZABLE the mark is always read as in
 *	    step 3, for the snapshot's rule and the predicate locks).
 *
 * Otherwise the mark is read and its row locked, as "SELECT token FROM
 * fence.insert_marks WHERE guard_id = $1 AND resource_hash = $2 FOR NO KEY
 * UPDATE" would, without SPI or the executor (ReadMark):
 *
 *	 3. like SPI before a statement, CommandCounterIncrement and the
 *	    transaction's snapshot (a new one per call under READ COMMITTED);
 *	    the primary key index scanned for the (guard_id, resource_hash)
 *	    key; table_tuple_lock of the version found, LockTupleNoKeyExclusive,
 *	    waiting, with the flags ExecLockRows uses: under READ COMMITTED it
 *	    follows the update chain to the newest version (its token is what
 *	    counts); under REPEATABLE READ and SERIALIZABLE a mark changed
 *	    since the snapshot is a serialization failure (40001).
 *
 * A raise or a creation (a new holder's first write, a resource's first
 * write) runs an SPI statement as the table's owner (UPDATE, INSERT ... ON
 * CONFLICT), after counting the change on the stripe, while the writer
 * holds the resource's lock and the mark's row lock.
 *
 * The resource's lock is held until the transaction ends by its first
 * ResourceLockLimit() resources only (half of max_locks_per_transaction),
 * so that a bulk INSERT or COPY of many resources does not fill the shared
 * lock table.  Past the limit a transaction relies on the row lock of
 * step 3 alone, and takes the resource's lock for a raise or a creation
 * only, from before it locks the row until the change is counted and
 * written: later writers then miss their copies (the count moved) and wait
 * on the row lock for the raise to end.  It never waits for the resource's
 * lock while it holds the mark's row lock, so the two locks cannot
 * deadlock (a raise is foreseen by reading the mark unlocked first).
 *
 * The paths above read and lock the table without a permission check, as
 * the owner's statements would be allowed to; they run no user code, and
 * the user's own table is untouched by them (its RLS and privileges apply
 * to the INSERT itself, as before).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry (the guard trigger's or
 * fence.guard's).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/insert_marks.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/insert_marks.hpp"

#include "pg/compat.hpp"
#include "pg/extension_table.hpp"
#include "tokens/fence_rule.hpp"
#include "pg/lock_tag.hpp"
#include "writes/mark_cache.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fence {

namespace {

/* Presenting the mark's own token again is accepted (fence_rule.hpp). */
constexpr bool kInsertAllowsEqual = true;

/* The fence rule (fence_rule.hpp) between a mark and a token, equal accepted. */
bool
MarkAccepts(int64 mark, int64 token)
{
	return FenceAccepts(StoredFence{mark, false}, token, kInsertAllowsEqual);
}

/* Columns of fence.insert_marks, and of its primary key (guard_id, resource_hash). */
constexpr AttrNumber kTokenAttnum = 3;
constexpr AttrNumber kKeyGuardId = 1;
constexpr AttrNumber kKeyResourceHash = 2;

/* Saved plans (SPI_keepplan) of the raise and create paths. */
SPIPlanPtr g_raise_plan = nullptr;
SPIPlanPtr g_create_plan = nullptr;
SPIPlanPtr g_read_plan = nullptr;

/* fence.insert_marks (cached, extension_table.hpp), or 42P01. */
ExtensionTable
Marks()
{
	return RequireExtensionTable(ExtensionTableId::kInsertMarks);
}

/* Switches to the marks' owner (restricted); undone by EndAsMarksOwner or by abort. */
struct SavedUser
{
	Oid userid;
	int sec_context;
};

SavedUser
BeginAsMarksOwner()
{
	SavedUser saved;

	GetUserIdAndSecContext(&saved.userid, &saved.sec_context);
	SetUserIdAndSecContext(Marks().owner, saved.sec_context | SECURITY_LOCAL_USERID_CHANGE |
											  SECURITY_RESTRICTED_OPERATION);
	return saved;
}

void
EndAsMarksOwner(SavedUser saved)
{
	SetUserIdAndSecContext(saved.userid, saved.sec_context);
}

SPIPlanPtr
KeptPlan(SPIPlanPtr *slot, const char *sql, int nargs, Oid *types)
{
	if (*slot == nullptr)
	{
		SPIPlanPtr plan = SPI_prepare(sql, nargs, types);

		if (plan == nullptr)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*slot = plan;
	}
	return *slot;
}

/* Runs a kept plan; the first column of its one row, if any, in *value. */
bool
RunForToken(SPIPlanPtr plan, Datum *values, int expected_rc, int64 *value)
{
	int rc = SPI_execute_plan(plan, values, nullptr, false, 1);

	if (rc != expected_rc)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	if (SPI_processed != 1)
		return false;

	bool isnull;

	*value = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return !isnull;
}

/*
 * fence.insert_marks opened with RowShareLock (as SELECT ... FOR NO KEY
 * UPDATE opens it), by its cached OID; looked up again if the lock
 * acquisition brought an invalidation of the table (dropped, replaced)
 * or the OID names no table any more.
 */
Relation
OpenMarks(ExtensionTable *t)
{
	for (;;)
	{
		*t = Marks();

		uint64   generation = ExtensionTableGeneration();
		Relation rel = try_table_open(t->relid, RowShareLock);

		if (rel != nullptr && generation == ExtensionTableGeneration())
		{
			if (!OidIsValid(t->pkey))
				elog(ERROR, "table fence.insert_marks has no primary key");
			return rel;
		}
		if (rel != nullptr)
			table_close(rel, RowShareLock);
		else
			ForgetExtensionTable(ExtensionTableId::kInsertMarks);
	}
}

/* Resource locks this transaction holds until it ends (ResourceLockLimit). */
struct ResourceLockCount
{
	LocalTransactionId lxid;
	int                taken;
};

ResourceLockCount g_resource_locks = {InvalidLocalTransactionId, 0};

/*
 * How many resources a transaction holds the lock of until it ends: half
 * of max_locks_per_transaction, the share of the shared lock table each
 * transaction is sized for (PostgreSQL documentation, 20.12 Lock
 * Management), so that a bulk INSERT or COPY of many resources does not
 * run the lock table out of shared memory.
 */
int
ResourceLockLimit()
{
	return Max(max_locks_per_xact / 2, 1);
}

/* The 64-bit hash in a resource's lock tag: of the guard number and the resource hash. */
uint64
ResourceLockKey(int64 guard_id, int64 resource_hash)
{
	const int64 key[2] = {guard_id, resource_hash};

	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(key), sizeof(key),
							   kNameHashSeed);
}

/*
 * Step 1 of the header: true if this transaction holds the resource's lock
 * until it ends (now, or from an earlier row), false past the limit.
 */
bool
HoldResourceLock(const LOCKTAG *tag)
{
	if (compat::HoldsLock(tag, ExclusiveLock))
		return true;

	LocalTransactionId lxid = compat::MyLocalXid();

	if (g_resource_locks.lxid != lxid)
		g_resource_locks = ResourceLockCount{lxid, 0};
	if (g_resource_locks.taken >= ResourceLockLimit())
		return false;
	(void) LockAcquire(tag, ExclusiveLock, false, false);
	g_resource_locks.taken++;
	return true;
}

/*
 * Step 3 of the header: the mark's token in *stored, true if there is a
 * mark (visible, or left after a concurrent delete under READ COMMITTED).
 * With lock_row, the mark's row is locked until the transaction ends, as
 * the executor keeps its own; without, the version the snapshot sees is
 * only read (under READ COMMITTED the newest committed one, or this
 * transaction's own).
 */
bool
ReadMark(int64 guard_id, int64 resource_hash, bool lock_row, int64 *stored)
{
	ExtensionTable t;
	Relation       marks = OpenMarks(&t);
	Relation       pkey = index_open(t.pkey, AccessShareLock);

	CommandCounterIncrement();

	Snapshot        snapshot = RegisterSnapshot(GetTransactionSnapshot());
	TupleTableSlot *slot = table_slot_create(marks, nullptr);
	ScanKeyData     keys[2];

	ScanKeyInit(&keys[0], kKeyGuardId, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(guard_id));
	ScanKeyInit(&keys[1], kKeyResourceHash, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(resource_hash));

	IndexScanDesc scan = compat::BeginIndexScan(marks, pkey, snapshot, 2);

	index_rescan(scan, keys, 2, nullptr, 0);

	bool            found = index_getnext_slot(scan, ForwardScanDirection, slot);
	ItemPointerData tid;
	bool            isnull;

	if (found)
	{
		tid = slot->tts_tid;
		*stored = DatumGetInt64(slot_getattr(slot, kTokenAttnum, &isnull));
	}
	index_endscan(scan);

	if (found && lock_row)
	{
		bool           xact_snapshot = IsolationUsesXactSnapshot();
		int            flags = TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS;
		TM_FailureData tmfd;

		if (!xact_snapshot)
			flags |= TUPLE_LOCK_FLAG_FIND_LAST_VERSION;

		TM_Result result = table_tuple_lock(marks, &tid, snapshot, slot, GetCurrentCommandId(true),
											LockTupleNoKeyExclusive, LockWaitBlock, flags, &tmfd);

		switch (result)
		{
			case TM_Ok:
				*stored = DatumGetInt64(slot_getattr(slot, kTokenAttnum, &isnull));
				break;
			case TM_Updated:
				/* Only without FIND_LAST_VERSION: a transaction snapshot. */
				ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
								errmsg("could not serialize access due to concurrent update")));
				break;
			case TM_Deleted:
				if (xact_snapshot)
					ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
									errmsg("could not serialize access due to concurrent delete")));
				found = false;
				break;
			case TM_SelfModified:
				/* Changed by a later command of ours: skipped, as ExecLockRows does. */
				found = false;
				break;
			default:
				elog(ERROR, "unexpected table_tuple_lock status on fence.insert_marks: %d",
					 static_cast<int>(result));
		}
	}

	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	index_close(pkey, NoLock);
	table_close(marks, NoLock);
	return found;
}

/*
 * Raises the mark (found) or creates it, as the marks' owner, and returns
 * whether token is accepted, with the mark's token in *stored:
 *	 - a higher token: UPDATE of the locked mark;
 *	 - no mark yet: INSERT ... ON CONFLICT DO UPDATE ... WHERE <strict
 *	   rule>, in case another writer created it meanwhile (it waits for
 *	   that writer, then raises the mark or leaves it locked), and, if
 *	   that wrote nothing, read what the locked mark holds.
 */
bool
WriteMark(bool found, int64 guard_id, int64 resource_hash, int64 token, int64 *stored)
{
	Oid   types[3] = {INT8OID, INT8OID, INT8OID};
	Datum values[3] = {Int64GetDatum(guard_id), Int64GetDatum(resource_hash), Int64GetDatum(token)};
	bool  accepted = true;

	SavedUser saved = BeginAsMarksOwner();

	SPI_connect();
	if (found)
	{
		SPIPlanPtr raise = KeptPlan(&g_raise_plan,
									"UPDATE fence.insert_marks AS m SET token = $3 "
									"WHERE m.guard_id OPERATOR(pg_catalog.=) $1 "
									"AND m.resource_hash OPERATOR(pg_catalog.=) $2",
									3, types);
		int        rc = SPI_execute_plan(raise, values, nullptr, false, 0);

		if (rc != SPI_OK_UPDATE || SPI_processed != 1)
			elog(ERROR, "insert mark of guard " INT64_FORMAT " vanished while locked", guard_id);
		*stored = token;
	}
	else
	{
		SPIPlanPtr create = KeptPlan(
			&g_create_plan,
			psprintf("INSERT INTO fence.insert_marks AS m (guard_id, resource_hash, token) "
					 "VALUES ($1, $2, $3) "
					 "ON CONFLICT (guard_id, resource_hash) DO UPDATE SET token = excluded.token "
					 "WHERE %s RETURNING m.token",
					 FenceConditionSql("m.token", "excluded.token", false)),
			3, types);

		*stored = token;
		accepted = RunForToken(create, values, SPI_OK_INSERT_RETURNING, stored);
		if (!accepted)
		{
			/* Created meanwhile and not lower than ours: locked by ON CONFLICT, read it. */
			SPIPlanPtr read = KeptPlan(&g_read_plan,
									   "SELECT m.token FROM fence.insert_marks AS m "
									   "WHERE m.guard_id OPERATOR(pg_catalog.=) $1 "
									   "AND m.resource_hash OPERATOR(pg_catalog.=) $2",
									   2, types);

			if (!RunForToken(read, values, SPI_OK_SELECT, stored))
				elog(ERROR, "insert mark of guard " INT64_FORMAT " vanished while locked",
					 guard_id);
			accepted = MarkAccepts(*stored, token);
		}
	}
	SPI_finish();
	EndAsMarksOwner(saved);
	return accepted;
}

} /* namespace */

/*
 * The steps of the header, in order: the resource's lock, the copy, the
 * locked read, the raise or creation; past the limit, an unlocked read
 * first foresees a raise or creation, which then takes the resource's lock
 * from before the row lock until the change is written.
 */
bool
RaiseMark(int64 guard_id, int64 resource_hash, int64 token, int64 *stored)
{
	/* What the executor checks for a SELECT ... FOR NO KEY UPDATE of a table. */
	PreventCommandIfReadOnly("SELECT FOR NO KEY UPDATE");

	/* Before any lock: attaching the shared block may raise an error. */
	pg_atomic_uint64 *stripe = MarkStripe(guard_id, resource_hash);
	Oid               marks_relid = Marks().relid;
	bool              use_copy = stripe != nullptr && !IsolationUsesXactSnapshot();
	LOCKTAG           tag;

	SetLockTag(&tag, kMarkLockTagClass, ResourceLockKey(guard_id, resource_hash));

	bool   held = HoldResourceLock(&tag);
	bool   briefly = false;
	uint64 changes = use_copy ? MarkChanges(stripe) : 0;

	if (held && use_copy && CachedMark(marks_relid, guard_id, resource_hash, changes, stored))
	{
		if (*stored == token)
			return true;
		/* marks only rise: lower than a copy is lower than the mark */
		if (!MarkAccepts(*stored, token))
			return false;
	}
	if (!held)
	{
		bool exists = ReadMark(guard_id, resource_hash, false, stored);

		if (exists && !MarkAccepts(*stored, token))
			return false;
		if (!exists || *stored != token)
		{
			(void) LockAcquire(&tag, ExclusiveLock, false, false);
			briefly = true;
		}
	}

	bool found = ReadMark(guard_id, resource_hash, true, stored);
	bool accepted;

	if (found && !MarkAccepts(*stored, token))
		accepted = false;
	else if (found && *stored == token)
		accepted = true;
	else
	{
		if (stripe != nullptr)
			changes = CountMarkChange(stripe);
		accepted = WriteMark(found, guard_id, resource_hash, token, stored);
	}
	if (briefly)
		(void) LockRelease(&tag, ExclusiveLock, false);
	if (use_copy)
		CacheMark(marks_relid, guard_id, resource_hash, changes, *stored);
	return accepted;
}

int64
NextGuardId()
{
	SavedUser saved = BeginAsMarksOwner();

	SPI_connect();

	int rc = SPI_execute("SELECT pg_catalog.nextval('fence.guard_id_seq'::pg_catalog.regclass)",
						 false, 1);

	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "nextval of fence.guard_id_seq failed: %s", SPI_result_code_string(rc));

	bool  isnull;
	int64 id =
		DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	SPI_finish();
	EndAsMarksOwner(saved);
	return id;
}

void
ForgetInsertMarks(int64 guard_id)
{
	Oid   types[1] = {INT8OID};
	Datum values[1] = {Int64GetDatum(guard_id)};

	SavedUser saved = BeginAsMarksOwner();

	SPI_connect();

	int rc = SPI_execute_with_args("DELETE FROM fence.insert_marks AS m "
								   "WHERE m.guard_id OPERATOR(pg_catalog.=) $1",
								   1, types, values, nullptr, false, 0);

	if (rc != SPI_OK_DELETE)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	SPI_finish();
	EndAsMarksOwner(saved);
}

} /* namespace fence */
