-- The locks a guarded INSERT takes (src/server/writes/insert_marks.cpp): its resource's
-- advisory lock (pg_locks.objsubid 26215, ExclusiveLock) until the
-- transaction ends; the mark's row is locked only when the backend has no
-- valid copy of the mark (its first write of the resource, or after a
-- change of the mark), or under REPEATABLE READ.  A transaction holds the
-- lock of half of max_locks_per_transaction resources at most, so that a
-- bulk INSERT or COPY of many resources does not fill the shared lock
-- table; past that it relies on the marks' row locks.
SELECT count(fence.unlock('gil-tokens', fence.try_lock('gil-tokens'))) AS issued
  FROM generate_series(1, 10);
CREATE TABLE gil_log (id bigserial PRIMARY KEY, stream text NOT NULL, body text,
                      fence bigint NOT NULL DEFAULT 0);
-- guard numbers only grow: this guard's marks are those above the highest now
SELECT coalesce(max(guard_id), 0) AS gid FROM fence.insert_marks \gset
SELECT fence.guard('gil_log', 'fence', ARRAY['stream']);
CREATE VIEW gil_locks AS
  SELECT objsubid, mode, count(*) AS locks
    FROM pg_catalog.pg_locks
   WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()
     AND objsubid = 26215
   GROUP BY objsubid, mode;
CREATE VIEW gil_mark AS
  SELECT token, xmax::text = pg_catalog.pg_current_xact_id()::text AS row_locked_by_me
    FROM fence.insert_marks WHERE guard_id > :gid;

-- the first write of a resource creates its mark under the resource's lock
BEGIN;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'first', 5);
SELECT * FROM gil_locks ORDER BY objsubid, mode;
COMMIT;
SELECT count(*) AS marks FROM fence.insert_marks WHERE guard_id > :gid;

-- another backend, with no copy of the mark, reads and locks the mark's row
\c
BEGIN;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'again', 5);
SELECT * FROM gil_locks ORDER BY objsubid, mode;
SELECT * FROM gil_mark;
COMMIT;

-- appending again (READ COMMITTED) compares with the copy: the mark's row is
-- neither read nor locked (no WAL record, no dirty page)
BEGIN;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'and again', 5);
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'and again', 5);
SELECT * FROM gil_locks ORDER BY objsubid, mode;
SELECT * FROM gil_mark;
COMMIT;

-- under REPEATABLE READ the mark's row is locked every time: a mark changed
-- since the snapshot is a serialization failure
-- (test/specs/guard_insert_race.spec)
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'repeatable read', 5);
SELECT * FROM gil_mark;
COMMIT;

-- a stale token is refused from the copy as well, and a rollback releases
-- the lock
BEGIN;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'stale', 4);
ROLLBACK;
SELECT count(*) AS locks_after_rollback FROM gil_locks;

-- a raise rolled back to a savepoint: the copy of the raised mark is
-- forgotten, and the old token is accepted again against the mark
BEGIN;
SAVEPOINT raise;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'raised', 8);
SELECT * FROM gil_mark;
ROLLBACK TO SAVEPOINT raise;
SELECT * FROM gil_mark;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'after rollback to savepoint', 5);
COMMIT;
-- ... and the same for a whole transaction
BEGIN;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'raised', 8);
ROLLBACK;
INSERT INTO gil_log (stream, body, fence) VALUES ('s-1', 'after rollback', 5);
SELECT * FROM gil_mark;

-- a bulk INSERT of many resources: the lock of the first of them until the
-- transaction ends, none for the rest; the lock table does not fill up
SELECT current_setting('max_locks_per_transaction')::int / 2 AS lim \gset
BEGIN;
INSERT INTO gil_log (stream, body, fence)
  SELECT 'bulk-' || g, 'bulk', 6 FROM generate_series(1, 20000) g;
SELECT count(*) = :lim AS resource_locks_at_limit
  FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid() AND objsubid = 26215;
-- past the limit each resource's mark is still checked and raised
INSERT INTO gil_log (stream, body, fence) VALUES ('bulk-20000', 'raised', 7);
SAVEPOINT stale;
INSERT INTO gil_log (stream, body, fence) VALUES ('bulk-19999', 'stale', 5);
ROLLBACK TO SAVEPOINT stale;
SELECT count(*) = :lim AS resource_locks_still_at_limit
  FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid() AND objsubid = 26215;
COMMIT;
SELECT count(*) AS marks, max(token) AS highest, count(*) FILTER (WHERE token = 6) AS at_6
  FROM fence.insert_marks WHERE guard_id > :gid;

-- a later transaction starts counting afresh
BEGIN;
INSERT INTO gil_log (stream, body, fence) VALUES ('bulk-1', 'later', 6);
SELECT * FROM gil_locks ORDER BY objsubid, mode;
COMMIT;

SELECT fence.unguard('gil_log');
DROP VIEW gil_mark;
DROP VIEW gil_locks;
DROP TABLE gil_log;

-- copies of marks are of one fence.insert_marks: after DROP EXTENSION and
-- CREATE EXTENSION the guard numbers start again, and a copy of the old
-- table's mark 9 under the same number must not refuse token 5
SELECT current_database() AS regdb \gset
CREATE DATABASE gil_recreate;
\c gil_recreate
SET client_min_messages = warning;
CREATE EXTENSION pg_fence;
SELECT count(fence.unlock('t', fence.try_lock('t'))) AS issued FROM generate_series(1, 10);
CREATE TABLE log (id bigserial PRIMARY KEY, stream text NOT NULL, fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('log', 'fence', ARRAY['stream']);
INSERT INTO log (stream, fence) VALUES ('a', 9);
INSERT INTO log (stream, fence) VALUES ('a', 9);
SELECT guard_id, token FROM fence.insert_marks;
DROP EXTENSION pg_fence CASCADE;
CREATE EXTENSION pg_fence;
SELECT fence.guard('log', 'fence', ARRAY['stream']);
INSERT INTO log (stream, fence) VALUES ('a', 5);
SELECT guard_id, token FROM fence.insert_marks;
\c :regdb
DROP DATABASE gil_recreate;
