--
-- fence.fenced_update: fenced single-row UPDATE with catalog-resolved
-- identifiers, typed values, cached plans, caller's rights.
--
SET client_min_messages = warning;
-- A fenced write refuses a token this database never issued (FN004): issue
-- 1100 tokens first, so that the literal tokens below are real ones.
SELECT count(fence.unlock('test-tokens', fence.try_lock('test-tokens'))) AS issued
  FROM generate_series(1, 1100);
CREATE SCHEMA fu;
SET search_path = fu, public;

CREATE TABLE fu.acct (id int PRIMARY KEY, balance numeric NOT NULL,
                      note text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.acct VALUES (1, 100, 'a', 0), (2, 200, 'b', 5);

-- applied: fence 0 < 10
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 10, '{"balance": 150, "note": "x"}');
SELECT * FROM fu.acct ORDER BY id;
-- stale: 9 < 10
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 9, '{"balance": 1}');
-- equal: not applied by default (each grant writes a row once) ...
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 10, '{"balance": 2}');
-- ... but applied with allow_equal
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 10, '{"balance": 3}', allow_equal => true);
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 10, '{"balance": 4}', 'fence', true);
-- allow_equal still rejects lower tokens
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 9, '{"balance": 5}', allow_equal => true);
SELECT * FROM fu.acct ORDER BY id;
-- empty changes: only the fence is stamped
SELECT fence.fenced_update('fu.acct', '{"id": 2}', 6, '{}');
SELECT * FROM fu.acct ORDER BY id;
-- the key may be given as a string too (converted by the column's type)
SELECT fence.fenced_update('fu.acct', '{"id": "2"}', 7, '{"note": null}');
SELECT * FROM fu.acct WHERE id = 2;

-- a custom fence column name
CREATE TABLE fu.job (name text PRIMARY KEY, state text, epoch bigint NOT NULL DEFAULT 0);
INSERT INTO fu.job VALUES ('j1', 'new', 0);
SELECT fence.fenced_update('fu.job', '{"name": "j1"}', 3, '{"state": "running"}', 'epoch');
SELECT fence.fenced_update('fu.job', '{"name": "j1"}', 2, '{"state": "stale"}', fence_column => 'epoch');
SELECT * FROM fu.job;

--
-- Composite key
--
CREATE TABLE fu.item (tenant int, sku text, qty int, fence bigint NOT NULL DEFAULT 0,
                      PRIMARY KEY (tenant, sku));
INSERT INTO fu.item VALUES (1, 'x', 1, 0), (1, 'y', 1, 0), (2, 'x', 1, 0);
SELECT fence.fenced_update('fu.item', '{"tenant": 1, "sku": "x"}', 20, '{"qty": 7}');
SELECT fence.fenced_update('fu.item', '{"sku": "x", "tenant": 2}', 21, '{"qty": 8}');
SELECT fence.fenced_update('fu.item', '{"tenant": 1, "sku": "x"}', 19, '{"qty": 9}');
SELECT * FROM fu.item ORDER BY tenant, sku;
-- a partial key that matches several rows: 21000, nothing changes
SELECT fence.fenced_update('fu.item', '{"tenant": 1}', 30, '{"qty": 0}');
\echo :LAST_ERROR_SQLSTATE
-- several rows, none of them updatable: 21000 as well
SELECT fence.fenced_update('fu.item', '{"sku": "x"}', 1, '{"qty": 0}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM fu.item ORDER BY tenant, sku;

-- A key that is not provably unique (no unique index) but matches one row
-- works; once a second row matches, the update is undone with 21000 even
-- though only one row had a low enough fence.
CREATE TABLE fu.nouniq (k int, v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.nouniq VALUES (1, 'a', 0), (2, 'b', 0);
SELECT fence.fenced_update('fu.nouniq', '{"k": 1}', 5, '{"v": "a5"}');
INSERT INTO fu.nouniq VALUES (1, 'dup', 100);
SELECT fence.fenced_update('fu.nouniq', '{"k": 1}', 6, '{"v": "a6"}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM fu.nouniq ORDER BY k, fence;
-- with a unique index the key is provably unique (cached, and forgotten
-- when the index goes away)
DELETE FROM fu.nouniq WHERE v = 'dup';
CREATE UNIQUE INDEX nouniq_k ON fu.nouniq (k);
SELECT fence.fenced_update('fu.nouniq', '{"k": 1}', 7, '{"v": "a7"}');
DROP INDEX fu.nouniq_k;
INSERT INTO fu.nouniq VALUES (1, 'dup', 100);
SELECT fence.fenced_update('fu.nouniq', '{"k": 1}', 8, '{"v": "a8"}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM fu.nouniq ORDER BY k, fence;
-- an inheritance child can hold a duplicate key even under a unique index
CREATE TABLE fu.parent (k int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0);
CREATE TABLE fu.child () INHERITS (fu.parent);
INSERT INTO fu.parent VALUES (1, 'p', 0);
SELECT fence.fenced_update('fu.parent', '{"k": 1}', 1, '{"v": "p1"}');
INSERT INTO fu.child VALUES (1, 'c', 50);
SELECT fence.fenced_update('fu.parent', '{"k": 1}', 2, '{"v": "p2"}');
\echo :LAST_ERROR_SQLSTATE
SELECT tableoid::regclass, * FROM fu.parent ORDER BY fence;

-- partitioned table
CREATE TABLE fu.part (region text, id int, v int, fence bigint NOT NULL DEFAULT 0,
                      PRIMARY KEY (region, id)) PARTITION BY LIST (region);
CREATE TABLE fu.part_eu PARTITION OF fu.part FOR VALUES IN ('eu');
CREATE TABLE fu.part_us PARTITION OF fu.part FOR VALUES IN ('us');
INSERT INTO fu.part VALUES ('eu', 1, 0, 0), ('us', 1, 0, 0);
SELECT fence.fenced_update('fu.part', '{"region": "us", "id": 1}', 4, '{"v": 44}');
SELECT fence.fenced_update('fu.part', '{"region": "us", "id": 1}', 3, '{"v": 33}');
SELECT tableoid::regclass, * FROM fu.part ORDER BY region;

--
-- Type conversion: values are converted by the columns' own input functions
--
CREATE DOMAIN fu.pos AS int CHECK (VALUE > 0);
CREATE TABLE fu.typed (id int PRIMARY KEY, i int, n numeric(6,2), t text, ts timestamptz,
                       b boolean, j jsonb, js json, arr int[], p fu.pos, vc varchar(3),
                       fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.typed (id) VALUES (1);
SET timezone = 'UTC';
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 1,
  '{"i": 42, "n": 3.14159, "t": "hello", "ts": "2024-05-06 07:08:09+02", "b": true,
    "j": {"a": [1, 2, {"b": null}]}, "js": [1, "two"], "arr": "{1,2,3}", "p": 5, "vc": "abc"}');
SELECT * FROM fu.typed;
-- JSON strings, numbers and booleans for json/jsonb columns are JSON values
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 2,
  '{"j": "just a string", "js": 12.5, "b": "false", "i": "7"}');
SELECT j, jsonb_typeof(j), js, b, i FROM fu.typed;
-- JSON null is SQL NULL
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 3,
  '{"i": null, "n": null, "t": null, "ts": null, "b": null, "j": null, "js": null,
    "arr": null, "p": null, "vc": null}');
SELECT * FROM fu.typed;
-- conversion errors: 22P02 / 22003 / 23514 (domain CHECK) / 22001 (typmod);
-- nothing changes
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"i": "abc"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"i": 1.5}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"i": 99999999999}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"p": 0}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"vc": "abcd"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"arr": [1, 2]}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": 1}', 4, '{"ts": "yesterday-ish"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.typed', '{"id": "one"}', 4, '{"i": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence, i, p, vc FROM fu.typed;
-- a domain with NOT NULL is checked for JSON null as well
CREATE DOMAIN fu.nn AS text NOT NULL;
CREATE TABLE fu.dom (id int PRIMARY KEY, d fu.nn DEFAULT 'x', fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.dom (id) VALUES (1);
SELECT fence.fenced_update('fu.dom', '{"id": 1}', 1, '{"d": null}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.dom', '{"id": 1}', 1, '{"d": "y"}');
SELECT * FROM fu.dom;
-- NOT NULL column set to null: 23502, nothing changes
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 50, '{"balance": null}');
\echo :LAST_ERROR_SQLSTATE
-- other key types: timestamptz, boolean, numeric, domain
CREATE TABLE fu.keys (ts timestamptz, flag boolean, num numeric, p fu.pos, v text,
                      fence bigint NOT NULL DEFAULT 0, UNIQUE (ts, flag, num, p));
INSERT INTO fu.keys VALUES ('2024-01-01 00:00:00+00', true, 1.50, 3, 'v', 0);
SELECT fence.fenced_update('fu.keys',
  '{"ts": "2024-01-01 01:00:00+01", "flag": true, "num": 1.5, "p": 3}', 1, '{"v": "w"}');
SELECT * FROM fu.keys;

--
-- Plans are prepared once per shape and reused; a renamed table, schema or
-- column gets a new plan (DEBUG1 shows when a plan is prepared).
--
CREATE TABLE fu.plans (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.plans VALUES (1, 0, 0);
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu.plans', '{"id": 1}', 1, '{"v": 1}');
SELECT fence.fenced_update('fu.plans', '{"id": 1}', 2, '{"v": 2}');
SELECT fence.fenced_update('fu.plans', '{"id": 1}', 2, '{"v": 2}', allow_equal => true);
SELECT fence.fenced_update('fu.plans', '{"id": 1}', 2, '{"v": 22}', allow_equal => true);
RESET client_min_messages;
-- renamed table, and a new table under the old name: the cached plan's
-- text names fu.plans, so it must not be reused for the renamed table
ALTER TABLE fu.plans RENAME TO plans2;
CREATE TABLE fu.plans (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.plans VALUES (1, 0, 0);
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu.plans2', '{"id": 1}', 3, '{"v": 3}');
SELECT fence.fenced_update('fu.plans2', '{"id": 1}', 4, '{"v": 4}');
RESET client_min_messages;
SELECT * FROM fu.plans2;
SELECT * FROM fu.plans;
DROP TABLE fu.plans;
SELECT fence.fenced_update('fu.plans', '{"id": 1}', 5, '{"v": 5}');
\echo :LAST_ERROR_SQLSTATE
-- renamed column: the old name is unknown, the new one gets a plan
ALTER TABLE fu.plans2 RENAME COLUMN v TO w;
SELECT fence.fenced_update('fu.plans2', '{"id": 1}', 5, '{"v": 5}');
\echo :LAST_ERROR_SQLSTATE
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu.plans2', '{"id": 1}', 5, '{"w": 5}');
SELECT fence.fenced_update('fu.plans2', '{"id": 1}', 6, '{"w": 6}');
RESET client_min_messages;
-- moved to another schema, then that schema renamed
CREATE SCHEMA fu_other;
ALTER TABLE fu.plans2 SET SCHEMA fu_other;
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu_other.plans2', '{"id": 1}', 7, '{"w": 7}');
RESET client_min_messages;
ALTER SCHEMA fu_other RENAME TO fu_moved;
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 8, '{"w": 8}');
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 9, '{"w": 9}');
RESET client_min_messages;
SELECT * FROM fu_moved.plans2;
-- a column type change also gets a new plan
ALTER TABLE fu_moved.plans2 ALTER COLUMN w TYPE text;
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 10, '{"w": "ten"}');
RESET client_min_messages;
SELECT * FROM fu_moved.plans2;
-- a plan prepared in a transaction that rolls back is kept; a savepoint
-- rollback undoes the write but not the plan
BEGIN;
SET LOCAL client_min_messages = debug1;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 11, '{}');
ROLLBACK;
SET client_min_messages = debug1;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 11, '{}');
RESET client_min_messages;
BEGIN;
SAVEPOINT s;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 12, '{"w": "twelve"}');
ROLLBACK TO SAVEPOINT s;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 13, '{"w": "thirteen"}');
COMMIT;
SELECT * FROM fu_moved.plans2;
-- errors caught inside PL/pgSQL leave the session usable
DO $$
BEGIN
  PERFORM fence.fenced_update('fu_moved.plans2', '{"id": 99}', 14, '{}');
EXCEPTION WHEN no_data_found THEN
  RAISE NOTICE 'caught %', SQLSTATE;
END $$;
SELECT fence.fenced_update('fu_moved.plans2', '{"id": 1}', 14, '{"w": "fourteen"}');

--
-- Identifiers are looked up, never spliced
--
CREATE TABLE fu."we""ird; tab" ("a""; drop table fu.acct; --" int PRIMARY KEY,
                                "Mixed Case" text, "fence col" bigint NOT NULL DEFAULT 0);
INSERT INTO fu."we""ird; tab" VALUES (1, 'x', 0);
SELECT fence.fenced_update('fu."we""ird; tab"', '{"a\"; drop table fu.acct; --": 1}', 5,
                           '{"Mixed Case": "O''Reilly\"); drop table fu.acct; --"}', 'fence col');
SELECT * FROM fu."we""ird; tab";
SELECT count(*) FROM fu.acct;
-- an injection attempt in a key name is just an unknown column
SELECT fence.fenced_update('fu.acct', '{"id = id OR true; --": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"note = null, balance": 0}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"note": "x"}', 'fence < 1000 OR true --');
\echo :LAST_ERROR_SQLSTATE
-- case matters: JSON keys are exact column names
SELECT fence.fenced_update('fu."we""ird; tab"', '{"a\"; drop table fu.acct; --": 1}', 6,
                           '{"mixed case": "y"}', 'fence col');
\echo :LAST_ERROR_SQLSTATE

--
-- Errors: each one changes nothing
--
-- no row for the key
SELECT fence.fenced_update('fu.acct', '{"id": 3}', 100, '{"balance": 0}');
\echo :LAST_ERROR_SQLSTATE
-- NULL arguments
SELECT fence.fenced_update(NULL, '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', NULL, 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', NULL, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{}', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{}', 'fence', NULL);
\echo :LAST_ERROR_SQLSTATE
-- malformed key / changes
SELECT fence.fenced_update('fu.acct', '{}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '[1]', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '1', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": null}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '"x"');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"fence": 1000}');
\echo :LAST_ERROR_SQLSTATE
-- unknown columns (also system and over-long names)
SELECT fence.fenced_update('fu.acct', '{"nope": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"nope": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"xmin": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"ctid": "(0,1)"}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"idxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
-- a dropped column
ALTER TABLE fu.acct ADD COLUMN gone int;
ALTER TABLE fu.acct DROP COLUMN gone;
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"gone": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"........pg.dropped.5........": 1}');
\echo :LAST_ERROR_SQLSTATE
-- fence column missing or not bigint
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{}', 'nofence');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{}', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{}', 'balance');
\echo :LAST_ERROR_SQLSTATE
-- not a table: a view, a sequence, an index, a missing OID
CREATE VIEW fu.acct_v AS SELECT * FROM fu.acct;
SELECT fence.fenced_update('fu.acct_v', '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
CREATE SEQUENCE fu.seq;
SELECT fence.fenced_update('fu.seq', '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.acct_pkey', '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update(0, '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update(4294967295::oid::regclass, '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.no_such_table', '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
-- a key type without an equality operator
CREATE TABLE fu.noeq (p point, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.noeq VALUES ('(1,1)', 0);
SELECT fence.fenced_update('fu.noeq', '{"p": "(1,1)"}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
-- a generated column cannot be assigned
CREATE TABLE fu.gen (id int PRIMARY KEY, g int GENERATED ALWAYS AS (id * 2) STORED,
                     fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.gen (id) VALUES (1);
SELECT fence.fenced_update('fu.gen', '{"id": 1}', 100, '{"g": 5}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.gen', '{"id": 1}', 100, '{"g": 5}');
\echo :LAST_ERROR_SQLSTATE
-- a NULL fence cannot be compared
CREATE TABLE fu.nullfence (id int PRIMARY KEY, fence bigint);
INSERT INTO fu.nullfence VALUES (1, NULL);
SELECT fence.fenced_update('fu.nullfence', '{"id": 1}', 100, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM fu.nullfence;
SELECT * FROM fu.acct ORDER BY id;
SELECT * FROM fu.gen;

--
-- Caller's rights: privileges and row-level security apply
--
CREATE ROLE fu_user;
GRANT USAGE ON SCHEMA fu TO fu_user;
GRANT SELECT ON fu.acct TO fu_user;
SET ROLE fu_user;
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"note": "hacked"}');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- UPDATE on one column only
GRANT UPDATE (note, fence) ON fu.acct TO fu_user;
SET ROLE fu_user;
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 100, '{"note": "by fu_user"}');
SELECT fence.fenced_update('fu.acct', '{"id": 1}', 101, '{"balance": 0}');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT * FROM fu.acct ORDER BY id;
-- row-level security: a hidden row behaves as missing
CREATE TABLE fu.rls (id int PRIMARY KEY, owner text, v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.rls VALUES (1, 'fu_user', 'mine', 0), (2, 'someone', 'theirs', 0);
GRANT SELECT, UPDATE ON fu.rls TO fu_user;
ALTER TABLE fu.rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON fu.rls USING (owner = current_user);
SET ROLE fu_user;
SELECT fence.fenced_update('fu.rls', '{"id": 1}', 1, '{"v": "mine2"}');
SELECT fence.fenced_update('fu.rls', '{"id": 2}', 1, '{"v": "stolen"}');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- a row visible to SELECT but not to UPDATE is not reported as stale
CREATE POLICY see_all ON fu.rls FOR SELECT USING (true);
DROP POLICY own ON fu.rls;
CREATE POLICY upd_own ON fu.rls FOR UPDATE USING (owner = current_user);
SET ROLE fu_user;
SELECT fence.fenced_update('fu.rls', '{"id": 2}', 1, '{"v": "stolen"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.fenced_update('fu.rls', '{"id": 1}', 2, '{"v": "mine3"}');
RESET ROLE;
SELECT * FROM fu.rls ORDER BY id;

-- messages and LOG lines quote at most 256 bytes of a key (cut between
-- characters): a 2 MB key gives a short message
CREATE TABLE fu.longkey (k text PRIMARY KEY, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.longkey VALUES (repeat('k', 1000), 5);
CREATE TABLE fu.dupkey (k text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.dupkey VALUES (repeat('d', 1000), 0), (repeat('d', 1000), 0);
SELECT fence.fenced_update('fu.longkey', jsonb_build_object('k', repeat('x', 2000000)), 6, '{}');
SELECT fence.fenced_update('fu.dupkey', jsonb_build_object('k', repeat('d', 1000)), 6, '{}');
SELECT fence.fenced_update('fu.longkey', jsonb_build_object(repeat('é', 1000000), 1), 6, '{}');
SET client_min_messages = log;
SELECT fence.fenced_update('fu.longkey', jsonb_build_object('k', repeat('k', 1000)), 4, '{}');
SET client_min_messages = warning;
SELECT k = repeat('k', 1000) AS same_key, fence FROM fu.longkey;

--
-- expect_fence: applied only while the row's fence is still the one the
-- caller read (and the token beats it)
--
CREATE TABLE fu.rmw (id int PRIMARY KEY, n int NOT NULL, fence bigint NOT NULL DEFAULT 0);
INSERT INTO fu.rmw VALUES (1, 0, 0);
-- read-modify-write: read n and the fence, write n + 1 if nobody wrote since
SELECT n AS n0, fence AS f0 FROM fu.rmw WHERE id = 1 \gset
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 10, jsonb_build_object('n', :n0 + 1),
                           expect_fence => :f0) AS applied;
-- a second writer that read the row before that write: its token (11) beats
-- the fence (10), but the fence is not the 0 it read: lost race, false,
-- nothing written, and a LOG line of its own
SET client_min_messages = log;
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 11, jsonb_build_object('n', :n0 + 1),
                           expect_fence => :f0) AS lost_race;
-- a stale token with a wrong expected fence is reported as stale
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 9, '{"n": 100}', expect_fence => 3) AS stale;
SET client_min_messages = warning;
SELECT * FROM fu.rmw;
-- the right expected fence and a token that beats it: applied
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 11, '{"n": 2}', expect_fence => 10) AS applied;
-- expect_fence with allow_equal: the same holder writes again, still checked
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 11, '{"n": 3}', 'fence', true, 11) AS applied;
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 11, '{"n": 4}', 'fence', true, 10) AS lost_race;
-- expect_fence equal to the fence but the token does not beat it: stale
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 11, '{"n": 5}', expect_fence => 11) AS stale;
-- NULL expect_fence: not checked (as if not given)
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 12, '{"n": 6}', expect_fence => NULL) AS applied;
SELECT * FROM fu.rmw;
-- a missing key is still P0002, with or without expect_fence
SELECT fence.fenced_update('fu.rmw', '{"id": 2}', 13, '{}', expect_fence => 0);
\echo :LAST_ERROR_SQLSTATE
-- lost races are not stale writes: not counted in stale_writes_rejected
SELECT stale_writes_rejected AS stale_before_race FROM fence.stats() \gset
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 13, '{}', expect_fence => 0) AS lost_race;
SELECT stale_writes_rejected - :stale_before_race AS counted FROM fence.stats();

--
-- FN004: a token higher than every token this database has issued is
-- refused, and nothing changes
--
SELECT fence.try_lock('fu-highest') AS highest \gset
SELECT fence.unlock('fu-highest', :highest);
\set VERBOSITY terse
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', 9223372036854775807, '{"n": -1}');
\set VERBOSITY sqlstate
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', :highest + 1, '{"n": -1}');
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', :highest + 1, '{"n": -1}', expect_fence => 12);
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', :highest + 1, '{"n": -1}', allow_equal => true);
\set VERBOSITY default
SELECT * FROM fu.rmw;
-- the highest issued token itself is accepted
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', :highest, '{"n": 7}') AS applied;
-- the message names the token; the detail the highest issued one, the hint
-- what to do (numbers shown as N: they depend on what ran before)
\set VERBOSITY sqlstate
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', :highest + 1, '{}') AS x \gset
\set VERBOSITY default
SELECT :'LAST_ERROR_MESSAGE' = format('fencing token %s was never issued by this database',
                                      :highest + 1) AS message_names_token;
SET client_min_messages = notice;
DO $$
DECLARE
	d text;
	h text;
BEGIN
	PERFORM fence.fenced_update('fu.rmw', '{"id": 1}', 9223372036854775807, '{}');
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RAISE NOTICE 'sqlstate: %', SQLSTATE;
	RAISE NOTICE 'detail: %', regexp_replace(d, '[0-9]+', 'N', 'g');
	RAISE NOTICE 'hint: %', h;
END $$;
SET client_min_messages = warning;
-- other roles cannot turn the check off; a superuser can, for resources
-- fenced with another database's tokens
SET ROLE fu_user;
SET fence.require_issued_tokens = off;
RESET ROLE;
GRANT ALL ON fu.rmw TO fu_user;
SET fence.require_issued_tokens = off;
SET ROLE fu_user;
SELECT fence.fenced_update('fu.rmw', '{"id": 1}', :highest + 1000000, '{"n": 8}') AS applied_unchecked;
RESET ROLE;
RESET fence.require_issued_tokens;
SELECT n, fence = :highest + 1000000 AS foreign_fence FROM fu.rmw;

RESET client_min_messages;
SET client_min_messages = warning;
DROP SCHEMA fu CASCADE;
DROP SCHEMA fu_moved CASCADE;
DROP ROLE fu_user;
