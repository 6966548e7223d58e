/*-------------------------------------------------------------------------
 *
 * stats.cpp
 *	  Counters for fence.stats(), the registry of held connection-bound locks
 *	  behind the view fence.locks, and the LOG signals of stale writes and
 *	  lease takeovers.
 *
 * The shared memory exists only when pg_fence is in shared_preload_libraries
 * (see observability.hpp for its layout).  Otherwise every counter and
 * registry call is a cheap no-op; the LOG lines are written either way.
 *
 * Nothing here writes to a table or raises an ERROR: the registry calls are
 * made by locks.cpp while a lock is held, and from transaction callbacks.
 * A full registry loses the name (the view still shows the lock, from
 * pg_locks) and the grant still succeeds.
 *
 * A backend's entries are removed on its last release of each name and, at
 * exit (terminate, disconnect, FATAL), by a before_shmem_exit callback.  A
 * backend crash makes the postmaster reinitialise shared memory, so no entry
 * outlives its backend; the view also joins the registry with pg_locks, so it
 * never shows an entry whose lock is no longer held.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/stats.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "ext/observability.hpp"

#include "ext/args.hpp"
#include "ext/messages.hpp"

extern "C" {
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
}

namespace fence {

namespace {

constexpr int kCounters = (int) StatKind::kCount;
constexpr const char *kTrancheName = "pg_fence";

struct DbSlot
{
	pg_atomic_uint32 dboid;		/* 0: free */
	pg_atomic_uint64 counters[kCounters];
};

struct RegKey
{
	int32		pid;
	Oid			dbid;
	uint64		hash;
};

struct RegEntry
{
	RegKey		key;			/* hash key: must be first */
	int64		token;
	TimestampTz granted_at;
	char		kind;
	int16		name_len;
	char		name[kMaxNameBytes + 1];
};

struct SharedState
{
	LWLock	   *lock;			/* protects the registry */
	pg_atomic_uint64 overflows; /* grants not registered: registry full */
	DbSlot		slots[kStatSlots];
};

int			max_locks = 4096;

SharedState *shared = nullptr;
HTAB	   *registry = nullptr;

DbSlot	   *my_slot = nullptr;
bool		exit_callback_registered = false;
bool		overflow_logged = false;

#if PG_VERSION_NUM >= 150000
shmem_request_hook_type prev_shmem_request_hook = nullptr;
#endif
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

Size
SharedSize()
{
	return add_size(MAXALIGN(sizeof(SharedState)),
					hash_estimate_size(max_locks, sizeof(RegEntry)));
}

void
RequestShmem()
{
	RequestAddinShmemSpace(SharedSize());
	RequestNamedLWLockTranche(kTrancheName, 1);
}

#if PG_VERSION_NUM >= 150000
void
ShmemRequest()
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestShmem();
}
#endif

void
ShmemStartup()
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	bool		found;
	SharedState *s = static_cast<SharedState *>(
		ShmemInitStruct("pg_fence shared state", sizeof(SharedState), &found));

	if (!found)
	{
		s->lock = &(GetNamedLWLockTranche(kTrancheName))->lock;
		pg_atomic_init_u64(&s->overflows, 0);
		for (int i = 0; i < kStatSlots; i++)
		{
			pg_atomic_init_u32(&s->slots[i].dboid, 0);
			for (int c = 0; c < kCounters; c++)
				pg_atomic_init_u64(&s->slots[i].counters[c], 0);
		}
	}

	HASHCTL		info;

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(RegKey);
	info.entrysize = sizeof(RegEntry);
	registry = ShmemInitHash("pg_fence lock registry", max_locks, max_locks, &info,
							 HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	shared = s;
	LWLockRelease(AddinShmemInitLock);
}

/* This database's counter slot, claimed on first use; nullptr if none. */
DbSlot *
MySlot()
{
	if (shared == nullptr || !OidIsValid(MyDatabaseId))
		return nullptr;
	if (my_slot != nullptr)
		return my_slot;
	for (int i = 0; i < kStatSlots; i++)
	{
		DbSlot	   *slot = &shared->slots[i];
		uint32		owner = pg_atomic_read_u32(&slot->dboid);

		if (owner == 0)
		{
			uint32		expected = 0;

			if (pg_atomic_compare_exchange_u32(&slot->dboid, &expected, MyDatabaseId))
				owner = MyDatabaseId;
			else
				owner = expected;
		}
		if (owner == MyDatabaseId)
		{
			my_slot = slot;
			return slot;
		}
	}
	return nullptr;
}

/* before_shmem_exit: forget every registry entry of this backend. */
void
RegistryCleanup(int code, Datum arg)
{
	if (registry == nullptr)
		return;

	HASH_SEQ_STATUS status;
	RegEntry   *e;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&status, registry);
	while ((e = static_cast<RegEntry *>(hash_seq_search(&status))) != nullptr)
		if (e->key.pid == MyProcPid)
			hash_search(registry, &e->key, HASH_REMOVE, nullptr);
	LWLockRelease(shared->lock);
}

}							/* namespace */

void
InitStats()
{
	/*
	 * Only when preloading: a PGC_POSTMASTER setting cannot be defined by a
	 * library loaded later (FATAL), and it would size nothing anyway.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("fence.max_locks",
							"Maximum number of held connection-bound locks fence.locks shows by name.",
							"Size of the shared registry of held locks (about 1.1 kB each); "
							"locks beyond it are still granted and shown without their name.",
							&max_locks, 4096, 16, 1000000, PGC_POSTMASTER, 0,
							nullptr, nullptr, nullptr);

#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ShmemRequest;
#else
	RequestShmem();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ShmemStartup;
}

bool
StatsAvailable()
{
	return shared != nullptr;
}

bool
StatsRead(Oid dbid, uint64 counters[kCounters])
{
	if (shared == nullptr)
		return false;
	for (int c = 0; c < kCounters; c++)
		counters[c] = 0;
	for (int i = 0; i < kStatSlots; i++)
	{
		DbSlot	   *slot = &shared->slots[i];

		if (pg_atomic_read_u32(&slot->dboid) == dbid)
		{
			for (int c = 0; c < kCounters; c++)
				counters[c] = pg_atomic_read_u64(&slot->counters[c]);
			break;
		}
	}
	return true;
}

int
RegistrySnapshot(Oid dbid, RegisteredLock **out)
{
	*out = nullptr;
	if (registry == nullptr)
		return 0;

	/*
	 * Copy under the lock into memory allocated before taking it (nothing
	 * that can fail runs while it is held); entries added in between are
	 * left out, as they would be a moment earlier.
	 */
	LWLockAcquire(shared->lock, LW_SHARED);
	long		capacity = hash_get_num_entries(registry);

	LWLockRelease(shared->lock);

	RegEntry   *copy = static_cast<RegEntry *>(palloc(sizeof(RegEntry) * Max(capacity, 1)));
	int			n = 0;
	HASH_SEQ_STATUS status;
	RegEntry   *e;

	LWLockAcquire(shared->lock, LW_SHARED);
	hash_seq_init(&status, registry);
	while ((e = static_cast<RegEntry *>(hash_seq_search(&status))) != nullptr)
	{
		if (e->key.dbid == dbid && n < capacity)
			memcpy(&copy[n++], e, sizeof(RegEntry));
	}
	LWLockRelease(shared->lock);

	RegisteredLock *locks = static_cast<RegisteredLock *>(palloc0(sizeof(RegisteredLock) * Max(n, 1)));

	for (int i = 0; i < n; i++)
	{
		locks[i].pid = copy[i].key.pid;
		locks[i].key = copy[i].key.hash;
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
	DbSlot	   *slot = MySlot();

	if (slot != nullptr)
		pg_atomic_fetch_add_u64(&slot->counters[(int) kind], 1);
}

void
StatsRecordGrant(uint64 key, const char *name, int name_len, int64 token, char kind,
				 TimestampTz granted_at)
{
	if (registry == nullptr)
		return;
	if (!exit_callback_registered)
	{
		before_shmem_exit(RegistryCleanup, (Datum) 0);
		exit_callback_registered = true;
	}

	RegKey		k;

	memset(&k, 0, sizeof(k));
	k.pid = MyProcPid;
	k.dbid = MyDatabaseId;
	k.hash = key;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	RegEntry   *e = static_cast<RegEntry *>(hash_search(registry, &k, HASH_ENTER_NULL, nullptr));

	if (e != nullptr)
	{
		int			len = Min(name_len, kMaxNameBytes);

		e->token = token;
		e->granted_at = granted_at;
		e->kind = kind;
		e->name_len = (int16) len;
		memcpy(e->name, name, len);
		e->name[len] = '\0';
	}
	LWLockRelease(shared->lock);

	if (e == nullptr)
	{
		uint64		n = pg_atomic_add_fetch_u64(&shared->overflows, 1);

		if (!overflow_logged)
		{
			overflow_logged = true;
			ereport(LOG,
					(errmsg("pg_fence: lock registry full (fence.max_locks = %d): held locks are shown in fence.locks without their names",
							max_locks),
					 errdetail("Grants not registered since server start: " UINT64_FORMAT ".", n),
					 errhint("Increase fence.max_locks (needs a restart)."),
					 errhidestmt(true)));
		}
	}
}

void
StatsRecordRelease(uint64 key)
{
	if (registry == nullptr)
		return;

	RegKey		k;

	memset(&k, 0, sizeof(k));
	k.pid = MyProcPid;
	k.dbid = MyDatabaseId;
	k.hash = key;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	hash_search(registry, &k, HASH_REMOVE, nullptr);
	LWLockRelease(shared->lock);
}

void
ReportStaleWrite(const char *where, const char *resource, int64 presented, int64 current)
{
	StatsCount(StatKind::kStaleWrites);
	ereport(LOG,
			(errmsg("pg_fence: stale write rejected: %s %s: token " INT64_FORMAT ", current fence " INT64_FORMAT,
					where, ClipForMessage(resource), presented, current),
			 errhidestmt(true)));
}

void
ReportLeaseTakeover(const char *name, int64 old_token, int64 new_token, int64 expired_usecs)
{
	StatsCount(StatKind::kLeaseTakeovers);
	ereport(LOG,
			(errmsg("pg_fence: lease taken over after expiry: \"%s\" token " INT64_FORMAT " -> " INT64_FORMAT ", expired " INT64_FORMAT " ms ago",
					name, old_token, new_token, expired_usecs / 1000),
			 errhidestmt(true)));
}

}							/* namespace fence */
