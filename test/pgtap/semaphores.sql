-- test/pgtap/semaphores.sql - shape, privileges and error contract of
-- fence.semaphore_acquire and of the permits' storage in fence.leases, run
-- by pg_prove in a database with pgtap and pg_fence installed.
-- Waiting needs other sessions: see test/cpp/server/semaphore_wait.cpp.
BEGIN;
SELECT plan(33);

-- The function: exact signature, return type, volatility, NULL handling,
-- SECURITY INVOKER, C, PARALLEL UNSAFE, callable by PUBLIC, documented.
SELECT has_function('fence', 'semaphore_acquire', ARRAY['text', 'integer', 'interval', 'text', 'interval'],
	'fence.semaphore_acquire(text, integer, interval, text, interval) exists');
SELECT function_returns('fence', 'semaphore_acquire', ARRAY['text', 'integer', 'interval', 'text', 'interval'],
	'bigint', 'semaphore_acquire returns bigint');
SELECT volatility_is('fence', 'semaphore_acquire', ARRAY['text', 'integer', 'interval', 'text', 'interval'],
	'volatile', 'semaphore_acquire is VOLATILE');
SELECT isnt_strict('fence', 'semaphore_acquire', ARRAY['text', 'integer', 'interval', 'text', 'interval'],
	'semaphore_acquire is CALLED ON NULL INPUT (NULL raises 22023)');
SELECT isnt_definer('fence', 'semaphore_acquire', ARRAY['text', 'integer', 'interval', 'text', 'interval'],
	'semaphore_acquire is SECURITY INVOKER');
SELECT function_lang_is('fence', 'semaphore_acquire', ARRAY['text', 'integer', 'interval', 'text', 'interval'],
	'c', 'semaphore_acquire is written in C');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = 'fence.semaphore_acquire(text,integer,interval,text,interval)'::regprocedure),
	'u'::"char", 'semaphore_acquire is PARALLEL UNSAFE');
SELECT ok(pg_catalog.has_function_privilege('public',
	'fence.semaphore_acquire(text,integer,interval,text,interval)', 'EXECUTE'),
	'PUBLIC may call semaphore_acquire');
SELECT isnt(pg_catalog.obj_description(
	'fence.semaphore_acquire(text,integer,interval,text,interval)'::regprocedure, 'pg_proc'),
	NULL, 'semaphore_acquire has a COMMENT');

-- Storage: permits are rows of fence.leases, keyed by (name, slot), dumped,
-- closed to PUBLIC.
SELECT has_column('fence', 'leases', 'slot', 'fence.leases has a slot column');
SELECT col_type_is('fence', 'leases', 'slot', 'integer', 'slot is integer');
SELECT col_not_null('fence', 'leases', 'slot', 'slot is NOT NULL');
SELECT has_column('fence', 'leases', 'permits', 'fence.leases has a permits column');
SELECT col_is_null('fence', 'leases', 'permits', 'permits is NULL for leases');
SELECT col_is_pk('fence', 'leases', ARRAY['name', 'slot'], 'the key of fence.leases is (name, slot)');
SELECT table_privs_are('fence', 'leases', 'public', ARRAY[]::text[], 'PUBLIC has no rights on fence.leases');
SELECT ok((SELECT 'fence.leases'::regclass = ANY (extconfig) FROM pg_catalog.pg_extension
            WHERE extname = 'pg_fence'), 'fence.leases is dumped by pg_dump');

-- Errors.
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/s', 0, '1 s')$$, '22023', NULL,
	'permits 0 raises 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/s', 10001, '1 s')$$, '22023', NULL,
	'permits above 10000 raises 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/s', NULL, '1 s')$$, '22023', NULL,
	'permits NULL raises 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire(NULL, 2, '1 s')$$, '22023', NULL,
	'name NULL raises 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire(repeat('x', 1025), 2, '1 s')$$, '22023', NULL,
	'a name over 1024 bytes raises 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/s', 2, '0 s')$$, '22023', NULL,
	'ttl 0 raises 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/s', 2, '1 s', NULL, '-1 s')$$, '22023', NULL,
	'a negative wait raises 22023');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.semaphore_acquire('tap/ro', 2, '1 s')$$,
	'25006', NULL, 'semaphore_acquire in a read-only transaction raises 25006');

-- One namespace with leases: no mixing while held (42809).
SELECT ok(fence.lease_acquire('tap/mixed-l', '1 min') IS NOT NULL, 'a lease is granted');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/mixed-l', 3, '1 min')$$, '42809',
	'"tap/mixed-l" is held as a lease, not a semaphore', 'a semaphore on a held lease raises 42809');
SELECT ok(fence.semaphore_acquire('tap/mixed-s', 3, '1 min') IS NOT NULL, 'a permit is granted');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/mixed-s', '1 min')$$, '42809',
	'"tap/mixed-s" is held as a semaphore, not a lease', 'a lease on a held semaphore raises 42809');

-- permits differing between callers: each counts against its own.
SELECT ok(fence.semaphore_acquire('tap/mixed-s', 3, '1 min') IS NOT NULL, 'a second permit of 3');
SELECT is(fence.semaphore_acquire('tap/mixed-s', 2, '1 min'), NULL,
	'a caller with permits 2 is refused while 2 are held');
SELECT ok(fence.semaphore_acquire('tap/mixed-s', 3, '1 min') IS NOT NULL,
	'a caller with permits 3 gets the third');
SELECT is((SELECT count(*)::int FROM fence.locks WHERE name = 'tap/mixed-s' AND kind = 'semaphore'), 3,
	'fence.locks shows the three permit holders');

SELECT * FROM finish();
ROLLBACK;
