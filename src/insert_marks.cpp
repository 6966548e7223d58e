/*-------------------------------------------------------------------------
 *
 * insert_marks.cpp
 *	  The marks of guarded INSERTs (fence.insert_marks): lock, compare,
 *	  raise or create one per written row (include/ext/insert_marks.hpp).
 *
 * RaiseMark runs for every row written to a table guarded with resource
 * columns, so its common case has a path of its own: the mark exists and
 * the row presents its token again (a holder appending to its stream).
 * That path does what "SELECT token FROM fence.insert_marks WHERE guard_id
 * = $1 AND resource_hash = $2 FOR NO KEY UPDATE" does, without SPI or the
 * executor (LockMark):
 *
 *	 1. like SPI before a statement, CommandCounterIncrement and the
 *	    transaction's snapshot (a new one per call under READ COMMITTED, so
 *	    the mark this transaction raised for an earlier row is seen);
 *	 2. the primary key index of fence.insert_marks, scanned for the
 *	    (guard_id, resource_hash) key: the visible version of the mark;
 *	 3. table_tuple_lock of that version, LockTupleNoKeyExclusive, waiting
 *	    for a writer that holds it, with the flags ExecLockRows uses: under
 *	    READ COMMITTED it follows the update chain to the newest version
 *	    and locks that one (its token is what counts); under REPEATABLE
 *	    READ and SERIALIZABLE a mark changed since the snapshot is a
 *	    serialization failure (40001), as for SELECT ... FOR NO KEY UPDATE.
 *	    A mark deleted meanwhile counts as missing.
 *
 * Raising a mark (a new holder's first write) and creating one (a
 * resource's first write) stay SPI statements (UPDATE, INSERT ... ON
 * CONFLICT), run as the table's owner (SECURITY_RESTRICTED): they happen
 * once per holder and resource, and ON CONFLICT settles two first writers
 * of one resource.  The path above reads and locks the table without a
 * permission check, as the owner's statements would be allowed to; it runs
 * no user code, and the user's own table is untouched by it (its RLS and
 * privileges apply to the INSERT itself, as before).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry (the guard trigger's or
 * fence.guard's).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/insert_marks.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/insert_marks.hpp"

#include "ext/compat.hpp"
#include "ext/extension_table.hpp"
#include "ext/fence_rule.hpp"

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
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fence {

namespace {

/* Presenting the mark's own token again is accepted (fence_rule.hpp). */
constexpr bool kInsertAllowsEqual = true;

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
	ExtensionTable t = FindExtensionTable(ExtensionTableId::kInsertMarks);

	if (!OidIsValid(t.relid))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table fence.insert_marks does not exist"),
						errhint("Update the extension: ALTER EXTENSION pg_fence UPDATE.")));
	return t;
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

/*
 * Steps 1-3 of the header: locks the mark and returns true with its token
 * in *stored, or returns false if there is none (visible, or left after a
 * concurrent delete under READ COMMITTED).  The locks on the table and its
 * index are kept until the transaction ends, as the executor keeps them.
 */
bool
LockMark(int64 guard_id, int64 resource_hash, int64 *stored)
{
	/* What the executor checks for a SELECT ... FOR NO KEY UPDATE of a table. */
	PreventCommandIfReadOnly("SELECT FOR NO KEY UPDATE");

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

	if (found)
		tid = slot->tts_tid;
	index_endscan(scan);

	if (found)
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
			{
				bool isnull;

				*stored = DatumGetInt64(slot_getattr(slot, kTokenAttnum, &isnull));
				break;
			}
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

} /* namespace */

/*
 * The hot path (LockMark) first; then, as the marks' owner:
 *	 - a higher token: UPDATE of the locked mark;
 *	 - no mark yet: INSERT ... ON CONFLICT DO UPDATE ... WHERE <strict
 *	   rule>, in case another writer created it meanwhile (it waits for
 *	   that writer, then raises the mark or leaves it locked), and, if
 *	   that wrote nothing, read what the locked mark holds.
 */
bool
RaiseMark(int64 guard_id, int64 resource_hash, int64 token, int64 *stored)
{
	bool found = LockMark(guard_id, resource_hash, stored);

	if (found && !FenceAccepts(StoredFence{*stored, false}, token, kInsertAllowsEqual))
		return false;
	if (found && *stored == token)
		return true;

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
			accepted = FenceAccepts(StoredFence{*stored, false}, token, kInsertAllowsEqual);
		}
	}
	SPI_finish();
	EndAsMarksOwner(saved);
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
