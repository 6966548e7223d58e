--
-- Guarded tables: every UPDATE or DELETE, from any client, must present a
-- fencing token not lower than the row's fence (src/server/writes/guard.cpp; the fence
-- rule itself is written once, in src/server/tokens/fence_rule.hpp, for every
-- write path).
--

-- Guarded INSERTs (fence.guard with resource_columns): the highest token
-- that has written (inserted, updated or deleted) a row of each resource
-- (the values of the resource columns), per guard.  guard_id is the guard's number, written into its
-- trigger's arguments (so it survives pg_dump and restore, unlike an OID);
-- resource_hash combines the resource columns' extended hash functions
-- (each with the column's collation), so values equal under their type's
-- equality share one mark; two resources whose hashes collide share one
-- mark too, which can only reject more writes, never let a stale one in.
-- Written only by the guard trigger (src/server/writes/marks_check.cpp), as the owner of
-- this table; nobody else may read or write it.
CREATE TABLE fence.insert_marks (
    guard_id      bigint NOT NULL,
    resource_hash bigint NOT NULL,
    token         bigint NOT NULL,
    PRIMARY KEY (guard_id, resource_hash)
);
COMMENT ON TABLE fence.insert_marks IS
'pg_fence: highest fencing token that has written a row of each resource of a table guarded with resource_columns; written only by the guard trigger';
REVOKE ALL ON TABLE fence.insert_marks FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.insert_marks', '');

CREATE SEQUENCE fence.guard_id_seq;
COMMENT ON SEQUENCE fence.guard_id_seq IS
'pg_fence: numbers the guards of fence.guard(..., resource_columns) (fence.insert_marks.guard_id)';
REVOKE ALL ON SEQUENCE fence.guard_id_seq FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.guard_id_seq', '');

-- The table each guard number belongs to: the table fence.guard guarded
-- (a partitioned table's number serves its partitions through the clones
-- of its trigger).  The guard trigger runs only where its number is
-- registered to its table (the table of the trigger, or of the trigger it
-- was cloned from) and its trigger is "fence_guard": a trigger that copies
-- another table's number from pg_trigger raises 39P01 before it reads,
-- raises or locks any mark (src/server/writes/guard_registry.cpp).  Written only by
-- fence.guard and fence.unguard after their ownership check, as the owner
-- of this table; nobody else may read or write it.  rel is a regclass so
-- that pg_dump writes the table's name and a restore binds the number to
-- the restored table (with its new OID).
CREATE TABLE fence.insert_guards (
    guard_id bigint PRIMARY KEY,
    rel      pg_catalog.regclass NOT NULL
);
COMMENT ON TABLE fence.insert_guards IS
'pg_fence: the table each guard number of fence.guard(..., resource_columns) belongs to; written only by fence.guard and fence.unguard';
REVOKE ALL ON TABLE fence.insert_guards FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.insert_guards', '');

-- The trigger function.  SECURITY INVOKER: it reads the row and the
-- setting fence.token as the writer; only its reads and writes of
-- fence.insert_marks run as that table's owner.  It refuses to run as
-- anything but the trigger that fence.guard installs (with resource columns:
-- on the table its guard number is registered to, fence.insert_guards).
CREATE FUNCTION fence.guard_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'fence_guard_trigger'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.guard_trigger() IS
'Trigger function of guarded tables (installed by fence.guard as trigger "fence_guard", BEFORE UPDATE OR DELETE FOR EACH ROW, and BEFORE INSERT too when the table is guarded with resource_columns; arguments: the fence column, then the guard number and the resource columns). Accepts an UPDATE or DELETE iff its token is not lower than the row''s fence: the new fence value when an UPDATE changes it, else fence.token set in the current transaction (and an UPDATE then stores it in the fence column). With resource columns, accepts an INSERT iff its token (the new row''s fence when positive, else fence.token, which is then stored in the fence column) is not lower than the highest token that has written a row with the same resource column values, and raises that mark to it; an UPDATE or DELETE must pass that mark too (both resources'' when it moves a row) and raises it. Raises FN001 for a lower token, FN003 when none is presented, 39P01 when it runs other than as the trigger fence.guard installed (with resource columns: on a table its guard number is not registered to in fence.insert_guards).';

-- guard / unguard run as the caller, who must own the table (like ALTER
-- TABLE); CREATE TRIGGER's TRIGGER privilege alone is not enough, since
-- removing the guard disables fencing for every writer.
CREATE FUNCTION fence.guard(rel regclass, fence_column name DEFAULT 'fence',
                            resource_columns name[] DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'fence_guard'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.guard(regclass, name, name[]) IS
'Guards table rel: installs the trigger "fence_guard" (BEFORE UPDATE OR DELETE FOR EACH ROW) so that every UPDATE or DELETE must present a fencing token not lower than the row''s fence_column (bigint): the new fence value, or SET LOCAL fence.token = <token> in the same transaction. With resource_columns (the columns that name the resource a row belongs to, e.g. ARRAY[''stream'']), every INSERT (plain, multi-row, INSERT ... SELECT, COPY, ON CONFLICT, MERGE, into any partition) must present a token, the new row''s fence when positive or else fence.token, not lower than the highest token that has written (inserted, updated or deleted) a row with the same values in those columns, and UPDATE and DELETE must pass that mark as well as the row''s fence; writers of one resource serialize until commit. Only the table''s owner may call it (42501), and not on a table of the extension itself (42501). Takes ShareRowExclusiveLock on rel. Raises 42P01 for an OID that names no relation, 0A000 for an inheritance parent whose children are not all guarded (guard the children first) or a generated resource column, 42809 for a non-table, 42703 for a missing column, 42804 when the fence column is not bigint, 42883 for a resource column whose type has no hash function, 42701 for a resource column given twice, 42710 when rel is already guarded, 22023 for NULL arguments, an empty resource_columns, a NULL element or the fence column among them, 54000 for more than 32 resource columns.';

CREATE FUNCTION fence.unguard(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'fence_unguard'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.unguard(regclass) IS
'Removes the guard trigger "fence_guard" that fence.guard installed on rel, the guard numbers registered to rel and the insert marks of their resources. Only the table''s owner may call it (42501). Takes AccessExclusiveLock on rel. Raises 42P01 for an OID that names no relation, 42704 when rel is not guarded, 42809 for a non-table, 2BP01 for a partition (unguard the partitioned table), 22023 for a NULL argument.';

--
-- fence.advance: the highest token seen per resource that is not one row
-- (src/server/writes/advance.cpp applies the fence rule to the resource's row here).
--

-- The longest name, in bytes, is defined once, in C (kMaxNameBytes,
-- src/server/pg/args.hpp), which every function checks its name argument
-- against; SQL that needs the number asks for it here instead of repeating
-- it.  (The COMMENTs that state it are compared with it by
-- test/pgtap/guard.sql.)
CREATE FUNCTION fence.max_name_bytes()
RETURNS integer
AS 'MODULE_PATHNAME', 'fence_max_name_bytes'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fence.max_name_bytes() IS
'Internal (used by the CHECK constraint of fence.resources): the longest lock, lease or resource name, and the longest lease holder text, pg_fence accepts, in bytes.';

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
