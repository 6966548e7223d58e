-- queue_setup.sql - tables of bench/queue.sh: the effect every job's handler
-- writes (one UPDATE of the row its payload names), and the hand-written
-- SKIP LOCKED queue pg_fence's queue is compared with.  The hand-written
-- queue is what one writes by hand with the same features the comparison
-- needs: a state, a priority, a run_at, attempts, the claimant and its
-- deadline, and a partial index that serves the claim (priority first, then
-- run_at, then id: pg_fence's order).
DROP TABLE IF EXISTS bench_effect, sl_jobs;

CREATE TABLE bench_effect (
	id integer PRIMARY KEY,
	n integer NOT NULL DEFAULT 0
);
INSERT INTO bench_effect (id) SELECT g FROM generate_series(1, :jobs) g;

CREATE TABLE sl_jobs (
	id bigserial PRIMARY KEY,
	queue text NOT NULL,
	payload jsonb NOT NULL,
	state text NOT NULL DEFAULT 'queued',
	priority integer NOT NULL DEFAULT 0,
	run_at timestamptz NOT NULL DEFAULT now(),
	attempt integer NOT NULL DEFAULT 0,
	max_attempts integer NOT NULL DEFAULT 25,
	locked_by text,
	locked_until timestamptz,
	created_at timestamptz NOT NULL DEFAULT now(),
	finished_at timestamptz
);
CREATE INDEX sl_jobs_claim ON sl_jobs (queue, priority DESC, run_at, id) WHERE state = 'queued';
