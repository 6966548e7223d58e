-- bench/guard_insert_loop.sql - the CPU cost of a guarded INSERT (fence.guard
-- with resource_columns) per row, measured inside one backend, without the
-- client round trips and commit flushes that dominate (and add noise to)
-- the pgbench scenario guard_insert of bench/run.sh.
--
-- 20,000 INSERTs of one row each into a log of 1000 streams, each INSERT its
-- own transaction (COMMIT in the loop, synchronous_commit = off: no flush
-- wait, but every transaction takes its XID, takes its stream's lock and
-- commits, as one pgbench transaction does); the row presents the token its
-- stream's mark holds (a holder appending again). Guarded and unguarded
-- twin alternate (g u u g), five times; the best time of each is kept.
--
-- Run on a throwaway cluster:
--   bash scripts/temp-cluster.sh psql -X -q -f bench/guard_insert_loop.sql
\set QUIET on
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SET synchronous_commit = off;
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP SCHEMA IF EXISTS gil CASCADE;
CREATE SCHEMA gil;
CREATE TABLE gil.log_g (id bigserial PRIMARY KEY, stream text NOT NULL, body text,
                        fence bigint NOT NULL DEFAULT 0);
CREATE TABLE gil.log_u (LIKE gil.log_g INCLUDING ALL);
SELECT fence.guard('gil.log_g', 'fence', ARRAY['stream']) \gset
-- a fenced write refuses a token the database never issued (FN004)
SELECT count(fence.unlock('gil-tokens', fence.try_lock('gil-tokens'))) FROM generate_series(1, 5) \gset
-- every stream's mark exists (at token 5): the common case
INSERT INTO gil.log_g (stream, body, fence) SELECT 'stream-' || g, 'first', 5 FROM generate_series(1, 1000) g;
CREATE TABLE gil.tim (kind text, ms float8);
CREATE PROCEDURE gil.run(kind text) LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	ms float8;
BEGIN
	t0 := clock_timestamp();
	FOR i IN 1..20000 LOOP
		IF kind = 'guarded' THEN
			INSERT INTO gil.log_g (stream, body, fence)
				VALUES ('stream-' || (1 + (i * 7919) % 1000), 'event', 5);
		ELSE
			INSERT INTO gil.log_u (stream, body, fence)
				VALUES ('stream-' || (1 + (i * 7919) % 1000), 'event', 5);
		END IF;
		COMMIT;
	END LOOP;
	ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
	INSERT INTO gil.tim VALUES (kind, ms);
	COMMIT;
END $$;
CALL gil.run('guarded'); CALL gil.run('unguarded'); CALL gil.run('unguarded'); CALL gil.run('guarded');
CALL gil.run('guarded'); CALL gil.run('unguarded'); CALL gil.run('unguarded'); CALL gil.run('guarded');
CALL gil.run('guarded'); CALL gil.run('unguarded'); CALL gil.run('unguarded'); CALL gil.run('guarded');
CALL gil.run('guarded'); CALL gil.run('unguarded'); CALL gil.run('unguarded'); CALL gil.run('guarded');
CALL gil.run('guarded'); CALL gil.run('unguarded'); CALL gil.run('unguarded'); CALL gil.run('guarded');
\set QUIET off
SELECT round((min(ms) FILTER (WHERE kind = 'guarded') / 20)::numeric, 2) AS us_per_insert_guarded,
       round((min(ms) FILTER (WHERE kind = 'unguarded') / 20)::numeric, 2) AS us_per_insert_unguarded,
       round((min(ms) FILTER (WHERE kind = 'unguarded') / min(ms) FILTER (WHERE kind = 'guarded'))::numeric, 3)
           AS ratio
  FROM gil.tim;
SELECT fence.unguard('gil.log_g') \gset
DROP SCHEMA gil CASCADE;
