/*-------------------------------------------------------------------------
 *
 * guard.cpp
 *	  Fenced writes for every client: the guard trigger function
 *	  fence.guard_trigger(), and fence.guard / fence.unguard, which install
 *	  and remove it.
 *
 * A guarded table has a BEFORE UPDATE OR DELETE FOR EACH ROW trigger named
 * "fence_guard" that runs fence.guard_trigger('<fence column>') (guarded
 * with resource columns, BEFORE INSERT too, with more arguments: INSERTs
 * are checked against their resource's mark, src/server/writes/marks_check.cpp).  For
 * each updated or deleted row it finds the token the write presents:
 *
 *	 - an UPDATE that changes the fence column's value (to a non-NULL value)
 *	   presents the new value;
 *	 - otherwise (an UPDATE that leaves the fence column unchanged, any
 *	   DELETE) the write presents the token of a running fence.fenced_update
 *	   or fence.token set in the current transaction (TokenPresentedByWrite,
 *	   presented_token.hpp), and an UPDATE then stamps the row's fence with
 *	   it.
 *
 * The write goes ahead iff the row's fence accepts the token under the
 * fence rule (fence_rule.hpp), with equal tokens allowed: the token is not
 * lower than the row's current fence, or the fence is NULL.  A lower token
 * raises FN001, none FN003, and a token this database never issued FN004
 * (RequireIssuedToken, issued_token.hpp, checked before the fence rule).
 * fence.fenced_update sets fence = token WHERE fence < token, so the rows
 * it changes present a higher token and pass.  The trigger runs once
 * per row, so set-based writes (UPDATE ... FROM, CTEs, ON CONFLICT DO
 * UPDATE, MERGE) are checked row by row.
 *
 * Guarded with resource columns, the trigger first checks that its guard
 * number (public, in pg_trigger.tgargs) is registered to its table
 * (guard_registry.hpp): fence.guard registers it after the owner check.
 *
 * A row trigger runs only on the table that holds the row: a partitioned
 * table's trigger is cloned to its partitions, but an inheritance parent's
 * is not inherited by its children, whose rows an UPDATE or DELETE of the
 * parent also writes.  So fence.guard refuses a parent unless all of its
 * descendants are guarded already (RequireChildrenGuarded).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; the SQL entry points run it through fence::Entry.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/guard.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/guard.hpp"

#include "pg/args.hpp"
#include "pg/boundary.hpp"
#include "pg/compat.hpp"
#include "tokens/fence_rule.hpp"
#include "writes/marks_check.hpp"
#include "writes/guard_registry.hpp"
#include "tokens/issued_token.hpp"
#include "pg/messages.hpp"
#include "writes/presented_token.hpp"
#include "observability/stats.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
}

#define ERRCODE_FENCE_STALE_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '1')
#define ERRCODE_FENCE_NO_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '3')

namespace fence {

namespace {

/* A guarded row accepts its own fence's token again (fence_rule.hpp). */
constexpr bool kGuardAllowsEqual = true;

/* "schema.table", quoted as needed (palloc'd). */
char *
QualifiedName(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

/*
 * The row's key for messages: its primary key values, "(id)=(42)", when the
 * table has one and the user may see them (BuildIndexValueDescription
 * checks column privileges and row-level security), else "ctid (0,1)".
 * Clipped: key values can be kilobytes long.
 */
const char *
RowDescription(Relation rel, HeapTuple tuple)
{
	char *desc = nullptr;
	Oid   pk = compat::PrimaryKeyIndex(rel);

	if (OidIsValid(pk))
	{
		Relation idx = index_open(pk, AccessShareLock);
		int      nkeys = IndexRelationGetNumberOfKeyAttributes(idx);
		Datum    values[INDEX_MAX_KEYS];
		bool     isnull[INDEX_MAX_KEYS];

		for (int i = 0; i < nkeys; i++)
			values[i] = heap_getattr(tuple, idx->rd_index->indkey.values[i], RelationGetDescr(rel),
									 &isnull[i]);
		desc = BuildIndexValueDescription(idx, values, isnull);
		index_close(idx, AccessShareLock);
	}
	if (desc == nullptr)
		desc = psprintf("ctid (%u,%u)", ItemPointerGetBlockNumberNoCheck(&tuple->t_self),
						(unsigned) ItemPointerGetOffsetNumberNoCheck(&tuple->t_self));
	return ClipForMessage(desc);
}

void
RaiseStale(Relation rel, HeapTuple row, const char *op, int64 presented, int64 current)
{
	char       *table = QualifiedName(rel);
	const char *key = RowDescription(rel, row);

	ReportStaleWrite("guard", psprintf("%s %s", table, key), presented, current);
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_STALE_TOKEN),
		 errmsg("fencing token " INT64_FORMAT " is older than the fence " INT64_FORMAT
				" of row %s in table %s",
				presented, current, key, table),
		 errdetail(
			 "The %s was rejected: a guarded row accepts only writes whose token is not lower than its fence, and a newer lock holder has written it.",
			 op),
		 errhint("Acquire the lock again to obtain a new fencing token, then re-read the row.")));
}

/*
 * No token: the write presents none (setting: why fence.token does not
 * supply one).  sets_null: an UPDATE that sets a non-NULL fence to NULL
 * (which presents no token, like an unchanged one).
 */
void
RaiseNoToken(Relation rel, HeapTuple row, bool is_update, bool sets_null, const char *column,
			 TokenSettingState setting)
{
	char       *table = QualifiedName(rel);
	const char *key = RowDescription(rel, row);

	StatsCountRejected(StatKind::kMissingTokens);
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_NO_TOKEN),
		 errmsg("no fencing token presented for %s of row %s in table %s",
				is_update ? "UPDATE" : "DELETE", key, table),
		 setting == TokenSettingState::kSetInOtherTransaction
			 ? errdetail(
				   "fence.token was set in an earlier transaction; it counts only in the transaction that set it.")
		 : is_update && sets_null
			 ? errdetail(
				   "The UPDATE sets the fence column \"%s\" to NULL, which presents no token, and fence.token is not set in this transaction.",
				   column)
		 : is_update
			 ? errdetail(
				   "The UPDATE leaves the fence column \"%s\" unchanged and fence.token is not set in this transaction.",
				   column)
			 : errdetail("fence.token is not set in this transaction."),
		 is_update
			 ? errhint(
				   "Set the fence column \"%s\" to the token in the UPDATE, or run SET LOCAL fence.token = <token> in the same transaction.",
				   column)
			 : errhint(
				   "Run SET LOCAL fence.token = <token> in the same transaction before the DELETE.")));
}

/*
 * With resource columns, an UPDATE or DELETE is a write of its row's
 * resource (and an UPDATE that moves the row to another resource, of that
 * one too): the token must also pass, and raises, their marks.
 */
void
CheckResourceMarks(TriggerData *td, int64 guard_id, HeapTuple old_row, HeapTuple new_row,
				   int64 token)
{
	if (!GuardsInserts(td->tg_trigger))
		return;
	const char *op = new_row != nullptr ? "UPDATE" : "DELETE";

	CheckResourceMark(td, guard_id, old_row, token, op);
	if (new_row != nullptr && !SameResource(td, old_row, new_row))
		CheckResourceMark(td, guard_id, new_row, token, op);
}

/* The body of fence.guard_trigger(). */
Datum
GuardTrigger(FunctionCallInfo fcinfo)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
						errmsg("fence.guard_trigger() must be called as a trigger"),
						errhint("Use fence.guard(table) to install it.")));

	TriggerData *td = reinterpret_cast<TriggerData *>(fcinfo->context);
	TriggerEvent ev = td->tg_event;
	bool         is_update = TRIGGER_FIRED_BY_UPDATE(ev);
	bool         is_insert = TRIGGER_FIRED_BY_INSERT(ev);
	int          nargs = td->tg_trigger->tgnargs;

	if (!TRIGGER_FIRED_BEFORE(ev) || !TRIGGER_FIRED_FOR_ROW(ev) ||
		!(is_update || is_insert || TRIGGER_FIRED_BY_DELETE(ev)) ||
		!(nargs == 1 || GuardsInserts(td->tg_trigger)) ||
		(is_insert && !GuardsInserts(td->tg_trigger)))
		ereport(
			ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg(
				 "fence.guard_trigger() must run BEFORE UPDATE OR DELETE (and INSERT, with resource columns) FOR EACH ROW with the arguments that fence.guard gives it"),
			 errhint("Use fence.guard(table) to install it.")));

	/*
	 * With resource columns, before anything else: the guard number must be
	 * registered to this table (39P01), or the trigger would act on another
	 * table's marks.
	 */
	int64 guard_id = GuardsInserts(td->tg_trigger) ? RegisteredGuardId(td) : 0;

	Relation    rel = td->tg_relation;
	TupleDesc   tupdesc = RelationGetDescr(rel);
	const char *column = td->tg_trigger->tgargs[0];
	int         attnum = SPI_fnumber(tupdesc, column);

	if (attnum <= 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("fence column \"%s\" of guarded table %s does not exist", column,
					QualifiedName(rel)),
			 errhint("Run fence.unguard and fence.guard again with the current fence column.")));
	if (TupleDescAttr(tupdesc, attnum - 1)->atttypid != INT8OID)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("fence column \"%s\" of guarded table %s is not of type bigint",
							   column, QualifiedName(rel))));

	if (is_insert)
		return PointerGetDatum(GuardInsertRow(td, guard_id, attnum));

	HeapTuple   old_row = td->tg_trigtuple;
	bool        old_null;
	int64       current = DatumGetInt64(heap_getattr(old_row, attnum, tupdesc, &old_null));
	StoredFence fence = {current, old_null};

	if (is_update)
	{
		HeapTuple new_row = td->tg_newtuple;
		bool      new_null;
		int64     fresh = DatumGetInt64(heap_getattr(new_row, attnum, tupdesc, &new_null));

		/* The UPDATE changes the fence column: the new value is its token. */
		if (!new_null && (old_null || fresh != current))
		{
			RequireIssuedToken(fresh, "a guarded UPDATE");
			if (!FenceAccepts(fence, fresh, kGuardAllowsEqual))
				RaiseStale(rel, old_row, "UPDATE", fresh, current);
			CheckResourceMarks(td, guard_id, old_row, new_row, fresh);
			return PointerGetDatum(new_row);
		}

		/*
		 * Otherwise the write presents its token (fenced_update's or
		 * fence.token); stamp the row with it.
		 */
		int64             token;
		TokenSettingState setting;

		if (!TokenPresentedByWrite(&token, &setting))
			RaiseNoToken(rel, old_row, true, new_null && !old_null, column, setting);
		RequireIssuedToken(token, "a guarded UPDATE");
		if (!FenceAccepts(fence, token, kGuardAllowsEqual))
			RaiseStale(rel, old_row, "UPDATE", token, current);
		CheckResourceMarks(td, guard_id, old_row, new_row, token);

		int   cols[1] = {attnum};
		Datum values[1] = {Int64GetDatum(token)};
		bool  nulls[1] = {false};

		return PointerGetDatum(heap_modify_tuple_by_cols(new_row, tupdesc, 1, cols, values, nulls));
	}

	int64             token;
	TokenSettingState setting;

	if (!TokenPresentedByWrite(&token, &setting))
		RaiseNoToken(rel, old_row, false, false, column, setting);
	RequireIssuedToken(token, "a guarded DELETE");
	if (!FenceAccepts(fence, token, kGuardAllowsEqual))
		RaiseStale(rel, old_row, "DELETE", token, current);
	CheckResourceMarks(td, guard_id, old_row, nullptr, token);
	return PointerGetDatum(old_row);
}

/*
 * rel's trigger "fence_guard" if fence.guard installed it (it runs
 * fence.guard_trigger), else nullptr.
 */
const Trigger *
FindGuardTrigger(Relation rel)
{
	if (rel->trigdesc == nullptr)
		return nullptr;
	for (int i = 0; i < rel->trigdesc->numtriggers; i++)
	{
		const Trigger *t = &rel->trigdesc->triggers[i];

		if (strcmp(t->tgname, kGuardTriggerName) != 0)
			continue;

		char *fn = get_func_name(t->tgfoid);
		char *nsp = get_namespace_name(get_func_namespace(t->tgfoid));

		if (fn != nullptr && nsp != nullptr && strcmp(fn, "guard_trigger") == 0 &&
			strcmp(nsp, "fence") == 0)
			return t;
		return nullptr;
	}
	return nullptr;
}

/*
 * An UPDATE or DELETE of an inheritance parent also writes the rows of its
 * children, and a row trigger fires only on the table that holds the row:
 * the parent's guard does not cover them.  So a parent may be guarded only
 * when every descendant already is, with the same fence column.  (A
 * partitioned table is different: CREATE TRIGGER clones its trigger to
 * every partition, present and future.)  Locks the descendants with
 * AccessShareLock; the caller's ShareRowExclusiveLock on rel keeps new
 * children from being attached to it meanwhile.
 */
void
RequireChildrenGuarded(Relation rel, const char *column)
{
	Oid       relid = RelationGetRelid(rel);
	List     *tables = find_all_inheritors(relid, AccessShareLock, nullptr);
	ListCell *lc;

	foreach (lc, tables)
	{
		Oid child = lfirst_oid(lc);

		if (child == relid)
			continue;

		Relation       crel = relation_open(child, NoLock);
		const Trigger *t = FindGuardTrigger(crel);

		if (t == nullptr || t->tgnargs < 1 || strcmp(t->tgargs[0], column) != 0)
			ereport(
				ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg(
					 "cannot guard table %s because its inheritance child %s is not guarded with fence column \"%s\"",
					 QualifiedName(rel), QualifiedName(crel), column),
				 errdetail(
					 "An UPDATE or DELETE of %s also writes the rows of its inheritance children, and only a child's own guard checks them.",
					 QualifiedName(rel)),
				 errhint(
					 "Guard each table of the hierarchy separately, children first, or use a partitioned table, whose guard covers every partition.")));
		relation_close(crel, NoLock);
	}
	list_free(tables);
}

/*
 * The extension's own tables cannot be guarded (a guard would fail its own
 * writes): 42501, as CREATE TRIGGER on a system catalog, even for a superuser.
 */
void
RefuseExtensionTable(Relation rel)
{
	Oid ext = getExtensionOfObject(RelationRelationId, RelationGetRelid(rel));

	if (OidIsValid(ext) && ext == get_extension_oid("pg_fence", true))
		ereport(
			ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot guard table %s because it belongs to extension pg_fence",
					QualifiedName(rel)),
			 errdetail(
				 "The extension's own tables are written only by its functions, and a guard on them would make those fail.")));
}

/* Open rel for (un)guarding: a table, owned by the current user. */
Relation
OpenGuardTarget(FunctionCallInfo fcinfo, LOCKMODE lockmode, const char *verb)
{
	RequireArg(fcinfo, 0, "rel");

	Oid      relid = PG_GETARG_OID(0);
	Relation rel = try_relation_open(relid, lockmode);

	/* a regclass argument may carry any OID: 42P01, as fence.fenced_update says */
	if (rel == nullptr)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("relation with OID %u does not exist", relid)));

	char relkind = rel->rd_rel->relkind;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot %s \"%s\"", verb, RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(relkind), errhint("Only tables can be guarded.")));

	/* Like CREATE TRIGGER / DROP TRIGGER, but only the owner may do it. */
	if (!compat::OwnsRelation(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(relkind),
					   RelationGetRelationName(rel));
	return rel;
}

/* fence.guard(rel regclass, fence_column name, resource_columns name[]) */
Datum
Guard(FunctionCallInfo fcinfo)
{
	RequireArg(fcinfo, 1, "fence_column");

	/* CREATE TRIGGER's lock, taken before any check */
	Relation    rel = OpenGuardTarget(fcinfo, ShareRowExclusiveLock, "guard");
	Oid         relid = RelationGetRelid(rel);
	const char *column = NameStr(*PG_GETARG_NAME(1));
	AttrNumber  attnum = get_attnum(relid, column);

	RefuseExtensionTable(rel);

	if (attnum == InvalidAttrNumber)
		ereport(
			ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("column \"%s\" of relation \"%s\" does not exist", column,
					RelationGetRelationName(rel)),
			 errhint(
				 "A guarded table needs a bigint fence column, e.g. ALTER TABLE ... ADD COLUMN fence bigint NOT NULL DEFAULT 0.")));

	Oid type = get_atttype(relid, attnum);

	if (type != INT8OID)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("fence column \"%s\" of relation \"%s\" is of type %s, not bigint",
							   column, RelationGetRelationName(rel), format_type_be(type))));

	if (OidIsValid(get_trigger_oid(relid, kGuardTriggerName, true)))
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
						errmsg("table %s is already guarded", QualifiedName(rel)),
						errdetail("It has a trigger named \"%s\".", kGuardTriggerName),
						errhint("Run fence.unguard first to guard it with another fence column.")));

	if (rel->rd_rel->relkind == RELKIND_RELATION && has_subclass(relid))
		RequireChildrenGuarded(rel, column);

	/* With resource columns, INSERTs are fenced too (marks_check.hpp). */
	List *args = list_make1(makeString(pstrdup(column)));
	bool  inserts = !PG_ARGISNULL(2);
	int64 guard_id = 0;

	if (inserts)
	{
		List     *names = CheckResourceColumns(rel, column, PG_GETARG_ARRAYTYPE_P(2));
		ListCell *lc;

		guard_id = NextGuardId();
		args = lappend(args, makeString(psprintf(INT64_FORMAT, guard_id)));
		foreach (lc, names)
			args = lappend(args, makeString(static_cast<char *>(lfirst(lc))));
	}

	/*
	 * CREATE TRIGGER fence_guard BEFORE [INSERT OR] UPDATE OR DELETE ON rel
	 * FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger(column [, guard
	 * number, resource columns...]), built as a parse node from catalog
	 * names: no SQL text is assembled.
	 */
	CreateTrigStmt *stmt = makeNode(CreateTrigStmt);

	stmt->replace = false;
	stmt->isconstraint = false;
	stmt->trigname = pstrdup(kGuardTriggerName);
	stmt->relation = makeRangeVar(get_namespace_name(RelationGetNamespace(rel)),
								  pstrdup(RelationGetRelationName(rel)), -1);
	stmt->funcname = list_make2(makeString(pstrdup("fence")), makeString(pstrdup("guard_trigger")));
	stmt->args = args;
	stmt->row = true;
	stmt->timing = TRIGGER_TYPE_BEFORE;
	stmt->events = TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE | (inserts ? TRIGGER_TYPE_INSERT : 0);
	stmt->columns = NIL;
	stmt->whenClause = nullptr;
	stmt->transitionRels = NIL;
	stmt->deferrable = false;
	stmt->initdeferred = false;
	stmt->constrrel = nullptr;

	(void) CreateTrigger(stmt, "fence.guard()", relid, InvalidOid, InvalidOid, InvalidOid,
						 InvalidOid, InvalidOid, nullptr, false, false);
	CommandCounterIncrement();

	/*
	 * The guard number belongs to this table from now on (numbers left
	 * registered to it by a trigger dropped by hand are forgotten, with
	 * their marks).
	 */
	if (inserts)
		RegisterGuard(guard_id, relid);
	else
		ForgetGuardsOf(relid);
	CommandCounterIncrement();
	relation_close(rel, NoLock);
	PG_RETURN_VOID();
}

/* fence.unguard(rel regclass) */
Datum
Unguard(FunctionCallInfo fcinfo)
{
	/* DROP TRIGGER's lock */
	Relation rel = OpenGuardTarget(fcinfo, AccessExclusiveLock, "unguard");
	Oid      relid = RelationGetRelid(rel);
	Oid      trigoid = get_trigger_oid(relid, kGuardTriggerName, true);

	/* Drop only a trigger that fence.guard made (runs fence.guard_trigger). */
	const Trigger *ours = FindGuardTrigger(rel);

	if (ours == nullptr || ours->tgoid != trigoid)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("table %s is not guarded", QualifiedName(rel)),
						OidIsValid(trigoid)
							? errdetail("Its trigger \"%s\" was not installed by fence.guard.",
										kGuardTriggerName)
							: 0));

	ObjectAddress addr;

	ObjectAddressSet(addr, TriggerRelationId, trigoid);
	performDeletion(&addr, DROP_RESTRICT, 0);
	CommandCounterIncrement();

	/*
	 * Its guard number and insert marks go with it (after the drop: a
	 * partition's clone cannot be dropped): the numbers registered to this
	 * table, whatever the trigger's arguments said.
	 */
	ForgetGuardsOf(relid);
	CommandCounterIncrement();
	relation_close(rel, NoLock);
	PG_RETURN_VOID();
}

} /* namespace */

} /* namespace fence */

/*
 * fence.guard_trigger() RETURNS trigger
 *	 BEFORE UPDATE OR DELETE FOR EACH ROW; argument: the fence column.
 *	 Raises FN001 (stale token), FN003 (no token) and 39P01 (not run as the
 *	 trigger fence.guard installed; with resource columns, on a table its
 *	 guard number is not registered to).  Takes no locks of its own (with
 *	 resource columns: src/server/writes/insert_marks.cpp's).
 */
FENCE_SQL_FUNCTION(fence_guard_trigger)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::GuardTrigger(fc); });
}

/*
 * fence.guard(rel regclass, fence_column name DEFAULT 'fence',
 *			   resource_columns name[] DEFAULT NULL) RETURNS void
 *	 Installs the trigger "fence_guard" on rel (with resource columns, for
 *	 INSERT too, and draws a guard number).  Owner only (42501).
 *	 Takes: ShareRowExclusiveLock on rel (as CREATE TRIGGER), AccessShareLock
 *	 on its inheritance descendants.  Errors: 42P01 no such relation, 42501
 *	 a table of the extension, 42809 not a table, 42703 no such column,
 *	 42804 not bigint, 42710 already guarded, 0A000 an inheritance child
 *	 not guarded (with the same fence column) or a
 *	 generated resource column, 42883 a resource column without a hash
 *	 function, 42701 a resource column twice, 22023 NULL argument, empty
 *	 resource_columns, a NULL element or the fence column among them,
 *	 54000 more than 32 resource columns.
 */
FENCE_SQL_FUNCTION(fence_guard)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Guard(fc); });
}

/*
 * fence.unguard(rel regclass) RETURNS void
 *	 Drops the trigger "fence_guard" of rel, and the guard numbers
 *	 registered to rel with their insert marks.  Owner only (42501).
 *	 Takes: AccessExclusiveLock on rel (as DROP TRIGGER).  Errors: 42P01 no
 *	 such relation, 42704 not guarded, 42809 not a table, 22023 NULL
 *	 argument.
 */
FENCE_SQL_FUNCTION(fence_unguard)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) { return fence::Unguard(fc); });
}
