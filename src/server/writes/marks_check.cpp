/*-------------------------------------------------------------------------
 *
 * marks_check.cpp
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
 *	    > 0, so NULL, 0 and a DEFAULT 0 present none; a negative value is
 *	    presented, and refused with FN004 below), else the token the
 *	    write presents (fence.token set in this transaction,
 *	    presented_token.hpp), which it then stores in the fence column;
 *	    A token above every token the database has issued is refused first
 *	    (FN004, issued_token.hpp);
 *	 2. hashes the resource columns, each with its type's extended hash
 *	    function under the column's collation (values equal by the type's
 *	    equality hash alike; collisions merge two resources' marks, which
 *	    can only reject more, never accept a stale token);
 *	 3. locks the resource and compares the token with its mark: equal is
 *	    accepted (the same holder appending again: nothing is written,
 *	    and the backend's copy of the mark usually spares reading it),
 *	    higher raises the mark, none yet creates it, lower raises FN001
 *	    (RaiseMark, src/server/writes/insert_marks.cpp).
 * Writers of one resource serialize until they end, so a zombie's INSERT
 * that was not yet committed when a newer holder raised the mark either
 * commits first (and is ordered before it) or waits and is rejected.  A
 * rollback takes the mark's change with it.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals; it runs inside fence::Entry (the guard trigger's).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/marks_check.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/marks_check.hpp"

#include "writes/insert_marks.hpp"
#include "tokens/issued_token.hpp"
#include "pg/messages.hpp"
#include "writes/presented_token.hpp"
#include "observability/stats.hpp"

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

/* Resource columns at most: as many as an index key. */
constexpr int kMaxResourceColumns = INDEX_MAX_KEYS;

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
CheckResourceMark(TriggerData *td, int64 guard_id, HeapTuple row, int64 token, const char *op)
{
	Relation rel = td->tg_relation;
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
GuardInsertRow(TriggerData *td, int64 guard_id, int fence_attnum)
{
	Relation  rel = td->tg_relation;
	TupleDesc desc = RelationGetDescr(rel);
	HeapTuple row = td->tg_trigtuple;
	bool      isnull;
	int64     own = DatumGetInt64(heap_getattr(row, fence_attnum, desc, &isnull));
	int64     token;
	bool      stamp = false;

	/* 0 presents none (DEFAULT 0); a negative value is refused below (FN004) */
	if (!isnull && own != 0)
		token = own;
	else
	{
		TokenSettingState setting;

		if (!TokenPresentedByWrite(&token, &setting))
		{
			StatsCountRejected(StatKind::kMissingTokens);
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
						   td->tg_trigger->tgargs[0], isnull ? "NULL" : "0"),
				 errhint(
					 "Put the token into the fence column \"%s\" of the new row, or run SET LOCAL fence.token = <token> in the same transaction.",
					 td->tg_trigger->tgargs[0])));
		}
		stamp = true;
	}

	RequireIssuedToken(token, "a guarded INSERT");
	CheckResourceMark(td, guard_id, row, token, "INSERT");

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

} /* namespace fence */
