--
-- Lease locks: fence.leases and lease_acquire / lease_renew / lease_release.
--

-- The role whose members may renew and release any role's leases.  Roles are
-- cluster-wide: it may exist already (pg_fence created it in another
-- database, or before a DROP EXTENSION: it is not dropped with the
-- extension), but so may a role of that name someone else created first to
-- get what the extension grants it: on PostgreSQL 16+ a CREATEROLE
-- non-superuser who creates it holds ADMIN OPTION on it and can grant it to
-- itself.  An existing fence_admin is used only if it is as pg_fence creates
-- it (NOLOGIN, no attribute) and no role but a superuser holds ADMIN OPTION
-- on it; plain memberships a DBA granted are kept (docs/security.md).
-- Otherwise 42710 duplicate_object, the code of CREATE ROLE for a name
-- taken: the object is the problem, not the privileges of the superuser
-- who runs CREATE EXTENSION (42501 would send the DBA looking at their own
-- role).  The error undoes the whole CREATE EXTENSION / ALTER EXTENSION
-- UPDATE.
DO $$
DECLARE
	existing record;
	attrs text[];
	holders text;
	why text[] := '{}';
BEGIN
	SELECT r.oid, r.rolcanlogin, r.rolsuper, r.rolcreaterole, r.rolcreatedb,
		   r.rolreplication, r.rolbypassrls
	  INTO existing
	  FROM pg_catalog.pg_roles r
	 WHERE r.rolname OPERATOR(pg_catalog.=) 'fence_admin';
	IF NOT FOUND THEN
		CREATE ROLE fence_admin NOLOGIN;
		RETURN;
	END IF;

	attrs := pg_catalog.array_remove(ARRAY[
		CASE WHEN existing.rolcanlogin THEN 'LOGIN' END,
		CASE WHEN existing.rolsuper THEN 'SUPERUSER' END,
		CASE WHEN existing.rolcreaterole THEN 'CREATEROLE' END,
		CASE WHEN existing.rolcreatedb THEN 'CREATEDB' END,
		CASE WHEN existing.rolreplication THEN 'REPLICATION' END,
		CASE WHEN existing.rolbypassrls THEN 'BYPASSRLS' END], NULL);
	SELECT pg_catalog.string_agg(pg_catalog.quote_ident(h.rolname), ', ' ORDER BY h.rolname)
	  INTO holders
	  FROM pg_catalog.pg_auth_members m
	  JOIN pg_catalog.pg_roles h ON h.oid OPERATOR(pg_catalog.=) m.member
	 WHERE m.roleid OPERATOR(pg_catalog.=) existing.oid
	   AND m.admin_option
	   AND NOT h.rolsuper;

	IF pg_catalog.cardinality(attrs) OPERATOR(pg_catalog.>) 0 THEN
		why := pg_catalog.array_append(why, pg_catalog.format(
			'It has the attributes %s, which pg_fence never gives it.',
			pg_catalog.array_to_string(attrs, ', ')));
	END IF;
	IF holders IS NOT NULL THEN
		why := pg_catalog.array_append(why, pg_catalog.format(
			'Roles that are not superusers hold ADMIN OPTION on it (%s): they could grant it, and what pg_fence grants it, to anyone.',
			holders));
	END IF;
	IF pg_catalog.cardinality(why) OPERATOR(pg_catalog.>) 0 THEN
		RAISE EXCEPTION 'role "fence_admin" already exists and is not safe for pg_fence to use'
			USING ERRCODE = 'duplicate_object',
				  DETAIL = pg_catalog.format('pg_fence did not create role "fence_admin" as it is now. %s',
											 pg_catalog.array_to_string(why, ' ')),
				  HINT = 'Drop the role (DROP ROLE fence_admin), or make it NOLOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS and revoke the admin option (REVOKE ADMIN OPTION FOR fence_admin FROM ... CASCADE), then run the command again.';
	END IF;
END
$$;

-- One row per lease or semaphore permit granted and not released, until it
-- is taken over or purged (fence.lease_purge) after it expires.  A
-- lease is a row with permits NULL (slot 0 unless it took over a semaphore's
-- expired slot); a semaphore's permits are rows of the same
-- name, one per holder, told apart by slot (permits: that of the granting
-- call).  elected: the lease was granted by fence.campaign (holder is the
-- candidate), so that its notifications say kind "leader".  Only the lease and semaphore functions change it (they switch to
-- its owner for that); nobody else may read or write it directly.  Dumped by
-- pg_dump, so that leases (and their tokens) survive a dump and restore.
CREATE TABLE fence.leases (
	name       text NOT NULL,
	token      bigint NOT NULL,
	holder     text,
	owner      oid NOT NULL,
	granted_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	slot       integer NOT NULL DEFAULT 0,
	permits    integer,
	elected    boolean NOT NULL DEFAULT false,
	PRIMARY KEY (name, slot)
);
REVOKE ALL ON TABLE fence.leases FROM PUBLIC;
GRANT SELECT ON TABLE fence.leases TO fence_admin;
SELECT pg_catalog.pg_extension_config_dump('fence.leases', '');
COMMENT ON TABLE fence.leases IS
'pg_fence leases, leaderships and semaphore permits (name, fencing token, holder text, owner role OID, granted_at, expires_at, slot, permits: NULL for a lease, elected: granted by fence.campaign); changed only by fence.lease_acquire, fence.campaign, fence.semaphore_acquire, fence.lease_renew, fence.lease_release, fence.resign and fence.lease_purge';

--
-- VOLATILE, PARALLEL UNSAFE, CALLED ON NULL INPUT (a NULL argument is an
-- error, 22023).  SECURITY INVOKER: the functions need the caller's role for
-- the owner check, and switch to the table's owner internally around fully
-- qualified statements (see src/server/leases/leases.cpp).
--
CREATE FUNCTION fence.lease_acquire(name text, ttl interval, holder text DEFAULT NULL,
                                   wait interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_lease_acquire'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER COST 10000;

COMMENT ON FUNCTION fence.lease_acquire(text, interval, text, interval) IS
'Grants the lease "name" for ttl from now (server clock at the grant, not transaction start) to the calling role, records holder, and returns its new fencing token. While an unexpired lease of that name is held or being acquired by anyone: without wait (NULL, the default) returns NULL at once; with wait, waits in the server (queued first come, first served; woken when a release commits or at the expiry; wait event PgFenceLease on 17+) up to wait, then returns NULL holding nothing. An expired lease is taken over with a larger token (logged), and the name''s other expired rows are deleted. Raises 42809 while the name is held as a semaphore (fence.semaphore_acquire), 22023 for a NULL, empty or over-long name, a holder over 1024 bytes, a ttl that is NULL, not positive, not finite or longer than the superuser setting fence.max_lease_ttl (default 1 day), or a wait that is not positive or not finite, 25006 during recovery or in a read-only transaction, 57014 when a wait is cancelled or hits statement_timeout (nothing held).';

CREATE FUNCTION fence.lease_renew(name text, token bigint, ttl interval)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_lease_renew'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.lease_renew(text, bigint, interval) IS
'Extends the lease (or semaphore permit) "name" to expire ttl from now (server clock) and returns true, iff it is currently held under token, has not expired, and the caller is the role that acquired it or has the privileges of fence_admin; otherwise returns false and changes nothing. Raises 22023 for a NULL or invalid name, token or ttl (a ttl longer than fence.max_lease_ttl included), 25006 during recovery or in a read-only transaction.';

CREATE FUNCTION fence.lease_release(name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fence_lease_release'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

COMMENT ON FUNCTION fence.lease_release(text, bigint) IS
'Releases the lease (or semaphore permit) "name" and returns true, iff it is currently held under token, has not expired, and the caller is the role that acquired it or has the privileges of fence_admin; otherwise returns false and changes nothing. Raises 22023 for a NULL or invalid name or token, 25006 during recovery or in a read-only transaction.';

-- Maintenance, for operators and pg_cron (src/server/leases/lease_purge.cpp): expired
-- rows stay until their name is acquired again.  Not for PUBLIC, like
-- fence.stats_reset(): superusers may always call it; grant fence_admin to
-- whoever else may.
CREATE FUNCTION fence.lease_purge(expired_for interval DEFAULT NULL,
                                  max_names integer DEFAULT 1000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_lease_purge'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER;

REVOKE ALL ON FUNCTION fence.lease_purge(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fence.lease_purge(interval, integer) TO fence_admin;

COMMENT ON FUNCTION fence.lease_purge(interval, integer) IS
'Deletes the expired leases, leaderships and semaphore permits of fence.leases: the rows that expired at least expired_for ago by the server clock (NULL, the default: every expired row), of at most max_names names (default 1000, oldest expiry first), and returns how many rows it deleted. Never deletes an unexpired row; skips a name while a lease call on it is in flight in another transaction, and keeps each purged name''s lock until the transaction ends (a lease_acquire of it without wait returns NULL meanwhile): run it in autocommit, e.g. from pg_cron. Tokens are never reused: a purged name acquired again gets a larger token, and lease_renew / lease_release of a purged token return false. Only superusers and members of fence_admin may call it (42501 otherwise). Raises 22023 for an expired_for that is not positive or not finite, a max_names NULL or below 1, 25006 during recovery or in a read-only transaction, 53200 when the lock table has no slot left for the names (lower max_names).';
