-- pgTAP: shape, privileges and error contract of guarded INSERTs
-- (fence.guard with resource_columns).  Run with pg_prove in a database
-- where pgtap and pg_fence can be created; everything is rolled back.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_fence;
SELECT plan(38);

-- tokens the literal ones below can be (FN004 refuses a token never issued)
SELECT is((SELECT count(fence.unlock('tap-gi-tokens', fence.try_lock('tap-gi-tokens')))::int
             FROM generate_series(1, 10)), 10, 'ten tokens issued');

-- fence.insert_marks: the extension's, dumped, closed to PUBLIC
SELECT has_table('fence', 'insert_marks', 'fence.insert_marks exists');
SELECT columns_are('fence', 'insert_marks', ARRAY['guard_id', 'resource_hash', 'token']);
SELECT col_is_pk('fence', 'insert_marks', ARRAY['guard_id', 'resource_hash'],
                 'insert_marks keyed by guard and resource');
SELECT col_not_null('fence', 'insert_marks', 'token', 'insert_marks.token is NOT NULL');
SELECT table_privs_are('fence', 'insert_marks', 'public', ARRAY[]::text[]);
SELECT ok((SELECT 'fence.insert_marks'::regclass = ANY (extconfig) FROM pg_extension
            WHERE extname = 'pg_fence'), 'fence.insert_marks is dumped by pg_dump');
SELECT has_sequence('fence', 'guard_id_seq', 'fence.guard_id_seq exists');
SELECT sequence_privs_are('fence', 'guard_id_seq', 'public', ARRAY[]::text[]);
SELECT ok((SELECT 'fence.guard_id_seq'::regclass = ANY (extconfig) FROM pg_extension
            WHERE extname = 'pg_fence'), 'fence.guard_id_seq is dumped by pg_dump');

-- fence.insert_guards: each guard number's table; the extension's, dumped
-- (rel by name, so a restore binds it to the restored table), closed to PUBLIC
SELECT has_table('fence', 'insert_guards', 'fence.insert_guards exists');
SELECT columns_are('fence', 'insert_guards', ARRAY['guard_id', 'rel']);
SELECT col_is_pk('fence', 'insert_guards', 'guard_id', 'insert_guards keyed by guard number');
SELECT col_type_is('fence', 'insert_guards', 'rel', 'regclass', 'insert_guards.rel is a regclass');
SELECT table_privs_are('fence', 'insert_guards', 'public', ARRAY[]::text[]);
SELECT ok((SELECT 'fence.insert_guards'::regclass = ANY (extconfig) FROM pg_extension
            WHERE extname = 'pg_fence'), 'fence.insert_guards is dumped by pg_dump');

-- guard's third argument
SELECT function_privs_are('fence', 'guard', ARRAY['regclass', 'name', 'name[]'], 'public', ARRAY['EXECUTE']);
SELECT ok(obj_description('fence.guard(regclass, name, name[])'::regprocedure, 'pg_proc') LIKE '%resource_columns%',
          'guard''s comment explains resource_columns');

-- errors: each changes nothing
CREATE TABLE tap_gi (id int, stream text, p point, fence bigint NOT NULL DEFAULT 0);
SELECT throws_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY[]::name[])$$, '22023', NULL, 'empty resource_columns: 22023');
SELECT throws_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY[NULL]::name[])$$, '22023', NULL, 'NULL resource column: 22023');
SELECT throws_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY['fence'])$$, '22023', NULL, 'the fence column: 22023');
SELECT throws_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY['stream', 'stream'])$$, '42701', NULL, 'a column twice: 42701');
SELECT throws_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY['nosuch'])$$, '42703', NULL, 'missing column: 42703');
SELECT throws_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY['p'])$$, '42883', NULL, 'unhashable type: 42883');
SELECT is((SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 'tap_gi'::regclass), 0, 'no trigger after the errors');

-- guarded: INSERT without a token FN003, with a lower one FN001
SELECT lives_ok($$SELECT fence.guard('tap_gi', 'fence', ARRAY['stream'])$$, 'guard with a resource column');
SELECT lives_ok($$INSERT INTO tap_gi (id, stream, fence) VALUES (1, 's', 5)$$, 'an INSERT presenting token 5');
SELECT throws_ok($$INSERT INTO tap_gi (id, stream) VALUES (2, 's')$$, 'FN003', NULL, 'no token: FN003');
SELECT throws_ok($$INSERT INTO tap_gi (id, stream, fence) VALUES (3, 's', 4)$$, 'FN001', NULL, 'a lower token: FN001');
SELECT lives_ok($$INSERT INTO tap_gi (id, stream, fence) VALUES (4, 't', 4)$$, 'another resource');
SELECT is((SELECT rel FROM fence.insert_guards g
             WHERE g.guard_id = (SELECT split_part(encode(tgargs, 'escape'), '\000', 2)::bigint
                                   FROM pg_trigger WHERE tgrelid = 'tap_gi'::regclass)),
          'tap_gi'::regclass, 'the guard number is registered to its table');
-- another table's trigger with that number runs no guard (39P01), changes no mark
CREATE TABLE tap_gi_copy (stream text, fence bigint NOT NULL DEFAULT 0);
SELECT lives_ok(format($$CREATE TRIGGER fence_guard BEFORE INSERT ON tap_gi_copy FOR EACH ROW
                         EXECUTE FUNCTION fence.guard_trigger('fence', %L, 'stream')$$,
                       (SELECT guard_id FROM fence.insert_guards WHERE rel = 'tap_gi'::regclass)),
                'copy the guard number onto another table''s trigger');
SELECT throws_ok($$INSERT INTO tap_gi_copy VALUES ('s', 9)$$, '39P01', NULL, 'a copied guard number: 39P01');
SELECT is((SELECT array_agg(token ORDER BY token) FROM fence.insert_marks), ARRAY[4, 5]::bigint[], 'one mark per resource');

-- unguard takes the marks with it
SELECT lives_ok($$SELECT fence.unguard('tap_gi')$$, 'unguard');
SELECT is((SELECT count(*)::int FROM fence.insert_marks), 0, 'no marks after unguard');
SELECT is((SELECT count(*)::int FROM fence.insert_guards WHERE rel = 'tap_gi'::regclass), 0,
          'no guard number registered to the table after unguard');
SELECT lives_ok($$INSERT INTO tap_gi (id, stream) VALUES (5, 's')$$, 'INSERT unfenced again');

SELECT * FROM finish();
ROLLBACK;
