--
-- Leader election: fence.campaign / fence.leader / fence.resign
-- (src/server/leases/elections.cpp).  A leader is the holder of the lease "name": a
-- campaign is a lease_acquire that records the candidate as the holder
-- (fence.leases.elected true); renew with fence.lease_renew(name, term, ttl).
--
-- campaign and resign: VOLATILE, PARALLEL UNSAFE, CALLED ON NULL INPUT (a
-- NULL argument is an error, 22023), SECURITY INVOKER, as the lease
-- functions (10-leases.sql).  leader: everyone may call it, as everyone may
-- read fence.locks (30-observability.sql), which shows the same rows; it
-- only reads, so it works on a standby and in read-only transactions.
-- PARALLEL UNSAFE as well: it reads the latest committed state
-- (GetLatestSnapshot), which PostgreSQL refuses in parallel mode.
--
CREATE FUNCTION fence.campaign(name text, candidate text, ttl interval,
                               wait interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_campaign'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER COST 10000;

COMMENT ON FUNCTION fence.campaign(text, text, interval, interval) IS
'Makes candidate the leader of "name" (the holder of the lease "name", granted to the calling role for ttl from now, server clock) and returns its term: a new fencing token from the counter of every token, so a later leader''s term is always larger. If candidate already leads "name" under the calling role (a lease granted by fence.campaign with that candidate), returns the same term and extends it to ttl from now, like fence.lease_renew. While another leads (or holds the lease "name"): without wait (NULL, the default) returns NULL; with wait, waits in the server (queued first come, first served; woken when a resignation or release commits or at the expiry; wait event PgFenceLease on 17+) up to wait, then returns NULL holding nothing. An expired leadership is taken over with a larger term (logged). Renew with fence.lease_renew(name, term, ttl), end with fence.resign(name, term). Every change of leader is announced by NOTIFY pg_fence at commit. Raises 22023 for a NULL, empty or over-long (over 1024 bytes) name or candidate, a ttl that is NULL, not positive or not finite, or a wait that is not positive or not finite, 42809 while the name is held as a semaphore, 25006 during recovery or in a read-only transaction, 57014 when a wait is cancelled or hits statement_timeout (nothing held).';

CREATE FUNCTION fence.leader(name text)
RETURNS TABLE(candidate text, term bigint, elected_at timestamptz, expires_at timestamptz)
AS 'MODULE_PATHNAME', 'fence_leader'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER ROWS 1;

COMMENT ON FUNCTION fence.leader(text) IS
'The current leader of "name": one row (candidate: the holder text, NULL for a lease taken by fence.lease_acquire without one; term: its token; elected_at: when the term began; expires_at: when it ends unless renewed) while the lease "name" is held and unexpired by the server clock, no row otherwise. Reads the latest committed state, without waiting for any lease call; allowed to every role, on a standby (with the standby''s clock) and in read-only transactions. Raises 22023 for a NULL, empty or over-long name, 42809 while the name is held as a semaphore.';

CREATE FUNCTION fence.resign(name text, term bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_resign'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.resign(text, bigint) IS
'Ends the leadership of "name" under term now and returns true, iff it is current under term, has not expired, and the caller is the role that campaigned or has the privileges of fence_admin; otherwise returns false and changes nothing (also for a semaphore permit''s token). The term is never reused: the next leader gets a larger one. Wakes the oldest waiting campaigner at commit, and announces the change by NOTIFY pg_fence. Raises 22023 for a NULL or invalid name or term, 25006 during recovery or in a read-only transaction.';
