-- test/pgtap/fenced_writes.sql - 0.2.0's fenced writes: the signature of
-- fence.fenced_update with expect_fence, the setting
-- fence.require_issued_tokens, and FN004 (a token this database never
-- issued) from every path that presents a token.  Run by pg_prove in a
-- database with pgtap and pg_fence installed (test/run-all.sh).
BEGIN;
SELECT plan(24);

-- Signature: expect_fence is the 7th argument, a bigint defaulting to NULL.
SELECT has_function('fence', 'fenced_update',
	ARRAY['regclass', 'jsonb', 'bigint', 'jsonb', 'name', 'boolean', 'bigint']);
SELECT hasnt_function('fence', 'fenced_update',
	ARRAY['regclass', 'jsonb', 'bigint', 'jsonb', 'name', 'boolean'],
	'the 0.1.0 signature without expect_fence is gone (no ambiguous overload)');
SELECT function_returns('fence', 'fenced_update',
	ARRAY['regclass', 'jsonb', 'bigint', 'jsonb', 'name', 'boolean', 'bigint'], 'boolean');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(
	'fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean, bigint)'::regprocedure)),
	'rel regclass, key jsonb, token bigint, changes jsonb, fence_column name DEFAULT ''fence''::name, allow_equal boolean DEFAULT false, expect_fence bigint DEFAULT NULL::bigint',
	'fenced_update: argument names and defaults as in docs/writes.md');
SELECT isnt_definer('fence', 'fenced_update',
	ARRAY['regclass', 'jsonb', 'bigint', 'jsonb', 'name', 'boolean', 'bigint']);
SELECT function_privs_are('fence', 'fenced_update',
	ARRAY['regclass', 'jsonb', 'bigint', 'jsonb', 'name', 'boolean', 'bigint'], 'public', ARRAY['EXECUTE']);
SELECT ok(pg_catalog.obj_description(
	'fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean, bigint)'::regprocedure, 'pg_proc')
	~ 'expect_fence.*FN004',
	'the COMMENT of fenced_update covers expect_fence and FN004');
SELECT ok(pg_catalog.obj_description('fence.advance(text, bigint)'::regprocedure, 'pg_proc') ~ 'FN004',
	'the COMMENT of advance covers FN004');
SELECT ok(pg_catalog.obj_description('fence.guard_trigger()'::regprocedure, 'pg_proc') ~ 'FN004',
	'the COMMENT of guard_trigger covers FN004');

-- The setting: boolean, on by default, only superusers may change it.
SELECT is((SELECT setting FROM pg_catalog.pg_settings WHERE name = 'fence.require_issued_tokens'),
	'on', 'fence.require_issued_tokens is on by default');
SELECT is((SELECT context FROM pg_catalog.pg_settings WHERE name = 'fence.require_issued_tokens'),
	'superuser', 'fence.require_issued_tokens is a superuser setting');
SELECT is((SELECT vartype FROM pg_catalog.pg_settings WHERE name = 'fence.require_issued_tokens'),
	'bool', 'fence.require_issued_tokens is a boolean');
CREATE ROLE tap_fw_user;
SET LOCAL ROLE tap_fw_user;
SELECT throws_ok($$SET fence.require_issued_tokens = off$$, '42501', NULL,
	'another role cannot turn the check off');
RESET ROLE;

-- FN004 from each path; the highest issued token itself passes.
CREATE TABLE public.tap_fw (id integer PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO public.tap_fw VALUES (1, 'a', 0), (2, 'b', 0);
CREATE TABLE public.tap_fw_guarded (id integer PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO public.tap_fw_guarded VALUES (1, 'a', 0);
DO $$ BEGIN PERFORM fence.guard('public.tap_fw_guarded'); END $$;
CREATE TEMP TABLE tap_fw_highest ON COMMIT DROP AS SELECT fence.try_xact_lock('tap/fw') AS t;

SELECT throws_ok($$SELECT fence.fenced_update('public.tap_fw', '{"id": 1}', 9223372036854775807, '{"v": "x"}')$$,
	'FN004', 'fencing token 9223372036854775807 was never issued by this database',
	'fenced_update with the largest bigint raises FN004');
SELECT throws_ok($$SELECT fence.fenced_update('public.tap_fw', '{"id": 1}', (SELECT t + 1 FROM tap_fw_highest), '{}', expect_fence => 0)$$,
	'FN004', NULL, 'fenced_update with expect_fence and the highest token + 1 raises FN004');
SELECT throws_ok($$SELECT fence.advance('tap/fw', 9223372036854775807)$$,
	'FN004', NULL, 'advance with the largest bigint raises FN004');
SELECT throws_ok($$UPDATE public.tap_fw_guarded SET fence = 9223372036854775807$$,
	'FN004', NULL, 'a guarded UPDATE setting the fence to the largest bigint raises FN004');
SELECT throws_ok($$SET LOCAL fence.token = 9223372036854775807; DELETE FROM public.tap_fw_guarded$$,
	'FN004', NULL, 'a guarded DELETE presenting the largest bigint in fence.token raises FN004');
SELECT results_eq($$SELECT id, v, fence FROM public.tap_fw ORDER BY id$$,
	$$VALUES (1, 'a', 0::bigint), (2, 'b', 0::bigint)$$, 'the refused calls changed nothing');
SELECT is((SELECT count(*) FROM fence.resources WHERE name = 'tap/fw'), 0::bigint,
	'the refused advance stored nothing');
SELECT ok(fence.fenced_update('public.tap_fw', '{"id": 1}', (SELECT t FROM tap_fw_highest), '{"v": "x"}', expect_fence => 0),
	'the highest issued token is accepted');
SELECT is(fence.fenced_update('public.tap_fw', '{"id": 2}', (SELECT t FROM tap_fw_highest), '{"v": "y"}', expect_fence => 5),
	false, 'a wrong expect_fence returns false');

-- Turned off by a superuser: a token from another database is accepted.
SET LOCAL fence.require_issued_tokens = off;
SELECT ok(fence.advance('tap/fw', 9223372036854775807),
	'with fence.require_issued_tokens off, advance accepts any token');
SELECT ok(fence.fenced_update('public.tap_fw', '{"id": 2}', 9000000000000000000, '{}'),
	'with fence.require_issued_tokens off, fenced_update accepts any token');

SELECT * FROM finish();
ROLLBACK;
