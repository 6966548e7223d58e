/*-------------------------------------------------------------------------
 *
 * compat.hpp
 *	  The one place where PostgreSQL major versions differ for pg_fence.
 *
 * Supported majors: 15 (the floor: nothing older is built), 16, 17 and 18.
 * Every version test in the extension is in this file; the rest of the code
 * calls the helpers below and reads as if there were one PostgreSQL.
 *
 * What differs, and since when:
 *
 *	 - owner checks: pg_class_ownercheck() until 15, object_ownercheck() from
 *	   16 on (PostgreSQL commit "Replace ownercheck functions", 16);
 *	 - RelationGetPrimaryKeyIndex() takes deferrable_ok from 18 on;
 *	 - index_beginscan() takes an IndexScanInstrumentation pointer (for
 *	   EXPLAIN's index search counts) from 18 on;
 *	 - LockHeldByMe() takes orstronger from 17 on;
 *	 - PGPROC's local transaction id moved into vxid in 17;
 *	 - a GUC's "extra" must come from guc_malloc() from 16 on (guc.c frees it
 *	   with guc_free(), which is pfree() there; free() before 16);
 *	 - find_option() is exported from 16 on;
 *	 - named dynamic shared memory (GetNamedDSMSegment, dsm_registry.h) and
 *	   custom wait events (WaitEventExtensionNew) exist from 17 on;
 *	 - PG_MODULE_MAGIC_EXT (name and version in pg_get_loaded_modules())
 *	   exists from 18 on;
 *	 - WalSndCtl's bool sync_standbys_defined became the flag word
 *	   sync_standbys_status (SYNC_STANDBY_DEFINED) in the 2025 minor
 *	   releases of 13-17 and in 18.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/pg/compat.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "access/genam.h"
#include "catalog/pg_class.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/wait_event.h"
#include "replication/walsender_private.h"
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif
}

#if PG_VERSION_NUM < 150000
#error "pg_fence needs PostgreSQL 15 or later"
#endif

/*
 * The module magic block: with the library's name and version on 18+
 * (shown by pg_get_loaded_modules()).  PG_FENCE_VERSION comes from the
 * Makefile (the control file's default_version).
 */
#if PG_VERSION_NUM >= 180000
#define FENCE_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "pg_fence", .version = PG_FENCE_VERSION)
#else
#define FENCE_MODULE_MAGIC PG_MODULE_MAGIC
#endif

namespace fence::compat {

/* Does role own relation relid? */
inline bool
OwnsRelation(Oid relid, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(RelationRelationId, relid, role);
#else
	return pg_class_ownercheck(relid, role);
#endif
}

/* The relation's primary key index (deferrable or not), or InvalidOid. */
inline Oid
PrimaryKeyIndex(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, true);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/* index_beginscan without instrumentation (a scan no EXPLAIN reports). */
inline IndexScanDesc
BeginIndexScan(Relation heap, Relation index, Snapshot snapshot, int nkeys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, nullptr, nkeys, 0);
#else
	return index_beginscan(heap, index, snapshot, nkeys, 0);
#endif
}

/* Does this backend hold exactly this lock mode on tag (any scope)? */
inline bool
HoldsLock(const LOCKTAG *tag, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 170000
	return LockHeldByMe(tag, mode, false);
#else
	return LockHeldByMe(tag, mode);
#endif
}

/* This backend's local transaction id (MyProc must exist). */
inline LocalTransactionId
MyLocalXid()
{
#if PG_VERSION_NUM >= 170000
	return MyProc->vxid.lxid;
#else
	return MyProc->lxid;
#endif
}

/*
 * Memory for a GUC check hook's *extra, from the allocator guc.c frees it
 * with.  Returns nullptr (after a LOG) when out of memory, as check hooks
 * must not raise errors.
 */
inline void *
GucExtraAlloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/* The GUC record named name, or nullptr. */
inline struct config_generic *
FindGuc(const char *name)
{
#if PG_VERSION_NUM >= 160000
	return find_option(name, false, true, DEBUG1);
#else
	struct config_generic **vars = get_guc_variables();
	int                     n = GetNumConfigOptions();

	for (int i = 0; i < n; i++)
		if (strcmp(vars[i]->name, name) == 0)
			return vars[i];
	return nullptr;
#endif
}

/*
 * A wait in the lock manager that pg_stat_activity shows under a custom wait
 * event (17+; 15/16 show the lock manager's own "Lock: advisory").
 *
 * The lock manager reports its own wait event (PG_WAIT_LOCK | tag type)
 * through my_wait_event_info while it sleeps.  For the length of the wait,
 * BeginCustomWait points that storage at a private word and sets the
 * backend's visible wait event (MyProc->wait_event_info) itself;
 * EndCustomWait points it back and clears it.  Everything else about the
 * wait is unchanged: pg_locks shows the waiting advisory lock, and
 * pg_blocking_pids(), deadlock detection and lock_timeout work as before.
 * EndCustomWait must run on every path out of the wait (errors included);
 * a FATAL exit needs nothing, since ProcKill resets the storage.
 * Never raises.
 */
#if PG_VERSION_NUM >= 170000
inline uint32 hidden_wait_event_info = 0;
#endif

inline void
BeginCustomWait(uint32 event)
{
#if PG_VERSION_NUM >= 170000
	if (event == 0 || MyProc == nullptr)
		return;
	pgstat_set_wait_event_storage(&hidden_wait_event_info);
	*static_cast<volatile uint32 *>(&MyProc->wait_event_info) = event;
#endif
}

inline void
EndCustomWait(uint32 event)
{
#if PG_VERSION_NUM >= 170000
	if (event == 0 || MyProc == nullptr)
		return;
	pgstat_set_wait_event_storage(&MyProc->wait_event_info);
	*static_cast<volatile uint32 *>(&MyProc->wait_event_info) = 0;
#endif
}

/*
 * Is a synchronous standby list in effect (as the checkpointer last loaded
 * synchronous_standby_names)?  The caller holds SyncRepLock.
 */
inline bool
SyncStandbysInEffect(const WalSndCtlData *ctl)
{
#ifdef SYNC_STANDBY_DEFINED
	return (ctl->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
#else
	return ctl->sync_standbys_defined;
#endif
}

/* Are there named DSM segments (dsm_registry.c, 17+)? */
constexpr bool kHaveNamedSegments = PG_VERSION_NUM >= 170000;

/*
 * Attach to (or create and initialise) the named DSM segment: init runs once
 * per server life, under the registry's lock.  Raises ERROR on failure, and
 * always before 17 (callers check kHaveNamedSegments first).
 */
inline void *
NamedSegment(const char *name, size_t size, void (*init)(void *), bool *found)
{
#if PG_VERSION_NUM >= 170000
	return GetNamedDSMSegment(name, size, init, found);
#else
	elog(ERROR, "named DSM segments need PostgreSQL 17 or later");
	return nullptr;
#endif
}

/*
 * A custom wait event ("Extension" type) named name, the same in every
 * backend; 0 before 17 (no custom wait events).  May raise ERROR.
 */
inline uint32
CustomWaitEvent(const char *name)
{
#if PG_VERSION_NUM >= 170000
	return WaitEventExtensionNew(name);
#else
	return 0;
#endif
}

} /* namespace fence::compat */
