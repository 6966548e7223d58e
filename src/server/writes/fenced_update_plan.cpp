/*-------------------------------------------------------------------------
 *
 * fenced_update_plan.cpp
 *	  fence.fenced_update: the per-session cache of prepared statements
 *	  (shape of a call, SQL text, prepare) and the uniqueness proof of keys.
 *
 * Plans.  For one shape of call (relation, key column names/types, change
 * column names/types, fence column, allow_equal, whether expect_fence is
 * given) the UPDATE is prepared once
 * per session with SPI_prepare_cursor(CURSOR_OPT_GENERIC_PLAN) +
 * SPI_keepplan and reused; PostgreSQL's plan cache revalidates it after DDL.
 * Because a revalidation re-resolves the names in the SQL text, each use
 * compares the schema and relation name the plan was built with against the
 * catalog, and builds a new plan when the relation (or its schema) has been
 * renamed; renamed or retyped columns give a different shape.  A second
 * prepared statement, SELECT fence_column FROM rel WHERE <key> LIMIT 2, is
 * prepared when first needed (see src/server/writes/fenced_update.cpp for when).
 *
 * SQL text.  It is built only from quote_identifier() /
 * quote_qualified_identifier() of catalog names and OPERATOR(schema.op) of
 * catalog operators; values are parameters (fenced_update.hpp: ChangeParam,
 * TokenParam, KeyParam).
 *
 * Uniqueness.  The key is provably unique when it covers every key column
 * of a valid, immediate, non-partial unique index without expressions whose
 * operator families and collations match the equality used here, and the
 * relation is not an inheritance parent (a partitioned table's unique
 * indexes are global).  The answer is cached with the plan and forgotten on
 * every relcache invalidation of the relation.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals (see boundary.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/fenced_update_plan.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/fenced_update.hpp"

#include "tokens/fence_rule.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace fence {

namespace {

/* Plan cache: shape hash -> chain of entries. */
struct PlanBucket
{
	uint64     hash;
	PlanEntry *chain;
};

HTAB         *plan_buckets = nullptr;
MemoryContext plan_cxt = nullptr;

/* Forget what we know about the uniqueness of keys of relation relid. */
void
InvalidateUniqueness(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PlanBucket     *bucket;

	if (plan_buckets == nullptr)
		return;
	hash_seq_init(&status, plan_buckets);
	while ((bucket = (PlanBucket *) hash_seq_search(&status)) != nullptr)
	{
		for (PlanEntry *e = bucket->chain; e != nullptr; e = e->next)
			if (relid == InvalidOid || e->relid == relid)
				e->unique_known = false;
	}
}

void
EnsurePlanCache()
{
	if (plan_buckets != nullptr)
		return;

	HASHCTL ctl;

	plan_cxt = AllocSetContextCreate(TopMemoryContext, "pg_fence fenced_update plans",
									 ALLOCSET_SMALL_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(PlanBucket);
	ctl.hcxt = plan_cxt;
	plan_buckets = hash_create("pg_fence fenced_update plan cache", 16, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(InvalidateUniqueness, (Datum) 0);
}

/*
 * The shape key of a call: everything the SQL text and the parameter types
 * depend on.
 */
void
BuildShape(StringInfo buf, const UpdateRequest *req)
{
	char flag = req->allow_equal ? 'E' : 'L';
	char expect = req->has_expect ? 'X' : '-';

	appendBinaryStringInfo(buf, (const char *) &req->rel.relid, sizeof(Oid));
	appendBinaryStringInfo(buf, &flag, 1);
	appendBinaryStringInfo(buf, &expect, 1);
	appendBinaryStringInfo(buf, (const char *) &req->fence.attnum, sizeof(AttrNumber));
	appendBinaryStringInfo(buf, req->fence.name, strlen(req->fence.name) + 1);
	for (int pass = 0; pass < 2; pass++)
	{
		const ColumnRef *cols = pass == 0 ? req->keys : req->changes;
		int              n = pass == 0 ? req->nkeys : req->nchanges;
		char             tag = pass == 0 ? 'K' : 'C';

		for (int i = 0; i < n; i++)
		{
			appendBinaryStringInfo(buf, &tag, 1);
			appendBinaryStringInfo(buf, (const char *) &cols[i].attnum, sizeof(AttrNumber));
			appendBinaryStringInfo(buf, (const char *) &cols[i].typid, sizeof(Oid));
			appendBinaryStringInfo(buf, (const char *) &cols[i].typmod, sizeof(int32));
			appendBinaryStringInfo(buf, (const char *) &cols[i].collation, sizeof(Oid));
			appendBinaryStringInfo(buf, cols[i].name, strlen(cols[i].name) + 1);
		}
	}
}

/*
 * The parameters of entry e: how each value is converted, its type, and
 * for each key column the equality operator the key condition uses.
 */
void
InitPlanParams(PlanEntry *e, const UpdateRequest *req)
{
	MemoryContext cxt = e->cxt;

	for (int i = 0; i < req->nchanges; i++)
		InitParam(&e->params[ChangeParam(i)], req->changes[i].typid, req->changes[i].typmod, cxt);
	InitParam(&e->params[TokenParam(e->nchanges)], INT8OID, -1, cxt);
	for (int i = 0; i < req->nkeys; i++)
	{
		const ColumnRef *key = &req->keys[i];
		TypeCacheEntry  *tc = lookup_type_cache(key->typid, TYPECACHE_EQ_OPR);

		if (!OidIsValid(tc->eq_opr))
			ereport(
				ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an equality operator for type %s",
						format_type_be(key->typid)),
				 errdetail("Key column \"%s\" of relation \"%s\" cannot be compared for equality.",
						   key->name, e->relname)));
		/* key values are compared as given: no typmod coercion */
		InitParam(&e->params[KeyParam(e->nchanges, i)], key->typid, -1, cxt);
		e->key_attnums[i] = key->attnum;
		e->key_collations[i] = key->collation;
		e->key_eqops[i] = tc->eq_opr;
	}
	if (e->has_expect)
		InitParam(&e->params[ExpectParam(e->nchanges, e->nkeys)], INT8OID, -1, cxt);
	for (int i = 0; i < e->nparams; i++)
		e->argtypes[i] = e->params[i].typid;
}

/* Append "OPERATOR(schema.op)" for operator opno. */
void
AppendOperator(StringInfo buf, Oid opno)
{
	HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);

	Form_pg_operator op = (Form_pg_operator) GETSTRUCT(tup);
	char            *nspname = get_namespace_name(op->oprnamespace);

	if (nspname == nullptr)
		elog(ERROR, "cache lookup failed for namespace %u", op->oprnamespace);
	appendStringInfo(buf, "OPERATOR(%s.%s)", quote_identifier(nspname), NameStr(op->oprname));
	ReleaseSysCache(tup);
}

/* Append the key condition "k1 OPERATOR(s.=) $i AND ..." of entry e. */
void
AppendKeyCondition(StringInfo buf, const PlanEntry *e, const ColumnRef *keys)
{
	for (int i = 0; i < e->nkeys; i++)
	{
		if (i > 0)
			appendStringInfoString(buf, " AND ");
		appendStringInfo(buf, "%s ", quote_identifier(keys[i].name));
		AppendOperator(buf, e->key_eqops[i]);
		appendStringInfo(buf, " $%d", KeyParam(e->nchanges, i) + 1);
	}
}

/*
 * UPDATE rel SET <changes>, fence = $token
 *	WHERE <key> AND fence < $token	(<= with allow_equal)
 *	  [AND fence = $expect_fence]	(with expect_fence)
 *
 * The fence condition is the fence rule (fence_rule.hpp): the executor
 * applies it, and the expected fence, to the row it locks, re-checked
 * against the committed row after waiting for a concurrent writer.
 */
char *
UpdateSql(const PlanEntry *e, const UpdateRequest *req)
{
	StringInfoData sql;
	const char    *qfence = quote_identifier(req->fence.name);
	int            token_param = TokenParam(e->nchanges) + 1;

	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s SET ", e->qualname);
	for (int i = 0; i < req->nchanges; i++)
		appendStringInfo(&sql, "%s = $%d, ", quote_identifier(req->changes[i].name),
						 ChangeParam(i) + 1);
	appendStringInfo(&sql, "%s = $%d WHERE ", qfence, token_param);
	AppendKeyCondition(&sql, e, req->keys);
	appendStringInfo(&sql, " AND %s",
					 FenceConditionSql(qfence, psprintf("$%d", token_param), req->allow_equal));
	if (e->has_expect)
		appendStringInfo(&sql, " AND %s OPERATOR(pg_catalog.=) $%d", qfence,
						 ExpectParam(e->nchanges, e->nkeys) + 1);
	return sql.data;
}

/* SELECT fence FROM rel WHERE <key> LIMIT 2 */
char *
SelectSql(const PlanEntry *e, const UpdateRequest *req)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s FROM %s WHERE ", quote_identifier(req->fence.name),
					 e->qualname);
	AppendKeyCondition(&sql, e, req->keys);
	appendStringInfoString(&sql, " LIMIT 2");
	return sql.data;
}

/* Prepare sql with the parameters of e and keep the plan for the session. */
SPIPlanPtr
PrepareKept(const PlanEntry *e, const char *sql)
{
	SPIPlanPtr plan = SPI_prepare_cursor(sql, e->nparams, e->argtypes, CURSOR_OPT_GENERIC_PLAN);

	if (plan == nullptr)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/*
 * Build (and prepare) the plan entry for a shape.  Everything is built in a
 * new memory context that is a child of the current (call) context, so that
 * an error frees it; it becomes permanent only at the end.
 */
PlanEntry *
BuildPlanEntry(const UpdateRequest *req, StringInfo shape)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_fence fenced_update plan",
											  ALLOCSET_SMALL_SIZES);
	PlanEntry    *e = (PlanEntry *) MemoryContextAllocZero(cxt, sizeof(PlanEntry));
	int           nkeys = req->nkeys;
	int           nparams = req->nchanges + 1 + nkeys + (req->has_expect ? 1 : 0);

	e->cxt = cxt;
	e->shape = (char *) MemoryContextAlloc(cxt, shape->len);
	memcpy(e->shape, shape->data, shape->len);
	e->shape_len = shape->len;
	e->relid = req->rel.relid;
	e->nspname = MemoryContextStrdup(cxt, NameStr(req->rel.nspname));
	e->relname = MemoryContextStrdup(cxt, NameStr(req->rel.relname));
	e->qualname = MemoryContextStrdup(cxt, quote_qualified_identifier(e->nspname, e->relname));
	e->fence_column = MemoryContextStrdup(cxt, req->fence.name);
	e->allow_equal = req->allow_equal;
	e->has_expect = req->has_expect;
	e->nchanges = req->nchanges;
	e->nkeys = nkeys;
	e->nparams = nparams;
	e->params = (ParamInfo *) MemoryContextAllocZero(cxt, sizeof(ParamInfo) * nparams);
	e->argtypes = (Oid *) MemoryContextAllocZero(cxt, sizeof(Oid) * nparams);
	e->key_attnums = (AttrNumber *) MemoryContextAllocZero(cxt, sizeof(AttrNumber) * nkeys);
	e->key_collations = (Oid *) MemoryContextAllocZero(cxt, sizeof(Oid) * nkeys);
	e->key_eqops = (Oid *) MemoryContextAllocZero(cxt, sizeof(Oid) * nkeys);

	InitPlanParams(e, req);

	char *update_sql = UpdateSql(e, req);

	e->select_sql = MemoryContextStrdup(cxt, SelectSql(e, req));

	ereport(DEBUG1, (errmsg_internal("preparing fenced_update plan for %s", e->qualname),
					 errdetail_internal("%s", update_sql)));
	e->update_plan = PrepareKept(e, update_sql);

	/* from here on, nothing can fail: make it permanent */
	MemoryContextSetParent(cxt, plan_cxt);
	return e;
}

void
FreePlanEntry(PlanEntry *e)
{
	if (e->update_plan != nullptr)
		SPI_freeplan(e->update_plan);
	if (e->select_plan != nullptr)
		SPI_freeplan(e->select_plan);
	MemoryContextDelete(e->cxt);
}

/*
 * Does this unique index (its pg_index tuple) prove that the key of e
 * matches at most one row?
 */
bool
IndexProvesUnique(const PlanEntry *e, HeapTuple tup)
{
	Form_pg_index index = (Form_pg_index) GETSTRUCT(tup);
	bool          usable = index->indisunique && index->indimmediate && index->indisvalid &&
				  heap_attisnull(tup, Anum_pg_index_indpred, nullptr) &&
				  heap_attisnull(tup, Anum_pg_index_indexprs, nullptr);

	if (!usable)
		return false;

	bool       isnull;
	oidvector *indclass = (oidvector *) DatumGetPointer(
		SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indclass, &isnull));
	oidvector *indcoll = (oidvector *) DatumGetPointer(
		SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indcollation, &isnull));

	for (int i = 0; usable && i < index->indnkeyatts; i++)
	{
		int k;

		for (k = 0; k < e->nkeys; k++)
			if (e->key_attnums[k] == index->indkey.values[i])
				break;
		usable =
			k < e->nkeys && indcoll->values[i] == e->key_collations[k] &&
			get_op_opfamily_strategy(e->key_eqops[k], get_opclass_family(indclass->values[i])) ==
				BTEqualStrategyNumber;
	}
	return usable;
}

/* The uniqueness proof itself (uncached). */
bool
ProveKeyUnique(const PlanEntry *e)
{
	RelInfo rel;

	LookUpRelation(e->relid, &rel);
	if (rel.relkind == RELKIND_RELATION && rel.hassubclass)
		return false; /* a plain UPDATE also updates the children */

	Relation  r = relation_open(e->relid, AccessShareLock);
	List     *indexes = RelationGetIndexList(r);
	bool      unique = false;
	ListCell *lc;

	relation_close(r, AccessShareLock);

	foreach (lc, indexes)
	{
		Oid       indexoid = lfirst_oid(lc);
		HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));

		if (!HeapTupleIsValid(tup))
			continue;

		bool usable = IndexProvesUnique(e, tup);

		ReleaseSysCache(tup);
		if (usable)
		{
			unique = true;
			break;
		}
	}
	list_free(indexes);
	return unique;
}

} /* namespace */

PlanEntry *
GetPlanEntry(const UpdateRequest *req)
{
	StringInfoData shape;
	bool           found;

	EnsurePlanCache();
	initStringInfo(&shape);
	BuildShape(&shape, req);

	uint64      hash = hash_bytes_extended((const unsigned char *) shape.data, shape.len, 0);
	PlanBucket *bucket = (PlanBucket *) hash_search(plan_buckets, &hash, HASH_ENTER, &found);

	if (!found)
		bucket->chain = nullptr;

	PlanEntry **link;

	for (link = &bucket->chain; *link != nullptr; link = &(*link)->next)
	{
		PlanEntry *e = *link;

		if (e->shape_len == shape.len && memcmp(e->shape, shape.data, shape.len) == 0)
		{
			if (strcmp(e->relname, NameStr(req->rel.relname)) == 0 &&
				strcmp(e->nspname, NameStr(req->rel.nspname)) == 0)
				return e; /* the fast path */
			break;        /* renamed: rebuild it */
		}
	}

	PlanEntry *fresh = BuildPlanEntry(req, &shape);

	if (*link != nullptr)
	{
		PlanEntry *old = *link;

		fresh->next = old->next;
		*link = fresh;
		FreePlanEntry(old);
	}
	else
	{
		fresh->next = bucket->chain;
		bucket->chain = fresh;
	}
	return fresh;
}

SPIPlanPtr
SelectPlan(PlanEntry *e)
{
	if (e->select_plan == nullptr)
		e->select_plan = PrepareKept(e, e->select_sql);
	return e->select_plan;
}

bool
KeyIsUnique(PlanEntry *e)
{
	if (!e->unique_known)
	{
		e->key_unique = ProveKeyUnique(e);
		e->unique_known = true;
	}
	return e->key_unique;
}

} /* namespace fence */
