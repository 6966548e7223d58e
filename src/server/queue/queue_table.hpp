/*-------------------------------------------------------------------------
 *
 * queue_table.hpp
 *	  The statements on fence.queue_jobs and the frame of every queue call
 *	  (src/server/queue/queue_table.cpp), shared by the enqueue and operator
 *	  actions (jobs.cpp), the claim (claim.cpp) and the claimant's calls
 *	  (job_finish.cpp).
 *
 * Every call connects SPI, switches to the owner of fence.queue_jobs and
 * runs prepared, fully qualified statements on the latest snapshot (as the
 * lease functions do: src/server/leases/leases.cpp, design notes 2 and 4).
 * The caller's right to act on a job is part of each statement: the job's
 * owner (the enqueuing role) is the caller, or a role whose privileges the
 * caller has (pg_has_role USAGE), or the caller is a superuser or a member
 * of fence_admin (docs/queue.md, "Privileges").
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/queue_table.hpp
 *
 *-------------------------------------------------------------------------
 */
#pragma once

#include "pg/args.hpp"
#include "pg/pg.hpp"
#include "pg/spi_frame.hpp"

namespace fence {

/* The SPI statements on fence.queue_jobs, prepared once per session. */
enum QueueStmt
{
	kQInsert,        /* ($1 queue, $2 priority, $3 run_at, $4 max_attempts, $5 unique_key,
					   *  $6 payload, $7 owner, $8 now): RETURNING id; a unique_key
					   *  conflict inserts nothing */
	kQUniqueId,      /* ($1 queue, $2 unique_key, $3 owner): id of the unfinished job */
	kQClaimSelect,   /* ($1 queue, $2 now, $3 limit, $4 caller, $5 admin): id, state,
					   *  attempt, max_attempts, token, claimed_until, FOR UPDATE SKIP LOCKED */
	kQClaimUpdate,   /* ($1 id, $2 token, $3 holder, $4 claimant, $5 pid, $6 claimed_until):
					   *  RETURNING attempt, payload */
	kQFailExhausted, /* ($1 id, $2 now, $3 error): a rescued job out of attempts */
	kQRunningClaims, /* ($1 now): the claimants of unexpired running jobs */
	kQRescue,        /* ($1 claimant, $2 now): its running jobs become claimable now;
					   *  RETURNING queue */
	kQClaimantLeft,  /* ($1 claimant, $2 now): one of its running jobs not yet rescued */
	kQNextDue,       /* ($1 queue, $2 caller, $3 admin): the earliest due_at */
	kQHeartbeat,     /* ($1 id, $2 token, $3 caller, $4 admin, $5 claimed_until) */
	kQComplete,      /* ($1 id, $2 token, $3 caller, $4 admin, $5 now, $6 result) */
	kQFail,          /* ($1 id, $2 token, $3 caller, $4 admin, $5 now, $6 error,
					   *  $7 retry_at, $8 jitter factor): RETURNING state, queue, run_at */
	kQLookup,        /* ($1 id, $2 caller, $3 admin): state, token, queue, unique_key, owner */
	kQCancel,        /* ($1 id, $2 caller, $3 admin, $4 now): RETURNING queue */
	kQRetry,         /* ($1 id, $2 caller, $3 admin, $4 now): RETURNING queue */
	kQPurge,         /* ($1 cutoff, $2 limit): deletes finished jobs */
	kQStats,         /* ($1 caller, $2 every job, $3 now): fence.queue_stats()'s rows */
	kQNumStmts
};

/* State of one call between QueueBegin and QueueEnd. */
struct QueueCall
{
	Oid            caller; /* current_user at entry */
	bool           admin;  /* the caller is a superuser or has fence_admin's privileges */
	SpiOwnerSwitch owner_switch;
};

/* SPI, the session's plans, and the switch to the table's owner. */
void QueueBegin(QueueCall *call);

/* Undo QueueBegin. */
void QueueEnd(QueueCall *call);

/* Run a prepared statement on a fresh snapshot; returns SPI_processed. */
uint64 QueueExec(QueueStmt stmt, Datum *values, const char *nulls, int expected);

/* Column `col` (1-based) of row `row` of the last statement's result. */
Datum QueueValue(uint64 row, int col, bool *isnull);

/* 25006 during recovery or in a read-only transaction: "cannot <what> during recovery". */
void CheckQueueWritable(const char *what);

/* P0002: no job `id` the caller may act on. */
[[noreturn]] void RaiseNoSuchJob(int64 id);

/* The wait key of a queue given as a text Datum. */
uint64 QueueKeyOfDatum(Datum queue);

/* Define fence.queue_retention, from _PG_init (queue.hpp). */
void DefineQueueSettings();

/* fence.queue_retention, in microseconds. */
int64 QueueRetention();

} /* namespace fence */
