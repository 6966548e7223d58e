/* pg_fence--0.1.0.sql: connection-bound fenced locks and fenced_update */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_fence" to load this file. \quit

-- The extension owns its schema: CREATE SCHEMA fails if a schema "fence"
-- already exists, so nobody else can own the schema our objects live in
-- (the control file's schema is pg_catalog, as pg_cron does).  Every
-- reference below is schema-qualified.
CREATE SCHEMA fence;
COMMENT ON SCHEMA fence IS 'pg_fence: named locks and leases with fencing tokens';
GRANT USAGE ON SCHEMA fence TO PUBLIC;

-- Fencing tokens.  CACHE 1 so that values are in time order across sessions;
-- dumped by pg_dump so that a restored database keeps counting upwards.
-- Nobody but the extension's functions may draw from or reset it.
CREATE SEQUENCE fence.token_seq AS bigint MINVALUE 1 START WITH 1 CACHE 1 NO CYCLE;
REVOKE ALL ON SEQUENCE fence.token_seq FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.token_seq', '');
COMMENT ON SEQUENCE fence.token_seq IS 'source of pg_fence fencing tokens; do not use directly';

--
-- Connection-bound locks.  VOLATILE (they change state), PARALLEL UNSAFE (the
-- holds belong to the calling backend), CALLED ON NULL INPUT (a NULL argument
-- is an error, 22023, not a silent NULL), and costly, so that the planner
-- evaluates cheaper quals first and does not lock on rows it filters out.
--
CREATE FUNCTION fence.try_lock(name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_try_lock'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION fence.try_lock(text) IS
'Takes the session lock "name" without waiting. Returns its fencing token (bigint, strictly increasing per grant), or NULL when another session holds it. Re-entrant: a holder gets the same token back and one more hold. Raises 22023 for a NULL, empty or over-long name, 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.lock(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_lock'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION fence.lock(text, interval) IS
'Takes the session lock "name", waiting at most timeout (NULL: no limit; statement_timeout and cancel still apply). Returns its fencing token. Raises 55P03 when the timeout expires, 40P01 on deadlock, 22023 for an invalid name or a timeout that is not positive and finite, 25006 during recovery.';

CREATE FUNCTION fence.try_xact_lock(name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_try_xact_lock'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION fence.try_xact_lock(text) IS
'Like fence.try_lock, but the hold is released at the end of the transaction (or by ROLLBACK TO SAVEPOINT when taken after the savepoint). Returns the fencing token, or NULL when another session holds the lock.';

CREATE FUNCTION fence.xact_lock(name text, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_xact_lock'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION fence.xact_lock(text, interval) IS
'Like fence.lock, but the hold is released at the end of the transaction (or by ROLLBACK TO SAVEPOINT when taken after the savepoint). Returns the fencing token; raises 55P03 on timeout.';

CREATE FUNCTION fence.unlock(name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_unlock'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION fence.unlock(text, bigint) IS
'Releases one hold of the session lock "name" if this session holds it under that fencing token; the lock is free when its last hold is released. Returns false (no error) when this session does not hold it under that token. Raises 22023 for a NULL name or token.';

CREATE FUNCTION fence.unlock_all()
RETURNS integer
AS 'MODULE_PATHNAME', 'fence_unlock_all'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION fence.unlock_all() IS
'Releases every session lock this session holds (transaction-scoped holds stay until transaction end). Returns the number of lock names released.';

--
-- Fenced writes.  SECURITY INVOKER: the caller's table privileges and
-- row-level security apply to the UPDATE.
--
CREATE FUNCTION fence.fenced_update(rel regclass, key jsonb, token bigint, changes jsonb,
                                    fence_column name DEFAULT 'fence',
                                    allow_equal boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_fenced_update'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean) IS
'In one UPDATE, as the caller, applies changes (jsonb object column -> value, converted with the columns'' types) and sets fence_column := token on the one row of rel identified by key (non-empty jsonb object column -> value), only if the row''s fence is lower than token (or equal, with allow_equal). Returns true if applied, false if the token is stale. Raises P0002 when no row visible to the caller matches key, 21000 when key matches several rows, 42703 for an unknown column, 42P01/42809 for a missing relation or a non-table, 42804 when the fence column is not bigint, 22P02 etc. for a value its column rejects, 22023 for NULL or malformed arguments, 42501 without the needed privileges.';
