/*-------------------------------------------------------------------------
 *
 * lease_wait.cpp
 *	  The queue of lease waiters and its wake-ups (see lease_wait.hpp).
 *
 * The queue is an array of MaxBackends slots (one per waiting backend at
 * most) under one LWLock; a slot holds the key, the ticket and the
 * waiter's latch.  Scans are linear: MaxBackends is small, and a backend
 * that ends a transaction which changed a lease scans only if somebody
 * waits at all (an atomic count, read without the lock).
 *
 * Wake-ups set the waiter's latch (SetLatch on its PGPROC's procLatch, in
 * the main shared memory, which every backend maps at the same address),
 * after the change is visible: the transaction callback runs at
 * XACT_EVENT_COMMIT, after the commit is recorded and the transaction has
 * left the proc array.  A latch set before the waiter sleeps is not lost
 * (the waiter resets it before it looks, and WaitLatch returns at once).
 *
 * This file is PostgreSQL-style code: its frames hold only trivially
 * destructible locals.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_wait.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "leases/lease_wait.hpp"

#include "pg/compat.hpp"
#include "pg/lock_tag.hpp"
#include "pg/shared_block.hpp"

extern "C" {
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/timeout.h"
#include "utils/wait_event.h"
}

namespace fence {

namespace {

struct WaiterSlot
{
	bool   in_use;
	uint64 key;
	uint64 ticket;
	Latch *latch;
};

struct LeaseWaiters
{
	LWLock           lock; /* protects everything but `waiting` */
	uint64           next_ticket;
	int32            nslots;
	pg_atomic_uint32 waiting; /* slots in use */
	WaiterSlot       slots[FLEXIBLE_ARRAY_MEMBER];
};

/* Keys whose head waiter is woken when this transaction ends. */
constexpr int kMaxPending = 16;
uint64        pending[kMaxPending];
int           npending = 0;
bool          pending_overflow = false; /* more than kMaxPending: wake everybody */
bool          callback_registered = false;

/* This backend's slot while it waits; left at exit too (a FATAL error does not unwind). */
int  my_slot = -1;
bool exit_hook_registered = false;

/* The queue, or nullptr (no block, or not attached yet). */
LeaseWaiters *waiters = nullptr;

LeaseWaiters *
Waiters()
{
	return waiters;
}

/* Caller holds the lock (any mode): the head slot of `key`, or -1. */
int
HeadOf(LeaseWaiters *w, uint64 key)
{
	int    head = -1;
	uint64 best = PG_UINT64_MAX;

	for (int i = 0; i < w->nslots; i++)
		if (w->slots[i].in_use && w->slots[i].key == key && w->slots[i].ticket < best)
		{
			best = w->slots[i].ticket;
			head = i;
		}
	return head;
}

void
WakeHead(LeaseWaiters *w, uint64 key)
{
	Latch *latch = nullptr;

	LWLockAcquire(&w->lock, LW_SHARED);
	int head = HeadOf(w, key);

	if (head >= 0)
		latch = w->slots[head].latch;
	LWLockRelease(&w->lock);
	if (latch != nullptr)
		SetLatch(latch);
}

void
WakeEverybody(LeaseWaiters *w)
{
	LWLockAcquire(&w->lock, LW_SHARED);
	for (int i = 0; i < w->nslots; i++)
		if (w->slots[i].in_use)
			SetLatch(w->slots[i].latch);
	LWLockRelease(&w->lock);
}

void
AtXactEnd(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	if (npending == 0 && !pending_overflow)
		return;

	LeaseWaiters *w = Waiters();

	if (w != nullptr && pg_atomic_read_u32(&w->waiting) > 0)
	{
		if (pending_overflow)
			WakeEverybody(w);
		else
			for (int i = 0; i < npending; i++)
				WakeHead(w, pending[i]);
	}
	npending = 0;
	pending_overflow = false;
}

void
AtBackendExit(int code, Datum arg)
{
	if (my_slot >= 0)
		LeaveLeaseQueue(my_slot);
}

} /* namespace */

Size
LeaseWaitersShmemSize()
{
	return add_size(offsetof(LeaseWaiters, slots), mul_size(sizeof(WaiterSlot), MaxBackends));
}

void
LeaseWaitersShmemInit(void *ptr, int tranche_id)
{
	LeaseWaiters *w = static_cast<LeaseWaiters *>(ptr);

	LWLockInitialize(&w->lock, tranche_id);
	w->next_ticket = 1;
	w->nslots = MaxBackends;
	pg_atomic_init_u32(&w->waiting, 0);
	for (int i = 0; i < w->nslots; i++)
		w->slots[i].in_use = false;
}

void
LeaseWaitersShmemAttach(void *ptr)
{
	waiters = static_cast<LeaseWaiters *>(ptr);
}

uint64
LeaseWaitKey(uint64 name_hash)
{
	return hash_combine64(name_hash, (uint64) MyDatabaseId);
}

int
JoinLeaseQueue(uint64 key)
{
	/*
	 * A new backend has not attached the named segment yet (17+ without the
	 * preload): attach now, or the queue looks absent and the wait falls
	 * back to polling.
	 */
	if (!AttachShared())
		return -1;

	LeaseWaiters *w = Waiters();
	int           slot = -1;

	if (w == nullptr || MyProc == nullptr)
		return -1;
	if (!exit_hook_registered)
	{
		before_shmem_exit(AtBackendExit, (Datum) 0);
		exit_hook_registered = true;
	}
	LWLockAcquire(&w->lock, LW_EXCLUSIVE);
	for (int i = 0; i < w->nslots; i++)
		if (!w->slots[i].in_use)
		{
			w->slots[i].in_use = true;
			w->slots[i].key = key;
			w->slots[i].ticket = w->next_ticket++;
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
LeaveLeaseQueue(int slot)
{
	LeaseWaiters *w = Waiters();

	if (slot < 0 || w == nullptr)
		return;
	my_slot = -1;

	uint64 key;

	LWLockAcquire(&w->lock, LW_EXCLUSIVE);
	key = w->slots[slot].key;
	w->slots[slot].in_use = false;
	pg_atomic_fetch_sub_u32(&w->waiting, 1);
	LWLockRelease(&w->lock);
	/* the next waiter is the head now: it takes over the expiry timer */
	WakeHead(w, key);
}

bool
IsLeaseQueueHead(int slot)
{
	LeaseWaiters *w = Waiters();

	if (slot < 0 || w == nullptr)
		return true;
	LWLockAcquire(&w->lock, LW_SHARED);
	bool head = HeadOf(w, w->slots[slot].key) == slot;

	LWLockRelease(&w->lock);
	return head;
}

void
WakeLeaseWaitersAtEnd(uint64 key)
{
	/*
	 * Attach here, not in the callback: attaching a named segment may
	 * allocate and raise ERROR, which the end of a transaction cannot take.
	 * The callers have attached already (LeaseBegin): this is a check.
	 */
	if (!AttachShared())
		return;
	if (!callback_registered)
	{
		RegisterXactCallback(AtXactEnd, nullptr);
		callback_registered = true;
	}
	for (int i = 0; i < npending; i++)
		if (pending[i] == key)
			return;
	if (npending < kMaxPending)
		pending[npending++] = key;
	else
		pending_overflow = true;
}

void
WaitForLeaseLock(uint64 name_hash, TimestampTz deadline)
{
	LOCKTAG     tag;
	TimestampTz now = GetCurrentTimestamp();

	if (now >= deadline)
		return;

	const int64   left_ms = (deadline - now + 999) / 1000;
	const int     saved_timeout = LockTimeout;
	const int     ours = (int) Min(left_ms, (int64) PG_INT32_MAX);
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile bool timed_out = false;

	SetLockTag(&tag, kLeaseLockTagClass, name_hash);
	/* the caller's lock_timeout still applies when it is shorter */
	LockTimeout = (saved_timeout > 0 && saved_timeout < ours) ? saved_timeout : ours;
	PG_TRY();
	{
		if (LockAcquire(&tag, ExclusiveLock, false, false) != LOCKACQUIRE_NOT_AVAIL)
			LockRelease(&tag, ExclusiveLock, false);
	}
	PG_CATCH();
	{
		LockTimeout = saved_timeout;
		LockErrorCleanup();
		if (compat::HoldsLock(&tag, ExclusiveLock))
			LockRelease(&tag, ExclusiveLock, false);
		MemoryContextSwitchTo(oldcxt);

		ErrorData *edata = CopyErrorData();

		/* our own timeout: the wait is over, the caller looks again */
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE &&
			(saved_timeout <= 0 || ours < saved_timeout))
			timed_out = true;
		FreeErrorData(edata);
		if (!timed_out)
			PG_RE_THROW();
		FlushErrorState();
	}
	PG_END_TRY();
	LockTimeout = saved_timeout;
}

uint32
LeaseWaitEvent()
{
	static uint32 event = 0;

	if (event == 0)
		event = compat::CustomWaitEvent("PgFenceLease");
	return event != 0 ? event : PG_WAIT_EXTENSION;
}

} /* namespace fence */
