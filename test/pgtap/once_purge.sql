-- test/pgtap/once_purge.sql - retention of idempotency keys (issue 26,
-- docs/once.md "Retention and purge"): fence.once_purge, the setting
-- fence.once_retention, and that a purged key is new again with a larger
-- token.  Run by pg_prove as a superuser; everything is rolled back.
BEGIN;
SELECT plan(26);

-- shape and privileges: not for PUBLIC, for fence_admin (like lease_purge)
SELECT has_function('fence', 'once_purge', ARRAY[]::name[]);
SELECT function_returns('fence', 'once_purge', ARRAY[]::name[], 'bigint');
SELECT volatility_is('fence', 'once_purge', ARRAY[]::name[], 'volatile');
SELECT isnt_definer('fence', 'once_purge', ARRAY[]::name[],
	'once_purge is SECURITY INVOKER (it switches to the table owner itself)');
SELECT function_privs_are('fence', 'once_purge', ARRAY[]::name[], 'public',
	ARRAY[]::text[], 'PUBLIC may not EXECUTE once_purge');
SELECT function_privs_are('fence', 'once_purge', ARRAY[]::name[], 'fence_admin',
	ARRAY['EXECUTE'], 'fence_admin may EXECUTE once_purge');
SELECT ok(pg_catalog.obj_description('fence.once_purge()'::regprocedure, 'pg_proc') ~ 'cron.schedule',
	'the COMMENT of once_purge shows how to schedule it');

-- the setting: seconds, default one day, superuser only
SELECT is(current_setting('fence.once_retention'), '1d', 'fence.once_retention defaults to 1 day');
SELECT is((SELECT unit || ' ' || context || ' ' || vartype FROM pg_catalog.pg_settings
            WHERE name = 'fence.once_retention'), 's superuser integer',
	'fence.once_retention: seconds, a superuser setting');
CREATE ROLE tap_op_user;
SET LOCAL ROLE tap_op_user;
SELECT throws_ok($$SET fence.once_retention = '1s'$$, '42501', NULL,
	'a plain role cannot change fence.once_retention');
SELECT throws_ok($$SELECT fence.once_purge()$$, '42501', NULL, 'a plain role cannot purge');
RESET ROLE;
SELECT throws_ok($$SET fence.once_retention = '0'$$, '22023', NULL,
	'fence.once_retention is at least 1 second');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.once_purge()$$, '25006',
	'cannot purge idempotency keys in a read-only transaction', 'once_purge read-only: 25006');

-- start from nothing older than the retention (what other tests left)
SET LOCAL fence.once_retention = '1s';
SELECT ok(fence.once_purge() >= 0, 'a purge of whatever was left');

-- old keys: done, released, expired unfinished; then young ones of each
SELECT token AS t_done FROM fence.once_begin('tap/purge/done', '1 min') \gset
SELECT ok(fence.once_finish('tap/purge/done', :t_done, '{"n": 1}'), 'an old key finished');
SELECT token AS t_rel FROM fence.once_begin('tap/purge/rel', '1 min') \gset
SELECT ok(fence.once_release('tap/purge/rel', :t_rel), 'an old key released');
SELECT token AS t_exp FROM fence.once_begin('tap/purge/exp', '100 ms') \gset
SELECT pg_sleep(1.3);
SELECT token AS t_young FROM fence.once_begin('tap/purge/young', '1 min') \gset
SELECT ok(fence.once_finish('tap/purge/young', :t_young, '{"n": 2}'), 'a young key finished');
SELECT token AS t_live FROM fence.once_begin('tap/purge/live', '2 s') \gset

SET LOCAL fence.once_retention = '1h';
SELECT is(fence.once_purge(), 0::bigint, 'nothing finished an hour ago: nothing purged');
SET LOCAL fence.once_retention = '1s';
SELECT is(fence.once_purge(), 3::bigint,
	'purged: the key finished over 1 s ago, the released one and the expired unfinished one');
SELECT is(ARRAY(SELECT key FROM fence.once_keys WHERE key LIKE 'tap/purge/%' ORDER BY key),
	ARRAY['tap/purge/live', 'tap/purge/young'],
	'kept: the key finished within the retention and the live one');
SELECT is(fence.once_purge(), 0::bigint, 'a second purge finds nothing');

-- a purged key is new again, with a larger token; its old owner is refused
CREATE TEMP TABLE r ON COMMIT DROP AS SELECT * FROM fence.once_begin('tap/purge/done', '1 min');
SELECT is((SELECT status FROM r), 'new', 'a purged key is new again');
SELECT ok((SELECT token > :t_live FROM r), 'with a token larger than every earlier one');
SELECT ok(NOT fence.once_finish('tap/purge/exp', :t_exp, '{}'), 'the purged expired owner''s finish: false');

-- fence_admin may purge
CREATE ROLE tap_op_admin;
GRANT fence_admin TO tap_op_admin;
SET LOCAL ROLE tap_op_admin;
SELECT lives_ok($$SELECT fence.once_purge()$$, 'a member of fence_admin may purge');
RESET ROLE;
SELECT is((SELECT count(*) FROM fence.once_keys WHERE key = 'tap/purge/young'), 1::bigint,
	'the young key is still there');

SELECT * FROM finish();
ROLLBACK;
