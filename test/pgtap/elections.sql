-- test/pgtap/elections.sql - shape, privileges and error contract of leader
-- election (fence.campaign / fence.leader / fence.resign), run by pg_prove in
-- a database with pgtap and pg_fence installed; everything is rolled back.
-- Several sessions: the isolation spec election and
-- test/cpp/server/election.cpp (waits, NOTIFY payloads).
BEGIN;
SELECT plan(74);

-- shape
SELECT has_function('fence', 'campaign', ARRAY['text', 'text', 'interval', 'interval'],
	'fence.campaign(text, text, interval, interval) exists');
SELECT hasnt_function('fence', 'campaign', ARRAY['text', 'text', 'interval'],
	'no three-argument overload');
SELECT function_returns('fence', 'campaign', ARRAY['text', 'text', 'interval', 'interval'],
	'bigint', 'campaign returns bigint');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(
             'fence.campaign(text,text,interval,interval)'::regprocedure)),
	'name text, candidate text, ttl interval, wait interval DEFAULT NULL::interval',
	'campaign: wait defaults to NULL');
SELECT has_function('fence', 'leader', ARRAY['text'], 'fence.leader(text) exists');
SELECT is((SELECT pg_catalog.pg_get_function_result('fence.leader(text)'::regprocedure)),
	'TABLE(candidate text, term bigint, elected_at timestamp with time zone, expires_at timestamp with time zone)',
	'leader returns TABLE(candidate, term, elected_at, expires_at)');
SELECT has_function('fence', 'resign', ARRAY['text', 'bigint'], 'fence.resign(text, bigint) exists');
SELECT function_returns('fence', 'resign', ARRAY['text', 'bigint'], 'boolean', 'resign returns boolean');
SELECT is((SELECT pg_catalog.pg_get_function_arguments('fence.resign(text,bigint)'::regprocedure)),
	'name text, term bigint', 'resign: name and term');
SELECT isnt_definer('fence', 'campaign', ARRAY['text', 'text', 'interval', 'interval'],
	'campaign is SECURITY INVOKER');
SELECT isnt_definer('fence', 'leader', ARRAY['text'], 'leader is SECURITY INVOKER');
SELECT is((SELECT string_agg(p.proname::text || ':' || p.proparallel::text || p.provolatile::text, ',' ORDER BY p.proname)
             FROM pg_catalog.pg_proc AS p
            WHERE p.pronamespace = 'fence'::regnamespace AND p.proname IN ('campaign', 'leader', 'resign')),
	'campaign:uv,leader:uv,resign:uv', 'all three are VOLATILE and PARALLEL UNSAFE');
SELECT isnt_definer('fence', 'resign', ARRAY['text', 'bigint'], 'resign is SECURITY INVOKER');
SELECT ok(pg_catalog.has_function_privilege('public', 'fence.campaign(text,text,interval,interval)',
	'EXECUTE') AND pg_catalog.has_function_privilege('public', 'fence.leader(text)', 'EXECUTE')
	AND pg_catalog.has_function_privilege('public', 'fence.resign(text,bigint)', 'EXECUTE'),
	'PUBLIC may call campaign, leader and resign (as fence.locks is readable by PUBLIC)');
SELECT ok(pg_catalog.obj_description('fence.campaign(text,text,interval,interval)'::regprocedure,
	'pg_proc') ~ 'term.*same term.*22023.*42809.*25006.*57014', 'the COMMENT of campaign');
SELECT ok(pg_catalog.obj_description('fence.leader(text)'::regprocedure, 'pg_proc')
	~ 'no row.*standby.*22023.*42809', 'the COMMENT of leader');
SELECT ok(pg_catalog.obj_description('fence.resign(text,bigint)'::regprocedure, 'pg_proc')
	~ 'never reused.*22023.*25006', 'the COMMENT of resign');

-- every bad argument: 22023, nothing held
SELECT throws_ok($$SELECT fence.campaign(NULL, 'a', '1 minute')$$, '22023',
	'argument "name" must not be null', 'campaign: NULL name');
SELECT throws_ok($$SELECT fence.campaign('', 'a', '1 minute')$$, '22023',
	'argument "name" must not be empty', 'campaign: empty name');
SELECT throws_ok($$SELECT fence.campaign(repeat('n', 1025), 'a', '1 minute')$$, '22023',
	'argument "name" is too long', 'campaign: name over 1024 bytes');
SELECT throws_ok($$SELECT fence.campaign('tap/e', NULL, '1 minute')$$, '22023',
	'argument "candidate" must not be null', 'campaign: NULL candidate');
SELECT throws_ok($$SELECT fence.campaign('tap/e', '', '1 minute')$$, '22023',
	'argument "candidate" must not be empty', 'campaign: empty candidate');
SELECT throws_ok($$SELECT fence.campaign('tap/e', repeat('c', 1025), '1 minute')$$, '22023',
	'argument "candidate" is too long', 'campaign: candidate over 1024 bytes');
SELECT throws_ok($$SELECT fence.campaign('tap/e', 'a', NULL)$$, '22023', NULL, 'campaign: NULL ttl');
SELECT throws_ok($$SELECT fence.campaign('tap/e', 'a', '0 seconds')$$, '22023', NULL, 'campaign: zero ttl');
SELECT throws_ok($$SELECT fence.campaign('tap/e', 'a', '-1 second')$$, '22023', NULL,
	'campaign: negative ttl');
SELECT throws_ok($$SELECT fence.campaign('tap/e', 'a', '300000 years')$$, '22023', NULL,
	'campaign: ttl past the end of time');
SELECT throws_ok($$SELECT fence.campaign('tap/e', 'a', '1 minute', '0 seconds')$$, '22023', NULL,
	'campaign: zero wait');
SELECT throws_ok($$SELECT fence.campaign('tap/e', 'a', '1 minute', '-1 second')$$, '22023', NULL,
	'campaign: negative wait');
SELECT throws_ok($$SELECT fence.leader(NULL)$$, '22023', 'argument "name" must not be null',
	'leader: NULL name');
SELECT throws_ok($$SELECT fence.leader('')$$, '22023', 'argument "name" must not be empty',
	'leader: empty name');
SELECT throws_ok($$SELECT fence.leader(repeat('n', 1025))$$, '22023', 'argument "name" is too long',
	'leader: name over 1024 bytes');
SELECT throws_ok($$SELECT fence.resign(NULL, 1)$$, '22023', 'argument "name" must not be null',
	'resign: NULL name');
SELECT throws_ok($$SELECT fence.resign('', 1)$$, '22023', 'argument "name" must not be empty',
	'resign: empty name');
SELECT throws_ok($$SELECT fence.resign('tap/e', NULL)$$, '22023', 'argument "term" must not be null',
	'resign: NULL term');
SELECT is((SELECT count(*)::int FROM fence.leases WHERE name = 'tap/e'), 0, 'nothing held after the errors');

-- 25006 in a read-only transaction for campaign and resign; leader only reads
-- (throws_ok / lives_ok run their query in a subtransaction, where SET
-- TRANSACTION READ ONLY is allowed)
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.campaign('tap/ro', 'a', '1 minute')$$,
	'25006', NULL, 'campaign in a read-only transaction raises 25006');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.resign('tap/ro', 1)$$,
	'25006', NULL, 'resign in a read-only transaction raises 25006');
SELECT lives_ok($$SET TRANSACTION READ ONLY; SELECT * FROM fence.leader('tap/ro')$$,
	'leader works in a read-only transaction');

-- no leader: no row
SELECT is_empty($$SELECT * FROM fence.leader('tap/e')$$, 'a name never campaigned for has no leader');

-- elected; a rival gets NULL; the leader is reported
CREATE TEMP TABLE terms (k text PRIMARY KEY, term bigint);
INSERT INTO terms VALUES ('a1', fence.campaign('tap/e', 'node-a', '1 minute'));
SELECT ok((SELECT term FROM terms WHERE k = 'a1') > 0, 'the first campaign is elected: a term');
SELECT is(fence.campaign('tap/e', 'node-b', '1 minute'), NULL::bigint, 'a rival gets NULL');
SELECT is(fence.campaign('tap/e', 'node-b', '1 minute', '50 milliseconds'), NULL::bigint,
	'a rival with a short wait gets NULL after it');
SELECT results_eq($$SELECT candidate, term FROM fence.leader('tap/e')$$,
	$$SELECT 'node-a'::text, term FROM terms WHERE k = 'a1'$$, 'leader() reports node-a and its term');
SELECT ok((SELECT elected_at <= pg_catalog.clock_timestamp() AND expires_at > pg_catalog.clock_timestamp()
             AND expires_at <= elected_at + interval '1 minute 1 second'
             FROM fence.leader('tap/e')), 'elected_at and expires_at: ttl from the election');
SELECT is((SELECT elected FROM fence.leases WHERE name = 'tap/e'), true, 'the row remembers the campaign');

-- the leader campaigning again: same term, extended
UPDATE fence.leases SET expires_at = pg_catalog.clock_timestamp() + interval '5 seconds' WHERE name = 'tap/e';
SELECT is(fence.campaign('tap/e', 'node-a', '2 minutes'), (SELECT term FROM terms WHERE k = 'a1'),
	'the leader campaigning again gets the same term');
SELECT ok((SELECT expires_at > pg_catalog.clock_timestamp() + interval '110 seconds' FROM fence.leader('tap/e')),
	'... extended to its new ttl');

-- renew with lease_renew
SELECT ok(fence.lease_renew('tap/e', (SELECT term FROM terms WHERE k = 'a1'), '1 minute'),
	'lease_renew(name, term, ttl) renews the leadership');

-- resign: owner-checked like lease_release
CREATE ROLE tap_elect_other;
GRANT USAGE ON SCHEMA fence TO tap_elect_other;
GRANT SELECT ON terms TO tap_elect_other;
SET LOCAL ROLE tap_elect_other;
SELECT is(fence.resign('tap/e', (SELECT term FROM terms WHERE k = 'a1')), false,
	'another role cannot resign the term (false, as lease_release)');
SELECT is(fence.campaign('tap/e', 'node-a', '1 minute'), NULL::bigint,
	'nor get the term back by campaigning with the same candidate from another role');
SELECT is((SELECT count(*)::int FROM fence.leader('tap/e')), 1, 'another role may read the leader');
SELECT throws_ok($$SET fence.notify = off$$, '42501', NULL,
	'fence.notify is a superuser setting');
RESET ROLE;
SELECT is(current_setting('fence.notify'), 'on', 'fence.notify is on by default');
SELECT is(fence.resign('tap/e', (SELECT term FROM terms WHERE k = 'a1') + 1000), false,
	'a wrong term: false');
SELECT is(fence.resign('tap/e', (SELECT term FROM terms WHERE k = 'a1')), true, 'the leader resigns');
SELECT is(fence.resign('tap/e', (SELECT term FROM terms WHERE k = 'a1')), false, 'twice: false');
SELECT is_empty($$SELECT * FROM fence.leader('tap/e')$$, 'no leader after the resignation');
SELECT is(fence.lease_renew('tap/e', (SELECT term FROM terms WHERE k = 'a1'), '1 minute'), false,
	'a resigned term cannot be renewed');

-- the term is never reused: the next leader's is larger, even for the same candidate
INSERT INTO terms VALUES ('a2', fence.campaign('tap/e', 'node-a', '1 minute'));
SELECT cmp_ok((SELECT term FROM terms WHERE k = 'a2'), '>', (SELECT term FROM terms WHERE k = 'a1'),
	'after resigning, the next term is larger');

-- takeover after expiry: a larger term for the rival
UPDATE fence.leases SET expires_at = pg_catalog.clock_timestamp() - interval '1 second' WHERE name = 'tap/e';
SELECT is_empty($$SELECT * FROM fence.leader('tap/e')$$, 'an expired leader is no leader');
SELECT is(fence.resign('tap/e', (SELECT term FROM terms WHERE k = 'a2')), false, 'an expired term cannot resign');
INSERT INTO terms VALUES ('b1', fence.campaign('tap/e', 'node-b', '1 minute'));
SELECT cmp_ok((SELECT term FROM terms WHERE k = 'b1'), '>', (SELECT term FROM terms WHERE k = 'a2'),
	'the rival takes over with a larger term');
SELECT is((SELECT candidate FROM fence.leader('tap/e')), 'node-b', 'node-b leads');
SELECT is(fence.campaign('tap/e', 'node-a', '1 minute'), NULL::bigint, 'the old leader gets NULL now');

-- lease_release ends a leadership too; resign of a semaphore permit does not
SELECT ok(fence.lease_release('tap/e', (SELECT term FROM terms WHERE k = 'b1')), 'lease_release ends it too');
SELECT ok(fence.semaphore_acquire('tap/sem', 2, '1 minute', 'x') > 0, 'a semaphore permit');
SELECT is(fence.resign('tap/sem', (SELECT token FROM fence.leases WHERE name = 'tap/sem')), false,
	'resign of a semaphore permit''s token: false');
SELECT throws_ok($$SELECT fence.campaign('tap/sem', 'a', '1 minute')$$, '42809', NULL,
	'campaign for a name held as a semaphore: 42809');
SELECT throws_ok($$SELECT * FROM fence.leader('tap/sem')$$, '42809', NULL,
	'leader of a name held as a semaphore: 42809');

-- a lease is a leader; the leader's name cannot be a semaphore
SELECT ok(fence.lease_acquire('tap/l', '1 minute', 'plain') > 0, 'a plain lease');
SELECT is((SELECT candidate FROM fence.leader('tap/l')), 'plain', 'its holder is the leader');
SELECT is(fence.campaign('tap/l', 'plain', '1 minute'), NULL::bigint,
	'a campaign for a lease held by lease_acquire gets NULL, even with its holder text');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/e2', 2, '1 minute')
                   FROM (SELECT fence.campaign('tap/e2', 'a', '1 minute')) AS c$$, '42809', NULL,
	'semaphore_acquire for a leader''s name: 42809');

SELECT * FROM finish();
ROLLBACK;
