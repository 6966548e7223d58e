-- One fence check per write (writes/fence_check.hpp): a write's token is
-- checked as issued (FN004) once, and a refused write is reported (counted
-- in stale_writes_rejected) once, also when fence.fenced_update writes a
-- guarded table, whose guard trigger sees the same token again.
\set VERBOSITY default
-- issue 200 tokens first, so that the literal tokens below are real ones
SELECT count(fence.unlock('fc-tokens', fence.try_lock('fc-tokens'))) AS issued
  FROM generate_series(1, 200);
SELECT fence.try_xact_lock('fc-highest') AS highest \gset
SELECT stale_writes_rejected AS stale0 FROM fence.stats() \gset

CREATE TABLE fc_acct (id int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0,
                      other_fence bigint NOT NULL DEFAULT 0);
INSERT INTO fc_acct VALUES (1, 'a', 0, 0), (2, 'b', 0, 0);
SELECT fence.guard('fc_acct');

-- A BEFORE trigger that fires ahead of "fence_guard" (triggers fire in
-- name order) and turns the issued check on for the rest of the
-- transaction: a token checked again after it would be refused.
CREATE FUNCTION fc_require_issued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_catalog.set_config('fence.require_issued_tokens', 'on', true);
	RETURN NEW;
END $$;
CREATE TRIGGER a_require_issued BEFORE UPDATE ON fc_acct
	FOR EACH ROW EXECUTE FUNCTION fc_require_issued();

-- fence.fenced_update checks its token once, with the check off: the guard
-- trigger its UPDATE fires does not check the same token again (it would
-- raise FN004, "presented by a guarded UPDATE", with the check now on)
BEGIN;
SET LOCAL fence.require_issued_tokens = off;
SELECT fence.fenced_update('fc_acct', '{"id": 1}', :highest + 1000000, '{"v": "c"}') AS applied;
SHOW fence.require_issued_tokens;
SELECT id, v, fence - :highest AS above_highest FROM fc_acct WHERE id = 1;
ROLLBACK;
-- the same with allow_equal (the row keeps its fence: the guard takes the
-- token fenced_update pushed, not the row's)
BEGIN;
SET LOCAL fence.require_issued_tokens = off;
SELECT fence.fenced_update('fc_acct', '{"id": 1}', :highest + 1000000, '{"v": "c"}') AS applied;
SET LOCAL fence.require_issued_tokens = off;
SELECT fence.fenced_update('fc_acct', '{"id": 1}', :highest + 1000000, '{"v": "d"}',
                           allow_equal => true) AS applied_equal;
SELECT id, v, fence - :highest AS above_highest FROM fc_acct WHERE id = 1;
ROLLBACK;

-- a plain guarded UPDATE presenting that token is checked by the guard
-- (with the check on again): FN004
\set VERBOSITY sqlstate
BEGIN;
SET LOCAL fence.require_issued_tokens = off;
SELECT pg_catalog.set_config('fence.token', (:highest + 1000000)::text, true) IS NOT NULL AS token_set;
UPDATE fc_acct SET v = 'e' WHERE id = 1;
ROLLBACK;
\set VERBOSITY default

DROP TRIGGER a_require_issued ON fc_acct;

-- a refused write is reported once
UPDATE fc_acct SET fence = 100 WHERE id = 2;
SELECT stale_writes_rejected AS stale1 FROM fence.stats() \gset
-- fenced_update's own fence refuses it: reported once, by fenced_update
SELECT fence.fenced_update('fc_acct', '{"id": 2}', 50, '{"v": "x"}') AS applied;
SELECT stale_writes_rejected - :stale1 AS reported FROM fence.stats();
-- fenced_update's fence (another column) accepts it, the guard's refuses it:
-- FN001, reported once, by the guard
SELECT stale_writes_rejected AS stale2 FROM fence.stats() \gset
SELECT fence.fenced_update('fc_acct', '{"id": 2}', 50, '{"v": "y"}',
                           fence_column => 'other_fence') AS applied;
SELECT stale_writes_rejected - :stale2 AS reported FROM fence.stats();

-- with resource columns: the row's fence accepts fenced_update's token, the
-- resource's mark refuses it (FN001, reported once); the token is checked
-- as issued once for the row and both marks of an UPDATE that moves the
-- row to another resource
CREATE TABLE fc_log (id int PRIMARY KEY, stream text, fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('fc_log', 'fence', ARRAY['stream']);
INSERT INTO fc_log VALUES (1, 's1', 10), (2, 's1', 30);
SELECT stale_writes_rejected AS stale3 FROM fence.stats() \gset
SELECT fence.fenced_update('fc_log', '{"id": 1}', 20, '{"stream": "s2"}') AS applied;
SELECT stale_writes_rejected - :stale3 AS reported FROM fence.stats();
SELECT fence.fenced_update('fc_log', '{"id": 1}', 30, '{"stream": "s2"}') AS applied;
SELECT id, stream, fence FROM fc_log ORDER BY id;

SELECT stale_writes_rejected - :stale0 AS stale_writes_counted FROM fence.stats();

-- unguard drops fc_log's marks (a DROP TABLE would leave them)
SELECT fence.unguard('fc_log');
DROP TABLE fc_acct, fc_log;
DROP FUNCTION fc_require_issued();
