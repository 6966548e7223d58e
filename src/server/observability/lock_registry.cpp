/*-------------------------------------------------------------------------
 *
 * lock_registry.cpp
 *	  The registry of held connection-bound locks behind the view
 *	  fence.locks: its part of the shared block, and the grants and
 *	  releases locks.cpp records in it (see lock_registry.hpp).
 *
 * The registry lives in the shared block (pg/shared_block.hpp): with the
 * preload, or on PostgreSQL 17+ in a named DSM segment.  Without it (15/16
 * without the preload) every registry call is a cheap no-op.  It is an
 * open-addressing table of fixed size, so that it can live in a DSM segment
 * as well as in the main shared memory:
 *
 *	   Registry                lock, capacity, free list, overflow count
 *	   int32 index[]           open-addressing index, 2 x capacity rounded
 *	                           up to a power of two
 *	   RegEntry entries[]      capacity = fence.max_locks
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
 * This file is PostgreSQL-style code (plain structs, no C++ objects).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/observability/lock_registry.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "observability/lock_registry.hpp"

#include "pg/args.hpp"
#include "pg/shared_block.hpp"

extern "C" {
#include "storage/ipc.h"
#include "utils/guc.h"
}

namespace fence {

namespace {

/*
 * One held lock: keyed by (pid, database, name hash), with the whole name
 * (up to kMaxNameBytes), token, kind and grant time.
 */
struct RegEntry
{
	int32       pid; /* key: holder backend, database, name hash */
	Oid         dbid;
	uint64      hash;
	int32       next_free; /* free list link; -1: end */
	bool        in_use;
	char        kind; /* 's' session, 'x' transaction, 'S' shared */
	int16       name_len;
	int64       token;
	TimestampTz granted_at;
	char        name[kMaxNameBytes + 1];
};

struct Registry
{
	LWLock           lock;       /* protects everything below */
	int32            capacity;   /* entries */
	uint32           index_mask; /* index slots - 1 */
	int32            free_head;  /* first free entry; -1: full */
	int32            used;
	pg_atomic_uint64 overflows; /* grants not registered because it was full */
	/* then int32 index[index_mask + 1] (-1: empty) and RegEntry entries[capacity] */
};

int32 *
RegistryIndex(Registry *r)
{
	return reinterpret_cast<int32 *>(reinterpret_cast<char *>(r) + MAXALIGN(sizeof(Registry)));
}

RegEntry *
RegistryEntries(Registry *r)
{
	return reinterpret_cast<RegEntry *>(reinterpret_cast<char *>(RegistryIndex(r)) +
										MAXALIGN(sizeof(int32) * (r->index_mask + 1)));
}

/* fence.max_locks: defined only with the preload; a named segment has the default. */
int max_locks = kDefaultMaxLocks;

/* The registry, or nullptr (no block, or not attached yet). */
Registry *registry = nullptr;

uint32
IndexSlots(int capacity)
{
	uint32 n = 1;

	while (n < (uint32) capacity * 2)
		n <<= 1;
	return n;
}

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
	Registry *r = registry;

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

void
DefineRegistrySettings()
{
	DefineCustomIntVariable(
		"fence.max_locks",
		"Maximum number of held connection-bound locks fence.locks shows by name.",
		"Size of the shared registry of held locks (about 1.1 kB each); "
		"locks beyond it are still granted and shown without their name.",
		&max_locks, kDefaultMaxLocks, 16, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
}

Size
RegistryShmemSize()
{
	Size size = MAXALIGN(sizeof(Registry));

	size = add_size(size, MAXALIGN(mul_size(sizeof(int32), IndexSlots(max_locks))));
	size = add_size(size, MAXALIGN(mul_size(sizeof(RegEntry), max_locks)));
	return size;
}

void
RegistryShmemInit(void *ptr, int tranche_id)
{
	Registry *r = static_cast<Registry *>(ptr);

	LWLockInitialize(&r->lock, tranche_id);
	r->capacity = max_locks;
	r->index_mask = IndexSlots(max_locks) - 1;
	r->used = 0;
	pg_atomic_init_u64(&r->overflows, 0);

	int32    *index = RegistryIndex(r);
	RegEntry *entries = RegistryEntries(r);

	for (uint32 i = 0; i <= r->index_mask; i++)
		index[i] = -1;
	for (int i = 0; i < r->capacity; i++)
	{
		entries[i].in_use = false;
		entries[i].next_free = i + 1 < r->capacity ? i + 1 : -1;
	}
	r->free_head = 0;
}

void
RegistryShmemAttach(void *ptr)
{
	registry = static_cast<Registry *>(ptr);
}

int
RegistrySnapshot(Oid dbid, RegisteredLock **out)
{
	*out = nullptr;
	if (!AttachShared())
		return 0;

	Registry *r = registry;
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
StatsRecordGrant(uint64 key, const char *name, int name_len, int64 token, char kind,
				 TimestampTz granted_at)
{
	Registry *r = registry;

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
	Registry *r = registry;

	if (r == nullptr)
		return;

	LWLockAcquire(&r->lock, LW_EXCLUSIVE);
	uint32 slot = FindSlot(r, MyProcPid, MyDatabaseId, key);

	if (RegistryIndex(r)[slot] >= 0)
		RemoveAt(r, slot);
	LWLockRelease(&r->lock);
}

} /* namespace fence */
