-- test/pgtap/api.sql - shape, privileges and error contract of the 0.1.0 API
-- (connection-bound locks and fenced_update, with 0.2.0's expect_fence), run by pg_prove in a database
-- with pgtap and pg_fence installed (test/run-all.sh uses fence_tap).
--
-- Functions are checked one by one with their exact signatures (not
-- functions_are): later versions add functions to schema fence.
-- 55P03 (lock timeout) needs a second session: see the isolation specs.
BEGIN;
SELECT plan(104);

-- Schema: created and owned by the extension (not relocatable).
SELECT has_schema('fence');
SELECT schema_owner_is('fence',
	(SELECT r.rolname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_roles r ON r.oid = e.extowner
	  WHERE e.extname = 'pg_fence'),
	'schema fence is owned by the extension''s owner');
SELECT ok(EXISTS (SELECT 1 FROM pg_catalog.pg_depend
                   WHERE classid = 'pg_catalog.pg_namespace'::regclass
                     AND objid = 'fence'::regnamespace
                     AND refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'pg_fence')
                     AND deptype = 'e'),
	'schema fence is a member of extension pg_fence');

-- Each lock function: exists with its exact signature, returns, volatility,
-- strictness, SECURITY INVOKER, language C.  6 tests each.
CREATE TEMP TABLE api_fn (fn name, args name[], rettype text, strict boolean) ON COMMIT DROP;
INSERT INTO api_fn VALUES
	('try_lock',       '{text}',           'bigint',  false),
	('lock',           '{text,interval}',  'bigint',  false),
	('try_xact_lock',  '{text}',           'bigint',  false),
	('xact_lock',      '{text,interval}',  'bigint',  false),
	('unlock',         '{text,bigint}',    'boolean', false),
	('unlock_all',     '{}',               'integer', true),
	('fenced_update',  '{regclass,jsonb,bigint,jsonb,name,boolean,bigint}', 'boolean', false);

SELECT has_function('fence', fn, args, format('fence.%s(%s) exists', fn, array_to_string(args, ', ')))
  FROM api_fn ORDER BY fn;
SELECT function_returns('fence', fn, args, rettype, format('fence.%s returns %s', fn, rettype))
  FROM api_fn ORDER BY fn;
SELECT volatility_is('fence', fn, args, 'volatile', format('fence.%s is VOLATILE', fn))
  FROM api_fn ORDER BY fn;
SELECT CASE WHEN strict
            THEN is_strict('fence', fn, args, format('fence.%s is STRICT', fn))
            ELSE isnt_strict('fence', fn, args, format('fence.%s is CALLED ON NULL INPUT (NULL raises 22023)', fn))
       END
  FROM api_fn ORDER BY fn;
SELECT isnt_definer('fence', fn, args, format('fence.%s is SECURITY INVOKER', fn))
  FROM api_fn ORDER BY fn;
SELECT function_lang_is('fence', fn, args, 'c', format('fence.%s is written in C', fn))
  FROM api_fn ORDER BY fn;

-- PARALLEL UNSAFE: the holds belong to the calling backend.
SELECT is_empty($$
	SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p, api_fn f
	 WHERE p.pronamespace = 'fence'::regnamespace AND p.proname = f.fn
	   AND p.proparallel <> 'u'
$$, 'the lock functions and fenced_update are PARALLEL UNSAFE');

-- Every function in schema fence (whatever version added it) is documented.
SELECT is_empty($$
	SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'fence'::regnamespace
	   AND pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL
$$, 'every function in schema fence has a COMMENT');
SELECT isnt(pg_catalog.obj_description('fence'::regnamespace, 'pg_namespace'), NULL,
	'schema fence has a COMMENT');

-- PUBLIC may call the lock functions.  7 tests.
SELECT ok(pg_catalog.has_function_privilege('public', format('fence.%s(%s)', fn, array_to_string(args, ',')), 'EXECUTE'),
	format('PUBLIC can EXECUTE fence.%s', fn))
  FROM api_fn ORDER BY fn;

-- The token sequence: CACHE 1 (values in time order across sessions),
-- bigint, no cycle, dumped with the database, and closed to PUBLIC.
SELECT has_sequence('fence', 'token_seq', 'sequence fence.token_seq exists');
SELECT is((SELECT cache_size FROM pg_catalog.pg_sequences
            WHERE schemaname = 'fence' AND sequencename = 'token_seq'), 1::bigint,
	'fence.token_seq has CACHE 1');
SELECT is((SELECT data_type::text || ' cycle=' || cycle::text FROM pg_catalog.pg_sequences
            WHERE schemaname = 'fence' AND sequencename = 'token_seq'), 'bigint cycle=false',
	'fence.token_seq is a bigint sequence that never cycles');
SELECT ok((SELECT 'fence.token_seq'::regclass = ANY (extconfig) FROM pg_catalog.pg_extension
            WHERE extname = 'pg_fence'),
	'fence.token_seq is marked with pg_extension_config_dump (pg_dump keeps its value)');
SELECT ok(NOT pg_catalog.has_sequence_privilege('public', 'fence.token_seq', priv),
	format('PUBLIC has no %s on fence.token_seq', priv))
  FROM unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) AS priv;
SELECT is_empty($$
	SELECT a.privilege_type FROM pg_catalog.pg_class c, aclexplode(c.relacl) a
	 WHERE c.oid = 'fence.token_seq'::regclass AND a.grantee = 0
$$, 'the ACL of fence.token_seq grants PUBLIC nothing');

-- The allocator's bookkeeping sequences (0.2.0; docs/tokens.md and
-- docs/failover.md, "Tokens across failover"): the epoch claim, its lineage and the durable mark, dumped with
-- the database and closed to PUBLIC.
SELECT has_sequence('fence', s, format('sequence fence.%s exists', s))
  FROM unnest(ARRAY['token_epoch', 'token_lineage', 'token_lineage_db', 'token_mark']) AS s ORDER BY s;
SELECT ok((SELECT format('fence.%I', s)::regclass = ANY (extconfig) FROM pg_catalog.pg_extension
            WHERE extname = 'pg_fence'),
	format('fence.%s is marked with pg_extension_config_dump (pg_dump keeps its value)', s))
  FROM unnest(ARRAY['token_epoch', 'token_lineage', 'token_lineage_db', 'token_mark']) AS s ORDER BY s;
SELECT is((SELECT count(*) FROM pg_catalog.pg_class c, aclexplode(c.relacl) a
            WHERE c.oid = format('fence.%I', s)::regclass AND a.grantee = 0), 0::bigint,
	format('the ACL of fence.%s grants PUBLIC nothing', s))
  FROM unnest(ARRAY['token_epoch', 'token_lineage', 'token_lineage_db', 'token_mark']) AS s ORDER BY s;

-- Error contract, one session: 22023 invalid arguments.  Names are at most
-- 1024 bytes (bytes, not characters).
SELECT throws_ok($$SELECT fence.try_lock(NULL)$$, '22023', NULL, 'try_lock(NULL) raises 22023');
SELECT throws_ok($$SELECT fence.try_lock('')$$, '22023', NULL, 'try_lock('''') raises 22023');
SELECT throws_ok($$SELECT fence.try_lock(repeat('x', 1025))$$, '22023', NULL,
	'try_lock of a 1025-byte name raises 22023');
SELECT throws_ok($$SELECT fence.try_lock(repeat('é', 513))$$, '22023', NULL,
	'try_lock of a 513-character, 1026-byte name raises 22023');
SELECT lives_ok($$SELECT fence.unlock(repeat('x', 1024), fence.try_lock(repeat('x', 1024)))$$,
	'a 1024-byte name is accepted');
SELECT throws_ok($$SELECT fence.lock(NULL)$$, '22023', NULL, 'lock(NULL) raises 22023');
SELECT throws_ok($$SELECT fence.lock('tap/t', interval '0')$$, '22023', NULL,
	'lock with a zero timeout raises 22023');
SELECT throws_ok($$SELECT fence.lock('tap/t', interval '-1 second')$$, '22023', NULL,
	'lock with a negative timeout raises 22023');
SELECT throws_ok($$SELECT fence.lock(repeat('y', 1025), interval '1 second')$$, '22023', NULL,
	'lock of a 1025-byte name raises 22023');
SELECT throws_ok($$SELECT fence.try_xact_lock(NULL)$$, '22023', NULL, 'try_xact_lock(NULL) raises 22023');
SELECT throws_ok($$SELECT fence.xact_lock('', NULL)$$, '22023', NULL, 'xact_lock('''') raises 22023');
SELECT throws_ok($$SELECT fence.xact_lock('tap/t', interval '-1 second')$$, '22023', NULL,
	'xact_lock with a negative timeout raises 22023');
SELECT throws_ok($$SELECT fence.unlock(NULL, 1)$$, '22023', NULL, 'unlock(NULL, token) raises 22023');
SELECT throws_ok($$SELECT fence.unlock('tap/t', NULL)$$, '22023', NULL, 'unlock(name, NULL) raises 22023');
SELECT throws_ok($$SELECT fence.fenced_update(NULL, '{"id": 1}', 1, '{}')$$, '22023', NULL,
	'fenced_update with a NULL relation raises 22023');
-- A bad argument changed nothing.
SELECT is((SELECT count(*) FROM pg_catalog.pg_locks
            WHERE locktype = 'advisory' AND objsubid = 26213 AND pid = pg_catalog.pg_backend_pid()),
	0::bigint, 'no pg_fence lock is held after the failed calls');

-- 25006: no grants in a read-only transaction.  throws_ok runs its query in a
-- subtransaction, and going read-only is allowed there; it ends with it.
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.try_lock('tap/ro')$$, '25006', NULL,
	'try_lock in a read-only transaction raises 25006');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.lock('tap/ro')$$, '25006', NULL,
	'lock in a read-only transaction raises 25006');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.try_xact_lock('tap/ro')$$, '25006', NULL,
	'try_xact_lock in a read-only transaction raises 25006');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.xact_lock('tap/ro', interval '1 second')$$, '25006', NULL,
	'xact_lock in a read-only transaction raises 25006');
SELECT is(current_setting('transaction_read_only'), 'off', 'the transaction is read-write again');
SELECT is((SELECT count(*) FROM pg_catalog.pg_locks
            WHERE locktype = 'advisory' AND objsubid = 26213 AND pid = pg_catalog.pg_backend_pid()),
	0::bigint, 'a call refused in a read-only transaction holds nothing');

-- P0002: fenced_update of a key with no row.  (Until fenced_update is
-- implemented it raises 0A000, and this test and the NULL-relation one above
-- fail.)
CREATE TABLE public.tap_resource (id integer PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO public.tap_resource VALUES (1, 'a', 0);
SELECT throws_ok($$SELECT fence.fenced_update('public.tap_resource', '{"id": 42}',
                                               fence.try_xact_lock('tap/p0002'), '{"v": "x"}')$$,
	'P0002', NULL, 'fenced_update of a missing key raises P0002');

-- The values the API returns in one session.
SELECT is(fence.unlock('tap/never-locked', 1), false, 'unlock of a lock not held returns false');
SELECT ok(fence.try_lock('tap/a') > 0, 'try_lock returns a positive token');
SELECT is(fence.try_lock('tap/a'), fence.try_lock('tap/a'), 're-entrant try_lock returns the same token');
SELECT cmp_ok(fence.try_lock('tap/b'), '>', fence.try_lock('tap/a'), 'a later grant has a greater token');
SELECT is(fence.unlock_all(), 2, 'unlock_all releases the two names held');
SELECT is(fence.unlock_all(), 0, 'then nothing is left to release');

SELECT * FROM finish();
ROLLBACK;
