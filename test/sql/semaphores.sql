-- Semaphores: fence.semaphore_acquire, its permits renewed and released with
-- lease_renew / lease_release (one session).  Tokens are compared, not printed.
\set VERBOSITY terse

SELECT p.proname, p.prosecdef, p.provolatile, p.proisstrict, p.proparallel,
       pg_catalog.pg_get_function_arguments(p.oid) AS args
  FROM pg_proc p WHERE p.pronamespace = 'fence'::regnamespace AND p.proname = 'semaphore_acquire';

-- three permits: three grants, each with its own larger token, then NULL
SELECT fence.semaphore_acquire('pool', 3, '10 s', 'w1') AS p1 \gset
SELECT fence.semaphore_acquire('pool', 3, '10 s', 'w2') AS p2 \gset
SELECT fence.semaphore_acquire('pool', 3, '10 s') AS p3 \gset
SELECT :p1 > 0 AND :p2 > :p1 AND :p3 > :p2 AS distinct_increasing_tokens;
SELECT fence.semaphore_acquire('pool', 3, '10 s', 'w4') IS NULL AS full;
SELECT slot, token = :p1 AS is_p1, holder, permits, expires_at - granted_at AS ttl
  FROM fence.leases WHERE name = 'pool' ORDER BY slot;
SELECT name, kind, holder, pid IS NULL AS no_pid, expired, waiters
  FROM fence.locks WHERE name = 'pool' ORDER BY token;

-- each permit renews and releases on its own token
SELECT fence.lease_renew('pool', :p2, '20 s') AS renewed;
SELECT expires_at - clock_timestamp() > interval '19 s' AS full_ttl
  FROM fence.leases WHERE name = 'pool' AND token = :p2;
SELECT fence.lease_renew('pool', :p3 + 1000, '20 s') AS renew_wrong_token;
SELECT fence.lease_release('pool', :p2) AS released;
SELECT fence.lease_release('pool', :p2) AS release_again;
SELECT count(*) AS holders FROM fence.leases WHERE name = 'pool';

-- the freed slot is granted again, with a new, larger token
SELECT fence.semaphore_acquire('pool', 3, '10 s', 'w5') AS p5 \gset
SELECT :p5 > :p3 AS larger_token;
SELECT slot FROM fence.leases WHERE token = :p5;

-- a change of permits between callers: each counts against its own permits
SELECT fence.semaphore_acquire('pool', 2, '10 s') IS NULL AS lowered_refused;
SELECT fence.semaphore_acquire('pool', 4, '10 s') AS p6 \gset
SELECT :p6 > :p5 AS raised_granted;
SELECT fence.semaphore_acquire('pool', 4, '10 s') IS NULL AS raised_full;
SELECT count(*) AS holders_kept FROM fence.leases WHERE name = 'pool';
SELECT fence.lease_release('pool', t) FROM (VALUES (:p1), (:p3), (:p5), (:p6)) AS v(t);

-- an expired permit is taken over (new token, same slot)
SELECT fence.semaphore_acquire('brief', 2, '100 ms', 'a') AS e1 \gset
SELECT fence.semaphore_acquire('brief', 2, '10 s', 'b') AS e2 \gset
SELECT pg_sleep(0.2);
SELECT fence.lease_renew('brief', :e1, '10 s') AS renew_expired;
SELECT fence.semaphore_acquire('brief', 2, '10 s', 'c') AS e3 \gset
SELECT :e3 > :e2 AS takeover_token, count(*) AS rows
  FROM fence.leases WHERE name = 'brief';
SELECT slot, holder FROM fence.leases WHERE name = 'brief' ORDER BY slot;
SELECT fence.lease_release('brief', :e2), fence.lease_release('brief', :e3);

-- one permit is a semaphore too, not a lease
SELECT fence.semaphore_acquire('one', 1, '10 s') AS o1 \gset
SELECT fence.semaphore_acquire('one', 1, '10 s') IS NULL AS full;
SELECT kind FROM fence.locks WHERE name = 'one';
SELECT fence.lease_release('one', :o1);

-- leases and semaphores share one namespace: no mixing while held
SELECT fence.lease_acquire('mixed', '10 s') AS l1 \gset
SELECT fence.semaphore_acquire('mixed', 5, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_release('mixed', :l1);
SELECT fence.semaphore_acquire('mixed', 5, '10 s') AS s1 \gset
SELECT fence.lease_acquire('mixed', '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lease_release('mixed', :s1);
-- an expired holder of the other kind is taken over
SELECT fence.semaphore_acquire('mixed', 5, '100 ms') AS s2 \gset
SELECT pg_sleep(0.2);
SELECT fence.lease_acquire('mixed', '10 s') AS l2 \gset
SELECT kind, token = :l2 AS is_l2 FROM fence.locks WHERE name = 'mixed';
SELECT fence.lease_release('mixed', :l2);

-- owner check: another role can neither renew nor release a permit
CREATE ROLE regress_sem_a;
CREATE ROLE regress_sem_b;
GRANT USAGE ON SCHEMA fence TO regress_sem_a, regress_sem_b;
SET ROLE regress_sem_a;
SELECT fence.semaphore_acquire('owned', 2, '10 s') AS oa \gset
SET ROLE regress_sem_b;
SELECT fence.lease_renew('owned', :oa, '10 s') AS other_role_renew;
SELECT fence.lease_release('owned', :oa) AS other_role_release;
SELECT fence.semaphore_acquire('owned', 2, '10 s') AS ob \gset
SET ROLE regress_sem_a;
SELECT fence.lease_release('owned', :oa) AS owner_release;
SELECT fence.lease_release('owned', :ob) AS other_holder_release;
SET ROLE regress_sem_b;
SELECT fence.lease_release('owned', :ob) AS owner_release_b;
RESET ROLE;
DROP OWNED BY regress_sem_a, regress_sem_b;
DROP ROLE regress_sem_a, regress_sem_b;

-- errors
SELECT fence.semaphore_acquire('e', 0, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('e', -1, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('e', 10001, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('e', NULL, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire(NULL, 2, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('', 2, '10 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('e', 2, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('e', 2, '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.semaphore_acquire('e', 2, '10 s', NULL, '0 s');
\echo :LAST_ERROR_SQLSTATE
BEGIN READ ONLY;
SELECT fence.semaphore_acquire('e', 2, '10 s');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT count(*) AS nothing_left FROM fence.leases WHERE name IN ('e', 'pool', 'one', 'owned');

-- wait: with a free permit it returns at once; with none it waits out wait
SELECT fence.semaphore_acquire('w', 1, '10 s') AS w1 \gset
SELECT clock_timestamp() AS t0 \gset
SELECT fence.semaphore_acquire('w', 1, '10 s', NULL, '200 ms') IS NULL AS timed_out;
SELECT clock_timestamp() - :'t0'::timestamptz >= interval '190 ms' AS waited;
SELECT fence.semaphore_acquire('w', 2, '10 s', NULL, '5 s') AS w2 \gset
SELECT :w2 > :w1 AS granted_at_once;
SELECT fence.lease_release('w', :w1), fence.lease_release('w', :w2);
