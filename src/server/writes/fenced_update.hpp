/*-------------------------------------------------------------------------
 *
 * fenced_update.hpp
 *	  What the rooms of fence.fenced_update share (internal):
 *
 *	  src/server/writes/fenced_update.cpp			the SQL entry point and the run of one call
 *									(arguments, the UPDATE, its outcome)
 *	  src/server/writes/fenced_update_columns.cpp	the relation and columns a call names
 *									(catalog look-ups, JSON -> columns) and
 *									the conversion of JSON values to parameters
 *	  src/server/writes/fenced_update_plan.cpp	the per-session cache of prepared
 *									statements (shape, SQL text, prepare) and
 *									the uniqueness proof of keys
 *
 * All of it is PostgreSQL-style code: trivially destructible locals, errors
 * raised with ereport (see boundary.hpp).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/writes/fenced_update.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "executor/spi.h"
#include "utils/jsonb.h"
}

namespace fence {

/* The relation as found in the catalog for this call. */
struct RelInfo
{
	Oid      relid;
	NameData relname;
	NameData nspname;
	char     relkind;
	bool     hassubclass;
};

/* One column named in key or changes, as found in the catalog. */
struct ColumnRef
{
	char      *name; /* the JSON key = attname */
	AttrNumber attnum;
	Oid        typid;
	int32      typmod;
	Oid        collation;
	JsonbValue value; /* the JSON value (jbvBinary for containers) */
};

/* What one call asks for: the relation and the columns it names. */
struct UpdateRequest
{
	RelInfo    rel;
	bool       allow_equal;
	bool       has_expect; /* expect_fence given: the fence must still equal it */
	ColumnRef  fence;      /* the fence column (no value) */
	ColumnRef *keys;       /* key columns and values, in jsonb order */
	int        nkeys;
	ColumnRef *changes; /* changed columns and values, in jsonb order */
	int        nchanges;
};

/* How one value (a parameter of the prepared statements) is converted. */
struct ParamInfo
{
	Oid      typid;  /* the column's type (maybe a domain) */
	int32    typmod; /* applied by the input function */
	Oid      typioparam;
	bool     json_text; /* base type json/jsonb: pass the JSON value */
	FmgrInfo input;     /* the type's input function */
};

/* One prepared shape of call. */
struct PlanEntry
{
	PlanEntry    *next;  /* next entry with the same shape hash */
	MemoryContext cxt;   /* owns this entry and everything below */
	char         *shape; /* the shape key bytes (see BuildShape) */
	int           shape_len;
	Oid           relid;
	char         *nspname; /* names the SQL text was built with */
	char         *relname;
	char         *qualname; /* quoted schema.relation, for messages */
	char         *fence_column;
	bool          allow_equal;
	bool          has_expect; /* the UPDATE also requires fence = expect_fence */
	int           nchanges;   /* parameters: see ChangeParam etc. below */
	int           nkeys;
	int           nparams;
	ParamInfo    *params;
	Oid          *argtypes;
	AttrNumber   *key_attnums;
	Oid          *key_collations;
	Oid          *key_eqops;
	char         *select_sql; /* prepared when first needed */
	SPIPlanPtr    update_plan;
	SPIPlanPtr    select_plan;
	bool          unique_known; /* key_unique is current */
	bool          key_unique;   /* key matches at most one row */
};

/*
 * Parameters of the prepared statements, 0-based (SQL $n is index + 1):
 * the changes first, then the token, then the key values, then (with
 * expect_fence) the expected fence.
 */
inline int
ChangeParam(int i)
{
	return i;
}

inline int
TokenParam(int nchanges)
{
	return nchanges;
}

inline int
KeyParam(int nchanges, int i)
{
	return nchanges + 1 + i;
}

inline int
ExpectParam(int nchanges, int nkeys)
{
	return nchanges + 1 + nkeys;
}

/* --- fenced_update_columns.cpp --- */

/* rel as found in the catalog; raises 42P01 / 42809 if not a table. */
void LookUpRelation(Oid relid, RelInfo *rel);

/*
 * Look up what a call names in relation relid and check it (fence column a
 * bigint, a non-empty key without nulls, changes that leave the fence
 * column alone); raises the call's argument errors.
 */
void ReadRequest(Oid relid, Jsonb *key, Jsonb *changes, const char *fence_column, bool allow_equal,
				 UpdateRequest *req);

/* Conversion of values for a column; typmod -1 for key values. */
void InitParam(ParamInfo *p, Oid typid, int32 typmod, MemoryContext cxt);

/* Convert the JSON value of col into a parameter of type p. */
void ConvertValue(ParamInfo *p, const ColumnRef *col, Datum *value, char *null);

/* --- fenced_update_plan.cpp --- */

/*
 * The cached plan entry for this request's shape, built (or rebuilt, when
 * the relation or its schema was renamed) if needed.  SPI must be connected.
 */
PlanEntry *GetPlanEntry(const UpdateRequest *req);

/* The SELECT on the key of e, prepared when first needed. */
SPIPlanPtr SelectPlan(PlanEntry *e);

/*
 * Is the key of e provably unique (answer cached in e until a relcache
 * invalidation of its relation)?  The caller holds a lock on the relation.
 */
bool KeyIsUnique(PlanEntry *e);

} /* namespace fence */
