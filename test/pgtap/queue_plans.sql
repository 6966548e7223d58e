-- test/pgtap/queue_plans.sql - heartbeat, complete and fail find their job
-- by primary key in their generic plan (the plan a prepared SPI statement
-- ends up with), even when the table's statistics were taken while no job
-- was running: a partial index of running jobs then looks empty, and one
-- whose predicate "state = 'running'" alone matched their WHERE would be
-- scanned whole, with the id as a filter (sql/0.3.0/40-queue.sql,
-- queue_jobs_running).  The statements are those of
-- src/server/queue/queue_table.cpp (kQHeartbeat, kQComplete, kQFail), their
-- WHERE clauses copied.  Run by pg_prove as a superuser; rolled back.
BEGIN;
SELECT plan(3);

SELECT count(fence.enqueue('tap/plans', '{}')) FROM generate_series(1, 2000);
ANALYZE fence.queue_jobs;
SELECT count(*) FROM fence.claim('tap/plans', '1 hour', 8);
SET LOCAL plan_cache_mode = force_generic_plan;

CREATE FUNCTION pg_temp.plan_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	plan text := '';
BEGIN
	FOR line IN EXECUTE 'EXPLAIN ' || stmt LOOP
		plan := plan || line || E'\n';
	END LOOP;
	RETURN plan;
END
$$;

PREPARE hb(bigint, bigint, oid, boolean, timestamptz) AS
UPDATE fence.queue_jobs SET claimed_until = $5, due_at = $5
WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2
  AND state OPERATOR(pg_catalog.=) 'running'
  AND (owner OPERATOR(pg_catalog.=) $3 OR $4 OR pg_catalog.pg_has_role($3, owner, 'USAGE'));
PREPARE cp(bigint, bigint, oid, boolean, timestamptz, jsonb) AS
UPDATE fence.queue_jobs SET state = 'completed', result = $6, finished_at = $5,
  claimed_until = NULL, claimant = NULL, claimant_pid = NULL
WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2
  AND state OPERATOR(pg_catalog.=) 'running'
  AND (owner OPERATOR(pg_catalog.=) $3 OR $4 OR pg_catalog.pg_has_role($3, owner, 'USAGE'));
PREPARE fl(bigint, bigint, oid, boolean, timestamptz, text) AS
UPDATE fence.queue_jobs SET state = 'queued', last_error = $6, due_at = $5, run_at = $5,
  claimed_until = NULL, claimant = NULL, claimant_pid = NULL
WHERE id OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2
  AND state OPERATOR(pg_catalog.=) 'running'
  AND (owner OPERATOR(pg_catalog.=) $3 OR $4 OR pg_catalog.pg_has_role($3, owner, 'USAGE'))
RETURNING state, queue, run_at;

SELECT matches(pg_temp.plan_of('EXECUTE hb(1, 1, 10, true, now())'),
	'Index Scan using queue_jobs_pkey', 'heartbeat''s generic plan looks the job up by primary key');
SELECT matches(pg_temp.plan_of('EXECUTE cp(1, 1, 10, true, now(), NULL)'),
	'Index Scan using queue_jobs_pkey', 'complete''s generic plan looks the job up by primary key');
SELECT matches(pg_temp.plan_of('EXECUTE fl(1, 1, 10, true, now(), ''e'')'),
	'Index Scan using queue_jobs_pkey', 'fail''s generic plan looks the job up by primary key');

SELECT * FROM finish();
ROLLBACK;
