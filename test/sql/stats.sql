-- fence.stats() counts every event exactly, and fence.stats_reset() starts
-- it again (superuser or fence_admin only).  Waits between sessions are in
-- test/specs/stats_waits.spec; the exporter that reads these counters in
-- test/shell/observability/prometheus_exporter.sh.  Runs with pg_fence in
-- shared_preload_libraries (without it: test/shell/packaging/no_preload.sh).
\set VERBOSITY default

-- the shape
SELECT * FROM fence.stats() WHERE false;

-- a reset zeroes everything and moves stats_reset to now
SELECT clock_timestamp() AS before_reset \gset
SELECT fence.stats_reset();
SELECT acquired, acquired_session, acquired_xact, acquired_lease, busy, timeouts,
       waits, wait_time, max_wait_time, renewals, releases, lease_expirations,
       lease_takeovers, stale_writes_rejected, missing_tokens,
       stats_reset BETWEEN :'before_reset' AND clock_timestamp() AS reset_now
  FROM fence.stats();

-- connection-bound locks: grants by kind (re-entrant ones too), busy,
-- releases (unlock true, names freed by unlock_all; a false unlock is not one)
SELECT fence.try_lock('st-a') AS tok_a \gset
SELECT fence.lock('st-a') = :tok_a AS reentrant;
SELECT fence.try_lock('st-b') IS NOT NULL AS locked_b;
BEGIN;
SELECT fence.try_xact_lock('st-x') IS NOT NULL AS locked_x;
SELECT fence.xact_lock('st-x', '1s') IS NOT NULL AS reentrant_x;
COMMIT;
SELECT fence.unlock('st-a', :tok_a) AS released_one_hold;
SELECT fence.unlock('st-a', :tok_a + 1000) AS wrong_token;
SELECT fence.unlock_all() AS names_freed;
SELECT acquired, acquired_session, acquired_xact, acquired_lease, busy, releases
  FROM fence.stats();

-- leases: grant, busy (leases do not nest), renewal, release
SELECT fence.lease_acquire('st-l1', '1 hour', 'w1') AS tok_l1 \gset
SELECT fence.lease_acquire('st-l1', '1 hour', 'w2') IS NULL AS busy;
SELECT fence.lease_renew('st-l1', :tok_l1, '1 hour') AS renewed;
SELECT fence.lease_renew('st-l1', :tok_l1 + 1000, '1 hour') AS wrong_token_renewed;
SELECT fence.lease_release('st-l1', :tok_l1) AS released;
SELECT fence.lease_release('st-l1', :tok_l1) AS released_twice;
SELECT acquired_lease, busy, renewals, releases, lease_expirations, lease_takeovers
  FROM fence.stats();

-- expiry: the holder's late renew and late release count as expirations
-- (another role's attempt with the same token does not), and the takeover
-- as a takeover and a grant
SELECT fence.lease_acquire('st-l2', '10 ms', 'w1') AS tok_l2 \gset
SELECT pg_sleep(0.05);
SELECT fence.lease_renew('st-l2', :tok_l2, '1 hour') AS late_renew;
SELECT fence.lease_release('st-l2', :tok_l2) AS late_release;
CREATE ROLE st_other;
SET ROLE st_other;
SELECT fence.lease_renew('st-l2', :tok_l2, '1 hour') AS other_role_renew;
RESET ROLE;
SELECT fence.lease_acquire('st-l2', '1 hour', 'w2') AS tok_l2b \gset
SELECT fence.lease_renew('st-l2', :tok_l2, '1 hour') AS old_token_after_takeover;
SELECT fence.lease_release('st-l2', :tok_l2b) AS released;
SELECT acquired_lease, renewals, releases, lease_expirations, lease_takeovers
  FROM fence.stats();

-- stale writes (fenced_update false, advance false, guard FN001) and
-- missing tokens (guard FN003)
CREATE TABLE st_row (id int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO st_row VALUES (1, 'a', 100);
SELECT fence.fenced_update('st_row', '{"id": 1}', 50, '{"v": "b"}') AS applied;
SELECT fence.advance('st-res', 100), fence.advance('st-res', 99) AS stale_advance;
SELECT fence.guard('st_row');
\set VERBOSITY sqlstate
UPDATE st_row SET v = 'c', fence = 40 WHERE id = 1;
UPDATE st_row SET v = 'c' WHERE id = 1;
DELETE FROM st_row WHERE id = 1;
\set VERBOSITY default
-- an accepted write counts nothing
BEGIN;
SET LOCAL fence.token = 100;
UPDATE st_row SET v = 'd' WHERE id = 1;
COMMIT;
SELECT stale_writes_rejected, missing_tokens FROM fence.stats();
DROP TABLE st_row;
DELETE FROM fence.resources WHERE name = 'st-res';

-- stats_reset is not for PUBLIC: 42501; a member of fence_admin may
SET ROLE st_other;
\set VERBOSITY sqlstate
SELECT fence.stats_reset();
\set VERBOSITY default
SELECT fence.stats_reset();
-- reading is for everyone
SELECT acquired > 0 AS other_role_reads FROM fence.stats();
RESET ROLE;
GRANT fence_admin TO st_other;
SET ROLE st_other;
SELECT fence.stats_reset();
RESET ROLE;
SELECT acquired, busy, renewals, releases, lease_expirations, lease_takeovers,
       stale_writes_rejected, missing_tokens
  FROM fence.stats();
REVOKE fence_admin FROM st_other;
DROP ROLE st_other;

-- counters are per database: another database counts its own, and its
-- reset leaves this one's alone
SELECT fence.try_lock('st-c') IS NOT NULL AS locked;
SELECT fence.unlock_all() AS names_freed;
\set here :DBNAME
CREATE DATABASE st_elsewhere;
\c st_elsewhere
SET client_min_messages = warning;
CREATE EXTENSION pg_fence;
RESET client_min_messages;
SELECT acquired, releases, stats_reset IS NOT NULL AS counting FROM fence.stats();
SELECT fence.try_lock('st-c') IS NOT NULL AS locked;
SELECT acquired, releases FROM fence.stats();
SELECT fence.stats_reset();
\c :here
DROP DATABASE st_elsewhere;
SELECT acquired, releases FROM fence.stats();
