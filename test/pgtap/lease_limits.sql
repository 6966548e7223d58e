-- test/pgtap/lease_limits.sql - fence.max_lease_ttl, the superuser setting
-- that caps the ttl of fence.lease_acquire, fence.lease_renew and
-- fence.semaphore_acquire (issue 10: a role cannot squat a name for
-- centuries), and the 1024-byte limit on a holder (issue 23: a role cannot
-- store megabytes per lease).  Run by pg_prove as a superuser; everything
-- is rolled back.
BEGIN;
SELECT plan(35);

-- the setting: integer seconds, superuser context, default one day
SELECT is((SELECT context FROM pg_catalog.pg_settings WHERE name = 'fence.max_lease_ttl'),
	'superuser', 'fence.max_lease_ttl is a superuser (PGC_SUSET) setting');
SELECT is((SELECT unit FROM pg_catalog.pg_settings WHERE name = 'fence.max_lease_ttl'),
	's', 'in seconds, units accepted');
SELECT is((SELECT boot_val FROM pg_catalog.pg_settings WHERE name = 'fence.max_lease_ttl'),
	'86400', 'default one day');
SELECT is((SELECT min_val || '..' || max_val FROM pg_catalog.pg_settings
            WHERE name = 'fence.max_lease_ttl'), '1..2147483647', 'at least one second');

-- at the default cap: granted; a microsecond above: 22023 naming ttl and the setting
SELECT ok(fence.lease_acquire('tap/cap', '1 day') > 0, 'lease_acquire at the cap: granted');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/cap2', '1 day 0.000001 s')$$,
	'22023', 'argument "ttl" exceeds fence.max_lease_ttl', 'lease_acquire above the cap: 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/cap2', '290000 years')$$,
	'22023', 'argument "ttl" exceeds fence.max_lease_ttl', 'the 290,000-year lease: 22023');
SELECT throws_ok(format($$SELECT fence.lease_renew('tap/cap', %s, '1 day 1 s')$$,
	(SELECT token FROM fence.leases WHERE name = 'tap/cap')),
	'22023', 'argument "ttl" exceeds fence.max_lease_ttl', 'lease_renew above the cap: 22023');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/capsem', 2, '1 mon')$$,
	'22023', 'argument "ttl" exceeds fence.max_lease_ttl', 'semaphore_acquire above the cap: 22023');
SELECT is((SELECT count(*)::int FROM fence.leases WHERE name IN ('tap/cap2', 'tap/capsem')), 0,
	'nothing held after the refusals');

-- a lower cap, with units: the same three paths
SET LOCAL fence.max_lease_ttl = '10min';
SELECT is(current_setting('fence.max_lease_ttl'), '10min', 'SET with a unit: 10min');
SELECT ok(fence.lease_renew('tap/cap', (SELECT token FROM fence.leases WHERE name = 'tap/cap'),
	'10 min'), 'lease_renew at the lower cap: renewed');
SELECT throws_ok(format($$SELECT fence.lease_renew('tap/cap', %s, '10 min 1 s')$$,
	(SELECT token FROM fence.leases WHERE name = 'tap/cap')),
	'22023', NULL, 'lease_renew above the lower cap: 22023');
SELECT ok(fence.semaphore_acquire('tap/capsem', 2, '10 min') > 0, 'semaphore_acquire at the lower cap');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/capsem', 2, '601 s')$$,
	'22023', NULL, 'semaphore_acquire above the lower cap: 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/cap2', '11 min')$$,
	'22023', NULL, 'lease_acquire above the lower cap: 22023');

-- 0 / negative: the setting refuses them, and a ttl <= 0 is refused before the cap
SELECT throws_ok($$SET LOCAL fence.max_lease_ttl = 0$$, '22023', NULL, 'a zero cap: 22023');
SELECT throws_ok($$SET LOCAL fence.max_lease_ttl = '-5min'$$, '22023', NULL, 'a negative cap: 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/cap2', '0 s')$$,
	'22023', 'argument "ttl" must be greater than zero', 'a zero ttl: still "greater than zero"');
SELECT is(current_setting('fence.max_lease_ttl'), '10min', 'the refused SETs changed nothing');

-- holder: at most 1024 bytes (like names), 22023 naming it, nothing written
SELECT throws_ok($$SELECT fence.lease_acquire('tap/holder', '1 min', repeat('x', 1025))$$,
	'22023', 'argument "holder" is too long', 'lease_acquire: a 1025-byte holder raises 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/holder', '1 min', repeat('é', 513))$$,
	'22023', 'argument "holder" is too long',
	'lease_acquire: a 513-character, 1026-byte holder raises 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/holder', '1 min', repeat('x', 19000000))$$,
	'22023', 'argument "holder" is too long', 'lease_acquire: a 19 MB holder raises 22023');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/holder', '1 min', repeat('x', 1025), '1 s')$$,
	'22023', 'argument "holder" is too long', 'lease_acquire with wait: 22023 at once');
SELECT throws_ok($$SELECT fence.semaphore_acquire('tap/holder', 2, '1 min', repeat('x', 1025))$$,
	'22023', 'argument "holder" is too long', 'semaphore_acquire: a 1025-byte holder raises 22023');
SELECT throws_ok($$SELECT fence.campaign('tap/holder', repeat('x', 1025), '1 min')$$,
	'22023', 'argument "candidate" is too long', 'campaign: a 1025-byte candidate raises 22023');
CREATE TEMP TABLE tap_big_holder AS SELECT repeat('x', 100000) AS v;
SELECT throws_ok($$SELECT fence.lease_acquire('tap/holder', '1 min', (SELECT v FROM tap_big_holder))$$,
	'22023', 'argument "holder" is too long', 'lease_acquire: a stored (toasted) 100 kB holder raises 22023');
SELECT is((SELECT count(*) FROM fence.leases WHERE name = 'tap/holder'), 0::bigint,
	'nothing written by the refused calls');
SELECT ok(fence.lease_acquire('tap/holder', '1 min', repeat('x', 1024)) > 0,
	'a 1024-byte holder is accepted');
SELECT ok(fence.semaphore_acquire('tap/holder2', 2, '1 min', '') > 0,
	'an empty holder is accepted (free text)');
SELECT is((SELECT octet_length(holder) FROM fence.leases WHERE name = 'tap/holder'), 1024,
	'the 1024-byte holder is stored');

-- only a superuser sets it
CREATE ROLE tap_cap_user;
SET LOCAL ROLE tap_cap_user;
SELECT throws_ok($$SET fence.max_lease_ttl = '100 years'$$, '42501', NULL,
	'an ordinary role cannot SET fence.max_lease_ttl: 42501');
SELECT throws_ok($$SELECT pg_catalog.set_config('fence.max_lease_ttl', '2147483647', true)$$,
	'42501', NULL, 'nor through set_config: 42501');
-- nor store more than 1024 bytes of holder
SELECT ok(fence.lease_acquire('tap/holder3', '1 min', repeat('p', 1024)) > 0,
	'an ordinary role may acquire with a 1024-byte holder');
SELECT throws_ok($$SELECT fence.lease_acquire('tap/holder4', '1 min', repeat('p', 1025))$$,
	'22023', 'argument "holder" is too long', 'but not with a 1025-byte one');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
