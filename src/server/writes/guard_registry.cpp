/*-------------------------------------------------------------------------
 *
 * guard_registry.cpp
 *	  The registry of guard numbers, fence.insert_guards (guard number,
 *	  table), and the guard trigger's check against it
 *	  (src/server/writes/guard_registry.hpp).
 *
 * The check (RegisteredGuardId) runs for every row a trigger guarded with
 * resource columns sees, before the row's mark is locked, read or written.
 * Its answer for a trigger is kept per backend (a handful of entries,
 * looked up by trigger OID), so the common case costs a short loop.  A
 * kept answer is dropped by a relcache invalidation of the trigger's table
 * or of the table at the top of its clone chain (CREATE, DROP, RENAME,
 * CREATE OR REPLACE of a trigger, DROP TABLE, DETACH PARTITION all send
 * one), of fence.insert_guards, or by a cache reset.  The registry's own
 * writers (fence.guard, fence.unguard) change the table's triggers in the
 * same transaction, which invalidates it.
 *
 * A missing answer is found by reading the catalog and the registry:
 *	 1. the trigger is named "fence_guard" and its guard number is a number;
 *	 2. walking pg_trigger.tgparentid from the trigger up to the trigger it
 *	    was cloned from (a partitioned table's, at any depth), each one is
 *	    "fence_guard" and runs the same function; the last one's table is
 *	    the guarded table;
 *	 3. fence.insert_guards registers the number to that table, read with
 *	    a fresh snapshot (a guard committed after the writer's transaction
 *	    snapshot is seen, as its trigger is).
 * Otherwise 39P01.
 *
 * The registry's rows are written as its owner, with SPI; readers need no
 * privilege on it.  pg_dump writes rel as the table's name, so a restore
 * binds the number to the restored table.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry (the guard trigger's or
 * fence.guard's / fence.unguard's).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/guard_registry.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/guard_registry.hpp"

#include "pg/compat.hpp"
#include "pg/extension_table.hpp"
#include "writes/guard.hpp"
#include "writes/marks_check.hpp"
#include "writes/insert_marks.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
}

namespace fence {

namespace {

/* Columns of fence.insert_guards, and of its primary key (guard_id). */
constexpr AttrNumber kRelAttnum = 2;
constexpr AttrNumber kKeyGuardId = 1;

/* A trigger found registered: its table, the guarded table and the number. */
struct Verified
{
	Oid   tgoid;
	Oid   relid;
	Oid   guarded;
	int64 guard_id;
};

/* A backend writes to few guarded tables; past this, the oldest answer goes. */
constexpr int kMaxVerified = 16;

Verified g_verified[kMaxVerified];
int      g_num_verified = 0;
int      g_next_victim = 0;
uint64   g_invalidations = 0;
Oid      g_registry_relid = InvalidOid; /* fence.insert_guards, as last read */
bool     g_callback_registered = false;

void
InvalidateVerified(Datum, Oid relid)
{
	g_invalidations++;
	if (relid == InvalidOid || relid == g_registry_relid)
	{
		g_num_verified = 0;
		return;
	}
	for (int i = 0; i < g_num_verified;)
	{
		if (g_verified[i].relid == relid || g_verified[i].guarded == relid)
			g_verified[i] = g_verified[--g_num_verified];
		else
			i++;
	}
}

void
Remember(const Verified &v)
{
	if (g_num_verified < kMaxVerified)
		g_verified[g_num_verified++] = v;
	else
	{
		g_verified[g_next_victim] = v;
		g_next_victim = (g_next_victim + 1) % kMaxVerified;
	}
}

char *
TableName(Oid relid)
{
	char *rel = get_rel_name(relid);
	char *nsp = get_namespace_name(get_rel_namespace(relid));

	if (rel == nullptr || nsp == nullptr)
		return psprintf("with OID %u", relid);
	return quote_qualified_identifier(nsp, rel);
}

void
RaiseNotRegistered(TriggerData *td, Oid guarded)
{
	const Trigger *t = td->tg_trigger;
	Oid            relid = RelationGetRelid(td->tg_relation);

	ereport(
		ERROR,
		(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
		 errmsg("trigger \"%s\" of table %s does not run a guard of that table", t->tgname,
				TableName(relid)),
		 OidIsValid(guarded)
			 ? errdetail(
				   "Its guard number %s is not registered to table %s: fence.guard did not install it there.",
				   t->tgargs[kGuardIdArg], TableName(guarded))
			 : errdetail(
				   "fence.guard installs its trigger as \"%s\" (cloned unchanged to partitions) with a guard number of its own.",
				   kGuardTriggerName),
		 errhint(
			 "Use fence.guard to guard a table.  If this table was guarded, but its guard number was not restored into fence.insert_guards, run fence.unguard and fence.guard on it again.")));
}

/* A guard number as fence.guard writes it: digits, > 0, in range. */
bool
ParseGuardId(const char *arg, int64 *guard_id)
{
	char *end;

	if (arg[0] < '1' || arg[0] > '9')
		return false;
	errno = 0;
	*guard_id = strtoi64(arg, &end, 10);
	return errno == 0 && *end == '\0';
}

/*
 * Step 2 of the header: the table of the trigger at the top of tgoid's
 * clone chain, or InvalidOid if a trigger of the chain is not
 * "fence_guard" running fnoid.
 */
Oid
GuardedTable(Oid tgoid, Oid fnoid)
{
	Relation tgrel = table_open(TriggerRelationId, AccessShareLock);
	Oid      guarded = InvalidOid;

	while (OidIsValid(tgoid))
	{
		ScanKeyData key;

		ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(tgoid));

		SysScanDesc scan = systable_beginscan(tgrel, TriggerOidIndexId, true, nullptr, 1, &key);
		HeapTuple   tup = systable_getnext(scan);

		guarded = InvalidOid;
		tgoid = InvalidOid;
		if (HeapTupleIsValid(tup))
		{
			Form_pg_trigger form = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));

			if (strcmp(NameStr(form->tgname), kGuardTriggerName) == 0 && form->tgfoid == fnoid)
			{
				guarded = form->tgrelid;
				tgoid = form->tgparentid;
			}
		}
		systable_endscan(scan);
	}
	table_close(tgrel, AccessShareLock);
	return guarded;
}

/* fence.insert_guards, or 42P01. */
ExtensionTable
Registry()
{
	ExtensionTable t = RequireExtensionTable(ExtensionTableId::kInsertGuards);

	if (!OidIsValid(t.pkey))
		elog(ERROR, "table fence.insert_guards has no primary key");
	return t;
}

/*
 * Step 3 of the header: the table guard_id is registered to, or
 * InvalidOid.  Read with a fresh snapshot, without a permission check (as
 * the marks are, src/server/writes/insert_marks.cpp).
 */
Oid
RegisteredTable(int64 guard_id)
{
	ExtensionTable t;
	Relation       reg;

	for (;;)
	{
		t = Registry();

		uint64 generation = ExtensionTableGeneration();

		reg = try_table_open(t.relid, AccessShareLock);
		if (reg != nullptr && generation == ExtensionTableGeneration())
			break;
		if (reg != nullptr)
			table_close(reg, AccessShareLock);
		else
			ForgetExtensionTable(ExtensionTableId::kInsertGuards);
	}
	g_registry_relid = t.relid;

	Relation        pkey = index_open(t.pkey, AccessShareLock);
	Snapshot        snapshot = RegisterSnapshot(GetLatestSnapshot());
	TupleTableSlot *slot = table_slot_create(reg, nullptr);
	ScanKeyData     key;

	ScanKeyInit(&key, kKeyGuardId, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(guard_id));

	IndexScanDesc scan = compat::BeginIndexScan(reg, pkey, snapshot, 1);

	index_rescan(scan, &key, 1, nullptr, 0);

	Oid registered = InvalidOid;

	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool isnull;

		registered = DatumGetObjectId(slot_getattr(slot, kRelAttnum, &isnull));
		if (isnull)
			registered = InvalidOid;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	index_close(pkey, AccessShareLock);
	table_close(reg, AccessShareLock);
	return registered;
}

/* Runs one statement of the registry's as its owner (restricted). */
void
RunAsRegistryOwner(const char *sql, int nargs, Oid *types, Datum *values, int expected_rc)
{
	Oid saved_user;
	int saved_context;

	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(Registry().owner, saved_context | SECURITY_LOCAL_USERID_CHANGE |
												 SECURITY_RESTRICTED_OPERATION);
	SPI_connect();

	int rc = SPI_execute_with_args(sql, nargs, types, values, nullptr, false, 0);

	if (rc != expected_rc)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));

	/* the guard numbers a DELETE ... RETURNING forgot: their marks go too */
	int64 *forgotten = nullptr;
	int    nforgotten = 0;

	if (rc == SPI_OK_DELETE_RETURNING && SPI_processed > 0)
	{
		forgotten = static_cast<int64 *>(SPI_palloc(sizeof(int64) * SPI_processed));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool isnull;

			forgotten[nforgotten++] = DatumGetInt64(
				SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	SPI_finish();
	SetUserIdAndSecContext(saved_user, saved_context);
	for (int i = 0; i < nforgotten; i++)
		ForgetInsertMarks(forgotten[i]);
}

} /* namespace */

int64
RegisteredGuardId(TriggerData *td)
{
	const Trigger *t = td->tg_trigger;
	Oid            relid = RelationGetRelid(td->tg_relation);

	for (int i = 0; i < g_num_verified; i++)
		if (g_verified[i].tgoid == t->tgoid && g_verified[i].relid == relid)
			return g_verified[i].guard_id;

	if (!g_callback_registered)
	{
		CacheRegisterRelcacheCallback(InvalidateVerified, (Datum) 0);
		g_callback_registered = true;
	}

	/* an invalidation while the catalog is read may concern this answer: not kept then */
	uint64 invalidations = g_invalidations;
	int64  guard_id;

	if (strcmp(t->tgname, kGuardTriggerName) != 0 ||
		!ParseGuardId(t->tgargs[kGuardIdArg], &guard_id))
		RaiseNotRegistered(td, InvalidOid);

	Oid guarded = GuardedTable(t->tgoid, t->tgfoid);

	if (!OidIsValid(guarded))
		RaiseNotRegistered(td, InvalidOid);
	if (RegisteredTable(guard_id) != guarded)
		RaiseNotRegistered(td, guarded);
	if (invalidations == g_invalidations)
		Remember(Verified{t->tgoid, relid, guarded, guard_id});
	return guard_id;
}

void
RegisterGuard(int64 guard_id, Oid relid)
{
	Oid   types[2] = {INT8OID, REGCLASSOID};
	Datum values[2] = {Int64GetDatum(guard_id), ObjectIdGetDatum(relid)};

	ForgetGuardsOf(relid);
	RunAsRegistryOwner("INSERT INTO fence.insert_guards (guard_id, rel) VALUES ($1, $2)", 2, types,
					   values, SPI_OK_INSERT);
}

void
ForgetGuardsOf(Oid relid)
{
	if (!OidIsValid(FindExtensionTable(ExtensionTableId::kInsertGuards).relid))
		return;

	Oid   types[1] = {REGCLASSOID};
	Datum values[1] = {ObjectIdGetDatum(relid)};

	RunAsRegistryOwner("DELETE FROM fence.insert_guards AS g "
					   "WHERE g.rel OPERATOR(pg_catalog.=) $1 RETURNING g.guard_id",
					   1, types, values, SPI_OK_DELETE_RETURNING);
}

} /* namespace fence */
