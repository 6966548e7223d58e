-- fence.locks, fence.stats(), fence.held_locks() seen from the holder's own
-- session (other sessions: test/specs/locks_view.spec).  This test runs with
-- pg_fence in shared_preload_libraries; without it see test/shell/packaging/no_preload.sh.
\set VERBOSITY default
SHOW fence.max_locks;

-- shapes
SELECT attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute WHERE attrelid = 'fence.locks'::regclass AND attnum > 0 ORDER BY attnum;
SELECT * FROM fence.stats() WHERE false;
SELECT count(*) = 1 AS one_row, bool_and(acquired >= 0 AND busy >= 0 AND timeouts >= 0
       AND lease_takeovers >= 0 AND stale_writes_rejected >= 0) AS all_counted
  FROM fence.stats();

SELECT acquired AS acq0, busy AS busy0 FROM fence.stats() \gset

-- nothing held by this session yet
SELECT count(*) FROM fence.locks WHERE pid = pg_backend_pid();

-- a session lock, held twice (re-entrant: one row, one token)
SELECT fence.try_lock('obs-s') AS tok_s \gset
SELECT fence.lock('obs-s') = :tok_s AS same_token;
-- a transaction lock
BEGIN;
SELECT fence.xact_lock('obs-x') AS tok_x \gset
SELECT name, kind, token = :tok_s AS token_ok, pid = pg_backend_pid() AS own_pid, holder,
       granted_at BETWEEN now() - interval '1 hour' AND clock_timestamp() AS granted_ok,
       expires_at, expired, waiters
  FROM fence.locks WHERE name = 'obs-s';
SELECT name, kind, token = :tok_x AS token_ok, pid = pg_backend_pid() AS own_pid, holder,
       expires_at, expired, waiters
  FROM fence.locks WHERE name = 'obs-x';
-- the registry rows behind the view, keyed like pg_locks
SELECT h.name, h.kind, h.token IN (:tok_s, :tok_x) AS token_ok,
       l.objid IS NOT NULL AS in_pg_locks
  FROM fence.held_locks() h
  LEFT JOIN pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 26213
       AND l.pid = h.pid AND ((l.classid::int8 << 32) | l.objid::int8) = h.key
 WHERE h.pid = pg_backend_pid() ORDER BY h.name;
COMMIT;
-- the transaction lock is gone at commit, the session lock stays
SELECT name, kind FROM fence.locks WHERE pid = pg_backend_pid() ORDER BY name;
-- a name shared with the application's advisory locks is not confused
SELECT pg_advisory_lock(1, 2);
SELECT name FROM fence.locks WHERE pid = pg_backend_pid() ORDER BY name;
SELECT pg_advisory_unlock(1, 2);

-- grants are counted (try_lock, lock, xact_lock), re-entrant ones too
SELECT acquired - :acq0 AS acquired, busy - :busy0 AS busy FROM fence.stats();

-- released: the view and the registry forget it
SELECT fence.unlock('obs-s', :tok_s);
SELECT count(*) FROM fence.locks WHERE name = 'obs-s';
SELECT fence.unlock('obs-s', :tok_s);
SELECT count(*) FROM fence.locks WHERE name = 'obs-s';
SELECT count(*) FROM fence.held_locks() WHERE pid = pg_backend_pid();
-- pg_advisory_unlock_all() ends the lock behind pg_fence's back: the view
-- follows pg_locks at once
SELECT fence.try_lock('obs-u') IS NOT NULL AS locked;
SELECT pg_advisory_unlock_all();
SELECT count(*) FROM fence.locks WHERE name = 'obs-u';
SELECT fence.unlock_all();

-- a transaction-scoped lock outside a transaction block lasts one statement
SELECT fence.try_xact_lock('obs-stmt') IS NOT NULL AS locked,
       (SELECT count(*) FROM fence.locks WHERE name = 'obs-stmt') AS seen_during;
SELECT count(*) AS seen_after FROM fence.locks WHERE name = 'obs-stmt';

-- leases come from fence.leases (rows made by hand here, as the lease
-- functions would)
INSERT INTO fence.leases (name, token, holder, owner, granted_at, expires_at) VALUES
  ('obs-lease-live', 900001, 'worker-1', 10, clock_timestamp(), clock_timestamp() + interval '1 hour'),
  ('obs-lease-old', 900002, NULL, 10, clock_timestamp() - interval '2 hours', clock_timestamp() - interval '1 hour');
SELECT name, kind, token, pid, holder, expires_at > granted_at AS expiry_after_grant, expired, waiters
  FROM fence.locks WHERE kind = 'lease' AND name LIKE 'obs-%' ORDER BY name;
DELETE FROM fence.leases WHERE name LIKE 'obs-%';

-- everyone may read the view and the counters
CREATE ROLE obs_reader;
SELECT fence.try_lock('obs-priv') AS tok_p \gset
SET ROLE obs_reader;
SELECT name, kind, token = :tok_p AS token_visible, holder FROM fence.locks WHERE name = 'obs-priv';
SELECT count(*) FROM fence.stats();
SELECT count(*) > 0 AS sees_registry FROM fence.held_locks() WHERE name = 'obs-priv';
RESET ROLE;
SELECT fence.unlock('obs-priv', :tok_p);
DROP ROLE obs_reader;

-- the view's kind follows the scopes that hold a name: session if any
-- session hold, else xact
BEGIN;
SELECT fence.try_xact_lock('obs-kind') AS tok_k \gset
SELECT kind FROM fence.locks WHERE name = 'obs-kind';
SELECT fence.try_lock('obs-kind') = :tok_k AS same_token;
SELECT kind FROM fence.locks WHERE name = 'obs-kind';
COMMIT;
SELECT kind FROM fence.locks WHERE name = 'obs-kind';
BEGIN;
SELECT fence.try_xact_lock('obs-kind') = :tok_k AS same_token;
SELECT fence.unlock('obs-kind', :tok_k);
SELECT kind FROM fence.locks WHERE name = 'obs-kind';
COMMIT;
SELECT count(*) AS rows_after_commit FROM fence.locks WHERE name = 'obs-kind';
