-- bench/fn004_loop.sql - the CPU cost of the FN004 check (no forged tokens),
-- measured inside one backend, without client round trips or commit
-- flushes, which dominate (and add noise to) the pgbench scenarios of
-- bench/run.sh.  Each kind of write runs 10,000 times with
-- fence.require_issued_tokens on and off, alternating (on off off on), five
-- times; the best time of each is kept.  Rolled back after each run.
--
--   fenced_update  fence.fenced_update of 10,000 rows with one token (the
--                  backend's remembered bound answers the check)
--   guard_set      UPDATE of a guarded table, token in fence.token
--   fresh_token    fence.try_xact_lock + fence.fenced_update: a new token
--                  per write, above the remembered bound, so the check reads
--                  the shared counter (or the sequence) every time
--
-- Run on a throwaway cluster (needs a superuser, for the setting):
--   bash scripts/temp-cluster.sh psql -X -q -f bench/fn004_loop.sql
\set QUIET on
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP SCHEMA IF EXISTS fn004 CASCADE;
CREATE SCHEMA fn004;
CREATE TABLE fn004.fu (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fn004.fu SELECT g, 'x', 0 FROM generate_series(1, 10000) g;
CREATE TABLE fn004.g (LIKE fn004.fu INCLUDING ALL);
INSERT INTO fn004.g SELECT * FROM fn004.fu;
SELECT fence.guard('fn004.g') \gset
CREATE TABLE fn004.tim (kind text, mode text, ms float8);
CREATE PROCEDURE fn004.run(kind text, mode text) LANGUAGE plpgsql AS $$
DECLARE
	t0  timestamptz;
	tok bigint;
	ms  float8;
BEGIN
	PERFORM pg_catalog.set_config('fence.require_issued_tokens', mode, false);
	tok := fence.try_xact_lock('fn004-base');
	COMMIT;
	t0 := clock_timestamp();
	FOR i IN 1..10000 LOOP
		IF kind = 'fenced_update' THEN
			PERFORM fence.fenced_update('fn004.fu', jsonb_build_object('id', i), tok,
										'{"body": "y"}', 'fence', true);
		ELSIF kind = 'guard_set' THEN
			PERFORM pg_catalog.set_config('fence.token', tok::text, true);
			UPDATE fn004.g SET body = 'y' WHERE id = i;
		ELSE
			PERFORM fence.fenced_update('fn004.fu', jsonb_build_object('id', i),
										fence.try_xact_lock('fn004-' || i), '{"body": "y"}',
										'fence', true);
		END IF;
	END LOOP;
	ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
	ROLLBACK;
	INSERT INTO fn004.tim VALUES (kind, mode, ms);
	COMMIT;
END $$;
CALL fn004.run('fenced_update', 'on'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'on');
CALL fn004.run('guard_set', 'on'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'on');
CALL fn004.run('fresh_token', 'on'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'on');
CALL fn004.run('fenced_update', 'on'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'on');
CALL fn004.run('guard_set', 'on'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'on');
CALL fn004.run('fresh_token', 'on'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'on');
CALL fn004.run('fenced_update', 'on'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'on');
CALL fn004.run('guard_set', 'on'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'on');
CALL fn004.run('fresh_token', 'on'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'on');
CALL fn004.run('fenced_update', 'on'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'on');
CALL fn004.run('guard_set', 'on'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'on');
CALL fn004.run('fresh_token', 'on'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'on');
CALL fn004.run('fenced_update', 'on'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'off'); CALL fn004.run('fenced_update', 'on');
CALL fn004.run('guard_set', 'on'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'off'); CALL fn004.run('guard_set', 'on');
CALL fn004.run('fresh_token', 'on'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'off'); CALL fn004.run('fresh_token', 'on');
\set QUIET off
SELECT kind,
       round((min(ms) FILTER (WHERE mode = 'on') / 10)::numeric, 2) AS us_per_write_on,
       round((min(ms) FILTER (WHERE mode = 'off') / 10)::numeric, 2) AS us_per_write_off,
       round((min(ms) FILTER (WHERE mode = 'off') / min(ms) FILTER (WHERE mode = 'on'))::numeric, 3)
           AS ratio_on_off
  FROM fn004.tim GROUP BY kind ORDER BY kind;
DROP SCHEMA fn004 CASCADE;
