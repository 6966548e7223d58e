-- fence.guard / fence.unguard and the guard trigger: every UPDATE or DELETE
-- of a guarded table must present a token not lower than the row's fence.
\set VERBOSITY default
-- A fenced write refuses a token this database never issued (FN004): issue
-- 1100 tokens first, so that the literal tokens below are real ones.
SELECT count(fence.unlock('test-tokens', fence.try_lock('test-tokens'))) AS issued
  FROM generate_series(1, 1100);
SELECT stale_writes_rejected AS stale0 FROM fence.stats() \gset

CREATE TABLE guard_acct (id int PRIMARY KEY, balance int, fence bigint NOT NULL DEFAULT 0);
INSERT INTO guard_acct VALUES (1, 100, 5), (2, 200, 0), (3, 300, 10);

-- argument and object errors
\set VERBOSITY sqlstate
SELECT fence.guard(NULL);
SELECT fence.guard('guard_acct', NULL);
SELECT fence.unguard(NULL);
SELECT fence.guard('guard_acct', 'nosuch');
CREATE TABLE guard_textfence (id int PRIMARY KEY, fence text);
SELECT fence.guard('guard_textfence');
SELECT fence.guard('guard_textfence', 'id');   -- int, not bigint
SELECT fence.guard('guard_textfence', 'ctid'); -- system column
CREATE VIEW guard_view AS SELECT * FROM guard_acct;
SELECT fence.guard('guard_view');
CREATE SEQUENCE guard_seq;
SELECT fence.guard('guard_seq');
SELECT fence.unguard('guard_acct');            -- not guarded
SELECT fence.unguard('guard_view');
\set VERBOSITY default
SELECT fence.guard('guard_textfence');
SELECT fence.unguard('guard_acct');
SELECT fence.guard('guard_view');

-- The extension's own tables cannot be guarded (42501, as CREATE TRIGGER
-- on a system catalog): a guard there would break the extension.
\set VERBOSITY sqlstate
SELECT fence.guard('fence.insert_marks', 'token', ARRAY['resource_hash']);
SELECT fence.guard('fence.leases', 'token');
SELECT fence.guard('fence.resources', 'token');
\set VERBOSITY default
SELECT fence.guard('fence.insert_marks', 'token');
-- every table of the extension is refused
DO $$
DECLARE
    t regclass;
    n int := 0;
    total int := 0;
BEGIN
    FOR t IN
        SELECT c.oid::regclass
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_class c ON c.oid = d.objid
         WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.deptype = 'e'
           AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'pg_fence')
           AND c.relkind IN ('r', 'p')
    LOOP
        total := total + 1;
        BEGIN
            PERFORM fence.guard(t);
            RAISE EXCEPTION 'fence.guard(%) was accepted', t;
        EXCEPTION WHEN insufficient_privilege THEN
            n := n + 1;
        END;
    END LOOP;
    RAISE NOTICE 'every table of the extension refused: %', n = total AND total >= 3;
END
$$;
SELECT count(*) AS extension_triggers FROM pg_catalog.pg_trigger t
  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = 'fence'::regnamespace;

-- an OID that names no relation: 42P01, as fenced_update says
\set VERBOSITY sqlstate
SELECT fence.guard(0);
SELECT fence.unguard(4294967295);
SELECT fence.guard(0::oid::regclass, 'fence', ARRAY['stream']);
\set VERBOSITY default
SELECT fence.guard(0);
SELECT fence.unguard(4294967295);
SELECT fence.fenced_update(0, '{"id": 1}', 1, '{"v": 1}');

-- guard; a second guard is refused
SELECT fence.guard('guard_acct');
SELECT fence.guard('guard_acct');
SELECT tgname, tgenabled, tgtype, tgnargs,
       pg_get_triggerdef(oid) AS def
  FROM pg_trigger WHERE tgrelid = 'guard_acct'::regclass;

-- INSERT is not guarded
INSERT INTO guard_acct VALUES (4, 400, 0);

-- UPDATE without a token, with a lower, equal and higher fence value
UPDATE guard_acct SET balance = 101 WHERE id = 1;
UPDATE guard_acct SET balance = 101, fence = 4 WHERE id = 1;
UPDATE guard_acct SET balance = 101, fence = 5 WHERE id = 1;  -- unchanged fence: no token
UPDATE guard_acct SET balance = 101, fence = fence WHERE id = 1;
UPDATE guard_acct SET balance = 101, fence = 6 WHERE id = 1;
-- what fence.fenced_update does: fence = token WHERE fence < token
UPDATE guard_acct SET balance = 102, fence = 7 WHERE id = 1 AND fence < 7;
SELECT * FROM guard_acct ORDER BY id;

-- SET LOCAL fence.token: lower is rejected, equal and higher stamp the row
BEGIN;
SET LOCAL fence.token = 6;
UPDATE guard_acct SET balance = 103 WHERE id = 1;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 7;
UPDATE guard_acct SET balance = 103 WHERE id = 1;
SELECT * FROM guard_acct WHERE id = 1;
SET LOCAL fence.token = 9;
UPDATE guard_acct SET balance = 104 WHERE id = 1;
SELECT * FROM guard_acct WHERE id = 1;
COMMIT;
-- set_config(..., true) is SET LOCAL
BEGIN;
SELECT set_config('fence.token', '11', true);
UPDATE guard_acct SET balance = 105 WHERE id = 1;
COMMIT;
SELECT * FROM guard_acct WHERE id = 1;
-- an explicit new fence value wins over fence.token
BEGIN;
SET LOCAL fence.token = 3;
UPDATE guard_acct SET balance = 106, fence = 12 WHERE id = 1;
COMMIT;
SELECT * FROM guard_acct WHERE id = 1;
-- setting the fence to NULL presents no token of its own: without fence.token
-- it is refused (and the detail says so), with it fence.token is stamped
UPDATE guard_acct SET fence = NULL WHERE id = 1;
BEGIN;
SET LOCAL fence.token = 12;
UPDATE guard_acct SET fence = NULL WHERE id = 1;
COMMIT;
SELECT * FROM guard_acct WHERE id = 1;

-- fence.token counts only in the transaction that set it
SET fence.token = 100;               -- session level, before BEGIN
SHOW fence.token;
UPDATE guard_acct SET balance = 0 WHERE id = 2;
BEGIN;
UPDATE guard_acct SET balance = 0 WHERE id = 2;
ROLLBACK;
DELETE FROM guard_acct WHERE id = 2;
BEGIN;
SET fence.token = 20;                -- session level, inside the transaction: counts here
UPDATE guard_acct SET balance = 201 WHERE id = 2;
COMMIT;
SHOW fence.token;                    -- still set...
UPDATE guard_acct SET balance = 202 WHERE id = 2;  -- ...but left over
-- a value restored by ROLLBACK TO SAVEPOINT keeps its own transaction
BEGIN;
SAVEPOINT s;
SET LOCAL fence.token = 30;
ROLLBACK TO SAVEPOINT s;
UPDATE guard_acct SET balance = 203 WHERE id = 2;  -- 20 is left over
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 21;
SAVEPOINT s;
SET LOCAL fence.token = 30;
ROLLBACK TO SAVEPOINT s;
UPDATE guard_acct SET balance = 203 WHERE id = 2;  -- 21 was set in this transaction
COMMIT;
SELECT * FROM guard_acct WHERE id = 2;
-- one multi-statement query is one transaction
SET LOCAL fence.token = 22\; UPDATE guard_acct SET balance = 204 WHERE id = 2;
SELECT * FROM guard_acct WHERE id = 2;
RESET fence.token;
BEGIN;
SET LOCAL fence.token = '';          -- empty: no token
UPDATE guard_acct SET balance = 205 WHERE id = 2;
ROLLBACK;
\set VERBOSITY sqlstate
SET fence.token = 'abc';
SET fence.token = '1.5';
SET fence.token = '99999999999999999999';
SET fence.tokens = 1;                -- the prefix fence. is reserved
\set VERBOSITY default
SET fence.token = ' 123 ';
SHOW fence.token;
RESET fence.token;

-- DELETE needs fence.token
DELETE FROM guard_acct WHERE id = 3;
BEGIN;
SET LOCAL fence.token = 9;
DELETE FROM guard_acct WHERE id = 3;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 10;
DELETE FROM guard_acct WHERE id = 3;
COMMIT;
SELECT * FROM guard_acct ORDER BY id;

-- set-based writes are checked row by row; one stale row fails the statement
INSERT INTO guard_acct VALUES (3, 300, 30), (5, 500, 50);
UPDATE guard_acct a SET balance = a.balance + v.delta, fence = 40
  FROM (VALUES (3, 1), (5, 1)) AS v(id, delta) WHERE a.id = v.id;
UPDATE guard_acct a SET balance = a.balance + v.delta, fence = 60
  FROM (VALUES (3, 1), (5, 1)) AS v(id, delta) WHERE a.id = v.id;
SELECT * FROM guard_acct WHERE id IN (3, 5) ORDER BY id;
WITH u AS (UPDATE guard_acct SET balance = 0 WHERE id IN (3, 5) RETURNING id)
SELECT count(*) FROM u;
BEGIN;
SET LOCAL fence.token = 59;
WITH d AS (DELETE FROM guard_acct WHERE id = 5 RETURNING id) SELECT count(*) FROM d;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 61;
WITH u AS (UPDATE guard_acct SET balance = 0 WHERE id IN (3, 5) RETURNING id, fence)
SELECT * FROM u ORDER BY id;
COMMIT;
-- ON CONFLICT DO UPDATE
INSERT INTO guard_acct VALUES (5, 555, 0) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance;
INSERT INTO guard_acct VALUES (5, 555, 50) ON CONFLICT (id) DO UPDATE
  SET balance = excluded.balance, fence = excluded.fence;
INSERT INTO guard_acct VALUES (5, 555, 70) ON CONFLICT (id) DO UPDATE
  SET balance = excluded.balance, fence = excluded.fence;
INSERT INTO guard_acct VALUES (6, 600, 0) ON CONFLICT (id) DO UPDATE
  SET balance = excluded.balance;    -- plain insert: no check
SELECT * FROM guard_acct WHERE id IN (5, 6) ORDER BY id;
-- MERGE
MERGE INTO guard_acct a USING (VALUES (5, 1), (6, 1)) AS v(id, delta) ON a.id = v.id
  WHEN MATCHED THEN UPDATE SET balance = a.balance + v.delta;
BEGIN;
SET LOCAL fence.token = 65;
MERGE INTO guard_acct a USING (VALUES (5, 1), (6, 1)) AS v(id, delta) ON a.id = v.id
  WHEN MATCHED THEN UPDATE SET balance = a.balance + v.delta;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 70;
MERGE INTO guard_acct a USING (VALUES (5, 1), (6, -1)) AS v(id, delta) ON a.id = v.id
  WHEN MATCHED AND v.delta > 0 THEN UPDATE SET balance = a.balance + v.delta
  WHEN MATCHED THEN DELETE;
COMMIT;
SELECT * FROM guard_acct WHERE id IN (5, 6) ORDER BY id;

-- a table without primary key names the row by ctid; a custom, nullable
-- fence column accepts any token while NULL
CREATE TABLE guard_notes (body text, ver bigint);
INSERT INTO guard_notes VALUES ('a', NULL), ('b', 8);
SELECT fence.guard('guard_notes', 'ver');
UPDATE guard_notes SET body = 'a2', ver = 1 WHERE body = 'a';
UPDATE guard_notes SET body = 'b2', ver = 7 WHERE body = 'b';
DELETE FROM guard_notes;
SELECT * FROM guard_notes ORDER BY body;

-- partitioned tables: the trigger is cloned to every partition
CREATE TABLE guard_parted (id int, fence bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE guard_parted_1 PARTITION OF guard_parted FOR VALUES FROM (0) TO (100);
INSERT INTO guard_parted VALUES (1, 5);
SELECT fence.guard('guard_parted');
UPDATE guard_parted SET fence = 4 WHERE id = 1;
UPDATE guard_parted_1 SET id = 2 WHERE id = 1;
SELECT fence.unguard('guard_parted_1');
SELECT fence.unguard('guard_parted');
UPDATE guard_parted SET id = 2 WHERE id = 1;
SELECT count(*) FROM pg_trigger WHERE tgname = 'fence_guard' AND tgrelid IN
  ('guard_parted'::regclass, 'guard_parted_1'::regclass);

-- inheritance: an UPDATE or DELETE of a parent also writes its children's
-- rows, which only the children's own guards check; so a parent is guarded
-- only when every descendant already is, with the same fence column
CREATE TABLE guard_inh (id int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0,
                        fence2 bigint);
CREATE TABLE guard_inh_child () INHERITS (guard_inh);
CREATE TABLE guard_inh_grandchild () INHERITS (guard_inh_child);
INSERT INTO guard_inh VALUES (1, 'p', 5);
INSERT INTO guard_inh_child VALUES (2, 'c', 5);
INSERT INTO guard_inh_grandchild VALUES (3, 'g', 5);
\set VERBOSITY sqlstate
SELECT fence.guard('guard_inh');
\set VERBOSITY default
-- a table that has a parent can be guarded
SELECT fence.guard('guard_inh_grandchild');
SELECT fence.guard('guard_inh');                 -- its child is not guarded
SELECT fence.guard('guard_inh_child', 'fence2');  -- its child has another fence column
SELECT fence.guard('guard_inh_child');
SELECT fence.guard('guard_inh');
-- every row of the hierarchy is checked, also through the parent
UPDATE guard_inh SET v = 'x' WHERE id = 2;
DELETE FROM guard_inh WHERE id = 3;
UPDATE guard_inh SET v = 'x', fence = 4 WHERE id = 3;
BEGIN;
SET LOCAL fence.token = 6;
UPDATE guard_inh SET v = 'y' WHERE id IN (1, 2, 3);
DELETE FROM guard_inh WHERE id = 3;
COMMIT;
SELECT tableoid::regclass, * FROM guard_inh ORDER BY id;
-- a table that inherits later is not guarded until fence.guard is called on it
CREATE TABLE guard_inh_late () INHERITS (guard_inh);
INSERT INTO guard_inh_late VALUES (4, 'l', 5);
UPDATE guard_inh SET v = 'unchecked' WHERE id = 4;
SELECT fence.guard('guard_inh_late');
UPDATE guard_inh SET v = 'checked' WHERE id = 4;
SELECT tableoid::regclass, * FROM guard_inh WHERE id = 4;

-- privileges: only the owner may guard or unguard; writers need only
-- their table privileges
CREATE ROLE guard_writer;
GRANT SELECT, UPDATE, DELETE ON guard_acct TO guard_writer;
SET ROLE guard_writer;
SELECT fence.unguard('guard_acct');
SELECT fence.guard('guard_notes', 'ver');
UPDATE guard_acct SET balance = 1 WHERE id = 4;
UPDATE guard_acct SET balance = 1, fence = 1 WHERE id = 4;
RESET ROLE;

-- a trigger of the same name that is not ours is not removed by unguard
CREATE FUNCTION guard_noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TABLE guard_other (id int, fence bigint);
CREATE TRIGGER fence_guard BEFORE UPDATE ON guard_other FOR EACH ROW EXECUTE FUNCTION guard_noop();
SELECT fence.unguard('guard_other');
SELECT fence.guard('guard_other');
-- the trigger function refuses other uses
CREATE TRIGGER guard_wrong AFTER UPDATE ON guard_other FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger('fence');
INSERT INTO guard_other VALUES (1, 1);
UPDATE guard_other SET fence = 2;
DROP TRIGGER guard_wrong ON guard_other;
CREATE TRIGGER guard_wrong BEFORE UPDATE ON guard_other FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger('gone');
UPDATE guard_other SET fence = 3;

-- unguard: writes need no token any more
SELECT fence.unguard('guard_acct');
UPDATE guard_acct SET balance = 0 WHERE id = 1;
DELETE FROM guard_acct WHERE id = 1;
SELECT fence.unguard('guard_acct');
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'guard_acct'::regclass;
-- and it can be guarded again
SELECT fence.guard('guard_acct');
UPDATE guard_acct SET balance = 0 WHERE id = 4;

-- fence.fenced_update passes the guard: its rows present a higher token
SELECT fence.fenced_update('guard_acct', '{"id": 4}', 20, '{"balance": 7}');
SELECT fence.fenced_update('guard_acct', '{"id": 4}', 19, '{"balance": 8}');  -- stale: false
SELECT * FROM guard_acct WHERE id = 4;
-- allow_equal with the row's own token leaves the fence unchanged: fenced_update
-- presents its token as fence.token for the UPDATE, so the guard accepts it,
-- and the caller's fence.token is untouched afterwards
SELECT fence.fenced_update('guard_acct', '{"id": 4}', 20, '{"balance": 9}', allow_equal => true);
SELECT * FROM guard_acct WHERE id = 4;
SELECT current_setting('fence.token') AS token_after;
-- a lower token with allow_equal is still stale
SELECT fence.fenced_update('guard_acct', '{"id": 4}', 19, '{"balance": 10}', allow_equal => true);
-- and a plain UPDATE without a token is still refused afterwards
\set VERBOSITY sqlstate
UPDATE guard_acct SET balance = 11 WHERE id = 4;
\set VERBOSITY default
SELECT * FROM guard_acct WHERE id = 4;

-- an UPDATE that moves a row to another partition runs as a DELETE (which
-- fires the BEFORE DELETE trigger on the old partition) and an INSERT: the
-- DELETE half cannot see the new row's fence, so it needs fence.token
CREATE TABLE guard_moved (id int, part int, v text, fence bigint NOT NULL DEFAULT 0,
                          PRIMARY KEY (id, part)) PARTITION BY LIST (part);
CREATE TABLE guard_moved_1 PARTITION OF guard_moved FOR VALUES IN (1);
CREATE TABLE guard_moved_2 PARTITION OF guard_moved FOR VALUES IN (2);
INSERT INTO guard_moved VALUES (1, 1, 'a', 20);
SELECT fence.guard('guard_moved');
-- fenced_update presents its token as fence.token for its UPDATE
SELECT fence.fenced_update('guard_moved', '{"id": 1, "part": 1}', 21, '{"part": 2}');
SELECT current_setting('fence.token') AS token_after;
SELECT fence.fenced_update('guard_moved', '{"id": 1, "part": 2}', 20, '{"part": 1}');  -- stale
SELECT tableoid::regclass, * FROM guard_moved;
-- a plain UPDATE presents the token with SET LOCAL fence.token
UPDATE guard_moved SET part = 1, fence = 22 WHERE id = 1;
BEGIN;
SET LOCAL fence.token = 20;
UPDATE guard_moved SET part = 1, fence = 22 WHERE id = 1;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 22;
UPDATE guard_moved SET part = 1 WHERE id = 1;
COMMIT;
SELECT tableoid::regclass, * FROM guard_moved;

-- writes made by triggers fired by fenced_update's UPDATE see its token as
-- fence.token: they write on behalf of the same holder
CREATE TABLE guard_audit (id int PRIMARY KEY, last_v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO guard_audit VALUES (1, NULL, 0);
SELECT fence.guard('guard_audit');
CREATE FUNCTION guard_audit_row() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN UPDATE guard_audit SET last_v = NEW.v WHERE id = NEW.id; RETURN NEW; END$$;
CREATE TRIGGER guard_audit_after AFTER UPDATE ON guard_moved_1
  FOR EACH ROW EXECUTE FUNCTION guard_audit_row();
SELECT fence.fenced_update('guard_moved', '{"id": 1, "part": 1}', 23, '{"v": "b"}');
SELECT * FROM guard_audit;
\set VERBOSITY sqlstate
UPDATE guard_moved SET v = 'c', fence = 24 WHERE id = 1;  -- the audit write has no token
\set VERBOSITY default
SELECT current_setting('fence.token') AS token_after;

-- messages and LOG lines quote at most 256 bytes of a row's key
CREATE TABLE guard_longkey (k text PRIMARY KEY, fence bigint NOT NULL DEFAULT 0);
INSERT INTO guard_longkey VALUES (repeat('k', 2000), 5);
SELECT fence.guard('guard_longkey');
SET client_min_messages = log;
UPDATE guard_longkey SET fence = 4;
RESET client_min_messages;

-- every FN001 above was counted once, and the stale fenced_update too
SELECT stale_writes_rejected - :stale0 AS stale_writes_counted FROM fence.stats();

DROP VIEW guard_view;
DROP TABLE guard_acct, guard_textfence, guard_notes, guard_parted, guard_other,
  guard_moved, guard_audit, guard_longkey;
DROP TABLE guard_inh CASCADE;
DROP SEQUENCE guard_seq;
DROP FUNCTION guard_noop(), guard_audit_row();
DROP ROLE guard_writer;

-- an error inside fenced_update's UPDATE does not leave its token presented
-- to later writes of the same transaction
CREATE TABLE guard_chk (id int PRIMARY KEY, v int CHECK (v >= 0), fence bigint NOT NULL DEFAULT 0);
INSERT INTO guard_chk VALUES (1, 0, 0);
SELECT fence.guard('guard_chk');
\set VERBOSITY sqlstate
DO $$
BEGIN
	BEGIN
		PERFORM fence.fenced_update('guard_chk', '{"id": 1}', 5, '{"v": -1}');
	EXCEPTION WHEN check_violation THEN
		RAISE NOTICE 'check violation caught';
	END;
	UPDATE guard_chk SET v = 2 WHERE id = 1;
END $$;
\set VERBOSITY default
SELECT * FROM guard_chk;
DROP TABLE guard_chk;

-- FN004: a token higher than every token this database has issued is
-- refused wherever a guarded write presents it (the new fence value,
-- fence.token), before the fence rule, and the statement changes nothing
CREATE TABLE guard_forged (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0);
INSERT INTO guard_forged VALUES (1, 0, 0), (2, 0, 0), (3, 0, 0);
SELECT fence.guard('guard_forged');
SELECT fence.try_xact_lock('guard-highest') AS highest \gset
\set VERBOSITY terse
UPDATE guard_forged SET v = 1, fence = 9223372036854775807 WHERE id = 1;
\set VERBOSITY sqlstate
UPDATE guard_forged SET v = 1, fence = :highest + 1 WHERE id = 1;
BEGIN;
SET LOCAL fence.token = 9223372036854775807;
UPDATE guard_forged SET v = 1 WHERE id = 1;
ROLLBACK;
BEGIN;
SELECT set_config('fence.token', (:highest + 1)::text, true) IS NOT NULL AS set;
DELETE FROM guard_forged WHERE id = 2;
ROLLBACK;
-- set-based: one forged row fails the whole statement
UPDATE guard_forged g SET v = 2, fence = x.f
  FROM (VALUES (1, :highest), (2, :highest), (3, :highest + 1)) AS x(id, f)
 WHERE g.id = x.id;
WITH w AS (UPDATE guard_forged SET fence = :highest + 1 WHERE id = 3 RETURNING id)
SELECT count(*) FROM w;
INSERT INTO guard_forged VALUES (1, 3, 0)
    ON CONFLICT (id) DO UPDATE SET v = 3, fence = :highest + 1;
\set VERBOSITY default
SELECT * FROM guard_forged ORDER BY id;
-- the highest issued token itself is accepted, set-based too
UPDATE guard_forged g SET v = 2, fence = x.f
  FROM (VALUES (1, :highest), (2, :highest), (3, :highest)) AS x(id, f)
 WHERE g.id = x.id;
BEGIN;
SET LOCAL fence.token = :highest;
DELETE FROM guard_forged WHERE id = 3;
COMMIT;
SELECT id, v, fence = :highest AS fenced_at_highest FROM guard_forged ORDER BY id;
-- a superuser can turn the check off (resources fenced with another
-- database's tokens)
SET fence.require_issued_tokens = off;
UPDATE guard_forged SET v = 9, fence = :highest + 1000 WHERE id = 1;
RESET fence.require_issued_tokens;
SELECT id, v, fence - :highest AS above_highest FROM guard_forged ORDER BY id;
DROP TABLE guard_forged;
