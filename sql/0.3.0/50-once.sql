-- Idempotency keys (docs/once.md): fence.once_entries and once_begin /
-- once_step / once_finish / once_release / once_purge, the view
-- fence.once_keys.  src/server/once/once.cpp has the design.

-- One row per idempotency key, from its first fence.once_begin until
-- fence.once_purge removes it (fence.once_retention after it finished).
-- state: 'in_progress' (owned under token until expires_at), 'released'
-- (given up unfinished by fence.once_release), 'done' (response stored).
-- owner: the role that began the key.  Only the fence.once_* functions
-- change it (they switch to its owner for that); nobody else may read or
-- write it directly: operators read fence.once_keys.  Dumped by pg_dump,
-- so that finished keys (and their tokens) survive a dump and restore.
-- fillfactor 80: room on the page for once_finish's HOT update.  No CHECK
-- on state: only the functions write it, and a CHECK is parsed again by
-- every INSERT and UPDATE (a sixth of once_begin's time, measured).
CREATE TABLE fence.once_entries (
	key         text NOT NULL PRIMARY KEY,
	state       text NOT NULL,
	token       bigint NOT NULL,
	owner       oid NOT NULL,
	fingerprint text,
	step        text,
	response    jsonb,
	created_at  timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,
	finished_at timestamptz
) WITH (fillfactor = 80);
REVOKE ALL ON TABLE fence.once_entries FROM PUBLIC;
GRANT SELECT ON TABLE fence.once_entries TO fence_admin;
SELECT pg_catalog.pg_extension_config_dump('fence.once_entries', '');
COMMENT ON TABLE fence.once_entries IS
'pg_fence idempotency keys (key, state: in_progress, released or done, fencing token of the current or last owner, owner role OID, fingerprint, step, response, created_at, expires_at: end of the owner''s lease, finished_at); changed only by fence.once_begin, fence.once_step, fence.once_finish, fence.once_release and fence.once_purge; read it through the view fence.once_keys';

--
-- VOLATILE, PARALLEL UNSAFE, CALLED ON NULL INPUT (a NULL argument is an
-- error, 22023, where the reference says so).  SECURITY INVOKER: the
-- functions need the caller's role for the owner check, and switch to the
-- table's owner internally around fully qualified statements.
--
CREATE FUNCTION fence.once_begin(key text, ttl interval, fingerprint text DEFAULT NULL)
RETURNS TABLE(status text, token bigint, response jsonb, step text)
AS 'MODULE_PATHNAME', 'fence_once_begin'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER ROWS 1;

COMMENT ON FUNCTION fence.once_begin(text, interval, text) IS
'Begins the work of the idempotency key "key" and returns one row (status, token, response, step). status ''new'': the calling role now owns the key under the new fencing token, with a lease of ttl from now (server clock); step is NULL for a new key, or the step a previous owner recorded when the key is taken over (its lease expired, or it released the key). ''in_progress'': another owner''s lease is live, or another call on the key is in flight (come back later, like HTTP 409); token and response NULL, step the step it reached. ''done'': the key was finished; response is the stored response to replay. ''mismatch'': the key was begun with another fingerprint (like HTTP 422); a NULL fingerprint, given or stored, never mismatches. Never waits. A takeover after expiry is logged and counted in fence.stats() lease_takeovers. Raises 22023 for a NULL, empty or over-long key (over 1024 bytes), a fingerprint over 1024 bytes, a ttl that is NULL, not positive, not finite or longer than fence.max_lease_ttl, 42501 when the key belongs to a role whose privileges the caller lacks (unless fence_admin or superuser), 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.once_step(key text, token bigint, step text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_once_step'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.once_step(text, bigint, text) IS
'Records step (a recovery point, at most 1024 bytes) for the idempotency key "key" and returns true, iff token still owns the key (its once_begin returned ''new'' with it, nobody took it over, and it is neither finished nor released); otherwise returns false and changes nothing (a superseded token is logged as a stale write). A later owner taking the key over is told the step. Raises 22023 for a NULL, empty or over-long key or step, a NULL token, 42501 for another role''s key, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.once_finish(key text, token bigint, response jsonb DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_once_finish'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.once_finish(text, bigint, jsonb) IS
'Stores response (NULL allowed) for the idempotency key "key", marks it done and returns true, iff token still owns the key; otherwise returns false and changes nothing (a superseded owner: logged and counted as a stale write). Later fence.once_begin calls return ''done'' with the response until fence.once_purge removes the key, fence.once_retention after now. Raises 22023 for a NULL, empty or over-long key, a NULL token, 42501 for another role''s key, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.once_release(key text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_once_release'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.once_release(text, bigint) IS
'Gives the idempotency key "key" up unfinished (its work failed) and returns true, iff token still owns it: the next fence.once_begin gets ''new'' at once, with a larger token and the step recorded so far. Otherwise returns false and changes nothing: a superseded owner cannot release its successor''s key. Raises 22023 for a NULL, empty or over-long key, a NULL token, 42501 for another role''s key, 25006 during recovery or in a read-only transaction.';

-- Maintenance, for operators and pg_cron: like fence.lease_purge.
CREATE FUNCTION fence.once_purge()
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_once_purge'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;

REVOKE ALL ON FUNCTION fence.once_purge() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fence.once_purge() TO fence_admin;

COMMENT ON FUNCTION fence.once_purge() IS
'Deletes the idempotency keys that finished at least fence.once_retention ago (default 1 day; server clock), and those never finished (released, or their owner''s lease expired) whose lease ended that long ago, and returns how many it deleted. A purged key begun again is new, with a larger token. Schedule it, e.g. SELECT cron.schedule(''fence-once-purge'', ''*/10 * * * *'', ''SELECT fence.once_purge()'') with pg_cron. Only superusers and members of fence_admin may call it (42501 otherwise). Raises 25006 during recovery or in a read-only transaction.';

-- For operators: the keys the caller may see (those of roles whose
-- privileges it has; every key for fence_admin and superusers).
-- state adds 'expired': in_progress, but the owner's lease has ended and
-- the next fence.once_begin takes it over.  security_barrier: the filter
-- runs before any function of the caller's query sees a row.
CREATE VIEW fence.once_keys WITH (security_barrier) AS
SELECT e.key,
       CASE WHEN e.state OPERATOR(pg_catalog.=) 'in_progress'
                 AND e.expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()
            THEN 'expired' ELSE e.state END AS state,
       e.token,
       pg_catalog.pg_get_userbyid(e.owner) AS owner,
       e.fingerprint,
       e.step,
       e.expires_at,
       e.finished_at,
       e.created_at,
       e.response
  FROM fence.once_entries AS e
 WHERE pg_catalog.pg_has_role(e.owner, 'USAGE')
    OR pg_catalog.pg_has_role('fence_admin', 'USAGE');
GRANT SELECT ON fence.once_keys TO PUBLIC;

COMMENT ON VIEW fence.once_keys IS
'Idempotency keys (fence.once_begin) the current role may see: those of roles whose privileges it has, every key for fence_admin and superusers. state: in_progress (owned, lease live), expired (owned, lease ended: the next once_begin takes it over), released (given up: the next once_begin gets it at once), done (response stored); token: the current or last owner''s fencing token; owner: the role that began the key; expires_at: end of the owner''s lease; finished_at: when once_finish stored the response (once_purge deletes the key fence.once_retention later).';
