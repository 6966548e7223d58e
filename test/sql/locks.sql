-- Connection-bound locks, single session: tokens, re-entrancy, scopes,
-- savepoints, error paths (SQLSTATEs), GUCs left alone, stale session holds.
\set VERBOSITY terse
-- every error is followed by its SQLSTATE
SET client_min_messages = warning;

-- Names of pg_fence locks this backend holds in the lock manager
-- (locktag field4 = 0x6665 = 26213 shows as objsubid).
-- (Not a pg_temp function: DISCARD ALL below would drop it.)
CREATE FUNCTION held() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM pg_catalog.pg_locks
	 WHERE locktype = 'advisory' AND objsubid = 26213
	   AND pid = pg_catalog.pg_backend_pid() AND granted
$$;

--
-- Tokens strictly increase, re-entrancy returns the same token.
--
SELECT fence.try_lock('a') AS ta \gset
SELECT fence.try_lock('b') AS tb \gset
SELECT :tb > :ta AS b_after_a, held() AS held;
SELECT fence.try_lock('a') = :ta AS same_token, fence.lock('a') = :ta AS same_token_lock;
-- three holds of 'a': two unlocks leave it held, the third frees it
SELECT fence.unlock('a', :ta), fence.unlock('a', :ta), held() AS held;
SELECT fence.unlock('a', :ta) AS last_hold, held() AS held;
SELECT fence.unlock('a', :ta) AS not_held_any_more;
-- a new grant of 'a' gets a new, larger token
SELECT fence.try_lock('a') AS ta2 \gset
SELECT :ta2 > :tb AS larger;
-- unlock with the wrong token, a name not held: false, nothing released
SELECT fence.unlock('a', :ta) AS old_token, fence.unlock('a', :ta2 + 1) AS wrong_token,
       fence.unlock('zz', :ta2) AS not_held, held() AS held;
-- unlock_all counts names, not holds
SELECT fence.try_lock('b') = :tb AS reentrant_b;
SELECT fence.unlock_all() AS released, held() AS held;
SELECT fence.unlock_all() AS released_again;

--
-- Transaction locks: released at COMMIT and ROLLBACK; outside a
-- transaction block they last for the statement only.
--
BEGIN;
SELECT fence.try_xact_lock('x') AS tx \gset
SELECT fence.xact_lock('x') = :tx AS same_token, held() AS held;
-- an xact-only hold cannot be unlocked
SELECT fence.unlock('x', :tx) AS unlock_xact_hold, fence.unlock_all() AS unlock_all;
SELECT held() AS held_before_commit;
COMMIT;
SELECT held() AS held_after_commit;
BEGIN;
SELECT fence.xact_lock('x', '1s') > :tx AS new_token;
ROLLBACK;
SELECT held() AS held_after_rollback;
-- one statement: lock, see it held, released at the statement's end
SELECT fence.try_xact_lock('s') IS NOT NULL AS locked, held() AS held_in_statement;
SELECT held() AS held_after_statement;

--
-- Session and transaction holds on one name share the token.
--
BEGIN;
SELECT fence.try_lock('m') AS tm \gset
SELECT fence.try_xact_lock('m') = :tm AS xact_same_token;
SELECT fence.unlock('m', :tm) AS unlock_session_hold, held() AS still_held_by_xact;
SELECT fence.try_lock('m') = :tm AS session_again_same_token;
COMMIT;
SELECT held() AS session_hold_survives, fence.try_lock('m') = :tm AS same_token;
SELECT fence.unlock_all() AS released;

--
-- Savepoints: ROLLBACK TO releases transaction holds taken after it;
-- session holds, also those taken inside the rolled-back savepoint, survive
-- with their token and hold count.  RELEASE keeps holds.
--
BEGIN;
SELECT fence.try_xact_lock('p1') AS tp1 \gset
SAVEPOINT s1;
SELECT fence.try_xact_lock('p1') = :tp1 AS reentrant, fence.try_xact_lock('p2') IS NOT NULL AS p2;
SELECT fence.try_lock('p3') AS tp3 \gset
SELECT fence.try_lock('p3') = :tp3 AS p3_twice, fence.try_xact_lock('p3') = :tp3 AS p3_xact;
SELECT held() AS held_in_savepoint;
ROLLBACK TO SAVEPOINT s1;
-- p1 (taken before s1) and p3 (session) are held, p2 is not
SELECT held() AS held_after_rollback_to;
SELECT fence.try_lock('p2') IS NOT NULL AS p2_free_again, fence.unlock_all() AS released_p2_p3;
COMMIT;
SELECT held() AS held_after_commit;
-- a session hold count taken inside a rolled-back savepoint survives
BEGIN;
SAVEPOINT s;
SELECT fence.try_lock('q') AS tq \gset
SELECT fence.try_lock('q') = :tq AS second_hold;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT fence.unlock('q', :tq) AS first, held() AS held;
SELECT fence.unlock('q', :tq) AS second, held() AS held;
-- RELEASE SAVEPOINT keeps transaction holds until the transaction ends
BEGIN;
SAVEPOINT r;
SELECT fence.try_xact_lock('r') IS NOT NULL AS locked;
RELEASE SAVEPOINT r;
SELECT held() AS held_after_release;
SAVEPOINT r2;
SELECT fence.try_xact_lock('r2') IS NOT NULL AS locked;
ROLLBACK TO SAVEPOINT r2;
SELECT held() AS r_still_held;
ROLLBACK;
SELECT held() AS held_after_rollback;
-- nested: a hold released into a savepoint that is then rolled back goes
BEGIN;
SAVEPOINT outer_sp;
SAVEPOINT inner_sp;
SELECT fence.try_xact_lock('n') IS NOT NULL AS locked;
RELEASE SAVEPOINT inner_sp;
ROLLBACK TO SAVEPOINT outer_sp;
SELECT held() AS held_after_outer_rollback;
COMMIT;

--
-- Argument errors: 22023, the message names the argument.
--
SELECT fence.try_lock(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.try_lock('');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock(repeat('n', 1025));
\echo :LAST_ERROR_SQLSTATE
SELECT fence.try_xact_lock(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.xact_lock('');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.unlock(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.unlock('a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock('t', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.xact_lock('t', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock('t', '1 day -25 hours');
\echo :LAST_ERROR_SQLSTATE
-- 1024 bytes is the limit (bytes, not characters)
SELECT fence.try_lock(repeat('n', 1024)) IS NOT NULL AS max_len;
SELECT fence.try_lock(repeat('é', 513));
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock('t', NULL) IS NOT NULL AS null_timeout_ok;
SELECT fence.xact_lock('t2') IS NOT NULL AS default_timeout_ok;
SELECT fence.unlock_all() AS released, held() AS held;

--
-- Read-only transactions: 25006, nothing held afterwards.
--
BEGIN;
SET TRANSACTION READ ONLY;
SELECT fence.try_lock('ro');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SET default_transaction_read_only = on;
SELECT fence.try_xact_lock('ro');
\echo :LAST_ERROR_SQLSTATE
SELECT fence.lock('ro', '1s');
\echo :LAST_ERROR_SQLSTATE
RESET default_transaction_read_only;
SELECT held() AS held;

--
-- fence.lock with a timeout leaves lock_timeout alone.
--
SET lock_timeout = '7s';
SELECT fence.lock('g', '50ms') IS NOT NULL AS locked;
SHOW lock_timeout;
SELECT fence.unlock_all();
RESET lock_timeout;
SHOW lock_timeout;
SELECT fence.xact_lock('g', '50ms') IS NOT NULL AS locked;
SHOW lock_timeout;

--
-- pg_advisory_unlock_all() and DISCARD ALL end pg_fence session locks too:
-- pg_fence notices, and the next grant has a new, larger token.
--
SELECT fence.try_lock('d') AS td \gset
SELECT pg_advisory_unlock_all();
SELECT held() AS held;
SELECT fence.unlock('d', :td) AS unlock_stale;
SELECT fence.try_lock('d') AS td2 \gset
SELECT :td2 > :td AS new_larger_token;
DISCARD ALL;
SELECT held() AS held;
SELECT fence.try_lock('d') AS td3 \gset
SELECT :td3 > :td2 AS new_larger_token, fence.unlock_all() AS released;
-- an app's advisory locks are not ours: unlock_all leaves them alone
SELECT pg_advisory_lock(1), fence.try_lock('e') IS NOT NULL AS locked;
SELECT fence.unlock_all() AS released,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
         AND pid = pg_backend_pid()) AS app_lock_left;
SELECT pg_advisory_unlock(1);

--
-- A statement that fails after a try_lock in it returned: the call
-- succeeded, so (like pg_advisory_lock) the session lock stays held, with
-- the token the client never saw; asking again returns it.
--
SELECT 1 / z FROM (SELECT fence.try_lock('f') AS t, 0 AS z OFFSET 0) s;
\echo :LAST_ERROR_SQLSTATE
SELECT held() AS held;
SELECT fence.try_lock('f') AS tf \gset
SELECT fence.unlock('f', :tf) AS first, fence.unlock('f', :tf) AS second, held() AS held;
-- a transaction lock goes with the failed statement's transaction
SELECT 1 / z FROM (SELECT fence.try_xact_lock('f') AS t, 0 AS z OFFSET 0) s;
\echo :LAST_ERROR_SQLSTATE
SELECT held() AS held;

--
-- Guarantee 8: a call that fails after its lock was granted holds nothing.
-- Token issuance is made to fail (the token sequence is renamed away, so it
-- cannot be found: 55000) inside a transaction that is rolled back, which
-- restores it; session locks survive that rollback, so only the call's own
-- cleanup can have released them.  lock_timeout is unchanged too.
--
SET lock_timeout = '5s';
\set VERBOSITY sqlstate
BEGIN;
ALTER SEQUENCE fence.token_seq RENAME TO token_seq_gone;
SELECT fence.try_lock('h');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT held() AS held;
BEGIN;
ALTER SEQUENCE fence.token_seq RENAME TO token_seq_gone;
SAVEPOINT s;
SELECT fence.lock('h', '1s');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO SAVEPOINT s;
SELECT fence.xact_lock('h2');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT held() AS held;
\set VERBOSITY terse
SHOW lock_timeout;
RESET lock_timeout;
-- the sequence works again, and the name is free
SELECT fence.try_lock('h') > :tf AS locked_again, fence.unlock_all() AS released;

--
-- Guarantee 8 with a cancel: a cancel request (or statement_timeout) that
-- arrives while the call runs, also after the grant (during token issuance,
-- whose waits hold interrupts off), fails the call, which then holds
-- nothing; it must not surface only after the call returned (then the
-- statement fails, the call did not, and the hold stays, as above).
-- pg_cancel_backend on this backend, evaluated just before the lock call
-- in the same target list, leaves the cancel pending during the whole call.
-- (fence.held_locks() has a NOTICE without the shared memory.)
--
SET client_min_messages = warning;
\set VERBOSITY sqlstate
SELECT pg_cancel_backend(pg_backend_pid()) AS cancelled, fence.lock('c') AS token;
\echo :LAST_ERROR_SQLSTATE
SELECT held() AS held,
       (SELECT count(*) FROM fence.held_locks() WHERE pid = pg_backend_pid()) AS registered,
       fence.unlock_all() AS tracked;
SELECT pg_cancel_backend(pg_backend_pid()) AS cancelled, fence.lock_shared('c') AS token;
\echo :LAST_ERROR_SQLSTATE
SELECT held() AS held, fence.unlock_all() AS tracked;
SELECT pg_cancel_backend(pg_backend_pid()) AS cancelled, fence.try_lock('c') AS token;
\echo :LAST_ERROR_SQLSTATE
SELECT held() AS held, fence.unlock_all() AS tracked;
BEGIN;
SELECT pg_cancel_backend(pg_backend_pid()) AS cancelled, fence.lock('c', '1s') AS token;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT held() AS held, fence.unlock_all() AS tracked;
-- a re-entrant call cancelled so adds no hold (the first unlock frees it)
SELECT fence.try_lock('c') AS tc \gset
SELECT pg_cancel_backend(pg_backend_pid()) AS cancelled, fence.lock('c') AS token;
\echo :LAST_ERROR_SQLSTATE
SELECT fence.unlock('c', :tc) AS first, held() AS held, fence.unlock('c', :tc) AS second;
\set VERBOSITY terse
RESET client_min_messages;

--
-- COST 10000: the planner checks cheap quals first, so only the row that
-- passes them is locked.
--
SELECT g FROM generate_series(1, 5) g WHERE g = 3 AND fence.try_lock('p' || g) IS NOT NULL;
SELECT held() AS held, fence.unlock_all() AS released;

--
-- 64-bit name hashes: these two names have the same 32-bit hashtext()
-- (found by a birthday search over md5(i::text), i <= 200000), but are
-- different locks (lock_hash spec: two sessions hold them at once).
--
SELECT hashtext('1388e47d569e56c860147663319fc836') = hashtext('47364f1656759b480d825dac62cbdf66') AS same_hashtext;
SELECT fence.try_lock('1388e47d569e56c860147663319fc836') IS NOT NULL AS first,
       fence.try_lock('47364f1656759b480d825dac62cbdf66') IS NOT NULL AS second,
       held() AS held;
SELECT count(DISTINCT (classid, objid)) AS distinct_tags FROM pg_locks
 WHERE locktype = 'advisory' AND objsubid = 26213 AND pid = pg_backend_pid();
SELECT fence.unlock_all() AS released;
DROP FUNCTION held();
