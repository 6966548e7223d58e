-- fence.guard(rel, fence_column, resource_columns): every INSERT (and
-- UPDATE and DELETE) of a resource must present a token not lower than the
-- highest token that has written a row of that resource.
\set VERBOSITY default
SELECT stale_writes_rejected AS stale0 FROM fence.stats() \gset
-- A fenced write refuses a token this database never issued (FN004): issue
-- tokens first, so that the literal tokens below are real ones.
SELECT count(fence.unlock('gi-tokens', fence.try_lock('gi-tokens'))) AS issued
  FROM generate_series(1, 60);

CREATE TABLE gi_log (id bigserial PRIMARY KEY, stream text NOT NULL, shard int,
                     body text, fence bigint NOT NULL DEFAULT 0);

-- argument errors change nothing
\set VERBOSITY sqlstate
SELECT fence.guard('gi_log', 'fence', ARRAY[]::name[]);            -- 22023 empty
SELECT fence.guard('gi_log', 'fence', ARRAY['stream', NULL]::name[]); -- 22023 NULL element
SELECT fence.guard('gi_log', 'fence', ARRAY['fence']);             -- 22023 the fence column
SELECT fence.guard('gi_log', 'fence', ARRAY['stream', 'stream']);  -- 42701 twice
SELECT fence.guard('gi_log', 'fence', ARRAY['nosuch']);            -- 42703
SELECT fence.guard('gi_log', 'fence', ARRAY['ctid']);              -- 22023 system column
SELECT fence.guard('gi_log', 'fence', ARRAY[ARRAY['stream'], ARRAY['shard']]); -- 22023 2-D
SELECT fence.guard('gi_log', 'fence', (SELECT array_agg('c' || i)::name[] FROM generate_series(1, 33) i)); -- 54000
CREATE TABLE gi_point (id int, p point, g text GENERATED ALWAYS AS ('x') STORED, fence bigint);
SELECT fence.guard('gi_point', 'fence', ARRAY['p']);               -- 42883 no hash function
SELECT fence.guard('gi_point', 'fence', ARRAY['g']);               -- 0A000 generated
\set VERBOSITY default
SELECT fence.guard('gi_log', 'fence', ARRAY['fence']);
SELECT fence.guard('gi_log', 'fence', ARRAY['stream', 'stream']);
SELECT fence.guard('gi_point', 'fence', ARRAY['p']);
SELECT fence.guard('gi_point', 'fence', ARRAY['g']);
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid IN ('gi_log'::regclass, 'gi_point'::regclass);
SELECT count(*) AS marks FROM fence.insert_marks;

-- guard with a resource column: one trigger, for INSERT too
SELECT fence.guard('gi_log', 'fence', ARRAY['stream']);
SELECT tgname, tgtype, tgnargs FROM pg_trigger WHERE tgrelid = 'gi_log'::regclass;

-- the row's fence is its token; equal is accepted; lower is rejected
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'a', 5);
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'b', 5);
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'stale', 3);
-- another resource has a mark of its own
INSERT INTO gi_log (stream, body, fence) VALUES ('payments', 'c', 3);
-- no token: NULL is impossible here, and 0 (the default) presents none
INSERT INTO gi_log (stream, body) VALUES ('orders', 'none');
BEGIN;
SET LOCAL fence.token = 4;
COMMIT;
INSERT INTO gi_log (stream, body) VALUES ('orders', 'token of an earlier transaction');
-- fence.token is stamped into the row
BEGIN;
SET LOCAL fence.token = 7;
INSERT INTO gi_log (stream, body) VALUES ('orders', 'd'), ('payments', 'e');
COMMIT;
-- multi-row: one stale row rejects the statement
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'f', 8), ('payments', 'g', 2);
-- INSERT ... SELECT
INSERT INTO gi_log (stream, body, fence) SELECT 'orders', 'h' || i, 8 FROM generate_series(1, 2) i;
INSERT INTO gi_log (stream, body, fence) SELECT 'orders', 'stale' || i, 7 FROM generate_series(1, 2) i;
-- COPY
COPY gi_log (stream, body, fence) FROM stdin;
orders	copied-1	9
audit	copied-2	1
\.
COPY gi_log (stream, body, fence) FROM stdin;
orders	copied-stale	8
\.
SELECT stream, body, fence FROM gi_log ORDER BY id;

-- ON CONFLICT: the proposed row is checked (DO NOTHING and DO UPDATE)
CREATE UNIQUE INDEX gi_log_body ON gi_log (body);
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'a', 2) ON CONFLICT DO NOTHING;
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'a', 9) ON CONFLICT DO NOTHING;
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'a', 10)
  ON CONFLICT (body) DO UPDATE SET fence = excluded.fence, body = 'a2';
DROP INDEX gi_log_body;

-- MERGE inserts
MERGE INTO gi_log t USING (VALUES ('orders', 'm1', 4::bigint)) s(stream, body, fence)
  ON t.body = s.body WHEN NOT MATCHED THEN INSERT (stream, body, fence) VALUES (s.stream, s.body, s.fence);
MERGE INTO gi_log t USING (VALUES ('orders', 'm1', 10::bigint)) s(stream, body, fence)
  ON t.body = s.body WHEN NOT MATCHED THEN INSERT (stream, body, fence) VALUES (s.stream, s.body, s.fence);

-- UPDATE and DELETE pass the resource's mark too, and raise it
SELECT fence FROM gi_log WHERE body = 'c';                     -- payments, fence 3
UPDATE gi_log SET fence = 6, body = 'c2' WHERE body = 'c';     -- mark of payments is 7
UPDATE gi_log SET fence = 11, body = 'c2' WHERE body = 'c';    -- raises it to 11
INSERT INTO gi_log (stream, body, fence) VALUES ('payments', 'i', 10);
-- moving a row to another resource writes both
UPDATE gi_log SET fence = 12, stream = 'audit' WHERE body = 'c2';
INSERT INTO gi_log (stream, body, fence) VALUES ('audit', 'j', 11);
BEGIN;
SET LOCAL fence.token = 11;
DELETE FROM gi_log WHERE body = 'd';                           -- orders' mark is 10: ok, raised to 11
COMMIT;
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'k', 10);

-- a token never issued is refused before the mark is looked at (FN004)
\set VERBOSITY sqlstate
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'forged', 9223372036854775807);
\set VERBOSITY default

-- a rollback leaves the mark as it was
BEGIN;
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'rolled back', 50);
ROLLBACK;
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'l', 11);
SELECT token FROM fence.insert_marks ORDER BY token;

-- stale writes were counted
SELECT stale_writes_rejected - :stale0 AS stale_counted FROM fence.stats();

-- values equal under their type's equality share a mark (numeric 1.0 = 1.00)
CREATE TABLE gi_num (k numeric, fence bigint);
SELECT fence.guard('gi_num', 'fence', ARRAY['k']);
INSERT INTO gi_num VALUES (1.0, 5);
INSERT INTO gi_num VALUES (1.00, 4);
INSERT INTO gi_num VALUES (NULL, 4);
INSERT INTO gi_num VALUES (NULL, 3);

-- several resource columns
CREATE TABLE gi_multi (a text, b int, fence bigint);
SELECT fence.guard('gi_multi', 'fence', ARRAY['a', 'b']);
INSERT INTO gi_multi VALUES ('x', 1, 5), ('x', 2, 3), ('y', 1, 3);
INSERT INTO gi_multi VALUES ('x', 1, 4);

-- partitions share the partitioned table's marks
CREATE TABLE gi_part (stream text, day int, fence bigint) PARTITION BY RANGE (day);
CREATE TABLE gi_part_1 PARTITION OF gi_part FOR VALUES FROM (1) TO (2);
CREATE TABLE gi_part_2 PARTITION OF gi_part FOR VALUES FROM (2) TO (3);
SELECT fence.guard('gi_part', 'fence', ARRAY['stream']);
INSERT INTO gi_part VALUES ('s', 1, 6);
INSERT INTO gi_part VALUES ('s', 2, 5);
INSERT INTO gi_part_2 VALUES ('s', 2, 5);
INSERT INTO gi_part_2 VALUES ('s', 2, 6);
\set VERBOSITY sqlstate
SELECT fence.unguard('gi_part_1');                             -- 2BP01: unguard the parent
\set VERBOSITY default

-- a role with INSERT privilege only: the marks are written for it, never by it
CREATE ROLE gi_writer;
GRANT INSERT, SELECT ON gi_log TO gi_writer;
GRANT USAGE ON SEQUENCE gi_log_id_seq TO gi_writer;
SET ROLE gi_writer;
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'by writer', 12);
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'stale by writer', 5);
\set VERBOSITY sqlstate
SELECT * FROM fence.insert_marks;
DELETE FROM fence.insert_marks;
SELECT fence.unguard('gi_log');
\set VERBOSITY default
RESET ROLE;

-- the trigger function refuses triggers that fence.guard would not make
CREATE TABLE gi_wrong (stream text, fence bigint);
INSERT INTO gi_wrong VALUES ('s', 1);
CREATE TRIGGER w BEFORE INSERT ON gi_wrong FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger('fence');
INSERT INTO gi_wrong VALUES ('s', 1);
DROP TRIGGER w ON gi_wrong;
CREATE TRIGGER w BEFORE UPDATE ON gi_wrong FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger('fence', '1');
UPDATE gi_wrong SET fence = 2;
DROP TRIGGER w ON gi_wrong;
CREATE TRIGGER w BEFORE INSERT ON gi_wrong FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger('fence', '99', 'gone');
INSERT INTO gi_wrong VALUES ('s', 1);
DROP TABLE gi_wrong;
-- a resource column dropped after fence.guard: the trigger says so
CREATE TABLE gi_gone (stream text, extra text, fence bigint);
SELECT fence.guard('gi_gone', 'fence', ARRAY['extra']);
ALTER TABLE gi_gone DROP COLUMN extra;
INSERT INTO gi_gone VALUES ('s', 1);
SELECT fence.unguard('gi_gone');
DROP TABLE gi_gone;

-- a guard without resource columns does not fence INSERTs
CREATE TABLE gi_plain (id int, fence bigint);
SELECT fence.guard('gi_plain');
INSERT INTO gi_plain VALUES (1, 0);
SELECT tgnargs FROM pg_trigger WHERE tgrelid = 'gi_plain'::regclass;

-- The marks' table is looked up once per session (its OID, owner and
-- primary key) and kept until the table changes: after ALTER TABLE ...
-- OWNER TO, a new mark is written as the new owner (here one that has
-- revoked its own privileges, so the write fails), and as the old owner
-- again once it is back.
CREATE ROLE gi_marks_owner;
SELECT pg_catalog.pg_get_userbyid(relowner) AS marks_owner FROM pg_catalog.pg_class
 WHERE oid = 'fence.insert_marks'::regclass \gset
INSERT INTO gi_log (stream, body, fence) VALUES ('owner-1', 'owner cached', 1);
ALTER TABLE fence.insert_marks OWNER TO gi_marks_owner;
REVOKE ALL ON fence.insert_marks FROM gi_marks_owner;
INSERT INTO gi_log (stream, body, fence) VALUES ('owner-2', 'as the new owner', 1);
ALTER TABLE fence.insert_marks OWNER TO :"marks_owner";
GRANT ALL ON fence.insert_marks TO :"marks_owner";
INSERT INTO gi_log (stream, body, fence) VALUES ('owner-2', 'as the old owner', 1);
SELECT stream, body FROM gi_log WHERE stream LIKE 'owner-%' ORDER BY id;
DROP ROLE gi_marks_owner;

-- unguard removes the marks; guarding again starts afresh with a new number
SELECT count(*) AS marks_before FROM fence.insert_marks;
SELECT fence.unguard('gi_log');
SELECT fence.unguard('gi_part');
SELECT count(*) AS marks_after FROM fence.insert_marks;
SELECT fence.guard('gi_log', 'fence', ARRAY['stream']);
INSERT INTO gi_log (stream, body, fence) VALUES ('orders', 'after reguard', 1);

-- marks of dropped tables stay behind (harmless); unguard before dropping to remove them
SELECT fence.unguard('gi_log');
SELECT fence.unguard('gi_num');
SELECT fence.unguard('gi_multi');
SELECT count(*) AS marks_left FROM fence.insert_marks;
DROP TABLE gi_log, gi_point, gi_num, gi_multi, gi_part, gi_plain;
DROP ROLE gi_writer;
