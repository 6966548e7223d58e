--
-- Observability: fence.stats(), fence.held_locks() and the view fence.locks
-- (src/server/observability/: observability.cpp, counters.cpp, lock_registry.cpp).
--
-- Everyone may read them.  They show what pg_locks and pg_stat_activity
-- already show to every role (who holds which lock, application_name), plus
-- lock names, tokens and lease holders.  Tokens are not secrets: they are
-- sequential and guessable by design, and no operation accepts a token as
-- its only proof (unlock needs the holding session, lease renew/release the
-- acquiring role, and fenced writes only compare tokens).
--

CREATE FUNCTION fence.stats(OUT acquired bigint, OUT acquired_session bigint,
                            OUT acquired_xact bigint, OUT acquired_lease bigint,
                            OUT busy bigint, OUT timeouts bigint,
                            OUT waits bigint, OUT wait_time double precision,
                            OUT max_wait_time double precision,
                            OUT renewals bigint, OUT releases bigint,
                            OUT lease_expirations bigint, OUT lease_takeovers bigint,
                            OUT stale_writes_rejected bigint, OUT missing_tokens bigint,
                            OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'fence_stats'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fence.stats() IS
'Counters of the current database since stats_reset (its first use after server start, or the last fence.stats_reset(); kept in shared memory, so a restart starts them again): grants (acquired = acquired_session + acquired_xact + acquired_lease, re-entrant grants and takeovers included; acquired_lease counts lease and semaphore permit grants), try_*, lease_acquire and semaphore_acquire calls that found the lock held (busy), lock waits that timed out (timeouts), lock and xact_lock calls that found the lock held and waited, and lease_acquire and semaphore_acquire calls with wait that slept (waits) and the total and longest time they waited (wait_time, max_wait_time, in milliseconds), lease renewals (renewals), explicit releases (releases: unlock and lease_release that returned true, names freed by unlock_all), renewals and releases refused because the caller''s lease had expired (lease_expirations), expired leases taken over (lease_takeovers), writes rejected for a stale token by fenced_update, the guard trigger and advance (stale_writes_rejected; FN001 from the guard), guarded writes that presented no token (missing_tokens, FN003). One row of NULLs, and a NOTICE with a hint, when pg_fence has no shared memory (PostgreSQL 15 and 16 without shared_preload_libraries; see fence.shared_memory()).';

-- Resetting is for operators: like pg_stat_reset(), not for PUBLIC.
-- Superusers may always call it; grant fence_admin to whoever else may.
CREATE FUNCTION fence.stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'fence_stats_reset'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION fence.stats_reset() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fence.stats_reset() TO fence_admin;

COMMENT ON FUNCTION fence.stats_reset() IS
'Sets every counter of fence.stats() for the current database to zero and its stats_reset to now. Only superusers and members of fence_admin may call it (42501 otherwise). Without pg_fence''s shared memory (PostgreSQL 15 and 16 without shared_preload_libraries) it does nothing and raises a NOTICE with a hint.';

CREATE FUNCTION fence.held_locks(OUT pid integer, OUT key bigint, OUT name text,
                                 OUT token bigint, OUT kind text,
                                 OUT granted_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fence_held_locks'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 100;

COMMENT ON FUNCTION fence.held_locks() IS
'Internal (used by the view fence.locks): the shared registry of connection-bound locks held in the current database, keyed by backend pid and the 64-bit name hash of the lock tag. Empty when pg_fence has no shared memory (see fence.shared_memory()). May list a lock its backend has just released; the view keeps only locks pg_locks shows as held.';

-- Which of pg_locks' advisory locks are pg_fence's connection-bound locks:
-- the tag class is defined once, in C (src/server/pg/lock_tag.hpp), and the
-- view asks for it rather than repeat the number.  IMMUTABLE, so the planner
-- folds it into a constant.
CREATE FUNCTION fence.lock_tag_class()
RETURNS smallint
AS 'MODULE_PATHNAME', 'fence_lock_tag_class'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fence.lock_tag_class() IS
'Internal (used by the views fence.locks and fence.waiters): the lock-tag class of pg_fence''s connection-bound locks, shown by pg_locks as the objsubid of their advisory locks.';

-- And the name hash of such a lock, from pg_locks' classid and objid: the
-- key of fence.held_locks(), put back together in C (TagNameHash, beside
-- the tag's layout) rather than spelled out in each view.
CREATE FUNCTION fence.lock_tag_key(classid oid, objid oid)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_lock_tag_key'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fence.lock_tag_key(oid, oid) IS
'Internal (used by the views fence.locks and fence.waiters): the 64-bit name hash of a connection-bound lock from the classid and objid pg_locks shows for it, the key of fence.held_locks().';

-- The pg_locks rows of pg_fence's connection-bound locks in this database,
-- each with its name hash: the one selection both views below read.  A
-- SQL-standard body, bound when the extension is created, so the caller's
-- search_path plays no part.
CREATE FUNCTION fence.lock_tags(OUT pid integer, OUT granted boolean,
                                OUT waitstart timestamptz, OUT key bigint)
RETURNS SETOF record
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT l.pid, l.granted, l.waitstart,
           fence.lock_tag_key(l.classid, l.objid)
      FROM pg_catalog.pg_locks AS l
     WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
       AND l.objsubid OPERATOR(pg_catalog.=) fence.lock_tag_class()
       AND l.database OPERATOR(pg_catalog.=)
           (SELECT d.oid FROM pg_catalog.pg_database AS d
             WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
END;

COMMENT ON FUNCTION fence.lock_tags() IS
'Internal (used by the views fence.locks and fence.waiters): the pg_locks rows of pg_fence''s connection-bound locks in this database (advisory locks whose objsubid is fence.lock_tag_class()), with pid, granted, waitstart and the name hash key (fence.lock_tag_key).';

-- One row per held lock or lease.  Connection-bound locks come from
-- pg_locks (advisory locks of pg_fence's tag class, fence.lock_tag_class(),
-- in this database), so a lock is shown exactly while the lock manager
-- holds it; name, kind, token and granted_at come from the registry and are
-- NULL when it has no entry (no shared memory, see fence.shared_memory(), or
-- the registry full).  Waiters and how long the first of them has waited
-- come from the same pg_locks rows (waitstart: when the wait began).
CREATE VIEW fence.locks AS
WITH tags AS (
    SELECT t.pid, t.granted, t.waitstart, t.key FROM fence.lock_tags() AS t
), counted AS (
    SELECT t.pid, t.granted, t.key,
           pg_catalog.count(*) FILTER (WHERE NOT t.granted)
               OVER (PARTITION BY t.key) AS waiters,
           pg_catalog.min(t.waitstart) FILTER (WHERE NOT t.granted)
               OVER (PARTITION BY t.key) AS first_wait
      FROM tags AS t
)
SELECT r.name, r.kind, r.token, c.pid,
       a.application_name AS holder,
       r.granted_at,
       NULL::timestamptz AS expires_at,
       NULL::boolean AS expired,
       c.waiters::integer AS waiters,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) c.first_wait AS longest_wait
  FROM counted AS c
  LEFT JOIN fence.held_locks() AS r
         ON r.pid OPERATOR(pg_catalog.=) c.pid AND r.key OPERATOR(pg_catalog.=) c.key
  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid OPERATOR(pg_catalog.=) c.pid
 WHERE c.granted
UNION ALL
SELECT le.name,
       CASE WHEN le.permits IS NULL THEN 'lease' ELSE 'semaphore' END,
       le.token, NULL::integer,
       le.holder, le.granted_at, le.expires_at,
       le.expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp(),
       0, NULL::interval
  FROM fence.leases AS le;

COMMENT ON VIEW fence.locks IS
'pg_fence: one row per held lock, lease or semaphore permit in this database: name, kind (session, xact, shared: one row per holder of a shared lock, lease, semaphore: one row per permit holder), token, pid (NULL for leases and permits), holder (application_name of the holding backend, or the lease or permit holder), granted_at, expires_at and expired (leases and permits only), waiters (backends waiting for that lock; 0 for leases and permits), longest_wait (how long the first of them has waited; NULL when none waits, and for leases and permits). Each waiter is a row of fence.waiters. Without pg_fence''s shared memory (PostgreSQL 15 and 16 without shared_preload_libraries; see fence.shared_memory()) connection-bound locks are listed with NULL name, kind, token and granted_at, and a NOTICE says so.';

GRANT SELECT ON fence.locks TO PUBLIC;

-- One row per backend waiting for a connection-bound lock in this
-- database, with how long it has waited (pg_locks.waitstart, set by the
-- lock manager when the wait began; NULL for the first instants of a wait)
-- and who holds the lock.  The name comes from the holder's registry entry
-- (a waiter has none): NULL when no holder is registered.
CREATE VIEW fence.waiters AS
WITH tags AS (
    SELECT t.pid, t.granted, t.waitstart, t.key FROM fence.lock_tags() AS t
)
SELECT r.name, w.pid, a.application_name,
       w.waitstart AS wait_started,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) w.waitstart AS waited,
       h.pid AS holder_pid
  FROM tags AS w
  LEFT JOIN tags AS h ON h.key OPERATOR(pg_catalog.=) w.key AND h.granted
  LEFT JOIN fence.held_locks() AS r
         ON r.pid OPERATOR(pg_catalog.=) h.pid AND r.key OPERATOR(pg_catalog.=) h.key
  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid OPERATOR(pg_catalog.=) w.pid
 WHERE NOT w.granted;

COMMENT ON VIEW fence.waiters IS
'pg_fence: one row per backend waiting for a connection-bound lock (fence.lock, fence.xact_lock, fence.lock_shared) in this database, and per holder when several sessions hold it shared: name (from the holder''s entry in the registry; NULL without shared memory or when no holder is registered), pid and application_name of the waiting backend, wait_started (pg_locks.waitstart; NULL for the first instants of a wait), waited (how long it has waited so far), holder_pid (the backend holding the lock; NULL for a prepared transaction).';

GRANT SELECT ON fence.waiters TO PUBLIC;

CREATE FUNCTION fence.shared_memory()
RETURNS text
AS 'MODULE_PATHNAME', 'fence_shared_memory'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fence.shared_memory() IS
'Where pg_fence''s shared memory (token allocator, fence.stats() counters, lock names of fence.locks) lives in this server: preloaded (pg_fence is in shared_preload_libraries), dynamic (a named dynamic shared memory segment, PostgreSQL 17 and later without the preload; same behaviour, registry of the default size), or none (PostgreSQL 15 and 16 without the preload: tokens come from the sequence directly, counters are not kept, fence.locks shows no names; raises a NOTICE with a hint).';

-- Say at install (and upgrade) time when the shared memory is missing: the
-- function raises a NOTICE with a hint then.
SELECT fence.shared_memory();
