-- Shared connection-bound locks, single session: tokens, re-entrancy,
-- unlock / unlock_all, the mode rule (55000 both ways), stale holds after
-- pg_advisory_unlock_all, fence.locks' kind, fence.stats() counting, and
-- every error path (SQLSTATEs).
\set VERBOSITY terse
SET client_min_messages = warning;

-- This backend's pg_fence locks in the lock manager, by mode
-- (locktag field4 = 0x6665 = 26213 shows as objsubid).
CREATE FUNCTION held_modes() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(mode, ',' ORDER BY mode), '') FROM pg_catalog.pg_locks
	 WHERE locktype = 'advisory' AND objsubid = 26213
	   AND pid = pg_catalog.pg_backend_pid() AND granted
$$;

SELECT acquired_session AS acq0, releases AS rel0 FROM fence.stats() \gset

--
-- A shared hold: a token from the common allocator, ShareLock in the lock
-- manager, re-entrant with the same token, released by unlock hold by hold.
--
SELECT fence.try_lock('x0') AS tx \gset
SELECT fence.try_lock_shared('s') AS ts \gset
SELECT :ts > :tx AS after_exclusive_token, held_modes() AS modes;
SELECT fence.try_lock_shared('s') = :ts AS same_token, fence.lock_shared('s') = :ts AS same_token_lock,
       fence.lock_shared('s', '1s') = :ts AS same_token_timeout;
SELECT name, kind, token = :ts AS token_ok, pid = pg_backend_pid() AS mine
  FROM fence.locks WHERE name IN ('s', 'x0') ORDER BY name;
-- four holds: three unlocks leave it held, the fourth frees it
SELECT fence.unlock('s', :ts), fence.unlock('s', :ts), fence.unlock('s', :ts), held_modes() AS modes;
SELECT fence.unlock('s', :ts) AS last_hold, held_modes() AS modes;
SELECT fence.unlock('s', :ts) AS not_held_any_more;
SELECT count(*) AS rows_for_s FROM fence.locks WHERE name = 's';
-- a new shared grant gets a new, larger token
SELECT fence.lock_shared('s') AS ts2 \gset
SELECT :ts2 > :ts AS larger;
-- wrong token, name not held: false, nothing released
SELECT fence.unlock('s', :ts) AS old_token, fence.unlock('s', :ts2 + 1) AS wrong_token,
       fence.unlock('zz', :ts2) AS not_held, held_modes() AS modes;

--
-- One mode per name and session: 55000 both ways, and nothing changes.
--
SELECT fence.try_lock('s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock('s', '1s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.try_xact_lock('s');
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT fence.xact_lock('s');
ROLLBACK;
SELECT fence.try_lock_shared('x0');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock_shared('x0');
\echo :LAST_ERROR_SQLSTATE
-- an exclusive transaction hold refuses a shared one too
BEGIN;
SELECT fence.try_xact_lock('xx') IS NOT NULL AS xact_locked;
SELECT fence.try_lock_shared('xx');
ROLLBACK;
SELECT held_modes() AS modes_unchanged;
SELECT name, kind FROM fence.locks WHERE name IN ('s', 'x0', 'xx') ORDER BY name;

-- unlock_all releases shared and exclusive holds alike, counting names
SELECT fence.try_lock_shared('s2') IS NOT NULL AS s2;
SELECT fence.unlock_all() AS released, held_modes() AS modes;
SELECT count(*) AS rows_left FROM fence.locks WHERE pid = pg_backend_pid();

-- after unlock, the other mode is allowed again
SELECT fence.try_lock('s') AS tex \gset
SELECT :tex > :ts2 AS exclusive_now, held_modes() AS modes;
SELECT fence.unlock('s', :tex);
SELECT fence.try_lock_shared('s') IS NOT NULL AS shared_again;
SELECT fence.unlock_all();

--
-- pg_advisory_unlock_all() ends shared holds behind pg_fence's back: the
-- next grant is a fresh one with a new token, and unlock of the old one is
-- false.
--
SELECT fence.try_lock_shared('g') AS tg \gset
SELECT pg_advisory_unlock_all();
SELECT held_modes() AS modes;
SELECT fence.unlock('g', :tg) AS stale_unlock;
SELECT fence.try_lock_shared('g') > :tg AS fresh_token;
-- and an exclusive lock on the name is allowed after the stale shared hold
SELECT pg_advisory_unlock_all();
SELECT fence.try_lock('g') IS NOT NULL AS exclusive_after_stale;
SELECT fence.unlock_all();

--
-- fence.stats(): shared grants count in acquired_session (re-entrant ones
-- included), unlocks in releases.
--
SELECT acquired_session - :acq0 AS acquired_session, releases - :rel0 AS releases FROM fence.stats();

--
-- Argument errors: 22023, the message names the argument.
--
SELECT fence.try_lock_shared(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.try_lock_shared('');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock_shared(repeat('n', 1025));
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock_shared(NULL, '1s');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock_shared('t', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock_shared('t', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock_shared('t', '1 day -25 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT held_modes() AS nothing_held;

-- Read-only transactions: 25006, nothing held afterwards.
BEGIN READ ONLY;
SELECT fence.try_lock_shared('ro');
ROLLBACK;
BEGIN READ ONLY;
SELECT fence.lock_shared('ro', '1s');
ROLLBACK;
SELECT held_modes() AS nothing_held;

DROP FUNCTION held_modes();
