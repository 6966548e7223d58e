/*-------------------------------------------------------------------------
 *
 * guard.cpp
 *	  fence.guard and fence.unguard: install and remove the guard trigger
 *	  (guard_trigger.cpp) of a table.
 *
 * fence.guard creates the trigger "fence_guard", BEFORE UPDATE OR DELETE
 * FOR EACH ROW (and INSERT, with resource columns), running
 * fence.guard_trigger('<fence column>' [, guard number, resource columns]).
 * Guarded with resource columns, it draws a guard number and registers it
 * to the table (guard_registry.hpp) after the owner check.
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
#include "writes/marks_check.hpp"
#include "writes/guard_registry.hpp"
#include "writes/insert_marks.hpp"

extern "C" {
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/typcache.h"
}

namespace fence {

namespace {

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

/* Resource columns at most: as many as an index key. */
constexpr int kMaxResourceColumns = INDEX_MAX_KEYS;

/*
 * The resource column names of fence.guard's resource_columns argument,
 * checked against rel (exist, distinct, not the fence column, not
 * generated, hashable): a List of palloc'd C strings.
 */
List *
CheckResourceColumns(Relation rel, const char *fence_column, ArrayType *columns)
{
	Datum *elems;
	bool  *nulls;
	int    n;
	List  *names = NIL;

	if (ARR_NDIM(columns) > 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("resource_columns must be a one-dimensional array")));
	deconstruct_array(columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("resource_columns is empty"),
				 errhint("Pass NULL (the default) to guard only UPDATE and DELETE.")));
	if (n > kMaxResourceColumns)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many resource columns: %d (at most %d)", n, kMaxResourceColumns)));

	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("resource_columns must not contain NULL")));

		const char *column = NameStr(*DatumGetName(elems[i]));
		AttrNumber  attnum = get_attnum(RelationGetRelid(rel), column);

		if (attnum == InvalidAttrNumber)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
							errmsg("column \"%s\" of relation \"%s\" does not exist", column,
								   RelationGetRelationName(rel))));
		if (attnum < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("system column \"%s\" cannot be a resource column", column)));
		if (strcmp(column, fence_column) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the fence column \"%s\" cannot be a resource column", column),
					 errhint("Resource columns name what a row belongs to, e.g. its stream.")));

		ListCell *lc;

		foreach (lc, names)
			if (strcmp(static_cast<const char *>(lfirst(lc)), column) == 0)
				ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
								errmsg("resource column \"%s\" is given more than once", column)));

		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

		if (att->attgenerated != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("generated column \"%s\" cannot be a resource column", column),
					 errdetail("Generated values are computed after the guard checks a row.")));

		TypeCacheEntry *tc = lookup_type_cache(att->atttypid, TYPECACHE_HASH_EXTENDED_PROC);

		if (!OidIsValid(tc->hash_extended_proc))
			ereport(
				ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("resource column \"%s\" is of type %s, which has no extended hash function",
						column, format_type_be(att->atttypid)),
				 errhint(
					 "Use a column of a hashable type (text, integer, uuid, ...) as resource column.")));
		names = lappend(names, pstrdup(column));
	}
	return names;
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
