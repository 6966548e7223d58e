--
-- Shared connection-bound locks: fence.try_lock_shared / fence.lock_shared
-- (src/server/locks/locks.cpp).  A shared hold is a session hold of the same lock as
-- fence.lock's, in the lock manager's ShareLock instead of ExclusiveLock:
-- any number of sessions hold a name shared, or one session holds it
-- exclusive.  Released by fence.unlock (with the grant's token),
-- fence.unlock_all or the end of the session.
--
-- Like the other lock functions: VOLATILE, PARALLEL UNSAFE, CALLED ON NULL
-- INPUT (a NULL argument is 22023), COST 10000, and executable by PUBLIC
-- (the default privilege of a new function, as for fence.lock).
--

CREATE FUNCTION fence.try_lock_shared(name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_try_lock_shared'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION fence.try_lock_shared(text) IS
'Takes a shared session hold of the lock "name" without waiting: any number of sessions may hold it shared at once, never together with an exclusive holder (fence.lock and friends). Returns this session''s fencing token (its own, strictly increasing per grant like every token), or NULL when another session holds the lock exclusive or is waiting to. Re-entrant: a shared holder gets the same token back and one more hold. Release with fence.unlock(name, token). Raises 55000 when this session holds the lock exclusive, 22023 for a NULL, empty or over-long name, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.lock_shared(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_lock_shared'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION fence.lock_shared(text, interval) IS
'Takes a shared session hold of the lock "name", waiting at most timeout (NULL: no limit; statement_timeout and cancel still apply) while another session holds it exclusive or waits to. Returns this session''s fencing token. Raises 55P03 when the timeout expires, 40P01 on deadlock, 55000 when this session holds the lock exclusive, 22023 for an invalid name or a timeout that is not positive and finite, 25006 during recovery or in a read-only transaction.';
