/*-------------------------------------------------------------------------
 *
 * lease_wait.hpp
 *	  Waiting for a lease in the server (fence.lease_acquire(..., wait)):
 *	  the queue of waiters in shared memory, and the wake-ups at the end of
 *	  transactions that changed a lease (src/server/leases/lease_wait.cpp).
 *
 * Every backend that waits for a lease takes one slot of a shared array,
 * keyed by (database, name hash), with a ticket that orders the waiters of
 * one name (first come, first served).  Only the head of a name's queue
 * tries to take the lease and sleeps until the holder's expiry; the others
 * sleep until they are woken or their wait ends.  Wake-ups:
 *	 - at the end (commit or abort) of a transaction that changed a lease
 *	   (acquired, took over, renewed or released it), the head waiter of that
 *	   name, once the change is visible: a release hands the lease to exactly
 *	   one waiter, not to every sleeper;
 *	 - when a waiter leaves the queue (it got the lease, its wait ended, it
 *	   was cancelled or its session died), the new head, which then takes
 *	   over the expiry timer.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/leases/lease_wait.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* The queue's part of the shared block (composed by src/server/shmem.cpp). */
Size LeaseWaitersShmemSize();
void LeaseWaitersShmemInit(void *ptr, int tranche_id);
void LeaseWaitersShmemAttach(void *ptr);

/* The queue key of a lease name in this database. */
uint64 LeaseWaitKey(uint64 name_hash);

/*
 * Joins the queue of `key`; returns the slot, or -1 when there is no shared
 * memory (PostgreSQL 15/16 without the preload) or no free slot.  Attaches
 * this backend to the shared block first (AttachShared), so it may raise
 * ERROR: call it before anything is held.  The caller must leave the queue
 * on every path out (PG_FINALLY).
 */
int JoinLeaseQueue(uint64 key);

/* Leaves the queue and wakes the name's new head waiter.  Never raises. */
void LeaveLeaseQueue(int slot);

/* Is the slot the oldest waiter of its name? */
bool IsLeaseQueueHead(int slot);

/*
 * Wakes the head waiter of `key` when the current transaction ends.
 * Attaches this backend to the shared block first (may raise ERROR), so
 * that the end of the transaction, which must not raise, finds the queue;
 * does nothing without shared memory (15/16 without the preload).
 */
void WakeLeaseWaitersAtEnd(uint64 key);

/*
 * Waits, in the lock manager, until the transaction that holds the name's
 * lease lock (a lease call in flight: its change not yet visible, or its
 * locks not yet released) ends, at most until `deadline`; then returns, with
 * nothing held.  A woken waiter that finds the name busy uses it, so that
 * it is not put back to sleep by the moment between a release's commit
 * (which wakes it) and the release of that transaction's locks.  Raises
 * what the lock manager raises (40P01, 57014, the caller's shorter
 * lock_timeout).
 */
void WaitForLeaseLock(uint64 name_hash, TimestampTz deadline);

/* The wait event of a waiting lease_acquire (Extension: PgFenceLease on 17+). */
uint32 LeaseWaitEvent();

} /* namespace fence */
