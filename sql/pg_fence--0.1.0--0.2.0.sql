-- pg_fence--0.1.0--0.2.0.sql: the upgrade script of release 0.2.0, frozen (assembled from the 0.2.0 fragments by sql/assemble.mk); never edit

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_fence UPDATE TO '0.2.0'" to load this file. \quit

-- sql/0.2.0/00-version.sql
-- 0.2.0: leases, semaphores, guard trigger, advance, fenced_update's expect_fence,
-- observability.
-- Fragments are applied in file-name order:
--   05-*  token epochs (sequences)
--   10-*  leases   15-*  semaphores   20-*  guard / advance   25-*  fenced writes
--   30-*  observability

-- sql/0.2.0/05-token-epochs.sql
-- Token epochs (one per timeline, like a Raft term; docs/failover.md "Tokens across
-- failover"): the durable record of the epoch this database's tokens are
-- being issued in, written (setval, flushed) before the first token of the
-- epoch.  Sequences, not a table: a write is not undone by the rollback of
-- the transaction that made it, and the server reads them from their page.
-- pg_extension_config_dump makes pg_dump keep their values.
--
--   token_epoch       epoch * 2^32 + timeline it was claimed on (0: none yet)
--   token_lineage     the system identifier of the cluster that claimed it
--                     (pg_controldata's, as a signed bigint)
--   token_lineage_db  the OID of the database that claimed it: with
--                     token_lineage, what tells a copy of the database (a
--                     restore, CREATE DATABASE ... TEMPLATE, pg_upgrade),
--                     which claims an epoch above its source's
--   token_mark        the highest value of fence.token_seq the token
--                     allocator has made durable (set after it, never above
--                     it): a counter start refuses a token_seq found below
--                     it (lowered by an administrator), even after a restart
CREATE SEQUENCE fence.token_epoch AS bigint MINVALUE 0 START WITH 0 CACHE 1 NO CYCLE;
CREATE SEQUENCE fence.token_lineage AS bigint
	MINVALUE -9223372036854775808 START WITH 0 CACHE 1 NO CYCLE;
CREATE SEQUENCE fence.token_lineage_db AS bigint MINVALUE 0 START WITH 0 CACHE 1 NO CYCLE;
CREATE SEQUENCE fence.token_mark AS bigint MINVALUE 0 START WITH 0 CACHE 1 NO CYCLE;
REVOKE ALL ON SEQUENCE fence.token_epoch, fence.token_lineage, fence.token_lineage_db,
	fence.token_mark FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fence.token_epoch', '');
SELECT pg_catalog.pg_extension_config_dump('fence.token_lineage', '');
SELECT pg_catalog.pg_extension_config_dump('fence.token_lineage_db', '');
SELECT pg_catalog.pg_extension_config_dump('fence.token_mark', '');
COMMENT ON SEQUENCE fence.token_epoch IS
	'pg_fence: the epoch fencing tokens are issued in and the timeline that claimed it (epoch * 2^32 + timeline); do not change';
COMMENT ON SEQUENCE fence.token_lineage IS
	'pg_fence: system identifier of the cluster that claimed fence.token_epoch; do not change';
COMMENT ON SEQUENCE fence.token_lineage_db IS
	'pg_fence: OID of the database that claimed fence.token_epoch; do not change';
COMMENT ON SEQUENCE fence.token_mark IS
	'pg_fence: the highest value of fence.token_seq the token allocator has made durable; do not change';

-- sql/0.2.0/10-leases.sql
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

-- sql/0.2.0/12-elections.sql
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

-- sql/0.2.0/15-semaphores.sql
--
-- Semaphores: fence.semaphore_acquire (src/server/leases/semaphores.cpp).  A permit is a
-- row of fence.leases with its own slot and token, renewed and released
-- with fence.lease_renew / fence.lease_release.
--
CREATE FUNCTION fence.semaphore_acquire(name text, permits integer, ttl interval,
                                       holder text DEFAULT NULL, wait interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fence_semaphore_acquire'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER COST 10000;

COMMENT ON FUNCTION fence.semaphore_acquire(text, integer, interval, text, interval) IS
'Grants one of permits permits of the semaphore "name" for ttl from now (server clock at the grant) to the calling role, records holder, and returns the permit''s own new fencing token, iff fewer than permits unexpired holders of the name exist (callers passing different permits each count against their own; holders beyond a lowered count keep their permits until they release or expire). Otherwise: without wait (NULL, the default) returns NULL (after trying again for up to 100 ms while another acquire, renewal or release of the name is in flight in another transaction); with wait, waits in the server (queued first come, first served; woken when a release commits or at the earliest expiry; wait event PgFenceLease on 17+) up to wait, then returns NULL holding nothing. An expired permit is taken over with a larger token (logged), and the name''s other expired permits are deleted. Renew and release the permit with fence.lease_renew and fence.lease_release and its token. Raises 22023 for a NULL, empty or over-long name, permits NULL or not between 1 and 10000, a holder over 1024 bytes, a ttl that is NULL, not positive, not finite or longer than fence.max_lease_ttl, or a wait that is not positive or not finite, 42809 while the name is held as a lease, 25006 during recovery or in a read-only transaction, 57014 when a wait is cancelled or hits statement_timeout (nothing held).';

-- sql/0.2.0/15-shared-locks.sql
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

-- sql/0.2.0/20-guard.sql
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

-- sql/0.2.0/25-fenced-writes.sql
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

-- sql/0.2.0/30-observability.sql
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
