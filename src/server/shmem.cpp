/*-------------------------------------------------------------------------
 *
 * shmem.cpp
 *	  pg_fence's shared block: the wings' parts laid out one after the
 *	  other, sized and set up in one place, as PostgreSQL's ipci.c composes
 *	  its subsystems (CalculateShmemSize, CreateSharedMemoryAndSemaphores).
 *
 * Each wing declares its part, with its size, its set-up (in the process
 * that creates the block) and its attach (in every process: the wing keeps
 * a backend-local pointer to its part):
 *
 *	   BlockHeader             tranche id
 *	   DbSlots                 pg/db_slots.hpp: databases' slots
 *	   TokenShared[]           tokens/token_shmem.hpp: token allocator
 *	   DbCounters[]            observability/counters.hpp: fence.stats()
 *	   MarkStripes[]           writes/mark_cache.hpp: mark change counts
 *	   Registry                observability/lock_registry.hpp: fence.locks
 *	   LeaseWaiters            leases/lease_wait.hpp: lease waiters' queue
 *	   QueueWaiters            queue/queue_wait.hpp: fence.claim's waiters
 *
 * each at a MAXALIGNed offset.  The block is set up either by the preload's
 * hooks (shmem_request_hook, shmem_startup_hook) in the main shared memory,
 * or, on 17+ without the preload, by the first backend that attaches to
 * the named DSM segment (GetNamedDSMSegment, through compat.hpp); where it
 * lives is pg/shared_block.hpp's to say.
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
#include "pg/db_slots.hpp"
#include "pg/shared_block.hpp"
#include "tokens/token_shmem.hpp"
#include "observability/counters.hpp"
#include "observability/lock_registry.hpp"
#include "leases/lease_wait.hpp"
#include "queue/queue_wait.hpp"
#include "writes/mark_cache.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace fence {

namespace {

constexpr const char *kBlockName = "pg_fence";
constexpr const char *kTrancheName = "pg_fence";

/* One wing's part of the block. */
struct ShmemPart
{
	Size (*size)(void);
	void (*init)(void *ptr, int tranche_id);
	void (*attach)(void *ptr);
};

/* The parts, in the block's order. */
const ShmemPart kParts[] = {
	{DbSlotsShmemSize, DbSlotsShmemInit, DbSlotsShmemAttach},
	{TokenShmemSize, TokenShmemInit, TokenShmemAttach},
	{CountersShmemSize, CountersShmemInit, CountersShmemAttach},
	{MarkStripesShmemSize, MarkStripesShmemInit, MarkStripesShmemAttach},
	{RegistryShmemSize, RegistryShmemInit, RegistryShmemAttach},
	{LeaseWaitersShmemSize, LeaseWaitersShmemInit, LeaseWaitersShmemAttach},
	{QueueWaitersShmemSize, QueueWaitersShmemInit, QueueWaitersShmemAttach},
};

struct BlockHeader
{
	int tranche_id;
	/* then the parts */
};

BlockHeader *block = nullptr;
bool         tranche_registered = false;

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

Size
BlockSize()
{
	Size size = MAXALIGN(sizeof(BlockHeader));

	for (const ShmemPart &part : kParts)
		size = add_size(size, MAXALIGN(part.size()));
	return size;
}

/* Set up a new block (zeroed or not): every part, in order. */
void
InitBlock(void *ptr)
{
	BlockHeader *b = static_cast<BlockHeader *>(ptr);
	char        *at = static_cast<char *>(ptr) + MAXALIGN(sizeof(BlockHeader));

	b->tranche_id = LWLockNewTrancheId();
	for (const ShmemPart &part : kParts)
	{
		part.init(at, b->tranche_id);
		at += MAXALIGN(part.size());
	}
}

/* Point every wing at its part of the block. */
void
AttachParts(BlockHeader *b)
{
	char *at = reinterpret_cast<char *>(b) + MAXALIGN(sizeof(BlockHeader));

	for (const ShmemPart &part : kParts)
	{
		part.attach(at);
		at += MAXALIGN(part.size());
	}
}

void
ShmemRequest()
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(BlockSize());
}

void
ShmemStartup()
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	bool found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	block = static_cast<BlockHeader *>(ShmemInitStruct(kBlockName, BlockSize(), &found));
	if (!found)
		InitBlock(block);
	LWLockRelease(AddinShmemInitLock);
	AttachParts(block);
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

/* AttachShared()'s body (pg/shared_block.hpp). */
bool
AttachBlock()
{
	if (block == nullptr && SharedMode() == ShmemMode::kNamedSegment)
	{
		bool  found;
		void *ptr = compat::NamedSegment(kBlockName, BlockSize(), InitBlock, &found);

		AttachParts(static_cast<BlockHeader *>(ptr));
		block = static_cast<BlockHeader *>(ptr);
	}
	RegisterTranche();
	return block != nullptr;
}

} /* namespace */

void
InitShmem()
{
	if (!process_shared_preload_libraries_in_progress)
	{
		SetSharedBlock(compat::kHaveNamedSegments ? ShmemMode::kNamedSegment : ShmemMode::kNone,
					   AttachBlock);
		return;
	}

	/*
	 * Only when preloading: a PGC_POSTMASTER setting cannot be defined by a
	 * library loaded later (FATAL).  A named segment has the default size.
	 */
	DefineRegistrySettings();
	SetSharedBlock(ShmemMode::kPreloaded, AttachBlock);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ShmemStartup;
}

} /* namespace fence */
