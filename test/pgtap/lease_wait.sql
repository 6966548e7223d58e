-- test/pgtap/lease_wait.sql - shape, privileges and error contract of
-- fence.lease_acquire with its wait argument, run by pg_prove in a
-- database with pgtap and pg_fence installed; everything is rolled back.
-- Waiting for another session: test/cpp/server/lease_wait.cpp and the
-- isolation spec lease_wait.
BEGIN;
SELECT plan(14);

SELECT has_function('fence', 'lease_acquire', ARRAY['text', 'interval', 'text', 'interval'],
	'fence.lease_acquire(text, interval, text, interval) exists');
SELECT hasnt_function('fence', 'lease_acquire', ARRAY['text', 'interval', 'text'],
	'no three-argument overload (calls with three arguments are not ambiguous)');
SELECT function_returns('fence', 'lease_acquire', ARRAY['text', 'interval', 'text', 'interval'],
	'bigint', 'lease_acquire returns bigint');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(
             'fence.lease_acquire(text,interval,text,interval)'::regprocedure)),
	'name text, ttl interval, holder text DEFAULT NULL::text, wait interval DEFAULT NULL::interval',
	'holder and wait default to NULL');
SELECT isnt_definer('fence', 'lease_acquire', ARRAY['text', 'interval', 'text', 'interval'],
	'lease_acquire is SECURITY INVOKER');
SELECT ok(pg_catalog.has_function_privilege('public',
	'fence.lease_acquire(text,interval,text,interval)', 'EXECUTE'), 'PUBLIC may call lease_acquire');
SELECT ok(pg_catalog.obj_description('fence.lease_acquire(text,interval,text,interval)'::regprocedure,
	'pg_proc') ~ 'wait.*57014', 'the COMMENT explains wait and its SQLSTATEs');

-- bad waits: 22023, nothing held
SELECT throws_ok($$SELECT fence.lease_acquire('tap/lw', '1 minute', NULL, '0 seconds')$$,
	'22023', NULL, 'a zero wait: 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/lw', '1 minute', NULL, '-1 second')$$,
	'22023', NULL, 'a negative wait: 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/lw', '1 minute', NULL, '300000 years')$$,
	'22023', 'argument "wait" is too large', 'a wait too large: 22023');
SELECT is((SELECT count(*)::int FROM fence.leases WHERE name = 'tap/lw'), 0, 'nothing held after the errors');

-- a free name is granted at once with or without wait; a held one with a short wait gives NULL
SELECT ok(fence.lease_acquire('tap/lw', '1 minute', 'tap', '1 second') > 0, 'free: granted at once');
SELECT is(fence.lease_acquire('tap/lw', '1 minute', 'tap', '50 milliseconds'), NULL::bigint,
	'held (leases do not nest): NULL after the wait');
SELECT is((SELECT holder FROM fence.leases WHERE name = 'tap/lw'), 'tap', 'still the first grant''s');

SELECT * FROM finish();
ROLLBACK;
