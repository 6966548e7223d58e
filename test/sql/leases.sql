-- Lease locks: fence.lease_acquire / lease_renew / lease_release (one session).
-- Token values depend on what ran before, so tokens are compared, not printed.
\set VERBOSITY terse

-- shape: the table, its dump marking, the admin role
SELECT c.relname, pg_catalog.array_to_string(c.relacl, ',') LIKE '%=%' AS has_acl
  FROM pg_class c WHERE c.oid = 'fence.leases'::regclass;
SELECT 'fence.leases'::regclass = ANY (extconfig) AS dumped
  FROM pg_extension WHERE extname = 'pg_fence';
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = 'fence_admin';
SELECT p.proname, p.prosecdef, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p WHERE p.pronamespace = 'fence'::regnamespace AND p.proname LIKE 'lease%'
 ORDER BY 1;

-- acquire, busy, renew, release
SELECT fence.lease_acquire('job', '10 s', 'worker-1') AS t1 \gset
SELECT :t1 > 0 AS granted;
SELECT name, token = :t1 AS token_ok, holder, owner = current_user::regrole AS owner_ok,
       expires_at - granted_at AS ttl,
       granted_at BETWEEN clock_timestamp() - interval '5 s' AND clock_timestamp() AS granted_now
  FROM fence.leases WHERE name = 'job';
SELECT fence.lease_acquire('job', '10 s') IS NULL AS busy;
SELECT fence.lease_renew('job', :t1, '20 s') AS renewed;
SELECT expires_at - clock_timestamp() BETWEEN interval '19 s' AND interval '20 s' AS full_ttl
  FROM fence.leases WHERE name = 'job';
SELECT fence.lease_renew('job', :t1 + 1, '20 s') AS renew_wrong_token;
SELECT fence.lease_renew('job', :t1 - 1, '20 s') AS renew_older_token;
SELECT fence.lease_release('job', :t1 + 1) AS release_wrong_token;
SELECT fence.lease_renew('nosuch', :t1, '20 s') AS renew_unknown_name;
SELECT fence.lease_release('nosuch', :t1) AS release_unknown_name;
SELECT count(*) AS still_held FROM fence.leases WHERE name = 'job' AND token = :t1;
SELECT fence.lease_release('job', :t1) AS released;
SELECT count(*) AS rows_left FROM fence.leases WHERE name = 'job';
SELECT fence.lease_release('job', :t1) AS release_again;
SELECT fence.lease_renew('job', :t1, '1 s') AS renew_after_release;

-- a new grant of the same name gets a larger token; holder defaults to NULL
SELECT fence.lease_acquire('job', '10 s') AS t2 \gset
SELECT :t2 > :t1 AS larger_token;
SELECT holder IS NULL AS no_holder FROM fence.leases WHERE name = 'job';
SELECT fence.lease_release('job', :t2) AS released;

-- expiry: renew and release of an expired lease fail, the row stays
SELECT fence.lease_acquire('short', '100 ms', 'a') AS t3 \gset
SELECT pg_sleep(0.2);
SELECT fence.lease_renew('short', :t3, '10 s') AS renew_expired;
SELECT fence.lease_release('short', :t3) AS release_expired;
SELECT token = :t3 AS row_kept FROM fence.leases WHERE name = 'short';
-- takeover of the expired lease: larger token, new holder (and a LOG line)
SELECT fence.lease_acquire('short', '10 s', 'b') AS t4 \gset
SELECT :t4 > :t3 AS larger_token;
SELECT token = :t4 AS token_ok, holder FROM fence.leases WHERE name = 'short';
-- the old holder can neither renew nor release the taken-over lease
SELECT fence.lease_renew('short', :t3, '10 s') AS old_renew;
SELECT fence.lease_release('short', :t3) AS old_release;
SELECT fence.lease_release('short', :t4) AS new_release;

-- time is the clock at the call, not transaction start
BEGIN;
SELECT pg_sleep(0.3);
SELECT fence.lease_acquire('late', '10 s') AS t5 \gset
SELECT expires_at - clock_timestamp() BETWEEN interval '9.5 s' AND interval '10 s' AS full_ttl,
       granted_at >= now() + interval '0.3 s' AS granted_at_call_time
  FROM fence.leases WHERE name = 'late';
-- leases do not nest, even inside the acquiring transaction
SELECT fence.lease_acquire('late', '10 s') IS NULL AS busy_in_same_xact;
SELECT fence.lease_release('late', :t5) AS released_in_same_xact;
SELECT fence.lease_acquire('late', '10 s') > :t5 AS reacquired_in_same_xact;
COMMIT;
SELECT count(*) AS held FROM fence.leases WHERE name = 'late';

-- a rolled-back grant or release leaves nothing behind
BEGIN;
SELECT fence.lease_acquire('rb', '10 s') IS NOT NULL AS granted;
ROLLBACK;
SELECT count(*) AS rows_after_rollback FROM fence.leases WHERE name = 'rb';
SELECT fence.lease_acquire('rb', '10 s') AS t6 \gset
BEGIN;
SAVEPOINT s;
SELECT fence.lease_release('rb', :t6) AS released;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT token = :t6 AS still_held FROM fence.leases WHERE name = 'rb';
SELECT fence.lease_release('rb', :t6) AS released;

-- release never changes a setting the caller can see
SHOW synchronous_commit;
SELECT fence.lease_acquire('sc', '10 s') AS t7 \gset
BEGIN;
SELECT fence.lease_release('sc', :t7) AS released;
SHOW synchronous_commit;
COMMIT;
SHOW synchronous_commit;

-- roles: only the acquiring role, or a member of fence_admin, may renew/release
CREATE ROLE regress_lease_a;
CREATE ROLE regress_lease_b;
CREATE ROLE regress_lease_admin IN ROLE fence_admin;
SET ROLE regress_lease_a;
SELECT fence.lease_acquire('owned', '10 s', 'a') AS t8 \gset
SELECT fence.lease_renew('owned', :t8, '10 s') AS owner_renew;
SET ROLE regress_lease_b;
SELECT fence.lease_renew('owned', :t8, '10 s') AS other_role_renew;
SELECT fence.lease_release('owned', :t8) AS other_role_release;
SELECT fence.lease_acquire('owned', '10 s') IS NULL AS other_role_busy;
-- nobody can read or change the table directly
SELECT * FROM fence.leases;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fence.leases VALUES ('x', 1, NULL, 0, now(), now() + interval '1 h');
\echo :LAST_ERROR_SQLSTATE
UPDATE fence.leases SET expires_at = now() WHERE name = 'owned';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM fence.leases WHERE name = 'owned';
\echo :LAST_ERROR_SQLSTATE
TRUNCATE fence.leases;
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_lease_admin;
SELECT owner = 'regress_lease_a'::regrole AS owner_is_a FROM fence.leases WHERE name = 'owned';
SELECT fence.lease_renew('owned', :t8, '10 s') AS admin_renew;
SELECT fence.lease_release('owned', :t8) AS admin_release;
RESET ROLE;
-- a superuser has every role's privileges, fence_admin's included
SET ROLE regress_lease_a;
SELECT fence.lease_acquire('owned', '10 s') AS t9 \gset
RESET ROLE;
SELECT fence.lease_release('owned', :t9) AS superuser_release;
DROP ROLE regress_lease_a, regress_lease_b, regress_lease_admin;

-- invalid arguments: 22023 naming the argument, nothing changed
SELECT fence.lease_acquire('held', '10 s') AS t10 \gset
SELECT fence.lease_acquire(NULL, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('', '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire(repeat('x', 1025), '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire(repeat('x', 1024), '10 s') IS NOT NULL AS longest_name_ok;
SELECT fence.lease_acquire('new', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('new', '0 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('new', '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('new', '1 day -86401 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('new', '100000000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew(NULL, :t10, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('', :t10, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('held', NULL, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('held', :t10, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('held', :t10, '0 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('held', :t10, '-5 min');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('held', :t10, '100000000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_release(NULL, :t10);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_release(repeat('x', 1025), :t10);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_release('held', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT name, token = :t10 AS unchanged, expires_at - granted_at AS ttl
  FROM fence.leases WHERE name IN ('held', 'new') ORDER BY name;

-- read-only transactions: 25006, nothing changed
BEGIN TRANSACTION READ ONLY;
SELECT fence.lease_acquire('ro', '10 s');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN TRANSACTION READ ONLY;
SELECT fence.lease_renew('held', :t10, '1 h');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN TRANSACTION READ ONLY;
SELECT fence.lease_release('held', :t10);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SET default_transaction_read_only = on;
SELECT fence.lease_acquire('ro', '10 s');
\echo :LAST_ERROR_SQLSTATE
RESET default_transaction_read_only;
SELECT count(*) AS ro_rows FROM fence.leases WHERE name = 'ro';
SELECT fence.lease_release('held', :t10) AS released;
SELECT fence.lease_release(repeat('x', 1024), token) AS released FROM fence.leases
 WHERE name = repeat('x', 1024);
SELECT count(*) AS rows_left FROM fence.leases WHERE name <> 'late' AND name <> 'short';

-- fence.max_lease_ttl (superuser, seconds, default 1 day) caps ttl on every
-- path that grants or extends a lease: 22023 naming the argument and the limit
SELECT setting, unit, context, boot_val FROM pg_settings WHERE name = 'fence.max_lease_ttl';
SELECT fence.lease_acquire('cap', '1 day') AS tcap \gset
SELECT :tcap > 0 AS at_cap_granted;
\set VERBOSITY default
SELECT fence.lease_acquire('cap2', '1 day 00:00:00.000001');
\set VERBOSITY terse
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_renew('cap', :tcap, '25 h');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('capsem', 3, '2 mons');
\echo :LAST_ERROR_SQLSTATE
SET fence.max_lease_ttl = '10min';
SHOW fence.max_lease_ttl;
SELECT fence.lease_renew('cap', :tcap, '10 min') AS renewed_at_cap;
SELECT expires_at - granted_at <= interval '10 min 1 s' AS shortened
  FROM fence.leases WHERE name = 'cap';
SELECT fence.lease_renew('cap', :tcap, '601 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('cap2', '10 min 1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('capsem', 3, '10 min') IS NOT NULL AS permit_at_cap;
SELECT fence.semaphore_acquire('capsem', 3, '11 min');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS refused_rows FROM fence.leases WHERE name = 'cap2';
SELECT count(*) AS permits FROM fence.leases WHERE name = 'capsem';
-- the setting itself: at least 1 s; only a superuser sets it (the range
-- message shows units from PostgreSQL 17 on: only the SQLSTATE is shown)
\set VERBOSITY sqlstate
SET fence.max_lease_ttl = 0;
SET fence.max_lease_ttl = '-1 s';
\set VERBOSITY terse
SET fence.max_lease_ttl = '1 s';
SELECT fence.lease_acquire('cap2', '1.5 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_acquire('cap2', '1 s') IS NOT NULL AS one_second_ok;
CREATE ROLE regress_lease_cap;
SET ROLE regress_lease_cap;
SET fence.max_lease_ttl = '2 days';
\echo :LAST_ERROR_SQLSTATE
SHOW fence.max_lease_ttl;
RESET ROLE;
DROP ROLE regress_lease_cap;
RESET fence.max_lease_ttl;
SHOW fence.max_lease_ttl;
DELETE FROM fence.leases WHERE name IN ('cap', 'cap2', 'capsem');
