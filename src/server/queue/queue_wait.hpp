/*-------------------------------------------------------------------------
 *
 * queue_wait.hpp
 *	  Waiting for a job in the server (fence.claim(..., wait)), the
 *	  wake-ups at the end of transactions that made a job runnable, and the
 *	  claimant's session lock that lets a claim be rescued the moment its
 *	  session ends (src/server/queue/queue_wait.cpp).
 *
 * Waiters take one slot of a shared array keyed by (database, queue hash);
 * unlike lease waiters (leases/lease_wait.hpp) they are not ordered: a job
 * can go to any of them.  Wake-ups:
 *	 - at the commit of a transaction that enqueued jobs, queued a failed
 *	   attempt again or retried a job of the queue: as many waiters of the
 *	   queue as it made jobs runnable (all of them past a limit);
 *	 - when a session that has claimed jobs ends: every waiter of its
 *	   database, after its session lock is released, and the shared count
 *	   of ended claimants moves, so that the next claim of any backend
 *	   looks for claims of ended sessions (RescueNeeded).
 *
 * The claimant lock: a session that claims takes, once, a session-level
 * advisory lock of class kWorkerLockTagClass ("fw") on its claimant key (a
 * hash of its pid and start time, recorded in the job rows it claims).  A
 * claim of a running job whose claimant's lock is free (ClaimantGone) is
 * rescued at once.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/queue_wait.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/pg.hpp"

namespace fence {

/* Tag class of a claiming session's lock; "fw" in ASCII. */
constexpr uint16 kWorkerLockTagClass = 0x6677;

/* The waiters' part of the shared block (composed by src/server/shmem.cpp). */
Size QueueWaitersShmemSize();
void QueueWaitersShmemInit(void *ptr, int tranche_id);
void QueueWaitersShmemAttach(void *ptr);

/* The wait key of a queue name hash in this database. */
uint64 QueueWaitKey(uint64 queue_hash);

/*
 * This session's claimant key, taking its session lock first (once per
 * session) and registering the exit hook that wakes waiters when the
 * session ends.  PostgreSQL-style (may raise ERROR): call before anything
 * else is held.
 */
int64 MyClaimantKey();

/* Has the session with this claimant key ended (its lock is free)?  Never for our own key. */
bool ClaimantGone(int64 claimant);

/*
 * Should this claim look for claims of ended sessions?  True once after
 * each change of the shared count of ended claimants this backend has not
 * yet acted on; without shared memory, when `short_of_jobs` (the claim
 * found fewer jobs than asked for).
 */
bool RescueNeeded(bool short_of_jobs);

/* The rescue scan is done: remember the count it acted on. */
void RescueDone();

/*
 * Joins the waiters of `key`; returns the slot, or -1 without shared memory
 * (15/16 without the preload) or no free slot (the caller then polls).
 * The caller must leave on every path out (PG_FINALLY).
 */
int JoinQueueWaiters(uint64 key);

/*
 * Leaves the waiters; a wake-up the waiter got and did not use goes to
 * another waiter of its queue.  Never raises.
 */
void LeaveQueueWaiters(int slot);

/* Before each look for jobs: the waiter has used its wake-up, if any. */
void QueueWaiterLook(int slot);

/*
 * At the commit of the current transaction, wake up to `jobs` waiters of
 * `key`.  Attaches to the shared block first (may raise ERROR).
 */
void WakeQueueWaitersAtCommit(uint64 key, int64 jobs);

/* The wait event of a waiting claim (Extension: PgFenceJob on 17+). */
uint32 QueueWaitEvent();

} /* namespace fence */
