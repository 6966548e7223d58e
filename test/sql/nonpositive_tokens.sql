-- Zero and negative numbers are never fencing tokens (every grant returns a
-- token > 0): every path that takes a presented token refuses them with
-- FN004 and writes nothing, also with fence.require_issued_tokens off.
\set VERBOSITY default
CREATE TABLE np_tok (id int PRIMARY KEY, stream text, v int, fence bigint NOT NULL DEFAULT 0);
INSERT INTO np_tok VALUES (1, 's', 0, 0);
SELECT fence.fenced_update('np_tok', '{"id": 1}', 0, '{"v": 1}', allow_equal => true);
SELECT fence.fenced_update('np_tok', '{"id": 1}', -5, '{"v": 1}');
SELECT fence.advance('np/resource', 0);
SELECT fence.advance('np/resource', -7);
SELECT count(*) AS advanced FROM fence.resources WHERE name = 'np/resource';
SELECT fence.guard('np_tok', 'fence', ARRAY['stream']);
BEGIN;
SET LOCAL fence.token = 0;
UPDATE np_tok SET v = 2 WHERE id = 1;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = -3;
DELETE FROM np_tok WHERE id = 1;
ROLLBACK;
BEGIN;
SET LOCAL fence.token = 0;
INSERT INTO np_tok VALUES (2, 's', 0, 0);
ROLLBACK;
-- a negative fence in the inserted row is presented, and refused, also
-- when fence.token holds a real token (0 in the row presents none)
INSERT INTO np_tok VALUES (3, 's', 0, -5);
SELECT count(fence.unlock('np-tokens', fence.try_lock('np-tokens'))) > 0 AS issued
  FROM generate_series(1, 3);
BEGIN;
SET LOCAL fence.token = 1;
INSERT INTO np_tok VALUES (3, 's', 0, -1);
ROLLBACK;
-- with the check of issued tokens off (superuser): still refused
SET fence.require_issued_tokens = off;
SELECT fence.advance('np/resource', 0);
RESET fence.require_issued_tokens;
SELECT id, v, fence FROM np_tok ORDER BY id;
SELECT fence.unguard('np_tok');
DROP TABLE np_tok;
