/*-------------------------------------------------------------------------
 *
 * extension_table.cpp
 *	  The extension's own tables, looked up once per backend
 *	  (src/server/pg/extension_table.hpp).
 *
 * One relcache callback forgets a table when it is invalidated (relid
 * matches, or InvalidOid: a cache reset, after which everything is looked
 * up again).  ALTER TABLE ... OWNER TO, DROP TABLE and DROP EXTENSION all
 * invalidate the table's relcache entry, so a changed owner or a new OID
 * is never missed.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/extension_table.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "pg/extension_table.hpp"

#include "pg/compat.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace fence {

namespace {

constexpr int kNumTables = static_cast<int>(ExtensionTableId::kCount);

const char *const kExtensionTableNames[kNumTables] = {"leases", "insert_marks", "insert_guards",
													  "queue_jobs"};

struct CacheEntry
{
	bool           valid;
	ExtensionTable table;
};

CacheEntry g_tables[kNumTables];
uint64     g_generation = 0;
bool       g_callback_registered = false;

void
InvalidateTables(Datum, Oid relid)
{
	for (CacheEntry &e : g_tables)
	{
		if (e.valid && (relid == InvalidOid || relid == e.table.relid))
		{
			e.valid = false;
			g_generation++;
		}
	}
}

ExtensionTable
LookUp(const char *name)
{
	ExtensionTable t = {InvalidOid, InvalidOid, InvalidOid};
	Oid            nsp = get_namespace_oid("fence", true);
	Oid            relid = OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;

	if (!OidIsValid(relid))
		return t;

	Relation rel = table_open(relid, AccessShareLock);

	t.relid = relid;
	t.owner = rel->rd_rel->relowner;
	t.pkey = compat::PrimaryKeyIndex(rel);
	table_close(rel, AccessShareLock);
	return t;
}

} /* namespace */

ExtensionTable
FindExtensionTable(ExtensionTableId id)
{
	CacheEntry &e = g_tables[static_cast<int>(id)];

	if (!g_callback_registered)
	{
		CacheRegisterRelcacheCallback(InvalidateTables, (Datum) 0);
		g_callback_registered = true;
	}
	if (!e.valid)
	{
		/* table_open may process invalidations: mark valid only after. */
		ExtensionTable t = LookUp(kExtensionTableNames[static_cast<int>(id)]);

		e.table = t;
		e.valid = OidIsValid(t.relid);
	}
	return e.table;
}

ExtensionTable
RequireExtensionTable(ExtensionTableId id)
{
	ExtensionTable t = FindExtensionTable(id);

	if (!OidIsValid(t.relid))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table fence.%s does not exist",
							   kExtensionTableNames[static_cast<int>(id)]),
						errhint("Update the extension: ALTER EXTENSION pg_fence UPDATE.")));
	return t;
}

void
ForgetExtensionTable(ExtensionTableId id)
{
	if (g_tables[static_cast<int>(id)].valid)
	{
		g_tables[static_cast<int>(id)].valid = false;
		g_generation++;
	}
}

uint64
ExtensionTableGeneration()
{
	return g_generation;
}

} /* namespace fence */
