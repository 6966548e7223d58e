/*-------------------------------------------------------------------------
 *
 * shmem.cpp
 *	  pg_fence's shared block: where it lives, how it is sized and set up,
 *	  and how a backend finds its database's share (see shmem.hpp).
 *
 * The block's layout:
 *
 *	   SharedBlock             header: tranche id, database shares
 *	   Registry                lock, capacity, free list, overflow count
 *	   int32 index[]           open-addressing index, 2 x capacity rounded
 *	                           up to a power of two
 *	   RegEntry entries[]      capacity = fence.max_locks
 *
 * Its LWLocks belong to one tranche, "pg_fence", whose id is allocated when
 * the block is set up and registered (named) in every process that attaches,
 * so pg_stat_activity shows waits on them as LWLock "pg_fence".
 *
 * This file is PostgreSQL-style code (plain structs, no C++ objects).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/shmem.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "shmem.hpp"

#include "pg/compat.hpp"
#include "leases/lease_wait.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/shmem.h"
}

namespace fence {

namespace {

constexpr const char *kBlockName = "pg_fence";
constexpr const char *kTrancheName = "pg_fence";

struct SharedBlock
{
	int      tranche_id;
	DbShared dbs[kDbSlots];
	/* then the Registry */
};

int          max_locks = kDefaultMaxLocks;
ShmemMode    mode = ShmemMode::kNone;
SharedBlock *block = nullptr;
bool         tranche_registered = false;
DbShared    *my_db = nullptr;
bool         my_db_searched = false; /* searched the shares once (found or not) */

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

uint32
IndexSlots(int capacity)
{
	uint32 n = 1;

	while (n < (uint32) capacity * 2)
		n <<= 1;
	return n;
}

Size
RegistryOffset()
{
	return MAXALIGN(sizeof(SharedBlock));
}

/* The registry's size; the lease waiters' queue follows it. */
Size
RegistrySize(int capacity)
{
	Size size = MAXALIGN(sizeof(Registry));

	size = add_size(size, MAXALIGN(mul_size(sizeof(int32), IndexSlots(capacity))));
	size = add_size(size, MAXALIGN(mul_size(sizeof(RegEntry), capacity)));
	return size;
}

Size
BlockSize(int capacity)
{
	Size size = add_size(RegistryOffset(), RegistrySize(capacity));

	return add_size(size, LeaseWaitersSize());
}

Registry *
BlockRegistry(SharedBlock *b)
{
	return reinterpret_cast<Registry *>(reinterpret_cast<char *>(b) + RegistryOffset());
}

/* Set up a new block of the given registry capacity (zeroed or not). */
void
InitBlock(SharedBlock *b, int capacity)
{
	b->tranche_id = LWLockNewTrancheId();
	for (int i = 0; i < kDbSlots; i++)
	{
		DbShared *db = &b->dbs[i];

		pg_atomic_init_u32(&db->dboid, 0);
		LWLockInitialize(&db->token_mover, b->tranche_id);
		SpinLockInit(&db->token_mutex);
		db->token_ready = false;
		db->token_seq = InvalidOid;
		db->token_next = 0;
		db->token_ceiling = 0;
		db->token_ceiling_lsn = InvalidXLogRecPtr;
		db->token_durable = 0;
		db->token_epoch_seq = InvalidOid;
		db->token_tli = 0;
		db->token_epoch = -1;
		db->token_floor = 0;
		db->token_cap = 0;
		for (int c = 0; c < (int) StatKind::kCount; c++)
			pg_atomic_init_u64(&db->counters[c], 0);
		pg_atomic_init_u64(&db->stats_reset, 0);
		for (int m = 0; m < kMarkStripes; m++)
			pg_atomic_init_u64(&db->mark_changes[m], 0);
	}

	Registry *r = BlockRegistry(b);

	LWLockInitialize(&r->lock, b->tranche_id);
	r->capacity = capacity;
	r->index_mask = IndexSlots(capacity) - 1;
	r->used = 0;
	pg_atomic_init_u64(&r->overflows, 0);

	int32    *index = RegistryIndex(r);
	RegEntry *entries = RegistryEntries(r);

	for (uint32 i = 0; i <= r->index_mask; i++)
		index[i] = -1;
	for (int i = 0; i < capacity; i++)
	{
		entries[i].in_use = false;
		entries[i].next_free = i + 1 < capacity ? i + 1 : -1;
	}
	r->free_head = 0;

	InitLeaseWaiters(reinterpret_cast<char *>(r) + RegistrySize(capacity), b->tranche_id);
}

void
InitNamedBlock(void *ptr)
{
	InitBlock(static_cast<SharedBlock *>(ptr), kDefaultMaxLocks);
}

void
ShmemRequest()
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(BlockSize(max_locks));
}

void
ShmemStartup()
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	bool found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	block = static_cast<SharedBlock *>(ShmemInitStruct(kBlockName, BlockSize(max_locks), &found));
	if (!found)
		InitBlock(block, max_locks);
	LWLockRelease(AddinShmemInitLock);
}

/* Name the tranche in this process (for pg_stat_activity); once. */
void
RegisterTranche()
{
	if (!tranche_registered && block != nullptr)
	{
		LWLockRegisterTranche(block->tranche_id, kTrancheName);
		tranche_registered = true;
	}
}

} /* namespace */

void
InitShmem()
{
	if (!process_shared_preload_libraries_in_progress)
	{
		mode = compat::kHaveNamedSegments ? ShmemMode::kNamedSegment : ShmemMode::kNone;
		return;
	}

	/*
	 * Only when preloading: a PGC_POSTMASTER setting cannot be defined by a
	 * library loaded later (FATAL).  A named segment has the default size.
	 */
	DefineCustomIntVariable(
		"fence.max_locks",
		"Maximum number of held connection-bound locks fence.locks shows by name.",
		"Size of the shared registry of held locks (about 1.1 kB each); "
		"locks beyond it are still granted and shown without their name.",
		&max_locks, kDefaultMaxLocks, 16, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
	mode = ShmemMode::kPreloaded;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ShmemStartup;
}

ShmemMode
SharedMode()
{
	return mode;
}

bool
AttachShared()
{
	if (block == nullptr && mode == ShmemMode::kNamedSegment)
	{
		bool found;

		block = static_cast<SharedBlock *>(
			compat::NamedSegment(kBlockName, BlockSize(kDefaultMaxLocks), InitNamedBlock, &found));
	}
	RegisterTranche();
	return block != nullptr;
}

DbShared *
MyDbShared()
{
	if (my_db != nullptr || my_db_searched)
		return my_db;
	if (block == nullptr || !OidIsValid(MyDatabaseId))
		return nullptr;
	/* shares are never given up: a database that finds none never will */
	my_db_searched = true;
	for (int i = 0; i < kDbSlots; i++)
	{
		DbShared *db = &block->dbs[i];
		uint32    owner = pg_atomic_read_u32(&db->dboid);

		if (owner == 0)
		{
			uint32 expected = 0;

			if (pg_atomic_compare_exchange_u32(&db->dboid, &expected, MyDatabaseId))
			{
				/* fence.stats() counts for this database from now on */
				pg_atomic_write_u64(&db->stats_reset, (uint64) GetCurrentTimestamp());
				owner = MyDatabaseId;
			}
			else
				owner = expected;
		}
		if (owner == MyDatabaseId)
		{
			my_db = db;
			break;
		}
	}
	return my_db;
}

DbShared *
FindDbShared(Oid dbid)
{
	if (block == nullptr)
		return nullptr;
	for (int i = 0; i < kDbSlots; i++)
		if (pg_atomic_read_u32(&block->dbs[i].dboid) == dbid)
			return &block->dbs[i];
	return nullptr;
}

Registry *
SharedRegistry()
{
	return block != nullptr ? BlockRegistry(block) : nullptr;
}

void *
SharedLeaseWaiters()
{
	if (block == nullptr)
		return nullptr;

	Registry *r = BlockRegistry(block);

	return reinterpret_cast<char *>(r) + RegistrySize(r->capacity);
}

} /* namespace fence */
