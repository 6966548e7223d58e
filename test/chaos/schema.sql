-- test/chaos/schema.sql - the chaos test's resources and its server-side audit.
--
-- Loaded once into the chaos cluster's database (test/chaos/chaos.sh) before
-- the workers start.  Every write the workers attempt carries an operation id
-- (op); every write that commits leaves one row in chaos.audit, written by a
-- trigger (or by the worker) in the same transaction while the written row
-- (or fence.resources' row, or the insert mark) is still locked, so the
-- audit's order per resource is the order the writes were applied in.  Every
-- change of fence.leases (leases, semaphore permits, leaderships) leaves one
-- row in chaos.lease_audit, stamped with the server's clock.  A backend
-- holding a session, transaction or shared lock writes chaos.holds rows
-- while it holds it (chaos.hold, chaos.beat).  All three are read back from
-- the final primary at the end: they are the truth about writes and grants
-- whose outcome a worker did not learn (connection lost at commit, backend
-- terminated, failover).
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

-- Every grant, takeover, renewal and release of a lease, a semaphore permit
-- or a leadership, on the server's clock.
CREATE TABLE chaos.lease_audit (
	seq        bigserial PRIMARY KEY,
	at         timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	event      text NOT NULL,        -- grant, renew, release
	name       text NOT NULL,
	token      bigint NOT NULL,
	holder     text,
	granted_at timestamptz,
	expires_at timestamptz,
	slot       integer NOT NULL,
	permits    integer,              -- NULL: a lease or a leadership
	elected    boolean NOT NULL      -- granted by fence.campaign
);

CREATE FUNCTION chaos.audit_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO chaos.lease_audit (event, name, token, holder, slot, permits, elected)
		VALUES ('release', OLD.name, OLD.token, OLD.holder, OLD.slot, OLD.permits, OLD.elected);
	ELSE
		INSERT INTO chaos.lease_audit (event, name, token, holder, granted_at, expires_at, slot,
		                               permits, elected)
		VALUES (CASE WHEN TG_OP = 'INSERT' OR OLD.token <> NEW.token THEN 'grant' ELSE 'renew' END,
		        NEW.name, NEW.token, NEW.holder, NEW.granted_at, NEW.expires_at, NEW.slot,
		        NEW.permits, NEW.elected);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit AFTER INSERT OR UPDATE OR DELETE ON fence.leases
	FOR EACH ROW EXECUTE FUNCTION chaos.audit_lease();

-- Holdings of connection-bound locks (fence.lock, fence.xact_lock,
-- fence.lock_shared), each row written by the backend that holds the lock,
-- while it holds it, on the server's clock: the grant row in the granting
-- statement (chaos.hold), beats later (chaos.beat).  A row that committed
-- proves the lock was held at its time `at`, whatever became of the
-- session afterwards (terminated, crashed): so [first row, last row] of a
-- (name, token) lies inside its real holding, and two such spans of one
-- name, one of them exclusive, must never overlap.
CREATE TABLE chaos.holds (
	seq           bigserial PRIMARY KEY,
	at            timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	event         text NOT NULL,     -- grant, beat
	name          text NOT NULL,
	token         bigint NOT NULL,
	mode          text NOT NULL,     -- exclusive, shared
	scope         text NOT NULL,     -- session, xact
	worker        text NOT NULL,
	pid           integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
	backend_start timestamptz NOT NULL
);

-- The backend's identity: its pid and when it started.
CREATE FUNCTION chaos.backend_start() RETURNS timestamptz LANGUAGE sql AS $$
	SELECT backend_start FROM pg_catalog.pg_stat_activity WHERE pid = pg_catalog.pg_backend_pid()
$$;

-- chaos.hold(name, fence.lock(name, ...), mode, scope, worker): the lock
-- function is the argument, so the row is written after the grant, in the
-- same statement (and transaction); returns the token (NULL: nothing held,
-- nothing written).
CREATE FUNCTION chaos.hold(lock_name text, token bigint, mode text, scope text, worker text)
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	IF token IS NOT NULL THEN
		INSERT INTO chaos.holds (event, name, token, mode, scope, worker, backend_start)
		VALUES ('grant', lock_name, token, mode, scope, worker, chaos.backend_start());
	END IF;
	RETURN token;
END $$;

-- A beat of a holding this backend was granted (chaos.hold): true; false,
-- and nothing written, from any other backend.
CREATE FUNCTION chaos.beat(lock_name text, lock_token bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO chaos.holds (event, name, token, mode, scope, worker, backend_start)
	SELECT 'beat', h.name, h.token, h.mode, h.scope, h.worker, h.backend_start
	  FROM chaos.holds h
	 WHERE h.name = lock_name AND h.token = lock_token AND h.event = 'grant'
	   AND h.pid = pg_catalog.pg_backend_pid() AND h.backend_start = chaos.backend_start();
	RETURN FOUND;
END $$;

-- The dumps the checker reads (tab separated, times in microseconds since 1970).
CREATE VIEW chaos.audit_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, target, resource,
       coalesce(old_fence, -1) AS old_fence, token, op
  FROM chaos.audit ORDER BY target, resource, at, seq;
CREATE VIEW chaos.lease_audit_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, event, name, token,
       coalesce(holder, '-') AS holder,
       coalesce((extract(epoch FROM granted_at) * 1000000)::bigint, -1) AS granted_us,
       coalesce((extract(epoch FROM expires_at) * 1000000)::bigint, -1) AS expires_us,
       slot, coalesce(permits, -1) AS permits, elected::int AS elected
  FROM chaos.lease_audit ORDER BY name, at, seq;
CREATE VIEW chaos.holds_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, event, name, token, mode, scope,
       worker, pid, (extract(epoch FROM backend_start) * 1000000)::bigint AS backend_start_us
  FROM chaos.holds ORDER BY name, at, seq;

-- The job queue's workload (worker.cpp JobRound, jobs.hpp): a job's row,
-- made in the enqueueing transaction (so a committed enqueue leaves one,
-- even if the job vanished), updated with fence.fenced_update as one way
-- of writing the job's effect; chaos.job_effects is the other way, a
-- guarded insert fenced per job.  Every applied effect leaves a row in
-- chaos.job_effect_audit in the same transaction (with the completion).
CREATE TABLE chaos.job_rows (job_id bigint PRIMARY KEY,
                             enqueue_op text NOT NULL, -- the enqueue's op
                             op text,                  -- the effect's (fenced_update)
                             fence bigint NOT NULL DEFAULT 0);
CREATE TABLE chaos.job_effects (id bigserial PRIMARY KEY, job_id bigint NOT NULL, op text NOT NULL,
                                fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('chaos.job_effects', 'fence', ARRAY['job_id']);
CREATE TABLE chaos.job_effect_audit (
	seq     bigserial PRIMARY KEY,
	at      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	job_id  bigint NOT NULL,
	target  text NOT NULL,           -- guard, fu
	token   bigint NOT NULL,
	op      text NOT NULL
);
CREATE FUNCTION chaos.audit_job_effect() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO chaos.job_effect_audit (job_id, target, token, op)
	VALUES (NEW.job_id, TG_ARGV[0], NEW.fence, NEW.op);
	RETURN NULL;
END $$;
CREATE TRIGGER audit AFTER INSERT ON chaos.job_effects FOR EACH ROW EXECUTE FUNCTION chaos.audit_job_effect('guard');
CREATE TRIGGER audit AFTER UPDATE ON chaos.job_rows FOR EACH ROW EXECUTE FUNCTION chaos.audit_job_effect('fu');

-- Idempotency keys (worker.cpp OnceRound): a key's effect, a guarded insert
-- fenced per key, committed with the step 'effect' (jobs.hpp KeyEffect).
CREATE TABLE chaos.once_effects (
	seq    bigserial PRIMARY KEY,
	at     timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	key    text NOT NULL,
	op     text NOT NULL,
	fence  bigint NOT NULL DEFAULT 0
);
SELECT fence.guard('chaos.once_effects', 'fence', ARRAY['key']);

-- The queue's jobs after the drain: every committed enqueue (chaos.job_rows)
-- with its job, or state 'missing' when the job is gone.
CREATE VIEW chaos.jobs_dump AS
SELECT coalesce(j.id, r.job_id) AS id, coalesce(j.state, 'missing') AS state,
       coalesce(j.attempt, -1) AS attempt, coalesce(j.token, -1) AS token,
       coalesce(r.enqueue_op, j.payload ->> 'op', '-') AS op, coalesce(j.max_attempts, -1) AS max_attempts
  FROM (SELECT * FROM fence.jobs WHERE queue = 'chaos') j
  FULL JOIN chaos.job_rows r ON r.job_id = j.id
 ORDER BY 1;
CREATE VIEW chaos.job_effects_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, job_id, target, token, op
  FROM chaos.job_effect_audit ORDER BY job_id, at, seq;
CREATE VIEW chaos.once_keys_dump AS
SELECT key, state, coalesce(token, -1) AS token, coalesce(step, '-') AS step
  FROM fence.once_keys ORDER BY key;
CREATE VIEW chaos.once_effects_dump AS
SELECT seq, (extract(epoch FROM at) * 1000000)::bigint AS at_us, key, fence AS token, op
  FROM chaos.once_effects ORDER BY key, at, seq;
