-- test/pgtap/lease_limits.sql - fence.max_lease_ttl, the superuser setting
-- that caps the ttl of fence.lease_acquire, fence.lease_renew and
-- fence.semaphore_acquire (issue 10: a role cannot squat a name for
-- centuries).  Run by pg_prove as a superuser; everything is rolled back.
BEGIN;
SELECT plan(22);

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

-- only a superuser sets it
CREATE ROLE tap_cap_user;
SET LOCAL ROLE tap_cap_user;
SELECT throws_ok($$SET fence.max_lease_ttl = '100 years'$$, '42501', NULL,
	'an ordinary role cannot SET fence.max_lease_ttl: 42501');
SELECT throws_ok($$SELECT pg_catalog.set_config('fence.max_lease_ttl', '2147483647', true)$$,
	'42501', NULL, 'nor through set_config: 42501');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
