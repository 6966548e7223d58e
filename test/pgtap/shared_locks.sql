-- test/pgtap/shared_locks.sql - shape, privileges and error contract of
-- fence.try_lock_shared / fence.lock_shared (0.2.0), run by pg_prove in a
-- database with pgtap and pg_fence installed (test/run-all.sh).
-- Contention, 55P03 and 40P01 need other sessions: see
-- test/specs/shared_lock_contention.spec.
BEGIN;
SELECT plan(35);

CREATE TEMP TABLE api_fn (fn name, args name[]) ON COMMIT DROP;
INSERT INTO api_fn VALUES
	('try_lock_shared', '{text}'),
	('lock_shared',     '{text,interval}');

-- Shape: 8 tests each.
SELECT has_function('fence', fn, args, format('fence.%s(%s) exists', fn, array_to_string(args, ', ')))
  FROM api_fn ORDER BY fn;
SELECT function_returns('fence', fn, args, 'bigint', format('fence.%s returns bigint', fn))
  FROM api_fn ORDER BY fn;
SELECT volatility_is('fence', fn, args, 'volatile', format('fence.%s is VOLATILE', fn))
  FROM api_fn ORDER BY fn;
SELECT isnt_strict('fence', fn, args, format('fence.%s is CALLED ON NULL INPUT (NULL raises 22023)', fn))
  FROM api_fn ORDER BY fn;
SELECT isnt_definer('fence', fn, args, format('fence.%s is SECURITY INVOKER', fn))
  FROM api_fn ORDER BY fn;
SELECT function_lang_is('fence', fn, args, 'c', format('fence.%s is written in C', fn))
  FROM api_fn ORDER BY fn;
SELECT ok(pg_catalog.has_function_privilege('public', format('fence.%s(%s)', fn, array_to_string(args, ',')), 'EXECUTE'),
	format('PUBLIC can EXECUTE fence.%s, like fence.lock', fn))
  FROM api_fn ORDER BY fn;
SELECT isnt(pg_catalog.obj_description(format('fence.%s(%s)', fn, array_to_string(args, ','))::regprocedure, 'pg_proc'),
	NULL, format('fence.%s has a COMMENT', fn))
  FROM api_fn ORDER BY fn;
SELECT is((SELECT pg_catalog.pg_get_expr(p.proargdefaults, 0) FROM pg_catalog.pg_proc p
            WHERE p.oid = 'fence.lock_shared(text,interval)'::regprocedure), 'NULL::interval',
	'lock_shared''s timeout defaults to NULL (no limit)');
SELECT is_empty($$
	SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
	 WHERE p.oid IN ('fence.try_lock_shared(text)'::regprocedure, 'fence.lock_shared(text,interval)'::regprocedure)
	   AND (p.proparallel <> 'u' OR p.procost <> 10000)
$$, 'the shared lock functions are PARALLEL UNSAFE with COST 10000, like fence.lock');

-- 22023: invalid arguments.
SELECT throws_ok($$SELECT fence.try_lock_shared(NULL)$$, '22023', NULL, 'try_lock_shared(NULL) raises 22023');
SELECT throws_ok($$SELECT fence.try_lock_shared('')$$, '22023', NULL, 'try_lock_shared('''') raises 22023');
SELECT throws_ok($$SELECT fence.try_lock_shared(repeat('x', 1025))$$, '22023', NULL,
	'try_lock_shared of a 1025-byte name raises 22023');
SELECT throws_ok($$SELECT fence.lock_shared(NULL)$$, '22023', NULL, 'lock_shared(NULL) raises 22023');
SELECT throws_ok($$SELECT fence.lock_shared('tap/s', interval '0')$$, '22023', NULL,
	'lock_shared with a zero timeout raises 22023');
SELECT throws_ok($$SELECT fence.lock_shared('tap/s', interval '-1 second')$$, '22023', NULL,
	'lock_shared with a negative timeout raises 22023');

-- 55000: one mode per name and session, both ways, with the message.
SELECT isnt(fence.try_lock_shared('tap/s'), NULL, 'try_lock_shared grants a free name');
SELECT throws_ok($$SELECT fence.try_lock('tap/s')$$, '55000',
	'lock "tap/s" is held in shared mode by this session', 'try_lock of a name held shared raises 55000');
SELECT throws_ok($$SELECT fence.lock('tap/s', interval '1 second')$$, '55000', NULL,
	'lock of a name held shared raises 55000');
SELECT throws_ok($$SELECT fence.try_xact_lock('tap/s')$$, '55000', NULL,
	'try_xact_lock of a name held shared raises 55000');
SELECT isnt(fence.try_lock('tap/x'), NULL, 'try_lock grants a free name');
SELECT throws_ok($$SELECT fence.try_lock_shared('tap/x')$$, '55000',
	'lock "tap/x" is held in exclusive mode by this session', 'try_lock_shared of a name held exclusive raises 55000');
SELECT throws_ok($$SELECT fence.lock_shared('tap/x')$$, '55000', NULL,
	'lock_shared of a name held exclusive raises 55000');
SELECT is(fence.unlock_all(), 2, 'unlock_all releases the shared and the exclusive name');

-- 25006: no grants in a read-only transaction (throws_ok runs its query in
-- a subtransaction, where SET TRANSACTION READ ONLY is allowed).
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.try_lock_shared('tap/ro')$$, '25006', NULL,
	'try_lock_shared in a read-only transaction raises 25006');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.lock_shared('tap/ro')$$, '25006', NULL,
	'lock_shared in a read-only transaction raises 25006');
SELECT is((SELECT count(*) FROM pg_catalog.pg_locks
            WHERE locktype = 'advisory' AND objsubid = 26213 AND pid = pg_catalog.pg_backend_pid()),
	0::bigint, 'nothing is held after the errors');

SELECT * FROM finish();
ROLLBACK;
