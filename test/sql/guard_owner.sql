-- Only the owner fences a table (docs/guarantees.md guarantee 12): a guard's state (its
-- marks) belongs to its table.  A role with no privilege on a guarded table
-- copies its guard number from pg_trigger.tgargs onto a trigger of its own
-- table: fence.guard_trigger refuses to run there (39P01), fence.unguard of
-- its own table forgets nothing of the victim's, and it can neither raise
-- nor lock the victim's marks (guard_owner_block.spec: nor block its
-- writers).
\set VERBOSITY default
SELECT count(fence.unlock('go-tokens', fence.try_lock('go-tokens'))) AS issued
  FROM generate_series(1, 20);

-- the victim: a ledger guarded with resource columns, its holder at token 5
CREATE TABLE go_ledger (id bigserial PRIMARY KEY, stream text NOT NULL, body text,
                        fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('go_ledger', 'fence', ARRAY['stream']);
INSERT INTO go_ledger (stream, body, fence) VALUES ('orders', 'old holder', 3);
INSERT INTO go_ledger (stream, body, fence) VALUES ('orders', 'new holder', 5);
SELECT split_part(encode(tgargs, 'escape'), '\000', 2) AS gid
  FROM pg_trigger WHERE tgrelid = 'go_ledger'::regclass \gset
SELECT token AS mark_before FROM fence.insert_marks WHERE guard_id = :gid;
-- the registry binds the guard number to its table
SELECT rel FROM fence.insert_guards WHERE guard_id = :gid;

-- the attacker: nothing granted, no CREATE on any schema (a temp table only)
CREATE ROLE go_carol;
SET ROLE go_carol;
CREATE TEMP TABLE go_trap (stream text, fence bigint NOT NULL DEFAULT 0);
CREATE TRIGGER fence_guard BEFORE INSERT OR UPDATE OR DELETE ON go_trap FOR EACH ROW
  EXECUTE FUNCTION fence.guard_trigger('fence', :'gid', 'stream');
\set VERBOSITY sqlstate
-- raise: refused (39P01) before the victim's mark is locked or read
INSERT INTO go_trap VALUES ('orders', 15);
-- lower: refused the same way (no FN001, which would show the victim's mark)
INSERT INTO go_trap VALUES ('orders', 1);
-- wipe: unguard of its own table drops its trigger, forgets nothing else
SELECT fence.unguard('go_trap');
-- an UPDATE or DELETE through such a trigger is refused as well
CREATE TRIGGER fence_guard BEFORE INSERT OR UPDATE OR DELETE ON go_trap FOR EACH ROW
  EXECUTE FUNCTION fence.guard_trigger('fence', :'gid', 'stream');
ALTER TABLE go_trap DISABLE TRIGGER fence_guard;
INSERT INTO go_trap VALUES ('orders', 1);
ALTER TABLE go_trap ENABLE TRIGGER fence_guard;
UPDATE go_trap SET fence = 9;
DELETE FROM go_trap;
-- a trigger under another name, or a guard number that is not a number: 39P01
CREATE TRIGGER other BEFORE INSERT ON go_trap FOR EACH ROW
  EXECUTE FUNCTION fence.guard_trigger('fence', :'gid', 'stream');
INSERT INTO go_trap VALUES ('orders', 1);
DROP TRIGGER other ON go_trap;
DROP TRIGGER fence_guard ON go_trap;
CREATE TRIGGER fence_guard BEFORE INSERT ON go_trap FOR EACH ROW
  EXECUTE FUNCTION fence.guard_trigger('fence', 'x1', 'stream');
INSERT INTO go_trap VALUES ('orders', 1);
DROP TRIGGER fence_guard ON go_trap;
-- the victim's table and its marks stay closed to it
SELECT fence.unguard('go_ledger');
SELECT * FROM fence.insert_guards;
DELETE FROM fence.insert_guards;
\set VERBOSITY default
DROP TABLE go_trap;
RESET ROLE;

-- the victim's mark is untouched, and its guard still works: the old
-- holder's INSERT is refused, the new holder's goes in
SELECT token AS mark_after FROM fence.insert_marks WHERE guard_id = :gid;
INSERT INTO go_ledger (stream, body, fence) VALUES ('orders', 'zombie', 3);
INSERT INTO go_ledger (stream, body, fence) VALUES ('orders', 'new holder again', 5);
SELECT body, fence FROM go_ledger ORDER BY id;

-- The owner's own table: a trigger that copies another table's guard
-- number is refused too, also for the owner of both tables.
CREATE TABLE go_copy (stream text, fence bigint NOT NULL DEFAULT 0);
CREATE TRIGGER fence_guard BEFORE INSERT OR UPDATE OR DELETE ON go_copy FOR EACH ROW
  EXECUTE FUNCTION fence.guard_trigger('fence', :'gid', 'stream');
DO $$
DECLARE
    msg text;
    detail text;
BEGIN
    INSERT INTO go_copy VALUES ('orders', 9);
EXCEPTION WHEN trigger_protocol_violated THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
    RAISE NOTICE '%', msg;
    RAISE NOTICE '%', regexp_replace(detail, 'number \d+', 'number N');
END
$$;
SELECT fence.unguard('go_copy');
SELECT count(*) AS victim_registered FROM fence.insert_guards WHERE guard_id = :gid;
SELECT token AS mark_still FROM fence.insert_marks WHERE guard_id = :gid;

-- Partitions: the cloned trigger of a partition runs its root's guard; a
-- detached partition keeps no guard, and copying the guard back onto it is
-- refused.
CREATE TABLE go_part (stream text, k int, fence bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (k);
CREATE TABLE go_part_1 PARTITION OF go_part FOR VALUES FROM (1) TO (2);
CREATE TABLE go_part_2 PARTITION OF go_part FOR VALUES FROM (2) TO (10) PARTITION BY RANGE (k);
CREATE TABLE go_part_2a PARTITION OF go_part_2 FOR VALUES FROM (2) TO (10);
SELECT fence.guard('go_part', 'fence', ARRAY['stream']);
INSERT INTO go_part VALUES ('s', 1, 6), ('s', 2, 6);
INSERT INTO go_part_2a VALUES ('s', 3, 6);
INSERT INTO go_part_2a VALUES ('s', 3, 5);
SELECT split_part(encode(tgargs, 'escape'), '\000', 2) AS pgid
  FROM pg_trigger WHERE tgrelid = 'go_part'::regclass \gset
ALTER TABLE go_part DETACH PARTITION go_part_1;
SELECT count(*) AS detached_triggers FROM pg_trigger WHERE tgrelid = 'go_part_1'::regclass;
CREATE TRIGGER fence_guard BEFORE INSERT OR UPDATE OR DELETE ON go_part_1 FOR EACH ROW
  EXECUTE FUNCTION fence.guard_trigger('fence', :'pgid', 'stream');
\set VERBOSITY sqlstate
INSERT INTO go_part_1 VALUES ('s', 1, 7);
\set VERBOSITY default
DROP TABLE go_part_1;
-- a partition attached later gets the clone, and it works
CREATE TABLE go_part_3 PARTITION OF go_part FOR VALUES FROM (10) TO (20);
INSERT INTO go_part VALUES ('s', 10, 6);
INSERT INTO go_part VALUES ('s', 10, 5);

-- in one transaction: guard, write, roll back; the table is not guarded
-- afterwards and its number is forgotten
CREATE TABLE go_xact (stream text, fence bigint NOT NULL DEFAULT 0);
BEGIN;
SELECT fence.guard('go_xact', 'fence', ARRAY['stream']);
INSERT INTO go_xact VALUES ('s', 4);
ROLLBACK;
SELECT count(*) AS registered FROM fence.insert_guards WHERE rel = 'go_xact'::regclass;
INSERT INTO go_xact VALUES ('s', 0);
-- guard, unguard and guard again in one transaction
BEGIN;
SELECT fence.guard('go_xact', 'fence', ARRAY['stream']);
INSERT INTO go_xact VALUES ('s', 4);
SELECT fence.unguard('go_xact');
SELECT fence.guard('go_xact', 'fence', ARRAY['stream']);
INSERT INTO go_xact VALUES ('s', 3);
COMMIT;
SELECT count(*) AS registered FROM fence.insert_guards WHERE rel = 'go_xact'::regclass;
-- a trigger dropped by hand leaves its registration; guarding again replaces it
DROP TRIGGER fence_guard ON go_xact;
SELECT fence.guard('go_xact', 'fence', ARRAY['stream']);
SELECT count(*) AS registered FROM fence.insert_guards WHERE rel = 'go_xact'::regclass;
INSERT INTO go_xact VALUES ('s', 2);

SELECT fence.unguard('go_ledger');
SELECT fence.unguard('go_part');
SELECT fence.unguard('go_xact');
SELECT count(*) AS registered_left FROM fence.insert_guards WHERE rel::text LIKE 'go\_%';
DROP TABLE go_ledger, go_copy, go_part, go_xact;
DROP ROLE go_carol;
