-- sql/0.3.0/40-queue.sql
--
-- The fenced job queue (docs/queue.md; src/server/queue/): fence.enqueue,
-- fence.claim, fence.heartbeat, fence.complete, fence.fail, fence.cancel,
-- fence.retry, the view fence.jobs, fence.queue_stats(), fence.queue_purge().
--
-- Every queue's jobs are rows of one table, fence.queue_jobs.  Nobody reads
-- or writes it directly: the functions are SECURITY INVOKER C functions that
-- switch to the table's owner around fully qualified statements (as the
-- lease functions do, src/server/leases/leases.cpp) and check the caller's
-- role themselves: a role acts only on jobs enqueued by a role whose
-- privileges it has (pg_has_role USAGE), superusers and members of
-- fence_admin on every job.  The view fence.jobs shows the same jobs.
--
-- States: 'queued' (runnable once run_at has come), 'running' (claimed:
-- token and claimed_until), 'completed', 'failed' (for good), 'cancelled'.
-- due_at is when the row is next claimable: run_at for a queued job,
-- claimed_until for a running one (a claim is rescued at its expiry, or at
-- once when the claimant's session ended: the claim then sets due_at to
-- now), so that one index serves every claim.

CREATE SEQUENCE fence.job_id_seq;
REVOKE ALL ON SEQUENCE fence.job_id_seq FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.job_id_seq', '');

CREATE TABLE fence.queue_jobs (
	id            bigint NOT NULL DEFAULT pg_catalog.nextval('fence.job_id_seq'::pg_catalog.regclass),
	queue         text NOT NULL,
	state         text NOT NULL,
	priority      integer NOT NULL DEFAULT 0,
	run_at        timestamptz NOT NULL,
	due_at        timestamptz NOT NULL,
	attempt       integer NOT NULL DEFAULT 0,
	max_attempts  integer NOT NULL,
	token         bigint,
	holder        text,
	claimant      bigint,
	claimant_pid  integer,
	claimed_until timestamptz,
	last_error    text,
	unique_key    text,
	payload       jsonb NOT NULL,
	result        jsonb,
	owner         oid NOT NULL,
	created_at    timestamptz NOT NULL,
	finished_at   timestamptz,
	PRIMARY KEY (id),
	CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running', 'completed', 'failed', 'cancelled']::pg_catalog.text[])),
	CHECK (max_attempts OPERATOR(pg_catalog.>=) 1)
);
REVOKE ALL ON TABLE fence.queue_jobs FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.queue_jobs', '');
COMMENT ON TABLE fence.queue_jobs IS
'pg_fence job queue: one row per job of every queue (id, queue, state, priority, run_at, due_at: when it is next claimable, attempt, max_attempts, token of the current claim, holder text, claimant: the claiming session''s key, claimant_pid, claimed_until, last_error, unique_key, payload, result, owner: the enqueuing role''s OID, created_at, finished_at); changed only by the fence.enqueue, claim, heartbeat, complete, fail, cancel, retry and queue_purge functions; read through the view fence.jobs';

-- The claim: runnable jobs of a queue, in priority order (higher first),
-- then due_at (run_at; a rescued claim's expiry), then id.
CREATE INDEX queue_jobs_claim ON fence.queue_jobs (queue, priority DESC, due_at, id)
	WHERE state OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running']::pg_catalog.text[]);
-- unique_key: one unfinished job per (queue, owner, unique_key), race-safe:
-- keys are scoped per enqueuing role, so that a key never tells one role
-- whether another role's job exists.
CREATE UNIQUE INDEX queue_jobs_unique ON fence.queue_jobs (queue, owner, unique_key)
	WHERE unique_key IS NOT NULL
	  AND state OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running']::pg_catalog.text[]);
-- The running jobs' claimants, for the rescue of claims whose session ended.
-- A running job always has a claimant; "claimant IS NOT NULL" in the
-- predicate keeps the statements that find a job by id and state 'running'
-- (heartbeat, complete, fail) from matching this small index and scanning
-- it whole with the id as a filter: their plans use the primary key.
CREATE INDEX queue_jobs_running ON fence.queue_jobs (claimant)
	WHERE state OPERATOR(pg_catalog.=) 'running' AND claimant IS NOT NULL;
-- fence.queue_purge: finished jobs, oldest first.
CREATE INDEX queue_jobs_finished ON fence.queue_jobs (finished_at)
	WHERE state OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'failed', 'cancelled']::pg_catalog.text[]);

--
-- VOLATILE, PARALLEL UNSAFE, CALLED ON NULL INPUT (a NULL argument is an
-- error, 22023, where the reference says so).  SECURITY INVOKER: they need
-- the caller's role, and switch to the table's owner internally.
--
CREATE FUNCTION fence.enqueue(queue text, payload jsonb,
                              run_at timestamptz DEFAULT pg_catalog.now(),
                              priority integer DEFAULT 0, max_attempts integer DEFAULT 25,
                              unique_key text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_enqueue'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.enqueue(text, jsonb, timestamptz, integer, integer, text) IS
'Adds a job to queue with payload, owned by the calling role, and returns its id. Transactional: workers see it when the caller commits (a rolled-back enqueue never runs), and a waiting fence.claim of the queue is woken at that commit. The job is runnable from run_at (default now; NULL means now); higher priority runs first (default 0; then run_at, then id); it is tried at most max_attempts times (default 25). With unique_key, while a job of the same queue and unique_key enqueued by the same role is queued or running, returns that job''s id instead of adding one (keys are per queue and enqueuing role: other roles'' jobs never match). Raises 22023 for a NULL, empty or over-long (> 1024 bytes) queue or unique_key, a NULL payload, priority or max_attempts, a max_attempts below 1, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.claim(queue text, ttl interval, max_jobs integer DEFAULT 1,
                            wait interval DEFAULT NULL, holder text DEFAULT NULL)
RETURNS TABLE(job_id bigint, token bigint, attempt integer, payload jsonb)
AS 'MODULE_PATHNAME', 'fence_claim'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER ROWS 1;

COMMENT ON FUNCTION fence.claim(text, interval, integer, interval, text) IS
'Claims up to max_jobs (default 1, at most 1000) runnable jobs of queue that the caller may act on (enqueued by a role whose privileges it has, or any as superuser or fence_admin), higher priority first, then run_at, then id, with FOR UPDATE SKIP LOCKED (claimers never block each other), and returns one row per job: job_id, token (a fresh fencing token per job and claim, larger than every earlier claim''s), attempt (1 on the first claim) and payload. Each claim is a lease of ttl from now (server clock): extend it with fence.heartbeat, end it with fence.complete or fence.fail. A claim that expired, or whose claiming session has ended, is claimed again (rescued) with a new token; a rescued job that has used max_attempts fails for good instead. With wait, when nothing is runnable, waits in the server up to wait (woken at once by a committed enqueue, retry or fail with retry of the queue, a run_at arriving, a claim expiring, a claimant''s session ending; wait event PgFenceJob on 17+) and returns no row when it elapses. Raises 22023 for a NULL, empty or over-long queue, a ttl that is NULL, not positive, not finite or longer than fence.max_lease_ttl, a max_jobs NULL or outside 1..1000, a wait that is not positive or not finite, a holder over 1024 bytes, 25006 during recovery or in a read-only transaction, 57014 when a wait is cancelled or hits statement_timeout.';

CREATE FUNCTION fence.heartbeat(job_id bigint, token bigint, ttl interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_heartbeat'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.heartbeat(bigint, bigint, interval) IS
'Extends the claim of job job_id to ttl from now and returns true iff the job is running under token (an expired claim not yet claimed again still counts); returns false, changing nothing, once it is not (rescued, cancelled, finished): the worker must stop. Raises P0002 when no job job_id exists that the caller may act on, 22023 for a NULL job_id or token or an invalid ttl (as fence.claim), 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.complete(job_id bigint, token bigint, result jsonb DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_complete'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.complete(bigint, bigint, jsonb) IS
'Finishes job job_id as completed, storing result, and returns true iff it is running under token (an expired claim not yet claimed again still counts: nobody else ran it); it never returns false. Whenever it does not finish the job it raises FN001, with a message that says why: the job was already completed by this token (a repeated call, e.g. a client retrying after losing its COMMIT''s acknowledgement: the first completion committed), already failed by it, cancelled, or token is not its current claim''s (the claim was rescued and the job claimed again, or token was never its claim''s); counted in fence.stats() stale_writes_rejected and logged ("pg_fence: stale completion rejected: ..."), so that the job''s effects written in the same transaction roll back with it and are never applied twice. Raises P0002 when no job job_id exists that the caller may act on, 22023 for a NULL job_id or token, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.fail(job_id bigint, token bigint, error text, retry_at timestamptz DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_fail'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.fail(bigint, bigint, text, timestamptz) IS
'Ends the claim of job job_id as a failed attempt, records error as last_error, and returns true iff the job is running under token (as fence.complete); false otherwise, changing nothing. With attempts left (attempt < max_attempts) the job is queued again, runnable at retry_at, or by default after an exponential backoff of min(2^attempt seconds x (1 + a random fraction up to 1/4), 1 hour), and a waiting fence.claim of its queue is woken at commit (or at retry_at); otherwise it is failed for good (fence.retry queues it again). Raises P0002 when no job job_id exists that the caller may act on, 22023 for a NULL job_id or token, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.cancel(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_cancel'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.cancel(bigint) IS
'Operator action: cancels job job_id and returns true iff it was queued or running (a running job''s worker then gets false from fence.heartbeat and fence.fail and FN001 from fence.complete); false when it had already finished (completed, failed or cancelled). Raises P0002 when no job job_id exists that the caller may act on (the enqueuing role, a role with its privileges, a superuser or a member of fence_admin), 22023 for a NULL job_id, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.retry(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_retry'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.retry(bigint) IS
'Operator action: makes job job_id runnable now and returns true iff it was failed, cancelled or queued (a scheduled job runs now); its attempts so far are kept, and one more attempt is allowed when they are used up. Returns false for a running or completed job. Wakes a waiting fence.claim of its queue at commit. Raises P0002 when no job job_id exists that the caller may act on, 23505 (its own message, naming the other job) when another unfinished job of the queue and owner role has the same unique_key, 22023 for a NULL job_id, 25006 during recovery or in a read-only transaction.';

-- Maintenance, for operators and pg_cron: finished jobs stay until purged.
CREATE FUNCTION fence.queue_purge(older_than interval DEFAULT NULL, max_jobs integer DEFAULT 10000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_queue_purge'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

REVOKE ALL ON FUNCTION fence.queue_purge(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fence.queue_purge(interval, integer) TO fence_admin;

COMMENT ON FUNCTION fence.queue_purge(interval, integer) IS
'Deletes finished jobs (completed, failed or cancelled) of every queue that finished at least older_than ago (NULL, the default: the superuser setting fence.queue_retention, default 7 days), at most max_jobs of them (default 10000, oldest first), and returns how many it deleted. Queued and running jobs are never deleted. Run it in autocommit, e.g. from pg_cron, repeating while it returns max_jobs. Only superusers and members of fence_admin may call it (42501 otherwise). Raises 22023 for an older_than that is not positive or not finite, a max_jobs NULL or below 1, 25006 during recovery or in a read-only transaction.';

-- The jobs the caller may see: those enqueued by a role whose privileges
-- it has (pg_has_role USAGE), every job for superusers and members of
-- fence_admin.  The role checks that do not depend on the row are
-- uncorrelated subqueries, evaluated once per query.  security_barrier:
-- the filter runs before any function of the caller's query sees a row,
-- so a cheap leaky function in the caller's WHERE (RAISE NOTICE of its
-- argument) cannot read other roles' payloads; leakproof operators (=, <
-- on text, bigint, timestamptz) are still pushed down into the scan.
CREATE VIEW fence.jobs WITH (security_barrier) AS
SELECT j.queue, j.id, j.state, j.attempt, j.max_attempts, j.priority, j.token, j.holder,
       j.run_at, j.claimed_until, j.last_error, j.unique_key, j.payload, j.result,
       j.created_at, j.finished_at
  FROM fence.queue_jobs AS j
 WHERE j.owner OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles AS r
                                         WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
    OR (SELECT pg_catalog.pg_has_role(r.oid, 'USAGE') FROM pg_catalog.pg_roles AS r
         WHERE r.rolname OPERATOR(pg_catalog.=) 'fence_admin')
    OR pg_catalog.pg_has_role(j.owner, 'USAGE');

GRANT SELECT ON fence.jobs TO PUBLIC;

COMMENT ON VIEW fence.jobs IS
'pg_fence job queue: one row per job the caller may see (enqueued by a role whose privileges it has; every job for superusers and members of fence_admin): queue, id, state (queued, running, completed, failed, cancelled), attempt (claims so far), max_attempts, priority (higher runs first), token (of the current or last claim), holder (claim''s holder text), run_at (when a queued job is runnable), claimed_until (a running job''s claim expiry), last_error, unique_key, payload, result, created_at, finished_at.';

-- Counts only, so every queue's for pg_read_all_stats (pg_monitor) too, as
-- pg_stat_activity shows every session to them: an exporter's role needs
-- neither fence_admin nor membership in the enqueuing roles.
CREATE FUNCTION fence.queue_stats()
RETURNS TABLE(queue text, runnable bigint, scheduled bigint, running bigint, completed bigint,
              failed bigint, cancelled bigint, oldest_runnable_age interval)
AS 'MODULE_PATHNAME', 'fence_queue_stats'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.queue_stats() IS
'pg_fence job queue: one row per queue with jobs the caller may see (as fence.jobs; every job for superusers and members of fence_admin or pg_read_all_stats, e.g. pg_monitor, since it shows counts only): runnable (queued, run_at come), scheduled (queued, run_at in the future), running, completed, failed (for good), cancelled, and oldest_runnable_age (how long the oldest runnable job has been runnable, server clock; NULL when none). Finished jobs count until fence.queue_purge removes them.';
