/*-------------------------------------------------------------------------
 *
 * stats.cpp
 *	  Counters for fence.stats(), the registry of held connection-bound locks
 *	  behind the view fence.locks, and the LOG signals of stale writes and
 *	  lease takeovers.
 *
 * Counters and registry live in the shared block (shmem.hpp): with the
 * preload, or on PostgreSQL 17+ in a named DSM segment.  Without it (15/16
 * without the preload) every counter and registry call is a cheap no-op; the
 * LOG lines are written either way.  The registry is an open-addressing
 * table of fixed size (its layout is in shmem.hpp), so that it can live in a
 * DSM segment as well as in the main shared memory.
 *
 * Nothing here writes to a table or raises an ERROR: the registry calls are
 * made by locks.cpp while a lock is held, and from transaction callbacks.
 * A full registry loses the name (the view still shows the lock, from
 * pg_locks) and the grant still succeeds.
 *
 * A backend's entries are removed on its last release of each name and, at
 * exit (terminate, disconnect, FATAL), by a before_shmem_exit callback.  A
 * backend crash makes the postmaster reinitialise shared memory (and forget
 * the named DSM segments), so no entry
 * outlives its backend; the view also joins the registry with pg_locks, so it
 * never shows an entry whose lock is no longer held.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/stats.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "observability/observability.hpp"

#include "pg/args.hpp"
#include "pg/messages.hpp"
#include "shmem.hpp"

extern "C" {
#include "storage/ipc.h"
}

namespace fence {

namespace {

bool exit_callback_registered = false;
bool overflow_logged = false;

/* Index slot where the key's probe starts. */
uint32
HomeSlot(const Registry *r, int32 pid, Oid dbid, uint64 hash)
{
	uint64 h = hash_combine64(hash, ((uint64) dbid << 32) | (uint32) pid);

	return (uint32) (h ^ (h >> 32)) & r->index_mask;
}

/*
 * The index slot holding the key, or the empty slot where it would go
 * (index[slot] == -1).  Caller holds the registry's lock.
 */
uint32
FindSlot(Registry *r, int32 pid, Oid dbid, uint64 hash)
{
	int32    *index = RegistryIndex(r);
	RegEntry *entries = RegistryEntries(r);
	uint32    i = HomeSlot(r, pid, dbid, hash);

	while (index[i] >= 0)
	{
		const RegEntry *e = &entries[index[i]];

		if (e->pid == pid && e->dbid == dbid && e->hash == hash)
			break;
		i = (i + 1) & r->index_mask;
	}
	return i;
}

/*
 * Remove the entry at index slot i: free the entry, then close the gap by
 * moving later entries of the probe run back (no tombstones).  Caller holds
 * the registry's lock exclusively.
 */
void
RemoveAt(Registry *r, uint32 i)
{
	int32    *index = RegistryIndex(r);
	RegEntry *entries = RegistryEntries(r);
	int32     victim = index[i];

	entries[victim].in_use = false;
	entries[victim].next_free = r->free_head;
	r->free_head = victim;
	r->used--;
	index[i] = -1;

	for (uint32 j = (i + 1) & r->index_mask; index[j] >= 0; j = (j + 1) & r->index_mask)
	{
		const RegEntry *e = &entries[index[j]];
		uint32          home = HomeSlot(r, e->pid, e->dbid, e->hash);

		/* leave it if its home lies cyclically in (i, j] */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		index[i] = index[j];
		index[j] = -1;
		i = j;
	}
}

/* before_shmem_exit: forget every registry entry of this backend. */
void
RegistryCleanup(int code, Datum arg)
{
	Registry *r = SharedRegistry();

	if (r == nullptr)
		return;

	RegEntry *entries = RegistryEntries(r);

	LWLockAcquire(&r->lock, LW_EXCLUSIVE);
	for (int n = 0; n < r->capacity; n++)
	{
		if (entries[n].in_use && entries[n].pid == MyProcPid)
			RemoveAt(r, FindSlot(r, entries[n].pid, entries[n].dbid, entries[n].hash));
	}
	LWLockRelease(&r->lock);
}

} /* namespace */

bool
StatsRead(Oid dbid, uint64 counters[(int) StatKind::kCount], TimestampTz *stats_reset)
{
	*stats_reset = 0;
	if (!AttachShared())
		return false;

	DbShared *db = FindDbShared(dbid);

	for (int c = 0; c < (int) StatKind::kCount; c++)
		counters[c] = db != nullptr ? pg_atomic_read_u64(&db->counters[c]) : 0;
	if (db != nullptr)
		*stats_reset = (TimestampTz) pg_atomic_read_u64(&db->stats_reset);
	return true;
}

int
RegistrySnapshot(Oid dbid, RegisteredLock **out)
{
	*out = nullptr;
	if (!AttachShared())
		return 0;

	Registry *r = SharedRegistry();
	RegEntry *entries = RegistryEntries(r);

	/*
	 * Copy under the lock into memory allocated before taking it (nothing
	 * that can fail runs while it is held); entries added in between are
	 * left out, as they would be a moment earlier.
	 */
	LWLockAcquire(&r->lock, LW_SHARED);
	int capacity = r->used;

	LWLockRelease(&r->lock);

	RegEntry *copy = static_cast<RegEntry *>(palloc(sizeof(RegEntry) * Max(capacity, 1)));
	int       n = 0;

	LWLockAcquire(&r->lock, LW_SHARED);
	for (int i = 0; i < r->capacity && n < capacity; i++)
	{
		if (entries[i].in_use && entries[i].dbid == dbid)
			memcpy(&copy[n++], &entries[i], sizeof(RegEntry));
	}
	LWLockRelease(&r->lock);

	RegisteredLock *locks =
		static_cast<RegisteredLock *>(palloc0(sizeof(RegisteredLock) * Max(n, 1)));

	for (int i = 0; i < n; i++)
	{
		locks[i].pid = copy[i].pid;
		locks[i].key = copy[i].hash;
		locks[i].token = copy[i].token;
		locks[i].granted_at = copy[i].granted_at;
		locks[i].kind = copy[i].kind;
		locks[i].name = pnstrdup(copy[i].name, copy[i].name_len);
	}
	pfree(copy);
	*out = locks;
	return n;
}

void
StatsCount(StatKind kind)
{
	StatsCountN(kind, 1);
}

void
StatsCountRejected(StatKind kind)
{
	AttachShared();
	StatsCountN(kind, 1);
}

void
StatsCountN(StatKind kind, uint64 n)
{
	DbShared *db = MyDbShared();

	if (db != nullptr && n > 0)
		pg_atomic_fetch_add_u64(&db->counters[(int) kind], n);
}

void
StatsCountWait(int64 usecs)
{
	DbShared *db = MyDbShared();

	if (db == nullptr)
		return;

	uint64            waited = (uint64) Max(usecs, (int64) 0);
	pg_atomic_uint64 *max = &db->counters[(int) StatKind::kMaxWaitUsecs];
	uint64            seen = pg_atomic_read_u64(max);

	pg_atomic_fetch_add_u64(&db->counters[(int) StatKind::kWaits], 1);
	pg_atomic_fetch_add_u64(&db->counters[(int) StatKind::kWaitTimeUsecs], waited);
	/* raise the maximum unless another backend raised it past ours */
	while (waited > seen && !pg_atomic_compare_exchange_u64(max, &seen, waited))
		;
}

bool
StatsReset()
{
	if (!AttachShared())
		return false;

	DbShared *db = MyDbShared();

	if (db == nullptr)
		return true; /* no share (all taken): nothing is counted to reset */

	/*
	 * Counter by counter, like pg_stat_reset(): an event counted while the
	 * reset runs lands before or after it, never half in a counter.
	 */
	for (int c = 0; c < (int) StatKind::kCount; c++)
		pg_atomic_write_u64(&db->counters[c], 0);
	pg_atomic_write_u64(&db->stats_reset, (uint64) GetCurrentTimestamp());
	return true;
}

void
StatsRecordGrant(uint64 key, const char *name, int name_len, int64 token, char kind,
				 TimestampTz granted_at)
{
	Registry *r = SharedRegistry();

	if (r == nullptr)
		return;
	if (!exit_callback_registered)
	{
		before_shmem_exit(RegistryCleanup, (Datum) 0);
		exit_callback_registered = true;
	}

	int32    *index = RegistryIndex(r);
	RegEntry *entries = RegistryEntries(r);
	bool      stored = false;

	LWLockAcquire(&r->lock, LW_EXCLUSIVE);
	uint32 slot = FindSlot(r, MyProcPid, MyDatabaseId, key);

	if (index[slot] < 0 && r->free_head >= 0)
	{
		index[slot] = r->free_head;
		r->free_head = entries[index[slot]].next_free;
		r->used++;
	}
	if (index[slot] >= 0)
	{
		RegEntry *e = &entries[index[slot]];
		int       len = Min(name_len, kMaxNameBytes);

		e->pid = MyProcPid;
		e->dbid = MyDatabaseId;
		e->hash = key;
		e->in_use = true;
		e->token = token;
		e->granted_at = granted_at;
		e->kind = kind;
		e->name_len = (int16) len;
		memcpy(e->name, name, len);
		e->name[len] = '\0';
		stored = true;
	}
	LWLockRelease(&r->lock);

	if (!stored)
	{
		uint64 n = pg_atomic_add_fetch_u64(&r->overflows, 1);

		if (!overflow_logged)
		{
			overflow_logged = true;
			ereport(
				LOG,
				(errmsg(
					 "pg_fence: lock registry full (fence.max_locks = %d): held locks are shown in fence.locks without their names",
					 r->capacity),
				 errdetail("Grants not registered since server start: " UINT64_FORMAT ".", n),
				 errhint("Increase fence.max_locks (needs a restart)."), errhidestmt(true)));
		}
	}
}

void
StatsRecordRelease(uint64 key)
{
	Registry *r = SharedRegistry();

	if (r == nullptr)
		return;

	LWLockAcquire(&r->lock, LW_EXCLUSIVE);
	uint32 slot = FindSlot(r, MyProcPid, MyDatabaseId, key);

	if (RegistryIndex(r)[slot] >= 0)
		RemoveAt(r, slot);
	LWLockRelease(&r->lock);
}

void
ReportStaleWrite(const char *where, const char *resource, int64 presented, int64 current)
{
	StatsCountRejected(StatKind::kStaleWrites);
	ereport(LOG, (errmsg("pg_fence: stale write rejected: %s %s: token " INT64_FORMAT
						 ", current fence " INT64_FORMAT,
						 where, ClipForMessage(resource), presented, current),
				  errhidestmt(true)));
}

void
ReportLeaseTakeover(const char *name, int64 old_token, int64 new_token, int64 expired_usecs)
{
	StatsCount(StatKind::kLeaseTakeovers);
	ereport(LOG, (errmsg("pg_fence: lease taken over after expiry: \"%s\" token " INT64_FORMAT
						 " -> " INT64_FORMAT ", expired " INT64_FORMAT " ms ago",
						 name, old_token, new_token, expired_usecs / 1000),
				  errhidestmt(true)));
}

} /* namespace fence */
