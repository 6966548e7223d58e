/*-------------------------------------------------------------------------
 *
 * queue_wait.cpp
 *	  The waiters of fence.claim, their wake-ups and the claimant lock (see
 *	  queue_wait.hpp).
 *
 * The waiters are an array of MaxBackends slots under one LWLock, as the
 * lease waiters are (leases/lease_wait.cpp): a slot holds the key, the
 * waiter's latch and a "woken" flag, so that a commit that made n jobs
 * runnable wakes n distinct waiters (set by the waker, cleared by the
 * waiter before it looks again).  Wake-ups are sent at XACT_EVENT_COMMIT,
 * after the commit is recorded and the transaction has left the proc
 * array, so a woken waiter's next snapshot sees the jobs.  A latch set
 * before the waiter sleeps is not lost (it resets its latch before it
 * looks, and WaitLatch returns at once).
 *
 * The end of a claiming session (before_shmem_exit, registered on its
 * first claim): it aborts its transaction if one is open (so the rows it
 * had locked are free), releases its claimant lock, moves the shared count
 * of ended claimants and wakes every waiter of its database.  This runs
 * before the dynamic shared memory is detached (shmem_exit), so it works
 * with the named segment of 17+ as well as with the preload.  A backend
 * that crashes takes the whole server through a restart instead: the
 * count starts at 1, so the first claim of every new backend looks for
 * claims of ended sessions.
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/queue_wait.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "queue/queue_wait.hpp"

#include "pg/compat.hpp"
#include "pg/lock_tag.hpp"
#include "pg/shared_block.hpp"

extern "C" {
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/wait_event.h"
}

namespace fence {

namespace {

static_assert(kWorkerLockTagClass != kLockTagClass && kWorkerLockTagClass != kLeaseLockTagClass &&
				  kWorkerLockTagClass != kMarkLockTagClass,
			  "the claimant lock's tag class differs from pg_fence's other classes");

struct QueueWaiterSlot
{
	bool   in_use;
	bool   woken; /* set by a waker, cleared by the waiter */
	Oid    db;
	uint64 key;
	Latch *latch;
};

struct QueueWaiters
{
	LWLock           lock; /* protects the slots */
	int32            nslots;
	pg_atomic_uint32 waiting;        /* slots in use */
	pg_atomic_uint64 claimant_exits; /* sessions that claimed and ended */
	QueueWaiterSlot  slots[FLEXIBLE_ARRAY_MEMBER];
};

QueueWaiters *waiters = nullptr;

/* Wake-ups to send at commit: (key, how many). */
constexpr int kMaxPending = 16;
struct PendingWake
{
	uint64 key;
	int64  jobs;
};
PendingWake pending[kMaxPending];
int         npending = 0;
bool        pending_overflow = false; /* more keys than kMaxPending: wake everybody */
bool        callback_registered = false;

/* This backend's slot while it waits; left at exit too. */
int  my_slot = -1;
bool waiter_hook_registered = false;

/* The claimant lock. */
int64   my_claimant = 0;
bool    claimant_hook_registered = false;
LOCKTAG my_claimant_tag;

/* RescueNeeded / RescueDone. */
uint64 seen_exits = 0;
uint64 observed_exits = 0;

/* Wake up to n waiters of key (n < 0: every waiter of this database). */
void
Wake(QueueWaiters *w, uint64 key, int64 n)
{
	LWLockAcquire(&w->lock, LW_EXCLUSIVE);
	for (int i = 0; i < w->nslots && n != 0; i++)
	{
		QueueWaiterSlot *s = &w->slots[i];

		if (!s->in_use || s->db != MyDatabaseId)
			continue;
		if (n > 0 && (s->key != key || s->woken))
			continue;
		s->woken = true;
		SetLatch(s->latch);
		if (n > 0)
			n--;
	}
	LWLockRelease(&w->lock);
}

void
AtXactEnd(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			npending = 0;
			pending_overflow = false;
			return;
		default:
			return;
	}
	if (npending == 0 && !pending_overflow)
		return;

	QueueWaiters *w = waiters;

	if (w != nullptr && pg_atomic_read_u32(&w->waiting) > 0)
	{
		if (pending_overflow)
			Wake(w, 0, -1);
		else
			for (int i = 0; i < npending; i++)
				Wake(w, pending[i].key, pending[i].jobs);
	}
	npending = 0;
	pending_overflow = false;
}

void
AtWaiterExit(int code, Datum arg)
{
	if (my_slot >= 0)
		LeaveQueueWaiters(my_slot);
}

/* The end of a claiming session: see the file's header. */
void
AtClaimantExit(int code, Datum arg)
{
	if (my_claimant == 0)
		return;
	if (IsTransactionOrTransactionBlock())
		AbortOutOfAnyTransaction();
	if (compat::HoldsLock(&my_claimant_tag, ExclusiveLock))
		LockRelease(&my_claimant_tag, ExclusiveLock, true);
	my_claimant = 0;

	QueueWaiters *w = waiters;

	if (w == nullptr)
		return;
	pg_atomic_fetch_add_u64(&w->claimant_exits, 1);
	if (pg_atomic_read_u32(&w->waiting) > 0)
		Wake(w, 0, -1);
}

} /* namespace */

Size
QueueWaitersShmemSize()
{
	return add_size(offsetof(QueueWaiters, slots), mul_size(sizeof(QueueWaiterSlot), MaxBackends));
}

void
QueueWaitersShmemInit(void *ptr, int tranche_id)
{
	QueueWaiters *w = static_cast<QueueWaiters *>(ptr);

	LWLockInitialize(&w->lock, tranche_id);
	w->nslots = MaxBackends;
	pg_atomic_init_u32(&w->waiting, 0);
	/* 1: every backend's first claim looks for claims of ended sessions */
	pg_atomic_init_u64(&w->claimant_exits, 1);
	for (int i = 0; i < w->nslots; i++)
		w->slots[i].in_use = false;
}

void
QueueWaitersShmemAttach(void *ptr)
{
	waiters = static_cast<QueueWaiters *>(ptr);
}

uint64
QueueWaitKey(uint64 queue_hash)
{
	return hash_combine64(queue_hash, (uint64) MyDatabaseId);
}

int64
MyClaimantKey()
{
	if (my_claimant == 0)
	{
		struct
		{
			int         pid;
			TimestampTz started;
		} who = {MyProcPid, MyStartTimestamp};
		uint64 h = hash_bytes_extended(reinterpret_cast<const unsigned char *>(&who), sizeof(who),
									   kNameHashSeed);

		(void) AttachShared(); /* may raise: before anything is held */
		if (h == 0)
			h = 1;
		SetLockTag(&my_claimant_tag, kWorkerLockTagClass, h);
		if (!claimant_hook_registered)
		{
			before_shmem_exit(AtClaimantExit, (Datum) 0);
			claimant_hook_registered = true;
		}
		my_claimant = (int64) h;
	}

	/*
	 * pg_advisory_unlock_all() and DISCARD ALL release every session-level
	 * advisory lock, ours included: take it again (its jobs may have been
	 * rescued meanwhile; their tokens then lose, as they should).
	 */
	if (!compat::HoldsLock(&my_claimant_tag, ExclusiveLock) &&
		LockAcquire(&my_claimant_tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						errmsg("could not take the claimant lock of this session"),
						errdetail("Another session holds the advisory lock of class %u with this "
								  "session's key.",
								  (unsigned) kWorkerLockTagClass)));
	return my_claimant;
}

bool
ClaimantGone(int64 claimant)
{
	LOCKTAG tag;

	if (claimant == 0 || claimant == my_claimant)
		return false;
	SetLockTag(&tag, kWorkerLockTagClass, (uint64) claimant);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	LockRelease(&tag, ExclusiveLock, false);
	return true;
}

bool
RescueNeeded(bool short_of_jobs)
{
	QueueWaiters *w = waiters;

	if (w == nullptr)
		return short_of_jobs;
	observed_exits = pg_atomic_read_u64(&w->claimant_exits);
	return observed_exits != seen_exits;
}

void
RescueDone()
{
	if (waiters != nullptr)
		seen_exits = observed_exits;
}

int
JoinQueueWaiters(uint64 key)
{
	if (!AttachShared())
		return -1;

	QueueWaiters *w = waiters;
	int           slot = -1;

	if (w == nullptr || MyProc == nullptr)
		return -1;
	if (!waiter_hook_registered)
	{
		before_shmem_exit(AtWaiterExit, (Datum) 0);
		waiter_hook_registered = true;
	}
	LWLockAcquire(&w->lock, LW_EXCLUSIVE);
	for (int i = 0; i < w->nslots; i++)
		if (!w->slots[i].in_use)
		{
			w->slots[i].in_use = true;
			w->slots[i].woken = false;
			w->slots[i].db = MyDatabaseId;
			w->slots[i].key = key;
			w->slots[i].latch = &MyProc->procLatch;
			pg_atomic_fetch_add_u32(&w->waiting, 1);
			slot = i;
			break;
		}
	LWLockRelease(&w->lock);
	my_slot = slot;
	return slot;
}

void
LeaveQueueWaiters(int slot)
{
	QueueWaiters *w = waiters;

	if (slot < 0 || w == nullptr)
		return;
	my_slot = -1;

	LWLockAcquire(&w->lock, LW_EXCLUSIVE);

	bool   was_woken = w->slots[slot].woken;
	uint64 key = w->slots[slot].key;

	w->slots[slot].in_use = false;
	pg_atomic_fetch_sub_u32(&w->waiting, 1);
	LWLockRelease(&w->lock);

	/*
	 * A wake-up this waiter did not use (it leaves at the end of its wait,
	 * or on an error) goes to another waiter of the queue.  One that got a
	 * job leaves with its flag cleared (QueueWaiterLook).
	 */
	if (was_woken)
		Wake(w, key, 1);
}

void
QueueWaiterLook(int slot)
{
	QueueWaiters *w = waiters;

	if (slot < 0 || w == nullptr)
		return;
	LWLockAcquire(&w->lock, LW_EXCLUSIVE);
	w->slots[slot].woken = false;
	LWLockRelease(&w->lock);
}

void
WakeQueueWaitersAtCommit(uint64 key, int64 jobs)
{
	if (!AttachShared())
		return;
	if (!callback_registered)
	{
		RegisterXactCallback(AtXactEnd, nullptr);
		callback_registered = true;
	}
	for (int i = 0; i < npending; i++)
		if (pending[i].key == key)
		{
			pending[i].jobs += jobs;
			return;
		}
	if (npending < kMaxPending)
	{
		pending[npending].key = key;
		pending[npending].jobs = jobs;
		npending++;
	}
	else
		pending_overflow = true;
}

uint32
QueueWaitEvent()
{
	static uint32 event = 0;

	if (event == 0)
		event = compat::CustomWaitEvent("PgFenceJob");
	return event != 0 ? event : PG_WAIT_EXTENSION;
}

} /* namespace fence */
