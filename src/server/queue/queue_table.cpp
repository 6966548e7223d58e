/*-------------------------------------------------------------------------
 *
 * queue_table.cpp
 *	  The statements on fence.queue_jobs and the frame of every queue call
 *	  (queue_table.hpp), fence.queue_retention.
 *
 * Every operator and function is pg_catalog's, every relation and type
 * qualified, and parameter types come from OIDs, so no name here depends on
 * search_path (CONTRIBUTING.md, "Security hardening of the installed SQL").
 * The state lists are written exactly as the partial indexes' predicates
 * (sql/0.3.0/40-queue.sql), so that the planner matches them.
 *
 * This file is PostgreSQL-style code (only trivially destructible locals).
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/server/queue/queue_table.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "queue/queue_table.hpp"

#include "pg/extension_table.hpp"
#include "pg/lock_tag.hpp"
#include "queue/queue_wait.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
}

namespace fence {

namespace {

#define Q_UNFINISHED "ARRAY['queued', 'running']::pg_catalog.text[]"
#define Q_FINISHED "ARRAY['completed', 'failed', 'cancelled']::pg_catalog.text[]"
/* the caller ($c) may act on the row: its role, a role it has the privileges of, or admin ($a) */
#define Q_MAY(c, a)                                                                         \
	"(owner OPERATOR(pg_catalog.=) " c " OR " a " OR pg_catalog.pg_has_role(" c ", owner, " \
	"'USAGE'))"

const SpiStmt kStmts[kQNumStmts] = {
	/* kQInsert */
	{"INSERT INTO fence.queue_jobs (queue, state, priority, run_at, due_at, max_attempts, "
	 "unique_key, payload, owner, created_at) "
	 "VALUES ($1, 'queued', $2, $3, $3, $4, $5, $6, $7, $8) "
	 "ON CONFLICT (queue, owner, unique_key) WHERE unique_key IS NOT NULL "
	 "AND state OPERATOR(pg_catalog.=) ANY (" Q_UNFINISHED ") DO NOTHING RETURNING id",
	 8,
	 {TEXTOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, JSONBOID, OIDOID, TIMESTAMPTZOID}},
	/* kQUniqueId */
	{"SELECT id FROM fence.queue_jobs WHERE queue OPERATOR(pg_catalog.=) $1 "
	 "AND owner OPERATOR(pg_catalog.=) $3 "
	 "AND unique_key OPERATOR(pg_catalog.=) $2 AND unique_key IS NOT NULL "
	 "AND state OPERATOR(pg_catalog.=) ANY (" Q_UNFINISHED ")",
	 3,
	 {TEXTOID, TEXTOID, OIDOID}},
	/* kQClaimSelect */
	{"SELECT id, state, attempt, max_attempts, token, claimed_until FROM fence.queue_jobs "
	 "WHERE queue OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) ANY (" Q_UNFINISHED
	 ") AND due_at OPERATOR(pg_catalog.<=) $2 AND " Q_MAY(
		 "$4", "$5") " "
					 "ORDER BY priority DESC, due_at, id LIMIT $3 FOR UPDATE SKIP LOCKED",
	 5,
	 {TEXTOID, TIMESTAMPTZOID, INT4OID, OIDOID, BOOLOID}},
	/* kQClaimUpdate */
	{"UPDATE fence.queue_jobs SET state = 'running', attempt = attempt OPERATOR(pg_catalog.+) 1, "
	 "token = $2, holder = $3, claimant = $4, claimant_pid = $5, claimed_until = $6, due_at = $6 "
	 "WHERE id OPERATOR(pg_catalog.=) $1 RETURNING attempt, payload",
	 6,
	 {INT8OID, INT8OID, TEXTOID, INT8OID, INT4OID, TIMESTAMPTZOID}},
	/* kQFailExhausted */
	{"UPDATE fence.queue_jobs SET state = 'failed', finished_at = $2, last_error = $3, "
	 "claimed_until = NULL, claimant = NULL, claimant_pid = NULL "
	 "WHERE id OPERATOR(pg_catalog.=) $1",
	 3,
	 {INT8OID, TIMESTAMPTZOID, TEXTOID}},
	/* kQRunningClaims */
	{"SELECT DISTINCT claimant FROM fence.queue_jobs WHERE state OPERATOR(pg_catalog.=) "
	 "'running' AND claimant IS NOT NULL AND due_at OPERATOR(pg_catalog.>) $1",
	 1,
	 {TIMESTAMPTZOID}},
	/* kQRescue */
	{"UPDATE fence.queue_jobs SET due_at = $2, claimed_until = $2 "
	 "WHERE id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT id FROM fence.queue_jobs "
	 "WHERE claimant OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'running' "
	 "AND due_at OPERATOR(pg_catalog.>) $2 FOR UPDATE SKIP LOCKED)) RETURNING queue",
	 2,
	 {INT8OID, TIMESTAMPTZOID}},
	/* kQClaimantLeft */
	{"SELECT id FROM fence.queue_jobs WHERE claimant OPERATOR(pg_catalog.=) $1 "
	 "AND state OPERATOR(pg_catalog.=) 'running' AND due_at OPERATOR(pg_catalog.>) $2 LIMIT 1",
	 2,
	 {INT8OID, TIMESTAMPTZOID}},
	/* kQNextDue */
	{"SELECT pg_catalog.min(due_at) FROM fence.queue_jobs WHERE queue OPERATOR(pg_catalog.=) $1 "
	 "AND state OPERATOR(pg_catalog.=) ANY (" Q_UNFINISHED ") AND " Q_MAY("$2", "$3"),
	 3,
	 {TEXTOID, OIDOID, BOOLOID}},
	/* kQHeartbeat */
	{"UPDATE fence.queue_jobs SET claimed_until = $5, due_at = $5 "
	 "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'running' AND " Q_MAY("$3", "$4"),
	 5,
	 {INT8OID, INT8OID, OIDOID, BOOLOID, TIMESTAMPTZOID}},
	/* kQComplete */
	{"UPDATE fence.queue_jobs SET state = 'completed', result = $6, finished_at = $5, "
	 "claimed_until = NULL, claimant = NULL, claimant_pid = NULL "
	 "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'running' AND " Q_MAY("$3", "$4"),
	 6,
	 {INT8OID, INT8OID, OIDOID, BOOLOID, TIMESTAMPTZOID, JSONBOID}},
/* kQFail: backoff min(2^attempt s x jitter, 1 h) (docs/queue.md, "Retries") */
#define Q_RETRY_AT                                                                             \
	"COALESCE($7, $5 OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => "                 \
	"LEAST(pg_catalog.power(2::pg_catalog.float8, LEAST(attempt, 12)) OPERATOR(pg_catalog.*) " \
	"$8, 3600::pg_catalog.float8)))"
#define Q_EXHAUSTED "attempt OPERATOR(pg_catalog.>=) max_attempts"
	{"UPDATE fence.queue_jobs SET "
	 "state = CASE WHEN " Q_EXHAUSTED " THEN 'failed' ELSE 'queued' END, "
	 "finished_at = CASE WHEN " Q_EXHAUSTED " THEN $5 END, "
	 "run_at = CASE WHEN " Q_EXHAUSTED " THEN run_at ELSE " Q_RETRY_AT " END, "
	 "due_at = CASE WHEN " Q_EXHAUSTED " THEN due_at ELSE " Q_RETRY_AT " END, "
	 "last_error = $6, claimed_until = NULL, claimant = NULL, claimant_pid = NULL "
	 "WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2 "
	 "AND state OPERATOR(pg_catalog.=) 'running' AND " Q_MAY("$3",
															 "$4") " "
																   "RETURNING state, queue, run_at",
	 8,
	 {INT8OID, INT8OID, OIDOID, BOOLOID, TIMESTAMPTZOID, TEXTOID, TIMESTAMPTZOID, FLOAT8OID}},
	/* kQLookup */
	{"SELECT state, token, queue, unique_key, owner FROM fence.queue_jobs "
	 "WHERE id OPERATOR(pg_catalog.=) $1 "
	 "AND " Q_MAY("$2", "$3"),
	 3,
	 {INT8OID, OIDOID, BOOLOID}},
	/* kQCancel */
	{"UPDATE fence.queue_jobs SET state = 'cancelled', finished_at = $4, claimed_until = NULL, "
	 "claimant = NULL, claimant_pid = NULL "
	 "WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) ANY (" Q_UNFINISHED
	 ") AND " Q_MAY("$2", "$3") " RETURNING queue",
	 4,
	 {INT8OID, OIDOID, BOOLOID, TIMESTAMPTZOID}},
	/* kQRetry */
	{"UPDATE fence.queue_jobs SET state = 'queued', run_at = $4, due_at = $4, finished_at = NULL, "
	 "claimed_until = NULL, claimant = NULL, claimant_pid = NULL "
	 "WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) ANY "
	 "(ARRAY['queued', 'failed', 'cancelled']::pg_catalog.text[]) "
	 "AND " Q_MAY("$2", "$3") " RETURNING queue",
	 4,
	 {INT8OID, OIDOID, BOOLOID, TIMESTAMPTZOID}},
	/* kQPurge */
	{"DELETE FROM fence.queue_jobs WHERE id OPERATOR(pg_catalog.=) ANY (ARRAY("
	 "SELECT id FROM fence.queue_jobs WHERE state OPERATOR(pg_catalog.=) ANY (" Q_FINISHED ") "
	 "AND finished_at OPERATOR(pg_catalog.<=) $1 ORDER BY finished_at LIMIT $2 "
	 "FOR UPDATE SKIP LOCKED))",
	 2,
	 {TIMESTAMPTZOID, INT4OID}},
/* kQStats */
#define Q_RUNNABLE "state OPERATOR(pg_catalog.=) 'queued' AND run_at OPERATOR(pg_catalog.<=) $3"
	{"SELECT queue, "
	 "pg_catalog.count(*) FILTER (WHERE " Q_RUNNABLE "), "
	 "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'queued' "
	 "AND run_at OPERATOR(pg_catalog.>) $3), "
	 "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'running'), "
	 "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'completed'), "
	 "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'failed'), "
	 "pg_catalog.count(*) FILTER (WHERE state OPERATOR(pg_catalog.=) 'cancelled'), "
	 "$3 OPERATOR(pg_catalog.-) pg_catalog.min(run_at) FILTER (WHERE " Q_RUNNABLE ") "
	 "FROM fence.queue_jobs WHERE " Q_MAY("$1", "$2") " GROUP BY queue ORDER BY queue",
	 3,
	 {OIDOID, BOOLOID, TIMESTAMPTZOID}},
};

SPIPlanPtr       plans[kQNumStmts];
const SpiStmtSet kSet = {kStmts, plans, kQNumStmts};

/* fence.queue_retention, in seconds. */
constexpr int kDefaultRetentionS = 7 * 24 * 60 * 60;
int           retention_s = kDefaultRetentionS;

/* The owner of fence.queue_jobs (the role the statements run as). */
Oid
QueueTableOwner()
{
	ExtensionTable t = FindExtensionTable(ExtensionTableId::kQueueJobs);

	if (!OidIsValid(t.relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_fence 0.3.0 or later is not installed in this database"),
				 errhint("Run CREATE EXTENSION pg_fence, or ALTER EXTENSION pg_fence UPDATE.")));
	return t.owner;
}

} /* namespace */

void
QueueBegin(QueueCall *call)
{
	Oid owner = QueueTableOwner();
	Oid admin = get_role_oid("fence_admin", true);

	call->caller = GetUserId();
	call->admin = superuser_arg(call->caller) ||
				  (OidIsValid(admin) && has_privs_of_role(call->caller, admin));
	/* errors from here on abort the (sub)transaction, which restores the user ID */
	SpiBeginAsOwner(&call->owner_switch, kSet, owner);
}

void
QueueEnd(QueueCall *call)
{
	SpiEndAsOwner(&call->owner_switch);
}

uint64
QueueExec(QueueStmt stmt, Datum *values, const char *nulls, int expected)
{
	return SpiExecLatest(kSet, stmt, values, nulls, expected);
}

Datum
QueueValue(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

void
CheckQueueWritable(const char *what)
{
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot %s during recovery", what),
						errdetail("Jobs are rows of the table fence.queue_jobs, written only by "
								  "the primary.")));
	if (XactReadOnly)
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
						errmsg("cannot %s in a read-only transaction", what),
						errdetail("Jobs are rows of the table fence.queue_jobs.")));
}

void
RaiseNoSuchJob(int64 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND), errmsg("job " INT64_FORMAT " does not exist", id),
			 errdetail("No job with that id exists that the current role may act on."),
			 errhint("A role acts on the jobs enqueued by roles whose privileges it has; "
					 "members of fence_admin on every job.")));
}

uint64
QueueKeyOfDatum(Datum queue)
{
	text   *t = DatumGetTextPP(queue);
	NameArg name = {VARDATA_ANY(t), (int) VARSIZE_ANY_EXHDR(t)};

	return QueueWaitKey(NameHash(name));
}

void
DefineQueueSettings()
{
	DefineCustomIntVariable(
		"fence.queue_retention",
		"How long finished jobs are kept before fence.queue_purge() deletes them.",
		"Completed, failed and cancelled jobs that finished longer ago than this are deleted by "
		"fence.queue_purge() called without older_than.",
		&retention_s, kDefaultRetentionS, 1, INT_MAX, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr,
		nullptr);
}

int64
QueueRetention()
{
	return (int64) retention_s * USECS_PER_SEC;
}

} /* namespace fence */
