-- fence.advance: the highest token seen per resource; true iff token >= stored.
\set VERBOSITY sqlstate
-- A fenced write refuses a token this database never issued (FN004): issue
-- 100 tokens first, so that the literal tokens below are real ones.
SELECT count(fence.unlock('test-tokens', fence.try_lock('test-tokens'))) AS issued
  FROM generate_series(1, 100);
SELECT stale_writes_rejected AS stale0 FROM fence.stats() \gset

-- argument errors change nothing
SELECT fence.advance(NULL, 1);
SELECT fence.advance('', 1);
SELECT fence.advance(repeat('x', 1025), 1);
SELECT fence.advance('adv-a', NULL);
\set VERBOSITY default
SELECT fence.advance(NULL, 1);
SELECT fence.advance('adv-a', NULL);
SELECT fence.advance(repeat('x', 1025), 1);
SELECT count(*) FROM fence.resources WHERE name LIKE 'adv-%' OR name = '' OR name LIKE 'xxx%';

-- ordering: equal is allowed, lower is stale
SELECT fence.advance('adv-a', 10) AS first;
SELECT fence.advance('adv-a', 9) AS lower;
SELECT fence.advance('adv-a', 10) AS equal;
SELECT fence.advance('adv-a', 11) AS higher;
SELECT fence.advance('adv-a', 10) AS lower_again;
SELECT fence.advance('adv-b', 1) AS other_resource;
SELECT fence.advance(repeat('y', 1024), 3) AS longest_name;
SELECT name, token, updated_at <= clock_timestamp() AS stamped
  FROM fence.resources WHERE name LIKE 'adv-%' ORDER BY name;
-- a stale call does not touch the stored row
SELECT updated_at AS upd0 FROM fence.resources WHERE name = 'adv-a' \gset
SELECT fence.advance('adv-a', 1);
SELECT token, updated_at = :'upd0' AS unchanged FROM fence.resources WHERE name = 'adv-a';

-- rolled back advances are forgotten
BEGIN;
SELECT fence.advance('adv-a', 50);
ROLLBACK;
SELECT token FROM fence.resources WHERE name = 'adv-a';

-- read-only transactions cannot advance
\set VERBOSITY sqlstate
BEGIN READ ONLY;
SELECT fence.advance('adv-a', 60);
ROLLBACK;
\set VERBOSITY default

-- any role may advance (SECURITY DEFINER); nobody reads the table directly
CREATE ROLE adv_user;
SET ROLE adv_user;
SELECT fence.advance('adv-c', 5);
SELECT fence.advance('adv-c', 4);
SELECT * FROM fence.resources;
INSERT INTO fence.resources VALUES ('adv-c', 1000, now());
RESET ROLE;
SELECT name, token FROM fence.resources WHERE name = 'adv-c';
-- search_path cannot redirect it
CREATE SCHEMA adv_evil;
CREATE TABLE adv_evil.resources (name text PRIMARY KEY, token bigint, updated_at timestamptz);
SET search_path = adv_evil, public;
SELECT fence.advance('adv-c', 6);
RESET search_path;
SELECT count(*) FROM adv_evil.resources;
SELECT name, token FROM fence.resources WHERE name = 'adv-c';

-- every stale call was counted (lower, lower_again, 1, adv-c 4)
SELECT stale_writes_rejected - :stale0 AS stale_writes_counted FROM fence.stats();

DROP SCHEMA adv_evil CASCADE;
DROP ROLE adv_user;
DELETE FROM fence.resources WHERE name LIKE 'adv-%' OR name LIKE 'yyy%';

-- FN004: a token higher than every token this database has issued is
-- refused (and nothing is stored), by any role; the highest issued one is
-- accepted.  A superuser can turn the check off.
SELECT fence.try_xact_lock('adv-highest') AS highest \gset
\set VERBOSITY terse
SELECT fence.advance('adv-f', 9223372036854775807);
\set VERBOSITY sqlstate
SELECT fence.advance('adv-f', :highest + 1);
CREATE ROLE adv_forger;
SET ROLE adv_forger;
SELECT fence.advance('adv-f', :highest + 1);
SET fence.require_issued_tokens = off;
RESET ROLE;
DROP ROLE adv_forger;
\set VERBOSITY default
SELECT count(*) AS stored FROM fence.resources WHERE name = 'adv-f';
SELECT fence.advance('adv-f', :highest) AS highest_accepted;
SET fence.require_issued_tokens = off;
SELECT fence.advance('adv-f', :highest + 5) AS unchecked;
RESET fence.require_issued_tokens;
SELECT token - :highest AS above_highest FROM fence.resources WHERE name = 'adv-f';
DELETE FROM fence.resources WHERE name = 'adv-f';
