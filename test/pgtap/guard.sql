-- pgTAP: shape and privileges of guard, unguard, advance and the
-- observability objects.  Run with pg_prove against a database where
-- pgtap and pg_fence can be created; everything is rolled back.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_fence;
SELECT plan(85);

-- functions and signatures
SELECT has_function('fence', 'guard', ARRAY['regclass', 'name', 'name[]']);
SELECT has_function('fence', 'unguard', ARRAY['regclass']);
SELECT has_function('fence', 'guard_trigger', ARRAY[]::name[]);
SELECT has_function('fence', 'advance', ARRAY['text', 'bigint']);
SELECT has_function('fence', 'stats', ARRAY[]::name[]);
SELECT has_function('fence', 'held_locks', ARRAY[]::name[]);
SELECT function_returns('fence', 'guard', ARRAY['regclass', 'name', 'name[]'], 'void');
SELECT function_returns('fence', 'unguard', ARRAY['regclass'], 'void');
SELECT function_returns('fence', 'guard_trigger', ARRAY[]::name[], 'trigger');
SELECT function_returns('fence', 'advance', ARRAY['text', 'bigint'], 'boolean');
SELECT function_returns('fence', 'stats', ARRAY[]::name[], 'record');
SELECT function_returns('fence', 'held_locks', ARRAY[]::name[], 'setof record');
SELECT volatility_is('fence', 'advance', ARRAY['text', 'bigint'], 'volatile');
SELECT volatility_is('fence', 'guard', ARRAY['regclass', 'name', 'name[]'], 'volatile');
SELECT is((SELECT pg_get_function_arguments('fence.guard(regclass, name, name[])'::regprocedure)),
          'rel regclass, fence_column name DEFAULT ''fence''::name, resource_columns name[] DEFAULT NULL::name[]',
          'guard: fence_column defaults to fence, resource_columns to NULL');

-- security: only advance is SECURITY DEFINER, with a pinned search_path
SELECT is_definer('fence', 'advance', ARRAY['text', 'bigint']);
SELECT is((SELECT proconfig FROM pg_proc WHERE oid = 'fence.advance(text, bigint)'::regprocedure),
          ARRAY['search_path=pg_catalog, pg_temp'], 'advance pins search_path');
SELECT isnt_definer('fence', 'guard', ARRAY['regclass', 'name', 'name[]']);
SELECT isnt_definer('fence', 'unguard', ARRAY['regclass']);
SELECT isnt_definer('fence', 'guard_trigger', ARRAY[]::name[]);
SELECT isnt_definer('fence', 'stats', ARRAY[]::name[]);
SELECT isnt_definer('fence', 'held_locks', ARRAY[]::name[]);
SELECT function_privs_are('fence', 'advance', ARRAY['text', 'bigint'], 'public', ARRAY['EXECUTE']);
SELECT function_privs_are('fence', 'stats', ARRAY[]::name[], 'public', ARRAY['EXECUTE']);
SELECT function_privs_are('fence', 'held_locks', ARRAY[]::name[], 'public', ARRAY['EXECUTE']);

-- where the shared memory lives: the test cluster preloads pg_fence
SELECT has_function('fence', 'shared_memory', ARRAY[]::name[]);
SELECT function_returns('fence', 'shared_memory', ARRAY[]::name[], 'text');
SELECT function_privs_are('fence', 'shared_memory', ARRAY[]::name[], 'public', ARRAY['EXECUTE']);
SELECT is(fence.shared_memory(), 'preloaded', 'shared memory: preloaded');

-- fence.resources: the extension's, dumped, closed to PUBLIC
SELECT has_table('fence', 'resources', 'fence.resources exists');
SELECT columns_are('fence', 'resources', ARRAY['name', 'token', 'updated_at']);
SELECT col_is_pk('fence', 'resources', 'name', 'resources keyed by name');
SELECT col_not_null('fence', 'resources', 'token', 'resources.token is NOT NULL');
SELECT table_privs_are('fence', 'resources', 'public', ARRAY[]::text[]);
SELECT ok((SELECT 'fence.resources'::regclass = ANY (extconfig) FROM pg_extension
            WHERE extname = 'pg_fence'), 'fence.resources is dumped by pg_dump');

-- fence.max_name_bytes(): the name limit (docs/README.md, conventions: 1024 bytes), from C
SELECT has_function('fence', 'max_name_bytes', ARRAY[]::name[]);
SELECT function_returns('fence', 'max_name_bytes', ARRAY[]::name[], 'integer');
SELECT volatility_is('fence', 'max_name_bytes', ARRAY[]::name[], 'immutable');
SELECT function_privs_are('fence', 'max_name_bytes', ARRAY[]::name[], 'public', ARRAY['EXECUTE']);
SELECT is(fence.max_name_bytes(), 1024, 'names are at most 1024 bytes');
SELECT ok((SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
            WHERE c.conrelid = 'fence.resources'::regclass AND c.contype = 'c')
          LIKE '%<= fence.max_name_bytes()%',
          'fence.resources checks names against fence.max_name_bytes()');
SELECT ok(obj_description('fence.advance(text, bigint)'::regprocedure, 'pg_proc')
          LIKE '%(> ' || fence.max_name_bytes() || ' bytes)%',
          'the COMMENT of fence.advance states the limit of the C code');

-- fence.locks: readable by everyone
SELECT has_view('fence', 'locks', 'fence.locks exists');
SELECT columns_are('fence', 'locks', ARRAY['name', 'kind', 'token', 'pid', 'holder',
                   'granted_at', 'expires_at', 'expired', 'waiters', 'longest_wait']);
SELECT table_privs_are('fence', 'locks', 'public', ARRAY['SELECT']);

-- fence.waiters: one row per waiter, readable by everyone
SELECT has_view('fence', 'waiters', 'fence.waiters exists');
SELECT columns_are('fence', 'waiters', ARRAY['name', 'pid', 'application_name',
                   'wait_started', 'waited', 'holder_pid']);
SELECT col_type_is('fence', 'waiters', 'waited', 'interval', 'waiters.waited is an interval');
SELECT table_privs_are('fence', 'waiters', 'public', ARRAY['SELECT']);

-- fence.stats_reset(): superusers and fence_admin only, like pg_stat_reset()
SELECT has_function('fence', 'stats_reset', ARRAY[]::name[]);
SELECT function_returns('fence', 'stats_reset', ARRAY[]::name[], 'void');
SELECT isnt_definer('fence', 'stats_reset', ARRAY[]::name[]);
SELECT function_privs_are('fence', 'stats_reset', ARRAY[]::name[], 'public', ARRAY[]::text[]);
SELECT function_privs_are('fence', 'stats_reset', ARRAY[]::name[], 'fence_admin', ARRAY['EXECUTE']);
SELECT throws_ok('SET LOCAL ROLE pg_monitor; SELECT fence.stats_reset()', '42501',
                 'permission denied for function stats_reset',
                 'stats_reset by a role without fence_admin: 42501');
RESET ROLE;

-- fence.lock_tag_class(): the view's tag class, from C (lock_tag.hpp)
SELECT has_function('fence', 'lock_tag_class', ARRAY[]::name[]);
SELECT function_returns('fence', 'lock_tag_class', ARRAY[]::name[], 'smallint');
SELECT volatility_is('fence', 'lock_tag_class', ARRAY[]::name[], 'immutable');
SELECT isnt_definer('fence', 'lock_tag_class', ARRAY[]::name[]);
SELECT function_privs_are('fence', 'lock_tag_class', ARRAY[]::name[], 'public', ARRAY['EXECUTE']);
SELECT ok(pg_get_functiondef('fence.lock_tags()'::regprocedure) LIKE '%objsubid = fence.lock_tag_class()%',
          'fence.lock_tags picks pg_locks rows by fence.lock_tag_class()');
SELECT ok(pg_get_viewdef('fence.locks'::regclass) LIKE '%fence.lock_tags()%',
          'fence.locks reads its pg_locks rows from fence.lock_tags()');
SELECT ok(pg_get_viewdef('fence.waiters'::regclass) LIKE '%fence.lock_tags()%',
          'fence.waiters reads its pg_locks rows from fence.lock_tags()');
SELECT isnt_definer('fence', 'lock_tags', ARRAY[]::name[]);
SELECT function_privs_are('fence', 'lock_tags', ARRAY[]::name[], 'public', ARRAY['EXECUTE']);
SELECT function_returns('fence', 'lock_tag_key', ARRAY['oid', 'oid'], 'bigint');
SELECT volatility_is('fence', 'lock_tag_key', ARRAY['oid', 'oid'], 'immutable');
SELECT is(fence.lock_tag_key(NULL, 1), NULL, 'lock_tag_key(NULL, ...) is NULL');
SELECT isnt(fence.try_xact_lock('tap_tag_class'), NULL, 'take a lock');
SELECT is((SELECT count(*)::int FROM pg_locks
            WHERE locktype = 'advisory' AND pid = pg_backend_pid()
              AND objsubid = fence.lock_tag_class()), 1,
          'pg_locks shows the lock with objsubid = fence.lock_tag_class()');
SELECT is((SELECT count(*)::int FROM fence.lock_tags() AS t
            WHERE t.pid = pg_backend_pid() AND t.granted
              AND t.key = (SELECT l.key FROM fence.held_locks() AS l
                            WHERE l.pid = pg_backend_pid() AND l.name = 'tap_tag_class')), 1,
          'fence.lock_tags() shows the lock under the key fence.held_locks() gives it');

-- error contracts
CREATE TABLE tap_guarded (id int PRIMARY KEY, fence bigint NOT NULL DEFAULT 0);
INSERT INTO tap_guarded VALUES (1, 5);
CREATE VIEW tap_view AS SELECT * FROM tap_guarded;
SELECT lives_ok($$SELECT fence.guard('tap_guarded')$$, 'guard a table');
SELECT throws_ok($$SELECT fence.guard('tap_guarded')$$, '42710', NULL, 'guard twice: 42710');
SELECT throws_ok($$SELECT fence.guard('tap_view')$$, '42809', NULL, 'guard a view: 42809');
SELECT throws_ok($$SELECT fence.guard(0)$$, '42P01', NULL, 'guard of OID 0: 42P01');
SELECT throws_ok($$SELECT fence.unguard(4294967295)$$, '42P01', NULL, 'unguard of an OID of no relation: 42P01');
SELECT throws_ok($$SELECT fence.guard('fence.insert_marks', 'token', ARRAY['resource_hash'])$$, '42501', NULL,
                 'guard of the extension''s fence.insert_marks: 42501');
SELECT throws_ok($$SELECT fence.guard('fence.leases', 'token')$$, '42501', NULL,
                 'guard of the extension''s fence.leases: 42501');
SELECT throws_ok($$UPDATE tap_guarded SET fence = 4$$, 'FN001', NULL, 'stale token: FN001');
SELECT throws_ok($$DELETE FROM tap_guarded$$, 'FN003', NULL, 'no token: FN003');
SELECT throws_ok($$SELECT fence.advance(NULL, 1)$$, '22023', NULL, 'advance NULL resource: 22023');
CREATE ROLE tap_other;
GRANT UPDATE ON tap_guarded TO tap_other;
SET LOCAL ROLE tap_other;
SELECT throws_ok($$SELECT fence.unguard('tap_guarded')$$, '42501', NULL, 'unguard by a non-owner: 42501');
RESET ROLE;
SELECT lives_ok($$SELECT fence.unguard('tap_guarded')$$, 'unguard');
SELECT throws_ok($$SELECT fence.unguard('tap_guarded')$$, '42704', NULL, 'unguard twice: 42704');
SELECT is((SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 'tap_guarded'::regclass), 0,
          'unguard removed the trigger');

SELECT * FROM finish();
ROLLBACK;
