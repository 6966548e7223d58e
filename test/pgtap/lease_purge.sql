-- test/pgtap/lease_purge.sql - expired leases are removed (issue 23, item
-- 7): fence.lease_purge, and the takeover that deletes a name's other
-- expired rows.  Run by pg_prove as a superuser; everything is rolled
-- back.  Leases expire on the server clock, so the rows here expire during
-- pg_sleep inside the transaction.
BEGIN;
SELECT plan(46);

-- shape and privileges: not for PUBLIC, for fence_admin (like stats_reset)
SELECT has_function('fence', 'lease_purge', ARRAY['interval', 'integer']);
SELECT function_returns('fence', 'lease_purge', ARRAY['interval', 'integer'], 'bigint');
SELECT volatility_is('fence', 'lease_purge', ARRAY['interval', 'integer'], 'volatile');
SELECT isnt_strict('fence', 'lease_purge', ARRAY['interval', 'integer'],
	'lease_purge is CALLED ON NULL INPUT (NULL max_names raises 22023)');
SELECT isnt_definer('fence', 'lease_purge', ARRAY['interval', 'integer'],
	'lease_purge is SECURITY INVOKER (it switches to the table owner itself)');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = 'fence.lease_purge(interval, integer)'::regprocedure), 'u',
	'lease_purge is PARALLEL UNSAFE');
SELECT function_privs_are('fence', 'lease_purge', ARRAY['interval', 'integer'], 'public',
	ARRAY[]::text[], 'PUBLIC may not EXECUTE lease_purge');
SELECT function_privs_are('fence', 'lease_purge', ARRAY['interval', 'integer'], 'fence_admin',
	ARRAY['EXECUTE'], 'fence_admin may EXECUTE lease_purge');
SELECT is((SELECT pronargdefaults FROM pg_catalog.pg_proc
            WHERE oid = 'fence.lease_purge(interval, integer)'::regprocedure), 2::smallint,
	'both arguments have defaults');

-- start from no expired row (what other tests left committed)
SELECT ok(fence.lease_purge() >= 0, 'a purge of whatever was left');
SELECT is(fence.lease_purge(), 0::bigint, 'a second purge finds nothing');

-- argument errors of lease_purge: 22023 naming the argument
SELECT throws_ok($$SELECT fence.lease_purge('0')$$, '22023',
	'argument "expired_for" must be greater than zero', 'expired_for 0: 22023');
SELECT throws_ok($$SELECT fence.lease_purge('-1 s')$$, '22023',
	'argument "expired_for" must be greater than zero', 'a negative expired_for: 22023');
SELECT throws_ok($$SELECT fence.lease_purge(NULL, NULL)$$, '22023',
	'argument "max_names" must not be null', 'max_names NULL: 22023');
SELECT throws_ok($$SELECT fence.lease_purge(NULL, 0)$$, '22023',
	'argument "max_names" must be greater than zero', 'max_names 0: 22023');
SELECT throws_ok($$SELECT fence.lease_purge(max_names => -5)$$, '22023',
	'argument "max_names" must be greater than zero', 'a negative max_names: 22023');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.lease_purge()$$, '25006',
	'cannot purge leases in a read-only transaction', 'in a read-only transaction: 25006');

-- the rows: live and expired leases, permits and a leadership
SELECT fence.lease_acquire('tap/purge/live', '1 min', 'a') AS live \gset
SELECT fence.lease_acquire('tap/purge/dead', '100 ms', 'b') AS dead \gset
SELECT fence.campaign('tap/purge/leader', 'c', '100 ms') AS term \gset
SELECT fence.semaphore_acquire('tap/purge/sem', 3, '100 ms') AS sem_dead \gset
SELECT fence.semaphore_acquire('tap/purge/sem', 3, '1 min') AS sem_live \gset
SELECT fence.semaphore_acquire('tap/purge/sem', 3, '100 ms') AS sem_dead2 \gset
SELECT pg_sleep(0.2);
SELECT is(fence.lease_purge('1 hour'), 0::bigint, 'nothing has been expired for an hour');
SELECT is((SELECT count(*) FROM fence.leases WHERE name LIKE 'tap/purge/%'), 6::bigint,
	'every row is still there');
SELECT is(fence.lease_purge(), 4::bigint,
	'lease_purge() deletes the 4 expired rows (a lease, a leadership, 2 permits)');
SELECT is(ARRAY(SELECT name || ':' || (token = CASE name WHEN 'tap/purge/live' THEN :live
                                                         WHEN 'tap/purge/sem' THEN :sem_live
                                                         ELSE token END)
                  FROM fence.leases WHERE name LIKE 'tap/purge/%' ORDER BY name, slot),
	ARRAY['tap/purge/live:true', 'tap/purge/sem:true'],
	'the live lease and the live permit are untouched');
SELECT is(fence.lease_purge(), 0::bigint, 'then nothing is left to purge');

-- a purged lease: renew and release refuse its token, a new grant gets a larger one
SELECT is(fence.lease_renew('tap/purge/dead', :dead, '1 min'), false, 'renew of a purged lease: false');
SELECT is(fence.lease_release('tap/purge/dead', :dead), false, 'release of a purged lease: false');
SELECT is(fence.resign('tap/purge/leader', :term), false, 'resign of a purged term: false');
SELECT is(fence.lease_release('tap/purge/sem', :sem_dead), false, 'release of a purged permit: false');
SELECT is(fence.lease_renew('tap/purge/live', :live, '1 min'), true, 'the live lease still renews');
SELECT is(fence.lease_renew('tap/purge/sem', :sem_live, '1 min'), true, 'the live permit still renews');
SELECT fence.lease_acquire('tap/purge/dead', '1 min', 'd') AS dead_again \gset
SELECT cmp_ok(:dead_again, '>', GREATEST(:live, :dead, :term, :sem_dead, :sem_live, :sem_dead2),
	'a purged name acquired again gets a larger token than any before');
SELECT is(fence.lease_renew('tap/purge/dead', :dead, '1 min'), false,
	'the purged token still cannot renew the new lease');
SELECT is((SELECT count(*) FROM fence.leader('tap/purge/leader')), 0::bigint,
	'a purged leadership has no leader');
SELECT ok(fence.campaign('tap/purge/leader', 'e', '1 min') > :term,
	'a new campaign after the purge gets a larger term');

-- expired_for: only rows expired at least that long ago
SELECT fence.lease_acquire('tap/purge/grace', '100 ms') AS grace \gset
SELECT pg_sleep(0.2);
SELECT is(fence.lease_purge('10 min'), 0::bigint, 'expired 0.1 s ago: kept by expired_for 10 min');
SELECT is(fence.lease_purge('10 ms'), 1::bigint, 'expired 0.1 s ago: purged by expired_for 10 ms');

-- max_names: at most that many names, oldest expiry first
SELECT fence.lease_acquire('tap/purge/n1', '10 ms') AS n1 \gset
SELECT fence.lease_acquire('tap/purge/n2', '20 ms') AS n2 \gset
SELECT fence.semaphore_acquire('tap/purge/n3', 2, '30 ms') AS n3 \gset
SELECT fence.semaphore_acquire('tap/purge/n3', 2, '30 ms') AS n3b \gset
SELECT pg_sleep(0.1);
SELECT is(fence.lease_purge(max_names => 2), 2::bigint, 'max_names 2: two names purged');
SELECT is(ARRAY(SELECT DISTINCT name FROM fence.leases WHERE name LIKE 'tap/purge/n%'),
	ARRAY['tap/purge/n3'], 'the two that expired first');
SELECT is(fence.lease_purge(NULL, 1), 2::bigint, 'one name: both rows of the semaphore');

-- takeover: the expired slot is taken, the name's other expired rows go
SELECT fence.semaphore_acquire('tap/purge/take', 3, '50 ms') AS take1 \gset
SELECT fence.semaphore_acquire('tap/purge/take', 3, '50 ms') AS take2 \gset
SELECT fence.semaphore_acquire('tap/purge/take', 3, '1 min') AS take3 \gset
SELECT pg_sleep(0.1);
SELECT fence.semaphore_acquire('tap/purge/take', 3, '1 min', 'new') AS take4 \gset
SELECT is(ARRAY(SELECT slot || ':' || (token = :take3)::text || ':' || coalesce(holder, '-')
                  FROM fence.leases WHERE name = 'tap/purge/take' ORDER BY slot),
	ARRAY['0:false:new', '2:true:-'],
	'a permit takeover: slot 0 taken over, the other expired slot deleted, the live one kept');
SELECT fence.semaphore_acquire('tap/purge/mixed', 2, '50 ms') AS mixed1 \gset
SELECT fence.semaphore_acquire('tap/purge/mixed', 2, '50 ms') AS mixed2 \gset
SELECT pg_sleep(0.1);
SELECT fence.lease_acquire('tap/purge/mixed', '1 min', 'lease') AS mixed3 \gset
SELECT is(ARRAY(SELECT slot || ':' || (permits IS NULL)::text || ':' || holder
                  FROM fence.leases WHERE name = 'tap/purge/mixed' ORDER BY slot),
	ARRAY['0:true:lease'],
	'a lease taking over expired permits: one row, the lease''s, is left');
SELECT cmp_ok(:mixed3, '>', :mixed2, 'with a larger token');
SELECT fence.lease_acquire('tap/purge/one', '50 ms', 'old') AS one1 \gset
SELECT pg_sleep(0.1);
SELECT fence.lease_acquire('tap/purge/one', '1 min', 'new') AS one2 \gset
SELECT is(ARRAY(SELECT holder || ':' || (token = :one2)::text FROM fence.leases
                 WHERE name = 'tap/purge/one'), ARRAY['new:true'],
	'a lease takeover replaces the expired row');

-- who may purge: superusers and fence_admin members; a plain role gets 42501
CREATE ROLE tap_purge_plain;
CREATE ROLE tap_purge_admin IN ROLE fence_admin;
SELECT fence.lease_acquire('tap/purge/roles', '50 ms') AS roles1 \gset
SELECT pg_sleep(0.1);
SET LOCAL ROLE tap_purge_plain;
SELECT throws_ok($$SELECT fence.lease_purge()$$, '42501', NULL,
	'a plain role may not call lease_purge: 42501');
SELECT ok(fence.lease_acquire('tap/purge/plain', '1 min') > 0, 'a plain role''s lease');
SET LOCAL ROLE tap_purge_admin;
SELECT is(fence.lease_purge(), 1::bigint, 'a fence_admin member purges the expired lease');
RESET ROLE;
SELECT is((SELECT count(*) FROM fence.leases WHERE name LIKE 'tap/purge/roles'), 0::bigint,
	'the expired lease is gone');
SELECT is((SELECT count(*) FROM fence.leases WHERE name = 'tap/purge/plain'), 1::bigint,
	'the plain role''s live lease is kept');

SELECT * FROM finish();
ROLLBACK;
