--
-- Guarded tables: every UPDATE or DELETE, from any client, must present a
-- fencing token not lower than the row's fence (src/guard.cpp; the fence
-- rule itself is written once, in include/ext/fence_rule.hpp, for every
-- write path).
--

-- The trigger function.  SECURITY INVOKER: it only reads the row and the
-- setting fence.token.  It refuses to run as anything but the trigger that
-- fence.guard installs.
CREATE FUNCTION fence.guard_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'fence_guard_trigger'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.guard_trigger() IS
'Trigger function of guarded tables (installed by fence.guard as trigger "fence_guard", BEFORE UPDATE OR DELETE FOR EACH ROW, argument: the fence column). Accepts a write iff its token is not lower than the row''s fence: the new fence value when an UPDATE changes it, else fence.token set in the current transaction (and an UPDATE then stores it in the fence column). Raises FN001 for a lower token, FN003 when none is presented.';

-- guard / unguard run as the caller, who must own the table (like ALTER
-- TABLE); CREATE TRIGGER's TRIGGER privilege alone is not enough, since
-- removing the guard disables fencing for every writer.
CREATE FUNCTION fence.guard(rel regclass, fence_column name DEFAULT 'fence')
RETURNS void
AS 'MODULE_PATHNAME', 'fence_guard'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.guard(regclass, name) IS
'Guards table rel: installs the trigger "fence_guard" (BEFORE UPDATE OR DELETE FOR EACH ROW) so that every UPDATE or DELETE must present a fencing token not lower than the row''s fence_column (bigint): the new fence value, or SET LOCAL fence.token = <token> in the same transaction. Only the table''s owner may call it (42501). Takes ShareRowExclusiveLock on rel. Raises 0A000 for an inheritance parent whose children are not all guarded (guard the children first), 42809 for a non-table, 42703 for a missing column, 42804 when it is not bigint, 42710 when rel is already guarded, 22023 for NULL arguments.';

CREATE FUNCTION fence.unguard(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'fence_unguard'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.unguard(regclass) IS
'Removes the guard trigger "fence_guard" that fence.guard installed on rel. Only the table''s owner may call it (42501). Takes AccessExclusiveLock on rel. Raises 42704 when rel is not guarded, 42809 for a non-table, 22023 for a NULL argument.';

--
-- fence.advance: the highest token seen per resource that is not one row
-- (src/advance.cpp applies the fence rule to the resource's row here).
--

-- The longest name, in bytes, is defined once, in C (kMaxNameBytes,
-- include/ext/args.hpp), which every function checks its name argument
-- against; SQL that needs the number asks for it here instead of repeating
-- it.  (The COMMENTs that state it are compared with it by
-- test/pgtap/guard.sql.)
CREATE FUNCTION fence.max_name_bytes()
RETURNS integer
AS 'MODULE_PATHNAME', 'fence_max_name_bytes'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fence.max_name_bytes() IS
'Internal (used by the CHECK constraint of fence.resources): the longest lock, lease or resource name pg_fence accepts, in bytes.';

CREATE TABLE fence.resources (
    name       text PRIMARY KEY
               CHECK (pg_catalog.octet_length(name) OPERATOR(pg_catalog.>=) 1
                      AND pg_catalog.octet_length(name) OPERATOR(pg_catalog.<=)
                          fence.max_name_bytes()),
    token      bigint NOT NULL,
    updated_at timestamptz NOT NULL
);
COMMENT ON TABLE fence.resources IS
'pg_fence: highest fencing token accepted by fence.advance per resource; written only by fence.advance';
-- Nobody but fence.advance (SECURITY DEFINER) reads or writes it directly;
-- pg_dump keeps its rows, so tokens do not go backwards after a restore.
REVOKE ALL ON TABLE fence.resources FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.resources', '');

-- SECURITY DEFINER: callers need no privilege on fence.resources.  The body
-- is C and uses only schema-qualified names; search_path is pinned anyway.
CREATE FUNCTION fence.advance(resource text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_advance'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION fence.advance(text, bigint) IS
'For resources that are not one row: records the highest fencing token seen per resource. Returns true (and stores token) iff token is not lower than the stored one (or the resource is new), false if it is stale (counted and logged as a stale write). Concurrent calls for one resource serialize on its row in fence.resources. Raises 22023 for a NULL, empty or over-long (> 1024 bytes) resource or a NULL token, 25006 in a read-only transaction.';
