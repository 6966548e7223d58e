-- test/pgtap/once.sql - idempotency keys (issue 26, docs/once.md):
-- fence.once_begin / once_step / once_finish / once_release, every status
-- and every error, the view fence.once_keys and the owner check.  Purge
-- and retention: once_purge.sql; the zombie owner: once_zombie.sql.  Run
-- by pg_prove as a superuser; everything is rolled back.  Leases expire on
-- the server clock, so keys expire during pg_sleep inside the transaction.
BEGIN;
SELECT plan(139);

-- Shape: exact signatures, returns, C, VOLATILE, CALLED ON NULL INPUT,
-- SECURITY INVOKER, PARALLEL UNSAFE, PUBLIC may call.  8 tests each.
CREATE TEMP TABLE once_fn (fn name, args name[], rettype text) ON COMMIT DROP;
INSERT INTO once_fn VALUES
	('once_begin',   '{text,interval,text}', 'setof record'),
	('once_step',    '{text,bigint,text}',   'boolean'),
	('once_finish',  '{text,bigint,jsonb}',  'boolean'),
	('once_release', '{text,bigint}',        'boolean');
SELECT has_function('fence', fn, args, format('fence.%s(%s) exists', fn, array_to_string(args, ', ')))
  FROM once_fn ORDER BY fn;
SELECT function_returns('fence', fn, args, rettype, format('fence.%s returns %s', fn, rettype))
  FROM once_fn ORDER BY fn;
SELECT function_lang_is('fence', fn, args, 'c', format('fence.%s is written in C', fn))
  FROM once_fn ORDER BY fn;
SELECT volatility_is('fence', fn, args, 'volatile', format('fence.%s is VOLATILE', fn))
  FROM once_fn ORDER BY fn;
SELECT isnt_strict('fence', fn, args, format('fence.%s is CALLED ON NULL INPUT (NULL raises 22023)', fn))
  FROM once_fn ORDER BY fn;
SELECT isnt_definer('fence', fn, args, format('fence.%s is SECURITY INVOKER', fn))
  FROM once_fn ORDER BY fn;
SELECT is((SELECT p.proparallel FROM pg_catalog.pg_proc p
            WHERE p.oid = format('fence.%s(%s)', fn, array_to_string(args, ','))::regprocedure), 'u',
	format('fence.%s is PARALLEL UNSAFE', fn))
  FROM once_fn ORDER BY fn;
SELECT function_privs_are('fence', fn, args, 'public', ARRAY['EXECUTE'],
	format('PUBLIC may EXECUTE fence.%s', fn))
  FROM once_fn ORDER BY fn;
SELECT is(pg_catalog.pg_get_function_arguments('fence.once_begin(text, interval, text)'::regprocedure),
	'key text, ttl interval, fingerprint text DEFAULT NULL::text',
	'once_begin: argument names and defaults as in docs/once.md');
SELECT is(pg_catalog.pg_get_function_result('fence.once_begin(text, interval, text)'::regprocedure),
	'TABLE(status text, token bigint, response jsonb, step text)',
	'once_begin returns TABLE(status text, token bigint, response jsonb, step text)');
SELECT is(pg_catalog.pg_get_function_arguments('fence.once_finish(text, bigint, jsonb)'::regprocedure),
	'key text, token bigint, response jsonb DEFAULT NULL::jsonb',
	'once_finish: response defaults to NULL');
SELECT is(pg_catalog.pg_get_function_arguments('fence.once_step(text, bigint, text)'::regprocedure),
	'key text, token bigint, step text', 'once_step: argument names');
SELECT is(pg_catalog.pg_get_function_arguments('fence.once_release(text, bigint)'::regprocedure),
	'key text, token bigint', 'once_release: argument names');

-- The table: closed to PUBLIC, dumped; the view: open, with its columns.
SELECT has_table('fence', 'once_entries', 'table fence.once_entries exists');
SELECT is((SELECT count(*) FROM pg_catalog.pg_class c, aclexplode(c.relacl) a
            WHERE c.oid = 'fence.once_entries'::regclass AND a.grantee = 0), 0::bigint,
	'the ACL of fence.once_entries grants PUBLIC nothing');
SELECT ok((SELECT 'fence.once_entries'::regclass = ANY (extconfig) FROM pg_catalog.pg_extension
            WHERE extname = 'pg_fence'),
	'fence.once_entries is marked with pg_extension_config_dump');
SELECT has_view('fence', 'once_keys', 'view fence.once_keys exists');
SELECT columns_are('fence', 'once_keys',
	ARRAY['key', 'state', 'token', 'owner', 'fingerprint', 'step', 'expires_at', 'finished_at',
	      'created_at', 'response'],
	'fence.once_keys has its documented columns');
SELECT ok(pg_catalog.has_table_privilege('public', 'fence.once_keys', 'SELECT'),
	'PUBLIC may read fence.once_keys (rows filtered by role)');
SELECT ok(pg_catalog.obj_description('fence.once_keys'::regclass, 'pg_class') IS NOT NULL,
	'fence.once_keys has a COMMENT');
SELECT ok(pg_catalog.obj_description('fence.once_entries'::regclass, 'pg_class') IS NOT NULL,
	'fence.once_entries has a COMMENT');

-- Errors of once_begin: 22023 naming the argument, nothing created.
SELECT throws_ok($$SELECT * FROM fence.once_begin(NULL, '1 min')$$, '22023',
	'argument "key" must not be null', 'once_begin: a NULL key raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin('', '1 min')$$, '22023',
	'argument "key" must not be empty', 'once_begin: an empty key raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin(repeat('k', 1025), '1 min')$$, '22023',
	'argument "key" is too long', 'once_begin: a 1025-byte key raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin(repeat('é', 513), '1 min')$$, '22023',
	'argument "key" is too long', 'once_begin: a 513-character, 1026-byte key raises 22023');
SELECT is((SELECT status FROM fence.once_begin(repeat('k', 1024), '1 min')), 'new',
	'once_begin: a 1024-byte key is accepted');
SELECT throws_ok($$SELECT * FROM fence.once_begin('tap/once/e', NULL)$$, '22023',
	'argument "ttl" must not be null', 'once_begin: a NULL ttl raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin('tap/once/e', '0')$$, '22023',
	'argument "ttl" must be greater than zero', 'once_begin: ttl 0 raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin('tap/once/e', '-1 s')$$, '22023',
	'argument "ttl" must be greater than zero', 'once_begin: a negative ttl raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin('tap/once/e', '2 days')$$, '22023',
	'argument "ttl" exceeds fence.max_lease_ttl', 'once_begin: a ttl above fence.max_lease_ttl raises 22023');
SELECT throws_ok($$SELECT * FROM fence.once_begin('tap/once/e', '1 min', repeat('f', 1025))$$, '22023',
	'argument "fingerprint" is too long', 'once_begin: a 1025-byte fingerprint raises 22023');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT * FROM fence.once_begin('tap/once/e', '1 min')$$,
	'25006', 'cannot begin an idempotency key in a read-only transaction',
	'once_begin in a read-only transaction raises 25006');
SELECT is((SELECT count(*) FROM fence.once_keys WHERE key = 'tap/once/e'), 0::bigint,
	'no failed call created the key');

-- 'new', then 'in_progress' for everyone else while the lease is live.
CREATE TEMP TABLE r ON COMMIT DROP AS SELECT * FROM fence.once_begin('tap/once/a', '1 min', 'fp1');
SELECT is((SELECT status FROM r), 'new', 'a new key: status new');
SELECT ok((SELECT token > 0 FROM r), 'new: a token');
SELECT ok((SELECT response IS NULL AND step IS NULL FROM r), 'new key: response and step NULL');
SELECT (SELECT token FROM r) AS t1 \gset
SELECT is((SELECT token FROM fence.once_keys WHERE key = 'tap/once/a'), :t1::bigint,
	'fence.once_keys shows the owner''s token');
SELECT is((SELECT state FROM fence.once_keys WHERE key = 'tap/once/a'), 'in_progress',
	'fence.once_keys: state in_progress');
SELECT is((SELECT owner FROM fence.once_keys WHERE key = 'tap/once/a'), current_user::name,
	'fence.once_keys: owner is the calling role');
SELECT results_eq($$SELECT status, token, response, step FROM fence.once_begin('tap/once/a', '1 min', 'fp1')$$,
	$$VALUES ('in_progress'::text, NULL::bigint, NULL::jsonb, NULL::text)$$,
	'the same key again while owned: in_progress, no token');
SELECT results_eq($$SELECT status FROM fence.once_begin('tap/once/a', '1 min')$$,
	$$VALUES ('in_progress'::text)$$, 'a NULL fingerprint never mismatches: in_progress');
SELECT results_eq($$SELECT status, token, response, step FROM fence.once_begin('tap/once/a', '1 min', 'fp2')$$,
	$$VALUES ('mismatch'::text, NULL::bigint, NULL::jsonb, NULL::text)$$,
	'another fingerprint: mismatch, nothing else');

-- once_step: recovery points, only for the owner.
SELECT ok(fence.once_step('tap/once/a', :t1, 'charged'), 'once_step by the owner: true');
SELECT is((SELECT step FROM fence.once_keys WHERE key = 'tap/once/a'), 'charged', 'the step is recorded');
SELECT results_eq($$SELECT status, step FROM fence.once_begin('tap/once/a', '1 min', 'fp1')$$,
	$$VALUES ('in_progress'::text, 'charged'::text)$$, 'in_progress tells the step reached');
SELECT ok(NOT fence.once_step('tap/once/a', :t1 - 1, 'other'), 'once_step with a wrong token: false');
SELECT ok(NOT fence.once_step('tap/once/nokey', :t1, 'x'), 'once_step of an unknown key: false');
SELECT is((SELECT step FROM fence.once_keys WHERE key = 'tap/once/a'), 'charged', 'a refused step changed nothing');
SELECT throws_ok($$SELECT fence.once_step(NULL, 1, 's')$$, '22023', 'argument "key" must not be null',
	'once_step: a NULL key raises 22023');
SELECT throws_ok($$SELECT fence.once_step('', 1, 's')$$, '22023', 'argument "key" must not be empty',
	'once_step: an empty key raises 22023');
SELECT throws_ok($$SELECT fence.once_step(repeat('k', 1025), 1, 's')$$, '22023', 'argument "key" is too long',
	'once_step: an over-long key raises 22023');
SELECT throws_ok($$SELECT fence.once_step('tap/once/a', NULL, 's')$$, '22023', 'argument "token" must not be null',
	'once_step: a NULL token raises 22023');
SELECT throws_ok($$SELECT fence.once_step('tap/once/a', 1, NULL)$$, '22023', 'argument "step" must not be null',
	'once_step: a NULL step raises 22023');
SELECT throws_ok($$SELECT fence.once_step('tap/once/a', 1, '')$$, '22023', 'argument "step" must not be empty',
	'once_step: an empty step raises 22023');
SELECT throws_ok($$SELECT fence.once_step('tap/once/a', 1, repeat('s', 1025))$$, '22023', 'argument "step" is too long',
	'once_step: an over-long step raises 22023');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.once_step('tap/once/a', 1, 's')$$, '25006',
	'cannot record a step of an idempotency key in a read-only transaction', 'once_step read-only: 25006');

-- once_finish: 'done' and the stored response replayed.
SELECT ok(NOT fence.once_finish('tap/once/a', :t1 + 1000, '{"id": 1}'), 'once_finish with a wrong token: false');
SELECT ok(NOT fence.once_finish('tap/once/nokey', :t1, '{"id": 1}'), 'once_finish of an unknown key: false');
SELECT is((SELECT state FROM fence.once_keys WHERE key = 'tap/once/a'), 'in_progress', 'a refused finish changed nothing');
SELECT throws_ok($$SELECT fence.once_finish(NULL, 1)$$, '22023', 'argument "key" must not be null',
	'once_finish: a NULL key raises 22023');
SELECT throws_ok($$SELECT fence.once_finish('', 1)$$, '22023', 'argument "key" must not be empty',
	'once_finish: an empty key raises 22023');
SELECT throws_ok($$SELECT fence.once_finish(repeat('k', 1025), 1)$$, '22023', 'argument "key" is too long',
	'once_finish: an over-long key raises 22023');
SELECT throws_ok($$SELECT fence.once_finish('tap/once/a', NULL)$$, '22023', 'argument "token" must not be null',
	'once_finish: a NULL token raises 22023');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.once_finish('tap/once/a', 1)$$, '25006',
	'cannot finish an idempotency key in a read-only transaction', 'once_finish read-only: 25006');
SELECT ok(fence.once_finish('tap/once/a', :t1, '{"id": 1, "amount": 500}'), 'once_finish by the owner: true');
SELECT results_eq($$SELECT status, token, response, step FROM fence.once_begin('tap/once/a', '1 min', 'fp1')$$,
	$$VALUES ('done'::text, NULL::bigint, '{"id": 1, "amount": 500}'::jsonb, 'charged'::text)$$,
	'a finished key: done, with the stored response to replay');
SELECT results_eq($$SELECT status FROM fence.once_begin('tap/once/a', '1 min', 'fp2')$$,
	$$VALUES ('mismatch'::text)$$, 'a finished key with another fingerprint: mismatch');
SELECT ok(NOT fence.once_finish('tap/once/a', :t1, '{"id": 2}'), 'a second finish with the same token: false');
SELECT ok(NOT fence.once_step('tap/once/a', :t1, 'later'), 'a step after the finish: false');
SELECT ok(NOT fence.once_release('tap/once/a', :t1), 'a release after the finish: false');
SELECT is((SELECT response FROM fence.once_keys WHERE key = 'tap/once/a'), '{"id": 1, "amount": 500}'::jsonb,
	'the response is kept');
SELECT is((SELECT state FROM fence.once_keys WHERE key = 'tap/once/a'), 'done', 'fence.once_keys: state done');
SELECT ok((SELECT finished_at IS NOT NULL FROM fence.once_keys WHERE key = 'tap/once/a'), 'finished_at is set');

-- A NULL response is stored and replayed as NULL; finish's default.
SELECT token AS t2 FROM fence.once_begin('tap/once/null', '1 min') \gset
SELECT ok(fence.once_finish('tap/once/null', :t2), 'once_finish without a response: true');
SELECT results_eq($$SELECT status, response FROM fence.once_begin('tap/once/null', '1 min')$$,
	$$VALUES ('done'::text, NULL::jsonb)$$, 'done with a NULL response');

-- once_release: retryable at once, with a larger token and the step kept.
SELECT token AS t3 FROM fence.once_begin('tap/once/rel', '1 min', 'fpr') \gset
SELECT ok(fence.once_step('tap/once/rel', :t3, 'half'), 'step before the release');
SELECT ok(NOT fence.once_release('tap/once/rel', :t3 - 1), 'once_release with a wrong token: false');
SELECT ok(NOT fence.once_release('tap/once/nokey', :t3), 'once_release of an unknown key: false');
SELECT throws_ok($$SELECT fence.once_release(NULL, 1)$$, '22023', 'argument "key" must not be null',
	'once_release: a NULL key raises 22023');
SELECT throws_ok($$SELECT fence.once_release('', 1)$$, '22023', 'argument "key" must not be empty',
	'once_release: an empty key raises 22023');
SELECT throws_ok($$SELECT fence.once_release(repeat('k', 1025), 1)$$, '22023', 'argument "key" is too long',
	'once_release: an over-long key raises 22023');
SELECT throws_ok($$SELECT fence.once_release('tap/once/rel', NULL)$$, '22023', 'argument "token" must not be null',
	'once_release: a NULL token raises 22023');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.once_release('tap/once/rel', 1)$$, '25006',
	'cannot release an idempotency key in a read-only transaction', 'once_release read-only: 25006');
SELECT ok(fence.once_release('tap/once/rel', :t3), 'once_release by the owner: true');
SELECT is((SELECT state FROM fence.once_keys WHERE key = 'tap/once/rel'), 'released', 'fence.once_keys: state released');
SELECT ok(NOT fence.once_release('tap/once/rel', :t3), 'a second release: false');
CREATE TEMP TABLE r2 ON COMMIT DROP AS SELECT * FROM fence.once_begin('tap/once/rel', '1 min', 'fpr');
SELECT is((SELECT status FROM r2), 'new', 'a released key is new again at once');
SELECT ok((SELECT token > :t3 FROM r2), 'with a larger token');
SELECT is((SELECT step FROM r2), 'half', 'and the step the released owner reached');
SELECT ok(NOT fence.once_finish('tap/once/rel', :t3, '{}'), 'the released owner cannot finish any more');
SELECT ok(fence.once_finish('tap/once/rel', (SELECT token FROM r2), '{}'), 'the new owner finishes');

-- Takeover of an expired owner: 'new', larger token, the step; counted.
SELECT lease_takeovers AS takeovers0 FROM fence.stats() \gset
SELECT token AS t4 FROM fence.once_begin('tap/once/exp', '100 ms') \gset
SELECT ok(fence.once_step('tap/once/exp', :t4, 'emailed'), 'a step before expiry');
SELECT pg_sleep(0.2);
SELECT is((SELECT state FROM fence.once_keys WHERE key = 'tap/once/exp'), 'expired',
	'fence.once_keys: state expired after the lease ended');
SELECT ok(fence.once_step('tap/once/exp', :t4, 'emailed2'),
	'an expired owner nobody took over still owns the key (its token is still the largest)');
CREATE TEMP TABLE r3 ON COMMIT DROP AS SELECT * FROM fence.once_begin('tap/once/exp', '1 min');
SELECT is((SELECT status FROM r3), 'new', 'an expired key is taken over: new');
SELECT ok((SELECT token > :t4 FROM r3), 'the takeover has a larger token');
SELECT is((SELECT step FROM r3), 'emailed2', 'the takeover is told the step reached');
SELECT is((SELECT lease_takeovers FROM fence.stats()), (:takeovers0 + 1)::bigint,
	'the takeover is counted in fence.stats() lease_takeovers (with its LOG line)');
SELECT ok(NOT fence.once_finish('tap/once/exp', :t4, '{}'), 'the superseded owner''s finish: false');

-- Fingerprints: a NULL stored one is filled in by a takeover with one.
SELECT token AS t5 FROM fence.once_begin('tap/once/fp', '100 ms') \gset
SELECT pg_sleep(0.2);
SELECT is((SELECT status FROM fence.once_begin('tap/once/fp', '1 min', 'x')), 'new',
	'a key begun without fingerprint is taken over with one: new');
SELECT is((SELECT status FROM fence.once_begin('tap/once/fp', '1 min', 'y')), 'mismatch',
	'then another fingerprint mismatches');

-- Privileges: another role's key is 42501 and shows nothing.
CREATE ROLE tap_once_a;
CREATE ROLE tap_once_b;
CREATE ROLE tap_once_m;
GRANT tap_once_a TO tap_once_m;
GRANT USAGE ON SCHEMA fence TO tap_once_a, tap_once_b, tap_once_m;
SET LOCAL ROLE tap_once_a;
SELECT token AS ta FROM fence.once_begin('tap/once/acct', '1 min') \gset
SELECT ok(fence.once_step('tap/once/acct', :ta, 's1'), 'role a steps its own key');
RESET ROLE;
SET LOCAL ROLE tap_once_b;
SELECT throws_ok($$SELECT * FROM fence.once_begin('tap/once/acct', '1 min')$$, '42501',
	'permission denied for idempotency key "tap/once/acct"', 'another role''s once_begin: 42501');
SELECT throws_ok(format('SELECT fence.once_step(%L, %s, %L)', 'tap/once/acct', :ta, 'evil'), '42501', NULL,
	'another role''s once_step, even with the token: 42501');
SELECT throws_ok(format('SELECT fence.once_finish(%L, %s, %L)', 'tap/once/acct', :ta, '{}'), '42501', NULL,
	'another role''s once_finish, even with the token: 42501');
SELECT throws_ok(format('SELECT fence.once_release(%L, %s)', 'tap/once/acct', :ta), '42501', NULL,
	'another role''s once_release, even with the token: 42501');
SELECT throws_ok($$SELECT fence.once_finish('tap/once/acct', 1)$$, '42501', NULL,
	'another role''s once_finish with a wrong token: 42501');
SELECT is((SELECT count(*) FROM fence.once_keys WHERE key = 'tap/once/acct'), 0::bigint,
	'fence.once_keys hides another role''s key');
SELECT throws_ok($$SELECT * FROM fence.once_entries$$, '42501', NULL,
	'a plain role cannot read fence.once_entries');
SELECT throws_ok($$SELECT fence.once_purge()$$, '42501', NULL, 'a plain role cannot purge');
RESET ROLE;
SELECT is((SELECT state || '/' || step FROM fence.once_keys WHERE key = 'tap/once/acct'), 'in_progress/s1',
	'the refused calls changed nothing');
SET LOCAL ROLE tap_once_m;
SELECT results_eq($$SELECT status, step FROM fence.once_begin('tap/once/acct', '1 min')$$,
	$$VALUES ('in_progress'::text, 's1'::text)$$, 'a member of the owner role may use the key');
SELECT is((SELECT owner FROM fence.once_keys WHERE key = 'tap/once/acct'), 'tap_once_a'::name,
	'a member sees the key in fence.once_keys, with its owner role');
SELECT ok(fence.once_finish('tap/once/acct', :ta, '{"ok": true}'), 'a member may finish it with the token');
RESET ROLE;
GRANT fence_admin TO tap_once_b;
SET LOCAL ROLE tap_once_b;
SELECT results_eq($$SELECT status, response FROM fence.once_begin('tap/once/acct', '1 min')$$,
	$$VALUES ('done'::text, '{"ok": true}'::jsonb)$$, 'fence_admin may read any key');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
