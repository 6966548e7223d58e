/*-------------------------------------------------------------------------
 *
 * fenced_update_columns.cpp
 *	  fence.fenced_update: the relation and the columns a call names, as
 *	  found in the catalog, and the conversion of their JSON values into
 *	  typed parameters.
 *
 * key and changes are JSON objects column -> value.  Every column name is
 * looked up in the catalog (never spliced into SQL as given).  Values are
 * converted with the input function of the column's own type (so domains
 * and their constraints, typmods, json/jsonb all work) and passed as typed
 * parameters.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals (see boundary.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/fenced_update_columns.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "writes/fenced_update.hpp"

#include "pg/messages.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/json.h"
#include "utils/syscache.h"
}

namespace fence {

namespace {

/* Find a user column of rel by name; raises 42703 if there is none. */
void
LookUpColumn(const RelInfo *rel, const char *name, int name_len, ColumnRef *col)
{
	HeapTuple tup = nullptr;

	/* longer names cannot be column names (no truncation to a prefix) */
	if (name_len < NAMEDATALEN && (int) strlen(name) == name_len)
		tup = SearchSysCacheAttName(rel->relid, name);
	if (!HeapTupleIsValid(tup))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
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
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
						errmsg("column \"%s\" of relation \"%s\" does not exist", name,
							   NameStr(rel->relname)),
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
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"%s\" must be a JSON object", argname),
						errdetail("It maps column names to values, as in {\"id\": 42}.")));

	int                n = JB_ROOT_COUNT(obj);
	ColumnRef         *cols = (ColumnRef *) palloc0(sizeof(ColumnRef) * (n > 0 ? n : 1));
	JsonbIterator     *it = JsonbIteratorInit(&obj->root);
	JsonbValue         v;
	JsonbIteratorToken tok;
	int                i = 0;
	char              *name = nullptr;
	int                name_len = 0;

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

/* The fence column: a user column of type bigint. */
void
LookUpFenceColumn(const RelInfo *rel, const char *name, ColumnRef *fence)
{
	LookUpColumn(rel, name, (int) strlen(name), fence);
	if (fence->typid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("fence column \"%s\" of relation \"%s\" is of type %s, not bigint",
						fence->name, NameStr(rel->relname), format_type_be(fence->typid)),
				 errhint("Fencing tokens are bigint values; store them in a bigint column.")));
}

/* The key columns: at least one, none of them null. */
void
ReadKeyColumns(UpdateRequest *req, Jsonb *key)
{
	req->nkeys = ReadColumns(&req->rel, key, "key", &req->keys);

	if (req->nkeys == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("argument \"key\" must not be an empty object"),
						errdetail("The key names the columns that identify the row to update.")));
	for (int i = 0; i < req->nkeys; i++)
		if (req->keys[i].value.type == jbvNull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key value for column \"%s\" must not be null", req->keys[i].name),
					 errdetail("A null key value would match no row.")));
}

/* The changed columns: any, except the fence column. */
void
ReadChangeColumns(UpdateRequest *req, Jsonb *changes)
{
	req->nchanges = ReadColumns(&req->rel, changes, "changes", &req->changes);

	for (int i = 0; i < req->nchanges; i++)
		if (req->changes[i].attnum == req->fence.attnum)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"changes\" must not set the fence column \"%s\"",
							req->fence.name),
					 errdetail("The fence column is set to the token by fence.fenced_update.")));
}

/* Names the column whose value is being converted, in error reports. */
void
ConversionContext(void *arg)
{
	errcontext("converting the value for column \"%s\"", (const char *) arg);
}

} /* namespace */

void
LookUpRelation(Oid relid, RelInfo *rel)
{
	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("relation with OID %u does not exist", relid)));

	Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);
	Oid           nspid = form->relnamespace;

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

void
ReadRequest(Oid relid, Jsonb *key, Jsonb *changes, const char *fence_column, bool allow_equal,
			UpdateRequest *req)
{
	LookUpRelation(relid, &req->rel);
	req->allow_equal = allow_equal;
	LookUpFenceColumn(&req->rel, fence_column, &req->fence);
	ReadKeyColumns(req, key);
	ReadChangeColumns(req, changes);
}

void
InitParam(ParamInfo *p, Oid typid, int32 typmod, MemoryContext cxt)
{
	Oid input;
	Oid base = getBaseType(typid);

	p->typid = typid;
	p->typmod = typmod;
	p->json_text = (base == JSONOID || base == JSONBOID);
	getTypeInputInfo(typid, &input, &p->typioparam);
	fmgr_info_cxt(input, &p->input, cxt);
}

void
ConvertValue(ParamInfo *p, const ColumnRef *col, Datum *value, char *null)
{
	const JsonbValue *v = &col->value;
	char             *str = nullptr;

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
			str =
				DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
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

} /* namespace fence */
