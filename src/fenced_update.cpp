/*-------------------------------------------------------------------------
 *
 * fenced_update.cpp
 *	  fence.fenced_update: an UPDATE of one row that is applied only when the
 *	  presented fencing token beats the row's stored fence.
 *
 *	  fence.fenced_update(rel regclass, key jsonb, token bigint, changes jsonb,
 *						  fence_column name DEFAULT 'fence',
 *						  allow_equal boolean DEFAULT false) RETURNS boolean
 *
 * runs, as the caller (SECURITY INVOKER: privileges and row-level security
 * apply), the one statement
 *
 *	  UPDATE rel SET <changes>, fence_column = token
 *	   WHERE <key> AND fence_column < token		(<= with allow_equal)
 *
 * with the token also presented to guard triggers for the duration of the
 * UPDATE (PushPresentedToken; see the comment at the UPDATE below),
 * and returns true if it updated the row, false if the row exists but its
 * fence is too high (a stale token: reported through ReportStaleWrite).  It
 * raises P0002 when no row (visible to the caller) matches key and 21000
 * when key matches more than one row; the error undoes the UPDATE.
 *
 * key and changes are JSON objects column -> value.  Every column name is
 * looked up in the catalog (never spliced into SQL as given); the SQL text
 * is built only from quote_identifier()/quote_qualified_identifier() of
 * catalog names and OPERATOR(schema.op) of catalog operators.  Values are
 * converted with the input function of the column's own type (so domains
 * and their constraints, typmods, json/jsonb all work) and passed as typed
 * parameters.
 *
 * Plans.  For one shape of call (relation, key column names/types, change
 * column names/types, fence column, allow_equal) the UPDATE is prepared once
 * per session with SPI_prepare_cursor(CURSOR_OPT_GENERIC_PLAN) +
 * SPI_keepplan and reused; PostgreSQL's plan cache revalidates it after DDL.
 * Because a revalidation re-resolves the names in the SQL text, each use
 * compares the schema and relation name the plan was built with against the
 * catalog, and builds a new plan when the relation (or its schema) has been
 * renamed; renamed or retyped columns give a different shape.  A second
 * prepared statement, SELECT fence_column FROM rel WHERE <key> LIMIT 2, runs
 * only when the UPDATE did not apply (missing vs stale), or after a
 * one-row UPDATE when the key columns are not provably unique.
 *
 * Uniqueness.  The key is provably unique when it covers every key column
 * of a valid, immediate, non-partial unique index without expressions whose
 * operator families and collations match the equality used here, and the
 * relation is not an inheritance parent (a partitioned table's unique
 * indexes are global).  The answer is cached with the plan and forgotten on
 * every relcache invalidation of the relation.
 *
 * Locks taken: those of the UPDATE (RowExclusiveLock on rel, the row lock
 * on the updated row; a concurrent writer of the same row waits for it and
 * then re-checks the fence against the committed row) and of the SELECT.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals, so PostgreSQL errors may longjmp through them; the
 * SQL entry point runs it through fence::Entry (see boundary.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/fenced_update.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/args.hpp"
#include "ext/boundary.hpp"
#include "ext/messages.hpp"
#include "ext/presented_token.hpp"
#include "ext/stats.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace fence {

namespace {

/* Argument positions of fence.fenced_update. */
constexpr int kArgRel = 0;
constexpr int kArgKey = 1;
constexpr int kArgToken = 2;
constexpr int kArgChanges = 3;
constexpr int kArgFenceColumn = 4;
constexpr int kArgAllowEqual = 5;

/* How one value (a parameter of the prepared statements) is converted. */
struct ParamInfo
{
	Oid			typid;			/* the column's type (maybe a domain) */
	int32		typmod;			/* applied by the input function */
	Oid			typioparam;
	bool		json_text;		/* base type json/jsonb: pass the JSON value */
	FmgrInfo	input;			/* the type's input function */
};

/* One prepared shape of call. */
struct PlanEntry
{
	PlanEntry  *next;			/* next entry with the same shape hash */
	MemoryContext cxt;			/* owns this entry and everything below */
	char	   *shape;			/* the shape key bytes (see BuildShape) */
	int			shape_len;
	Oid			relid;
	char	   *nspname;		/* names the SQL text was built with */
	char	   *relname;
	char	   *qualname;		/* quoted schema.relation, for messages */
	char	   *fence_column;
	bool		allow_equal;
	int			nchanges;		/* parameters: $1..$nchanges changes, */
	int			nkeys;			/* $nchanges+1 the token, then the keys */
	int			nparams;
	ParamInfo  *params;
	Oid		   *argtypes;
	AttrNumber *key_attnums;
	Oid		   *key_collations;
	Oid		   *key_eqops;
	char	   *select_sql;		/* prepared when first needed */
	SPIPlanPtr	update_plan;
	SPIPlanPtr	select_plan;
	bool		unique_known;	/* key_unique is current */
	bool		key_unique;		/* key matches at most one row */
};

/* Plan cache: shape hash -> chain of entries. */
struct PlanBucket
{
	uint64		hash;
	PlanEntry  *chain;
};

HTAB	   *plan_buckets = nullptr;
MemoryContext plan_cxt = nullptr;

/* Forget what we know about the uniqueness of keys of relation relid. */
void
InvalidateUniqueness(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PlanBucket *bucket;

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

	HASHCTL		ctl;

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

/* One column named in key or changes, as found in the catalog. */
struct ColumnRef
{
	char	   *name;			/* the JSON key = attname */
	AttrNumber	attnum;
	Oid			typid;
	int32		typmod;
	Oid			collation;
	JsonbValue	value;			/* the JSON value (jbvBinary for containers) */
};

/* The relation as found in the catalog for this call. */
struct RelInfo
{
	Oid			relid;
	NameData	relname;
	NameData	nspname;
	char		relkind;
	bool		hassubclass;
};

void
LookUpRelation(Oid relid, RelInfo *rel)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);
	Oid			nspid = form->relnamespace;

	rel->relid = relid;
	rel->relname = form->relname;
	rel->relkind = form->relkind;
	rel->hassubclass = form->relhassubclass;
	ReleaseSysCache(tup);

	if (rel->relkind != RELKIND_RELATION && rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", NameStr(rel->relname)),
				 errdetail("fence.fenced_update updates tables and partitioned tables only.")));

	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nspid);
	rel->nspname = ((Form_pg_namespace) GETSTRUCT(tup))->nspname;
	ReleaseSysCache(tup);
}

/* Find a user column of rel by name; raises 42703 if there is none. */
void
LookUpColumn(const RelInfo *rel, const char *name, int name_len, ColumnRef *col)
{
	HeapTuple	tup = nullptr;

	/* longer names cannot be column names (no truncation to a prefix) */
	if (name_len < NAMEDATALEN && (int) strlen(name) == name_len)
		tup = SearchSysCacheAttName(rel->relid, name);
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						ClipForMessage(name, name_len), NameStr(rel->relname))));

	Form_pg_attribute att = (Form_pg_attribute) GETSTRUCT(tup);

	col->name = (char *) name;
	col->attnum = att->attnum;
	col->typid = att->atttypid;
	col->typmod = att->atttypmod;
	col->collation = att->attcollation;
	ReleaseSysCache(tup);

	if (col->attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, NameStr(rel->relname)),
				 errdetail("System columns cannot be used in fence.fenced_update.")));
}

/*
 * The columns of a JSON object argument (which must be an object), in
 * jsonb's key order, with their values.  Returns the number of columns.
 */
int
ReadColumns(const RelInfo *rel, Jsonb *obj, const char *argname, ColumnRef **cols_out)
{
	if (!JB_ROOT_IS_OBJECT(obj) || JB_ROOT_IS_SCALAR(obj))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a JSON object", argname),
				 errdetail("It maps column names to values, as in {\"id\": 42}.")));

	int			n = JB_ROOT_COUNT(obj);
	ColumnRef  *cols = (ColumnRef *) palloc0(sizeof(ColumnRef) * (n > 0 ? n : 1));
	JsonbIterator *it = JsonbIteratorInit(&obj->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			i = 0;
	char	   *name = nullptr;
	int			name_len = 0;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			name = pnstrdup(v.val.string.val, v.val.string.len);
			name_len = v.val.string.len;
		}
		else if (tok == WJB_VALUE)
		{
			Assert(i < n);
			LookUpColumn(rel, name, name_len, &cols[i]);
			cols[i].value = v;
			i++;
		}
	}
	*cols_out = cols;
	return i;
}

/*
 * The shape key of a call: everything the SQL text and the parameter types
 * depend on.
 */
void
BuildShape(StringInfo buf, Oid relid, bool allow_equal, const ColumnRef *fence,
		   const ColumnRef *keys, int nkeys, const ColumnRef *changes, int nchanges)
{
	char		flag = allow_equal ? 'E' : 'L';

	appendBinaryStringInfo(buf, (const char *) &relid, sizeof(relid));
	appendBinaryStringInfo(buf, &flag, 1);
	appendBinaryStringInfo(buf, (const char *) &fence->attnum, sizeof(AttrNumber));
	appendBinaryStringInfo(buf, fence->name, strlen(fence->name) + 1);
	for (int pass = 0; pass < 2; pass++)
	{
		const ColumnRef *cols = pass == 0 ? keys : changes;
		int			n = pass == 0 ? nkeys : nchanges;
		char		tag = pass == 0 ? 'K' : 'C';

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

/* Conversion of values for a column; typmod -1 for key values. */
void
InitParam(ParamInfo *p, Oid typid, int32 typmod, MemoryContext cxt)
{
	Oid			input;
	Oid			base = getBaseType(typid);

	p->typid = typid;
	p->typmod = typmod;
	p->json_text = (base == JSONOID || base == JSONBOID);
	getTypeInputInfo(typid, &input, &p->typioparam);
	fmgr_info_cxt(input, &p->input, cxt);
}

/* Append "OPERATOR(schema.op)" for operator opno. */
void
AppendOperator(StringInfo buf, Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);

	Form_pg_operator op = (Form_pg_operator) GETSTRUCT(tup);
	char	   *nspname = get_namespace_name(op->oprnamespace);

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
		appendStringInfo(buf, " $%d", e->nchanges + 2 + i);
	}
}

/*
 * Build (and prepare) the plan entry for a shape.  Everything is built in a
 * new memory context that is a child of the current (call) context, so that
 * an error frees it; it becomes permanent only at the end.
 */
PlanEntry *
BuildPlanEntry(const RelInfo *rel, bool allow_equal, const ColumnRef *fence,
			   const ColumnRef *keys, int nkeys, const ColumnRef *changes, int nchanges,
			   StringInfo shape)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "pg_fence fenced_update plan",
											  ALLOCSET_SMALL_SIZES);
	PlanEntry  *e = (PlanEntry *) MemoryContextAllocZero(cxt, sizeof(PlanEntry));
	int			nparams = nchanges + 1 + nkeys;

	e->cxt = cxt;
	e->shape = (char *) MemoryContextAlloc(cxt, shape->len);
	memcpy(e->shape, shape->data, shape->len);
	e->shape_len = shape->len;
	e->relid = rel->relid;
	e->nspname = MemoryContextStrdup(cxt, NameStr(rel->nspname));
	e->relname = MemoryContextStrdup(cxt, NameStr(rel->relname));
	e->qualname = MemoryContextStrdup(cxt, quote_qualified_identifier(e->nspname, e->relname));
	e->fence_column = MemoryContextStrdup(cxt, fence->name);
	e->allow_equal = allow_equal;
	e->nchanges = nchanges;
	e->nkeys = nkeys;
	e->nparams = nparams;
	e->params = (ParamInfo *) MemoryContextAllocZero(cxt, sizeof(ParamInfo) * nparams);
	e->argtypes = (Oid *) MemoryContextAllocZero(cxt, sizeof(Oid) * nparams);
	e->key_attnums = (AttrNumber *) MemoryContextAllocZero(cxt, sizeof(AttrNumber) * nkeys);
	e->key_collations = (Oid *) MemoryContextAllocZero(cxt, sizeof(Oid) * nkeys);
	e->key_eqops = (Oid *) MemoryContextAllocZero(cxt, sizeof(Oid) * nkeys);

	for (int i = 0; i < nchanges; i++)
		InitParam(&e->params[i], changes[i].typid, changes[i].typmod, cxt);
	InitParam(&e->params[nchanges], INT8OID, -1, cxt);
	for (int i = 0; i < nkeys; i++)
	{
		TypeCacheEntry *tc = lookup_type_cache(keys[i].typid, TYPECACHE_EQ_OPR);

		if (!OidIsValid(tc->eq_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("could not identify an equality operator for type %s",
							format_type_be(keys[i].typid)),
					 errdetail("Key column \"%s\" of relation \"%s\" cannot be compared for equality.",
							   keys[i].name, e->relname)));
		/* key values are compared as given: no typmod coercion */
		InitParam(&e->params[nchanges + 1 + i], keys[i].typid, -1, cxt);
		e->key_attnums[i] = keys[i].attnum;
		e->key_collations[i] = keys[i].collation;
		e->key_eqops[i] = tc->eq_opr;
	}
	for (int i = 0; i < nparams; i++)
		e->argtypes[i] = e->params[i].typid;

	StringInfoData sql;
	const char *qfence = quote_identifier(fence->name);

	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s SET ", e->qualname);
	for (int i = 0; i < nchanges; i++)
		appendStringInfo(&sql, "%s = $%d, ", quote_identifier(changes[i].name), i + 1);
	appendStringInfo(&sql, "%s = $%d WHERE ", qfence, nchanges + 1);
	AppendKeyCondition(&sql, e, keys);
	appendStringInfo(&sql, " AND %s OPERATOR(pg_catalog.%s) $%d",
					 qfence, allow_equal ? "<=" : "<", nchanges + 1);

	StringInfoData select_sql;

	initStringInfo(&select_sql);
	appendStringInfo(&select_sql, "SELECT %s FROM %s WHERE ", qfence, e->qualname);
	AppendKeyCondition(&select_sql, e, keys);
	appendStringInfoString(&select_sql, " LIMIT 2");
	e->select_sql = MemoryContextStrdup(cxt, select_sql.data);

	ereport(DEBUG1,
			(errmsg_internal("preparing fenced_update plan for %s", e->qualname),
			 errdetail_internal("%s", sql.data)));

	SPIPlanPtr	plan = SPI_prepare_cursor(sql.data, nparams, e->argtypes,
										  CURSOR_OPT_GENERIC_PLAN);

	if (plan == nullptr)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	e->update_plan = plan;

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
 * The cached plan entry for this call's shape, built (or rebuilt, when the
 * relation or its schema was renamed) if needed.  SPI must be connected.
 */
PlanEntry *
GetPlanEntry(const RelInfo *rel, bool allow_equal, const ColumnRef *fence,
			 const ColumnRef *keys, int nkeys, const ColumnRef *changes, int nchanges)
{
	StringInfoData shape;
	bool		found;

	EnsurePlanCache();
	initStringInfo(&shape);
	BuildShape(&shape, rel->relid, allow_equal, fence, keys, nkeys, changes, nchanges);

	uint64		hash = hash_bytes_extended((const unsigned char *) shape.data, shape.len, 0);
	PlanBucket *bucket = (PlanBucket *) hash_search(plan_buckets, &hash, HASH_ENTER, &found);

	if (!found)
		bucket->chain = nullptr;

	PlanEntry **link;

	for (link = &bucket->chain; *link != nullptr; link = &(*link)->next)
	{
		PlanEntry  *e = *link;

		if (e->shape_len == shape.len && memcmp(e->shape, shape.data, shape.len) == 0)
		{
			if (strcmp(e->relname, NameStr(rel->relname)) == 0 &&
				strcmp(e->nspname, NameStr(rel->nspname)) == 0)
				return e;		/* the fast path */
			break;				/* renamed: rebuild it */
		}
	}

	PlanEntry  *fresh = BuildPlanEntry(rel, allow_equal, fence, keys, nkeys,
									   changes, nchanges, &shape);

	if (*link != nullptr)
	{
		PlanEntry  *old = *link;

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

/* Names the column whose value is being converted, in error reports. */
void
ConversionContext(void *arg)
{
	errcontext("converting the value for column \"%s\"", (const char *) arg);
}

/* Convert the JSON value of col into a parameter of type p. */
void
ConvertValue(ParamInfo *p, const ColumnRef *col, Datum *value, char *null)
{
	const JsonbValue *v = &col->value;
	char	   *str = nullptr;

	switch (v->type)
	{
		case jbvNull:
			break;
		case jbvString:
			str = pnstrdup(v->val.string.val, v->val.string.len);
			if (p->json_text)
			{
				StringInfoData quoted;

				initStringInfo(&quoted);
				escape_json(&quoted, str);
				str = quoted.data;
			}
			break;
		case jbvNumeric:
			str = DatumGetCString(DirectFunctionCall1(numeric_out,
													  NumericGetDatum(v->val.numeric)));
			break;
		case jbvBool:
			str = pstrdup(v->val.boolean ? "true" : "false");
			break;
		case jbvBinary:
			str = JsonbToCString(nullptr, v->val.binary.data, v->val.binary.len);
			break;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}

	ErrorContextCallback errcb;

	errcb.callback = ConversionContext;
	errcb.arg = col->name;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	/* domain_in runs for NULL too: it checks the domain's NOT NULL and CHECKs */
	*value = InputFunctionCall(&p->input, str, p->typioparam, p->typmod);
	*null = (str == nullptr) ? 'n' : ' ';

	error_context_stack = errcb.previous;
}

/*
 * Is the key of e provably unique?  The caller holds a lock on the
 * relation (taken by the UPDATE), so the indexes cannot change under us.
 */
bool
KeyIsUnique(const PlanEntry *e)
{
	RelInfo		rel;

	LookUpRelation(e->relid, &rel);
	if (rel.relkind == RELKIND_RELATION && rel.hassubclass)
		return false;			/* a plain UPDATE also updates the children */

	Relation	r = relation_open(e->relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(r);
	bool		unique = false;
	ListCell   *lc;

	relation_close(r, AccessShareLock);

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));

		if (!HeapTupleIsValid(tup))
			continue;

		Form_pg_index index = (Form_pg_index) GETSTRUCT(tup);
		bool		usable = index->indisunique && index->indimmediate && index->indisvalid &&
			heap_attisnull(tup, Anum_pg_index_indpred, nullptr) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, nullptr);

		if (usable)
		{
			bool		isnull;
			oidvector  *indclass = (oidvector *) DatumGetPointer(
				SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indclass, &isnull));
			oidvector  *indcoll = (oidvector *) DatumGetPointer(
				SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indcollation, &isnull));

			for (int i = 0; usable && i < index->indnkeyatts; i++)
			{
				int			k;

				for (k = 0; k < e->nkeys; k++)
					if (e->key_attnums[k] == index->indkey.values[i])
						break;
				usable = k < e->nkeys &&
					indcoll->values[i] == e->key_collations[k] &&
					get_op_opfamily_strategy(e->key_eqops[k],
											 get_opclass_family(indclass->values[i])) ==
					BTEqualStrategyNumber;
			}
		}
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

/*
 * Run the SELECT on the key: sets *nrows (0, 1 or 2 meaning "more than
 * one") and, for one row, *fence / *fence_null.
 */
void
SelectByKey(PlanEntry *e, Datum *values, char *nulls, int *nrows, int64 *fence,
			bool *fence_null)
{
	if (e->select_plan == nullptr)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(e->select_sql, e->nparams, e->argtypes,
											  CURSOR_OPT_GENERIC_PLAN);

		if (plan == nullptr)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		e->select_plan = plan;
	}

	int			rc = SPI_execute_plan(e->select_plan, values, nulls, false, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	*nrows = (int) SPI_processed;
	*fence = 0;
	*fence_null = true;
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
									  fence_null);

		if (!*fence_null)
			*fence = DatumGetInt64(d);
	}
}

/* The key for messages, clipped (a key can be megabytes long). */
const char *
KeyText(Jsonb *key)
{
	return ClipForMessage(JsonbToCString(nullptr, &key->root, VARSIZE(key)));
}

void
RaiseNotUnique(const PlanEntry *e, Jsonb *key)
{
	ereport(ERROR,
			(errcode(ERRCODE_CARDINALITY_VIOLATION),
			 errmsg("key %s matches more than one row of relation \"%s\"",
					KeyText(key), e->relname),
			 errdetail("fence.fenced_update updates exactly one row; nothing was changed."),
			 errhint("Give the columns of a primary key or unique constraint as the key.")));
}

Datum
FencedUpdate(FunctionCallInfo fcinfo)
{
	RequireArg(fcinfo, kArgRel, "rel");
	RequireArg(fcinfo, kArgKey, "key");
	RequireArg(fcinfo, kArgToken, "token");
	RequireArg(fcinfo, kArgChanges, "changes");
	RequireArg(fcinfo, kArgFenceColumn, "fence_column");
	RequireArg(fcinfo, kArgAllowEqual, "allow_equal");

	Oid			relid = PG_GETARG_OID(kArgRel);
	Jsonb	   *key = PG_GETARG_JSONB_P(kArgKey);
	int64		token = PG_GETARG_INT64(kArgToken);
	Jsonb	   *changes_json = PG_GETARG_JSONB_P(kArgChanges);
	Name		fence_name = PG_GETARG_NAME(kArgFenceColumn);
	bool		allow_equal = PG_GETARG_BOOL(kArgAllowEqual);
	RelInfo		rel;
	ColumnRef	fence;
	ColumnRef  *keys;
	ColumnRef  *changes;

	LookUpRelation(relid, &rel);

	LookUpColumn(&rel, NameStr(*fence_name), (int) strlen(NameStr(*fence_name)), &fence);
	if (fence.typid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("fence column \"%s\" of relation \"%s\" is of type %s, not bigint",
						fence.name, NameStr(rel.relname), format_type_be(fence.typid)),
				 errhint("Fencing tokens are bigint values; store them in a bigint column.")));

	int			nkeys = ReadColumns(&rel, key, "key", &keys);

	if (nkeys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"key\" must not be an empty object"),
				 errdetail("The key names the columns that identify the row to update.")));
	for (int i = 0; i < nkeys; i++)
		if (keys[i].value.type == jbvNull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key value for column \"%s\" must not be null", keys[i].name),
					 errdetail("A null key value would match no row.")));

	int			nchanges = ReadColumns(&rel, changes_json, "changes", &changes);

	for (int i = 0; i < nchanges; i++)
		if (changes[i].attnum == fence.attnum)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"changes\" must not set the fence column \"%s\"",
							fence.name),
					 errdetail("The fence column is set to the token by fence.fenced_update.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	PlanEntry  *e = GetPlanEntry(&rel, allow_equal, &fence, keys, nkeys, changes, nchanges);
	Datum	   *values = (Datum *) palloc(sizeof(Datum) * e->nparams);
	char	   *nulls = (char *) palloc(sizeof(char) * e->nparams);

	for (int i = 0; i < nchanges; i++)
		ConvertValue(&e->params[i], &changes[i], &values[i], &nulls[i]);
	values[nchanges] = Int64GetDatum(token);
	nulls[nchanges] = ' ';
	for (int i = 0; i < nkeys; i++)
		ConvertValue(&e->params[nchanges + 1 + i], &keys[i], &values[nchanges + 1 + i],
					 &nulls[nchanges + 1 + i]);

	/*
	 * Present the token to guard triggers (fence.guard) for the duration of
	 * the UPDATE, as if fence.token were set, wherever the new row cannot
	 * carry it: with allow_equal, a row already fenced at token keeps its
	 * fence value; an UPDATE that moves a row to another partition runs as a
	 * DELETE of the old row (which fires the BEFORE DELETE trigger) and an
	 * INSERT.  Writes made by triggers fired by the UPDATE see it too: they
	 * write on behalf of the same holder.  The caller's fence.token is not
	 * touched.
	 */
	volatile PushedToken previous = PushPresentedToken(token);
	volatile int rc = 0;

	PG_TRY();
	{
		rc = SPI_execute_plan(e->update_plan, values, nulls, false, 0);
	}
	PG_CATCH();
	{
		PopPresentedToken(previous);
		PG_RE_THROW();
	}
	PG_END_TRY();
	PopPresentedToken(previous);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));

	uint64		updated = SPI_processed;
	bool		applied = false;
	int			nrows;
	int64		current;
	bool		current_null;

	if (updated > 1)
		RaiseNotUnique(e, key);
	else if (updated == 1)
	{
		if (!e->unique_known)
		{
			e->key_unique = KeyIsUnique(e);
			e->unique_known = true;
		}
		if (!e->key_unique)
		{
			SelectByKey(e, values, nulls, &nrows, &current, &current_null);
			if (nrows > 1)
				RaiseNotUnique(e, key);
		}
		applied = true;
	}
	else
	{
		SelectByKey(e, values, nulls, &nrows, &current, &current_null);
		if (nrows == 0)
			ereport(ERROR,
					(errcode(ERRCODE_NO_DATA_FOUND),
					 errmsg("no row of relation \"%s\" matches key %s",
							e->relname, KeyText(key))));
		if (nrows > 1)
			RaiseNotUnique(e, key);
		if (current_null)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("fence column \"%s\" is null in the row of relation \"%s\" with key %s",
							e->fence_column, e->relname, KeyText(key)),
					 errhint("Declare the fence column NOT NULL DEFAULT 0.")));
		if (current < token || (allow_equal && current == token))
			ereport(ERROR,
					(errcode(ERRCODE_NO_DATA_FOUND),
					 errmsg("no row of relation \"%s\" matches key %s",
							e->relname, KeyText(key)),
					 errdetail("A row with this key is visible but could not be updated: row-level security hides it from UPDATE, or it was changed concurrently.")));

		char	   *resource = psprintf("%s %s", e->qualname, KeyText(key));

		ReportStaleWrite("fenced_update", resource, token, current);
	}

	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
	return BoolGetDatum(applied);
}

}							/* namespace */

}							/* namespace fence */

/*
 * fence.fenced_update(rel regclass, key jsonb, token bigint, changes jsonb,
 *					   fence_column name DEFAULT 'fence',
 *					   allow_equal boolean DEFAULT false) RETURNS boolean
 *
 * Errors: 22023 (NULL or malformed argument, changes naming the fence
 * column, null key value), 42P01 (no such relation), 42809 (not a table),
 * 42703 (unknown column or fence column), 42804 (fence column not bigint),
 * 42883 (key type without equality), 22P02 etc. (value conversion), 42501
 * (privileges), P0002 (no row matches key), 21000 (key matches several
 * rows), 22004 (the row's fence is NULL).
 */
FENCE_SQL_FUNCTION(fence_fenced_update)
{
	return fence::Entry(fcinfo, [](FunctionCallInfo fc) -> Datum {
		return fence::FencedUpdate(fc);
	});
}
