/*-------------------------------------------------------------------------
 *
 * extension_table.hpp
 *	  The extension's own tables (fence.leases, fence.insert_marks,
 *	  fence.insert_guards, fence.queue_jobs): their OID, owner and primary key index, looked
 *	  up once per backend and kept until a relcache invalidation of the
 *	  table (src/server/pg/extension_table.cpp).
 *
 * The code that reads and writes these tables does so as the table's
 * owner, so callers need no privilege on them; every call needs the owner,
 * and the guarded INSERT's hot path also opens the table and its primary
 * key index directly, for every row.  Looking them up by name each time
 * cost a namespace and a relation lookup and a pg_class read per call.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/extension_table.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* The tables looked up here (their names in schema fence: kExtensionTableNames). */
enum class ExtensionTableId
{
	kLeases,
	kInsertMarks,
	kInsertGuards,
	kQueueJobs,
	kCount
};

/* What is kept of one table. */
struct ExtensionTable
{
	Oid relid; /* InvalidOid: not installed (an older extension version) */
	Oid owner; /* pg_class.relowner */
	Oid pkey;  /* its primary key index */
};

/*
 * fence.<table>: relid InvalidOid if the table does not exist in this
 * database (the caller reports that in its own words).  Cached per
 * backend; an ALTER TABLE ... OWNER TO, a DROP or any other change of the
 * table (relcache invalidation) makes the next call look it up again.
 *
 * A caller that opens the table by the cached OID and must not work on a
 * table dropped meanwhile compares ExtensionTableGeneration() before and
 * after taking its lock (the lock acquisition processes invalidations).
 */
ExtensionTable FindExtensionTable(ExtensionTableId id);

/*
 * FindExtensionTable for a table the caller cannot work without: raises
 * 42P01 ("table fence.<name> does not exist", with a hint to update the
 * extension) when it is not installed.
 */
ExtensionTable RequireExtensionTable(ExtensionTableId id);

/* Changes whenever a cached table is invalidated. */
uint64 ExtensionTableGeneration();

/* Forgets what is kept of the table (its cached OID names no table any more). */
void ForgetExtensionTable(ExtensionTableId id);

} /* namespace fence */
