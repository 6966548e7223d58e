-- test/chaos/schema.sql - the chaos test's resources and its server-side audit.
--
-- Loaded once into the chaos cluster's database (test/chaos/chaos.sh) before
-- the workers start.  Every write the workers attempt carries an operation id
-- (op); every write that commits leaves one row in chaos.audit, written by a
-- trigger (or by the worker) in the same transaction while the written row
-- (or fence.resources' row, or the insert mark) is still locked, so the
-- audit's order per resource is the order the writes were applied in.  Every
-- change of fence.leases leaves one row in chaos.lease_audit, stamped with
-- the server's clock.  Both are read back from the final primary at the end:
-- they are the truth about writes and lease grants whose outcome a worker did
-- not learn (connection lost at commit, backend terminated, failover).
--
-- Copyright (c) 2026, The pg_fence Developers

CREATE EXTENSION pg_fence;
CREATE SCHEMA chaos;

-- One row per resource: updated through the guard with SET LOCAL fence.token.
CREATE TABLE chaos.guarded (id text PRIMARY KEY, val bigint NOT NULL DEFAULT 0, op text,
                            fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('chaos.guarded');

-- One row per resource: updated with fence.fenced_update (allow_equal).
CREATE TABLE chaos.fu (id text PRIMARY KEY, val bigint NOT NULL DEFAULT 0, op text,
                       fence bigint NOT NULL DEFAULT 0);

-- Append-only: one row per write, fenced per stream by the guard's insert marks.
CREATE TABLE chaos.ledger (id bigserial PRIMARY KEY, stream text NOT NULL, op text NOT NULL,
                           fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('chaos.ledger', 'fence', ARRAY['stream']);

-- Applied writes, in the order they were applied per (target, resource).
CREATE TABLE chaos.audit (
	seq       bigserial PRIMARY KEY,
	at        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	target    text NOT NULL,          -- guarded, fu, ledger, advance
	resource  text NOT NULL,
	old_fence bigint,                 -- the fence the write replaced (NULL: not a row)
	token     bigint NOT NULL,        -- the token the write presented
	op        text NOT NULL
);

CREATE FUNCTION chaos.audit_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO chaos.audit (target, resource, old_fence, token, op)
	VALUES (TG_ARGV[0], NEW.id, OLD.fence, NEW.fence, NEW.op);
	RETURN NULL;
END $$;
CREATE TRIGGER audit AFTER UPDATE ON chaos.guarded FOR EACH ROW EXECUTE FUNCTION chaos.audit_update('guarded');
CREATE TRIGGER audit AFTER UPDATE ON chaos.fu FOR EACH ROW EXECUTE FUNCTION chaos.audit_update('fu');

CREATE FUNCTION chaos.audit_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO chaos.audit (target, resource, old_fence, token, op)
	VALUES ('ledger', NEW.stream, NULL, NEW.fence, NEW.op);
	RETURN NULL;
END $$;
CREATE TRIGGER audit AFTER INSERT ON chaos.ledger FOR EACH ROW EXECUTE FUNCTION chaos.audit_insert();

-- Every grant, takeover, renewal and release of a lease, on the server's clock.
CREATE TABLE chaos.lease_audit (
	seq        bigserial PRIMARY KEY,
	at         timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	event      text NOT NULL,        -- grant, renew, release
	name       text NOT NULL,
	token      bigint NOT NULL,
	holder     text,
	granted_at timestamptz,
	expires_at timestamptz
);

CREATE FUNCTION chaos.audit_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO chaos.lease_audit (event, name, token, holder)
		VALUES ('release', OLD.name, OLD.token, OLD.holder);
	ELSIF TG_OP = 'INSERT' OR OLD.token <> NEW.token THEN
		INSERT INTO chaos.lease_audit (event, name, token, holder, granted_at, expires_at)
		VALUES ('grant', NEW.name, NEW.token, NEW.holder, NEW.granted_at, NEW.expires_at);
	ELSE
		INSERT INTO chaos.lease_audit (event, name, token, holder, granted_at, expires_at)
		VALUES ('renew', NEW.name, NEW.token, NEW.holder, NEW.granted_at, NEW.expires_at);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit AFTER INSERT OR UPDATE OR DELETE ON fence.leases
	FOR EACH ROW EXECUTE FUNCTION chaos.audit_lease();

-- The dumps the checker reads (tab separated, times in microseconds since 1970).
CREATE VIEW chaos.audit_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, target, resource,
       coalesce(old_fence, -1) AS old_fence, token, op
  FROM chaos.audit ORDER BY target, resource, at, seq;
CREATE VIEW chaos.lease_audit_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, event, name, token,
       coalesce(holder, '-') AS holder,
       coalesce((extract(epoch FROM granted_at) * 1000000)::bigint, -1) AS granted_us,
       coalesce((extract(epoch FROM expires_at) * 1000000)::bigint, -1) AS expires_us
  FROM chaos.lease_audit ORDER BY name, at, seq;
