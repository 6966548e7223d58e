--
-- fence.fenced_update gains expect_fence (a read-modify-write that never
-- overwrites a write it did not see).  CREATE OR REPLACE cannot add a
-- parameter, so the 0.1.0 function is dropped and created again, with the
-- new C symbol (the library keeps exporting the old one, for databases not
-- yet updated).  A user object that depends on the 0.1.0 function (a view,
-- a SQL function with a BEGIN ATOMIC body) makes the DROP fail, and with it
-- ALTER EXTENSION ... UPDATE, rather than dropping the user's object: drop
-- it first and create it again afterwards.  Privileges granted or revoked
-- on the 0.1.0 function are carried over to the new one (on a fresh
-- install there are none to carry).
--
DO $fenced_update$
DECLARE
    old_acl pg_catalog.aclitem[];
    item    record;
BEGIN
    SELECT p.proacl INTO old_acl
      FROM pg_catalog.pg_proc AS p
     WHERE p.oid OPERATOR(pg_catalog.=)
           'fence.fenced_update(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.jsonb, pg_catalog.name, pg_catalog.bool)'::pg_catalog.regprocedure;

    DROP FUNCTION fence.fenced_update(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.int8,
                                      pg_catalog.jsonb, pg_catalog.name, pg_catalog.bool);

    CREATE FUNCTION fence.fenced_update(rel pg_catalog.regclass, key pg_catalog.jsonb,
                                        token pg_catalog.int8, changes pg_catalog.jsonb,
                                        fence_column pg_catalog.name DEFAULT 'fence',
                                        allow_equal pg_catalog.bool DEFAULT false,
                                        expect_fence pg_catalog.int8 DEFAULT NULL)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'fence_fenced_update_0_2'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

    -- NULL: the default privileges (EXECUTE for PUBLIC), as on a fresh install
    IF old_acl IS NOT NULL THEN
        REVOKE ALL ON FUNCTION fence.fenced_update(pg_catalog.regclass, pg_catalog.jsonb,
            pg_catalog.int8, pg_catalog.jsonb, pg_catalog.name, pg_catalog.bool, pg_catalog.int8)
            FROM PUBLIC;
        FOR item IN
            SELECT a.grantee, a.is_grantable
              FROM pg_catalog.aclexplode(old_acl) AS a
             WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
        LOOP
            EXECUTE pg_catalog.format(
                'GRANT EXECUTE ON FUNCTION fence.fenced_update(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.jsonb, pg_catalog.name, pg_catalog.bool, pg_catalog.int8) TO %s%s',
                CASE WHEN item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                     ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(item.grantee)) END,
                CASE WHEN item.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END IF;
END
$fenced_update$;

COMMENT ON FUNCTION fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean, bigint) IS
'In one UPDATE, as the caller, applies changes (jsonb object column -> value, converted with the columns'' types) and sets fence_column := token on the one row of rel identified by key (non-empty jsonb object column -> value), only if the row''s fence is lower than token (or equal, with allow_equal) and, when expect_fence is not NULL, still equals expect_fence (the fence the caller read before computing its change). Returns true if applied; false if the token is stale or, with expect_fence, the row was written since the caller read it (a lost race; logged as such). Raises FN004 for a token this database never issued (unless fence.require_issued_tokens is off), P0002 when no row visible to the caller matches key, 21000 when key matches several rows, 22004 when the row''s fence is NULL, FN001 when the table is guarded and the guard refuses the token, 42703 for an unknown column, 42P01/42809 for a missing relation or a non-table, 42804 when the fence column is not bigint, 22P02 etc. for a value its column rejects, 22023 for NULL or malformed arguments, 42501 without the needed privileges.';

--
-- No forged tokens (FN004, src/server/tokens/issued_token.cpp): advance and the guard
-- trigger refuse a token higher than every token this database has issued.
-- Their comments say so here, next to fenced_update's.
--
COMMENT ON FUNCTION fence.advance(text, bigint) IS
'For resources that are not one row: records the highest fencing token seen per resource. Returns true (and stores token) iff token is not lower than the stored one (or the resource is new), false if it is stale (counted and logged as a stale write). Concurrent calls for one resource serialize on its row in fence.resources. Raises FN004 for a token higher than every token this database has issued (unless fence.require_issued_tokens is off), 22023 for a NULL, empty or over-long (> 1024 bytes) resource or a NULL token, 25006 in a read-only transaction.';

COMMENT ON FUNCTION fence.guard_trigger() IS
'Trigger function of guarded tables (installed by fence.guard as trigger "fence_guard", BEFORE UPDATE OR DELETE FOR EACH ROW, and BEFORE INSERT too when the table is guarded with resource_columns; arguments: the fence column, then the guard number and the resource columns). Accepts an UPDATE or DELETE iff its token is not lower than the row''s fence: the new fence value when an UPDATE changes it, else fence.token set in the current transaction (and an UPDATE then stores it in the fence column). With resource columns, accepts an INSERT iff its token (the new row''s fence when positive, else fence.token, which is then stored in the fence column) is not lower than the highest token that has written a row with the same resource column values, and raises that mark to it; an UPDATE or DELETE must pass that mark too (both resources'' when it moves a row) and raises it. Raises FN001 for a lower token, FN003 when none is presented, FN004 for a token higher than every token this database has issued (unless fence.require_issued_tokens is off).';
