/*-------------------------------------------------------------------------
 *
 * guard_insert.cpp
 *	  Guarded INSERTs: every row inserted into a table guarded with
 *	  resource_columns presents a fencing token not lower than the highest
 *	  token that has written a row of the same resource.
 *
 * An append-only table (an event log, a ledger, an outbox) has no row for
 * a zombie to overwrite; the fence it must respect is the resource's: the
 * values of its resource columns (e.g. the stream a log entry belongs to).
 * Its mark, the highest token that has written a row of that resource,
 * lives in fence.insert_marks under (guard number, resource hash).
 *
 * For each row, the BEFORE INSERT trigger
 *	 1. finds the row's token: its fence column when positive (tokens are
 *	    > 0, so NULL, 0 and a DEFAULT 0 present none), else the token the
 *	    write presents (fence.token set in this transaction,
 *	    presented_token.hpp), which it then stores in the fence column;
 *	    A token above every token the database has issued is refused first
 *	    (FN004, issued_token.hpp);
 *	 2. hashes the resource columns, each with its type's extended hash
 *	    function under the column's collation (values equal by the type's
 *	    equality hash alike; collisions merge two resources' marks, which
 *	    can only reject more, never accept a stale token);
 *	 3. as the owner of fence.insert_marks (SECURITY_RESTRICTED), locks the
 *	    mark (SELECT ... FOR NO KEY UPDATE) or creates it (INSERT ... ON
 *	    CONFLICT, for a mark created meanwhile), and compares: equal is
 *	    accepted (the same holder appending again: no new row version),
 *	    higher raises the mark, lower raises FN001 (RaiseMark).
 * The mark's row lock (or its new version) is held until the inserting
 * transaction ends, so inserters of one resource serialize: a zombie's
 * INSERT that was not yet committed when a newer holder raised the mark
 * either commits first (and is ordered before it) or waits and is
 * rejected.  A rollback takes the mark's change with it.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry (the guard trigger's).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/guard_insert.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/guard_insert.hpp"

#include "ext/fence_rule.hpp"
#include "ext/issued_token.hpp"
#include "ext/messages.hpp"
#include "ext/presented_token.hpp"
#include "ext/stats.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#define ERRCODE_FENCE_STALE_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '1')
#define ERRCODE_FENCE_NO_TOKEN MAKE_SQLSTATE('F', 'N', '0', '0', '3')

namespace fence {

namespace {

/* Presenting the mark's own token again is accepted (fence_rule.hpp). */
constexpr bool kInsertAllowsEqual = true;

/* Resource columns at most: as many as an index key. */
constexpr int kMaxResourceColumns = INDEX_MAX_KEYS;

/* Saved plans (SPI_keepplan) of RaiseMark. */
SPIPlanPtr g_lock_plan = nullptr;
SPIPlanPtr g_raise_plan = nullptr;
SPIPlanPtr g_create_plan = nullptr;
SPIPlanPtr g_read_plan = nullptr;

/* The owner of fence.insert_marks, as whom the marks are read and written. */
Oid
MarksOwner()
{
	Oid nsp = get_namespace_oid("fence", false);
	Oid relid = get_relname_relid("insert_marks", nsp);

	if (!OidIsValid(relid))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table fence.insert_marks does not exist"),
						errhint("Update the extension: ALTER EXTENSION pg_fence UPDATE.")));

	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);

	Oid owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;

	ReleaseSysCache(tup);
	return owner;
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
	SetUserIdAndSecContext(MarksOwner(), saved.sec_context | SECURITY_LOCAL_USERID_CHANGE |
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
 * Applies the fence rule to the resource's mark: creates or raises it and
 * returns true, or returns false with the stored token in *stored.  Either
 * way the mark's row is locked (or written) by this transaction until it
 * ends, so no other writer of the resource can move it meanwhile.
 *
 *	 1. SELECT ... FOR NO KEY UPDATE: the usual case, a mark that exists;
 *	    equal needs nothing more, higher an UPDATE;
 *	 2. no mark yet: INSERT ... ON CONFLICT DO UPDATE ... WHERE <strict
 *	    rule>, in case another writer created it meanwhile (it waits for
 *	    that writer, then raises the mark or leaves it locked), and, if
 *	    that wrote nothing, read what the locked mark holds.
 */
bool
RaiseMark(int64 guard_id, int64 resource_hash, int64 token, int64 *stored)
{
	Oid   types[3] = {INT8OID, INT8OID, INT8OID};
	Datum values[3] = {Int64GetDatum(guard_id), Int64GetDatum(resource_hash), Int64GetDatum(token)};
	bool  accepted;

	SavedUser saved = BeginAsMarksOwner();

	SPI_connect();

	SPIPlanPtr lock = KeptPlan(&g_lock_plan,
							   "SELECT m.token FROM fence.insert_marks AS m "
							   "WHERE m.guard_id OPERATOR(pg_catalog.=) $1 "
							   "AND m.resource_hash OPERATOR(pg_catalog.=) $2 "
							   "FOR NO KEY UPDATE",
							   2, types);

	if (RunForToken(lock, values, SPI_OK_SELECT, stored))
	{
		accepted = FenceAccepts(StoredFence{*stored, false}, token, kInsertAllowsEqual);
		if (accepted && token != *stored)
		{
			SPIPlanPtr raise = KeptPlan(&g_raise_plan,
										"UPDATE fence.insert_marks AS m SET token = $3 "
										"WHERE m.guard_id OPERATOR(pg_catalog.=) $1 "
										"AND m.resource_hash OPERATOR(pg_catalog.=) $2",
										3, types);
			int        rc = SPI_execute_plan(raise, values, nullptr, false, 0);

			if (rc != SPI_OK_UPDATE || SPI_processed != 1)
				elog(ERROR, "insert mark of guard " INT64_FORMAT " vanished while locked",
					 guard_id);
		}
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

/* The column's number in rel, or an error naming the guard's broken argument. */
int
ResourceAttnum(Relation rel, const char *column)
{
	int attnum = SPI_fnumber(RelationGetDescr(rel), column);

	if (attnum <= 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("resource column \"%s\" of guarded table %s does not exist", column,
					RelationGetRelationName(rel)),
			 errhint(
				 "Run fence.unguard and fence.guard again with the current resource columns.")));
	return attnum;
}

/* The resource's hash: its columns' extended hashes, combined in order. */
int64
ResourceHash(TriggerData *td, HeapTuple row)
{
	Relation  rel = td->tg_relation;
	TupleDesc desc = RelationGetDescr(rel);
	uint64    h = 0;

	for (int i = kFirstResourceArg; i < td->tg_trigger->tgnargs; i++)
	{
		int               attnum = ResourceAttnum(rel, td->tg_trigger->tgargs[i]);
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
		bool              isnull;
		Datum             value = heap_getattr(row, attnum, desc, &isnull);
		uint64            ch;

		if (isnull)
			ch = UINT64CONST(0x9e3779b97f4a7c15); /* NULL: one fixed value */
		else
		{
			TypeCacheEntry *tc =
				lookup_type_cache(att->atttypid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);

			if (!OidIsValid(tc->hash_extended_proc))
				ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
								errmsg("could not identify an extended hash function for type %s",
									   format_type_be(att->atttypid))));
			ch = DatumGetUInt64(FunctionCall2Coll(&tc->hash_extended_proc_finfo, att->attcollation,
												  value, UInt64GetDatum(0)));
		}
		h = hash_combine64(h, ch);
	}
	return (int64) h;
}

/* "(stream, shard)=(orders, 3)" for messages, clipped. */
const char *
ResourceDescription(TriggerData *td, HeapTuple row)
{
	Relation       rel = td->tg_relation;
	TupleDesc      desc = RelationGetDescr(rel);
	StringInfoData cols;
	StringInfoData vals;

	initStringInfo(&cols);
	initStringInfo(&vals);
	for (int i = kFirstResourceArg; i < td->tg_trigger->tgnargs; i++)
	{
		const char *column = td->tg_trigger->tgargs[i];
		char       *value = SPI_getvalue(row, desc, ResourceAttnum(rel, column));

		if (i > kFirstResourceArg)
		{
			appendStringInfoString(&cols, ", ");
			appendStringInfoString(&vals, ", ");
		}
		appendStringInfoString(&cols, quote_identifier(column));
		appendStringInfoString(&vals, value != nullptr ? value : "null");
	}
	return ClipForMessage(psprintf("(%s)=(%s)", cols.data, vals.data));
}

char *
TableName(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

} /* namespace */

void
CheckResourceMark(TriggerData *td, HeapTuple row, int64 token, const char *op)
{
	Relation rel = td->tg_relation;
	int64    guard_id = pg_strtoint64(td->tg_trigger->tgargs[kGuardIdArg]);
	int64    stored;

	if (RaiseMark(guard_id, ResourceHash(td, row), token, &stored))
		return;

	const char *resource = ResourceDescription(td, row);
	char       *table = TableName(rel);

	ReportStaleWrite("guard", psprintf("%s %s", table, resource), token, stored);
	ereport(
		ERROR,
		(errcode(ERRCODE_FENCE_STALE_TOKEN),
		 errmsg("fencing token " INT64_FORMAT " is older than the fence " INT64_FORMAT
				" of resource %s in table %s",
				token, stored, resource, table),
		 errdetail(
			 "The %s was rejected: a table guarded with resource columns accepts a write of a resource only with a token not lower than the highest that has written a row of it, and a newer lock holder has.",
			 op),
		 errhint("Acquire the lock again to obtain a new fencing token.")));
}

bool
SameResource(TriggerData *td, HeapTuple a, HeapTuple b)
{
	return ResourceHash(td, a) == ResourceHash(td, b);
}

HeapTuple
GuardInsertRow(TriggerData *td, int fence_attnum)
{
	Relation  rel = td->tg_relation;
	TupleDesc desc = RelationGetDescr(rel);
	HeapTuple row = td->tg_trigtuple;
	bool      isnull;
	int64     own = DatumGetInt64(heap_getattr(row, fence_attnum, desc, &isnull));
	int64     token;
	bool      stamp = false;

	if (!isnull && own > 0)
		token = own;
	else
	{
		TokenSettingState setting;

		if (!TokenPresentedByWrite(&token, &setting))
		{
			StatsCount(StatKind::kMissingTokens);
			ereport(
				ERROR,
				(errcode(ERRCODE_FENCE_NO_TOKEN),
				 errmsg("no fencing token presented for INSERT of resource %s into table %s",
						ResourceDescription(td, row), TableName(rel)),
				 setting == TokenSettingState::kSetInOtherTransaction
					 ? errdetail(
						   "fence.token was set in an earlier transaction; it counts only in the transaction that set it.")
					 : errdetail(
						   "The new row's fence column \"%s\" is %s, which presents no token, and fence.token is not set in this transaction.",
						   td->tg_trigger->tgargs[0], isnull ? "NULL" : "not positive"),
				 errhint(
					 "Put the token into the fence column \"%s\" of the new row, or run SET LOCAL fence.token = <token> in the same transaction.",
					 td->tg_trigger->tgargs[0])));
		}
		stamp = true;
	}

	RequireIssuedToken(token, "a guarded INSERT");
	CheckResourceMark(td, row, token, "INSERT");

	if (!stamp)
		return row;

	int   cols[1] = {fence_attnum};
	Datum values[1] = {Int64GetDatum(token)};
	bool  nulls[1] = {false};

	return heap_modify_tuple_by_cols(row, desc, 1, cols, values, nulls);
}

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
