-- test/pgtap/queue.sql - the fenced job queue (issue 25, docs/queue.md):
-- shape, every function's behaviour and every error path that one session
-- can reach.  Run by pg_prove as a superuser; everything is rolled back.
-- Claims expire on the server clock, so they expire during pg_sleep inside
-- the transaction.  Roles, rescue at session end and races: queue_roles.sql
-- and the isolation specs test/specs/queue_*.spec.
BEGIN;
SELECT plan(185);

-- Shape: every function exists with its exact signature, SECURITY INVOKER,
-- CALLED ON NULL INPUT (NULL raises 22023), VOLATILE, documented.
CREATE TEMP TABLE q_fn (fn name, args name[], rettype text) ON COMMIT DROP;
INSERT INTO q_fn VALUES
	('enqueue',     '{text,jsonb,"timestamp with time zone",integer,integer,text}', 'bigint'),
	('claim',       '{text,interval,integer,interval,text}',         'setof record'),
	('heartbeat',   '{bigint,bigint,interval}',                      'boolean'),
	('complete',    '{bigint,bigint,jsonb}',                         'boolean'),
	('fail',        '{bigint,bigint,text,"timestamp with time zone"}',              'boolean'),
	('cancel',      '{bigint}',                                      'boolean'),
	('retry',       '{bigint}',                                      'boolean'),
	('queue_purge', '{interval,integer}',                            'bigint'),
	('queue_stats', '{}',                                            'setof record');
SELECT has_function('fence', fn, args, format('fence.%s(%s) exists', fn, array_to_string(args, ', ')))
  FROM q_fn ORDER BY fn;
SELECT function_returns('fence', fn, args, rettype, format('fence.%s returns %s', fn, rettype))
  FROM q_fn ORDER BY fn;
SELECT isnt_definer('fence', fn, args, format('fence.%s is SECURITY INVOKER', fn))
  FROM q_fn ORDER BY fn;
SELECT isnt_strict('fence', fn, args, format('fence.%s is CALLED ON NULL INPUT', fn))
  FROM q_fn ORDER BY fn;
SELECT volatility_is('fence', fn, args, 'volatile', format('fence.%s is VOLATILE', fn))
  FROM q_fn ORDER BY fn;
SELECT function_lang_is('fence', fn, args, 'c', format('fence.%s is written in C', fn))
  FROM q_fn ORDER BY fn;
SELECT is_empty($$
	SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p, q_fn f
	 WHERE p.pronamespace = 'fence'::regnamespace AND p.proname = f.fn AND p.proparallel <> 'u'
$$, 'the queue functions are PARALLEL UNSAFE');
SELECT is_empty($$
	SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'fence'::regnamespace
	   AND p.proname IN ('enqueue', 'claim', 'heartbeat', 'complete', 'fail', 'cancel', 'retry',
	                     'queue_purge', 'queue_stats')
	   AND pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL
$$, 'every queue function has a COMMENT');
SELECT has_view('fence', 'jobs', 'view fence.jobs exists');
SELECT columns_are('fence', 'jobs', ARRAY['queue', 'id', 'state', 'attempt', 'max_attempts',
	'priority', 'token', 'holder', 'run_at', 'claimed_until', 'last_error', 'unique_key', 'payload',
	'result', 'created_at', 'finished_at'], 'fence.jobs has the designed columns');
SELECT isnt(pg_catalog.obj_description('fence.jobs'::regclass, 'pg_class'), NULL,
	'fence.jobs has a COMMENT');
SELECT is(pg_catalog.has_table_privilege('public', 'fence.queue_jobs', 'SELECT'), false,
	'PUBLIC may not read fence.queue_jobs');
SELECT is(pg_catalog.has_table_privilege('public', 'fence.queue_jobs', 'UPDATE'), false,
	'PUBLIC may not write fence.queue_jobs');
SELECT function_privs_are('fence', 'queue_purge', ARRAY['interval', 'integer'], 'public',
	ARRAY[]::text[], 'PUBLIC may not EXECUTE queue_purge');
SELECT function_privs_are('fence', 'queue_purge', ARRAY['interval', 'integer'], 'fence_admin',
	ARRAY['EXECUTE'], 'fence_admin may EXECUTE queue_purge');
SELECT is(current_setting('fence.queue_retention'), '7d', 'fence.queue_retention defaults to 7 days');

-- enqueue: argument errors (22023 naming the argument), nothing added
SELECT count(*) AS jobs_before FROM fence.queue_jobs \gset
SELECT throws_ok($$SELECT fence.enqueue(NULL, '{}')$$, '22023', 'argument "queue" must not be null',
	'enqueue: NULL queue');
SELECT throws_ok($$SELECT fence.enqueue('', '{}')$$, '22023', 'argument "queue" must not be empty',
	'enqueue: empty queue');
SELECT throws_like($$SELECT fence.enqueue(repeat('q', 1025), '{}')$$,
	'argument "queue" is too long%', 'enqueue: a queue over 1024 bytes');
SELECT throws_ok($$SELECT fence.enqueue('tap/q', NULL)$$, '22023',
	'argument "payload" must not be null', 'enqueue: NULL payload');
SELECT throws_ok($$SELECT fence.enqueue('tap/q', '{}', priority => NULL)$$, '22023',
	'argument "priority" must not be null', 'enqueue: NULL priority');
SELECT throws_ok($$SELECT fence.enqueue('tap/q', '{}', max_attempts => NULL)$$, '22023',
	'argument "max_attempts" must not be null', 'enqueue: NULL max_attempts');
SELECT throws_ok($$SELECT fence.enqueue('tap/q', '{}', max_attempts => 0)$$, '22023',
	'argument "max_attempts" must be at least 1', 'enqueue: max_attempts 0');
SELECT throws_ok($$SELECT fence.enqueue('tap/q', '{}', run_at => 'infinity')$$, '22023',
	'argument "run_at" must be finite', 'enqueue: an infinite run_at');
SELECT throws_ok($$SELECT fence.enqueue('tap/q', '{}', unique_key => '')$$, '22023',
	'argument "unique_key" must not be empty', 'enqueue: an empty unique_key');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.enqueue('tap/q', '{}')$$, '25006',
	'cannot enqueue a job in a read-only transaction', 'enqueue: read-only transaction');
SELECT is((SELECT count(*) FROM fence.queue_jobs), :jobs_before::bigint, 'a refused enqueue adds nothing');

-- enqueue: the row
SELECT fence.enqueue('tap/q', '{"n": 1}') AS j1 \gset
SELECT fence.enqueue('tap/q', '{"n": 2}', priority => 5, max_attempts => 3) AS j2 \gset
SELECT fence.enqueue('tap/q', '{"n": 3}', run_at => pg_catalog.clock_timestamp() + interval '1 hour') AS j3 \gset
SELECT ok(:j2 > :j1 AND :j3 > :j2, 'job ids grow');
SELECT results_eq($$SELECT queue, state, attempt, max_attempts, priority, token, payload
                     FROM fence.jobs WHERE id = $$ || :j1,
	$$VALUES ('tap/q'::text, 'queued'::text, 0, 25, 0, NULL::bigint, '{"n": 1}'::jsonb)$$,
	'a new job is queued, attempt 0, max_attempts 25, priority 0, no token');
SELECT is((SELECT max_attempts FROM fence.jobs WHERE id = :j2), 3, 'max_attempts is kept');

-- unique_key: one unfinished job per key
SELECT fence.enqueue('tap/q/u', '{}', unique_key => 'k') AS u1 \gset
SELECT is(fence.enqueue('tap/q/u', '{"other": 1}', unique_key => 'k'), :u1::bigint,
	'a second enqueue of an unfinished unique_key returns the first job''s id');
SELECT isnt(fence.enqueue('tap/q/u2', '{}', unique_key => 'k'), :u1::bigint,
	'the same unique_key in another queue is another job');
SELECT is((SELECT payload FROM fence.jobs WHERE id = :u1), '{}'::jsonb, 'the first payload is kept');
SELECT ok(fence.cancel(:u1), 'cancel the keyed job');
SELECT isnt(fence.enqueue('tap/q/u', '{}', unique_key => 'k'), :u1::bigint,
	'once it is finished, the unique_key enqueues a new job');

-- claim: argument errors
SELECT throws_ok($$SELECT * FROM fence.claim(NULL, '1 min')$$, '22023',
	'argument "queue" must not be null', 'claim: NULL queue');
SELECT throws_ok($$SELECT * FROM fence.claim('', '1 min')$$, '22023',
	'argument "queue" must not be empty', 'claim: empty queue');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', NULL)$$, '22023',
	'argument "ttl" must not be null', 'claim: NULL ttl');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '0')$$, '22023',
	'argument "ttl" must be greater than zero', 'claim: ttl 0');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '-1 s')$$, '22023',
	'argument "ttl" must be greater than zero', 'claim: a negative ttl');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '2 days')$$, '22023',
	'argument "ttl" exceeds fence.max_lease_ttl', 'claim: a ttl over fence.max_lease_ttl');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '1 min', NULL)$$, '22023',
	'argument "max_jobs" must not be null', 'claim: NULL max_jobs');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '1 min', 0)$$, '22023',
	'argument "max_jobs" must be between 1 and 1000', 'claim: max_jobs 0');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '1 min', 1001)$$, '22023',
	'argument "max_jobs" must be between 1 and 1000', 'claim: max_jobs 1001');
SELECT throws_ok($$SELECT * FROM fence.claim('tap/q', '1 min', 1, '0')$$, '22023',
	'argument "wait" must be greater than zero', 'claim: wait 0');
SELECT throws_like($$SELECT * FROM fence.claim('tap/q', '1 min', holder => repeat('h', 1025))$$,
	'argument "holder" is too long%', 'claim: a holder over 1024 bytes');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT * FROM fence.claim('tap/q', '1 min')$$, '25006',
	'cannot claim jobs in a read-only transaction', 'claim: read-only transaction');
SELECT is((SELECT count(*) FROM fence.jobs WHERE queue = 'tap/q' AND state = 'running'), 0::bigint,
	'a refused claim claims nothing');

-- claim: priority order (higher first), then run_at, id; scheduled jobs wait
SELECT coalesce(pg_catalog.max(token), 0) AS tok0 FROM fence.queue_jobs \gset
SELECT job_id AS c1, token AS t1, attempt AS a1 FROM fence.claim('tap/q', '1 min', holder => 'w1') \gset
SELECT is(:c1::bigint, :j2::bigint, 'the higher priority job is claimed first');
SELECT is(:a1, 1, 'attempt 1 on the first claim');
SELECT ok(:t1 > :tok0, 'the claim''s token is larger than every earlier one');
SELECT results_eq($$SELECT state, token, holder, claimed_until > clock_timestamp() + interval '50 s'
                     FROM fence.jobs WHERE id = $$ || :c1,
	$$VALUES ('running'::text, $$ || :t1 || $$::bigint, 'w1'::text, true)$$,
	'a claimed job is running under its token, holder, for ttl');
SELECT results_eq($$SELECT job_id, attempt, payload FROM fence.claim('tap/q', '1 min', 10)$$,
	$$VALUES ($$ || :j1 || $$::bigint, 1, '{"n": 1}'::jsonb)$$,
	'max_jobs 10 claims the one runnable job left, not the scheduled one');
SELECT is_empty($$SELECT * FROM fence.claim('tap/q', '1 min')$$, 'nothing runnable: no row');
SELECT is_empty($$SELECT * FROM fence.claim('tap/q', '1 min', wait => '20 ms')$$,
	'a wait that elapses returns no row');
SELECT is_empty($$SELECT * FROM fence.claim('tap/none', '1 min')$$, 'an unknown queue: no row');
SELECT is((SELECT token FROM fence.jobs WHERE id = :j1) > :t1, true,
	'every claimed job has its own token');

-- heartbeat
SELECT throws_ok($$SELECT fence.heartbeat(NULL, 1, '1 min')$$, '22023',
	'argument "job_id" must not be null', 'heartbeat: NULL job_id');
SELECT throws_ok($$SELECT fence.heartbeat(1, NULL, '1 min')$$, '22023',
	'argument "token" must not be null', 'heartbeat: NULL token');
SELECT throws_ok($$SELECT fence.heartbeat(1, 1, NULL)$$, '22023',
	'argument "ttl" must not be null', 'heartbeat: NULL ttl');
SELECT throws_ok($$SELECT fence.heartbeat(1, 1, '0')$$, '22023',
	'argument "ttl" must be greater than zero', 'heartbeat: ttl 0');
SELECT throws_ok($$SELECT fence.heartbeat(1, 1, '2 days')$$, '22023',
	'argument "ttl" exceeds fence.max_lease_ttl', 'heartbeat: a ttl over fence.max_lease_ttl');
SELECT throws_ok($$SELECT fence.heartbeat(-42, 1, '1 min')$$, 'P0002',
	'job -42 does not exist', 'heartbeat: unknown job: P0002');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.heartbeat(1, 1, '1 min')$$, '25006',
	'cannot heartbeat a job in a read-only transaction', 'heartbeat: read-only transaction');
SELECT ok(fence.heartbeat(:c1, :t1, '2 min'), 'heartbeat with the claim''s token: true');
SELECT ok((SELECT claimed_until > clock_timestamp() + interval '110 s' FROM fence.jobs WHERE id = :c1),
	'heartbeat extends the claim to ttl from now');
SELECT is(fence.heartbeat(:c1, :t1 - 1, '1 min'), false, 'heartbeat with another token: false');

-- complete
SELECT throws_ok($$SELECT fence.complete(NULL, 1)$$, '22023',
	'argument "job_id" must not be null', 'complete: NULL job_id');
SELECT throws_ok($$SELECT fence.complete(1, NULL)$$, '22023',
	'argument "token" must not be null', 'complete: NULL token');
SELECT throws_ok($$SELECT fence.complete(-42, 1)$$, 'P0002', 'job -42 does not exist',
	'complete: unknown job: P0002');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.complete(1, 1)$$, '25006',
	'cannot complete a job in a read-only transaction', 'complete: read-only transaction');
SELECT stale_writes_rejected AS stale0 FROM fence.stats() \gset
SELECT throws_ok(format('SELECT fence.complete(%s, %s)', :c1, :t1 - 1), 'FN001',
	format('stale fencing token: job %s is not claimed under token %s', :c1, :t1 - 1),
	'complete with a token that is not the claim''s: FN001');
SELECT is((SELECT stale_writes_rejected FROM fence.stats()), :stale0 + 1::bigint,
	'a stale completion is counted in stale_writes_rejected');
SELECT is((SELECT state FROM fence.jobs WHERE id = :c1), 'running', 'a stale completion changes nothing');
SELECT ok(fence.complete(:c1, :t1, '{"sent": true}'), 'complete with the claim''s token: true');
SELECT results_eq($$SELECT state, result, finished_at IS NOT NULL, claimed_until IS NULL
                     FROM fence.jobs WHERE id = $$ || :c1,
	$$VALUES ('completed'::text, '{"sent": true}'::jsonb, true, true)$$,
	'a completed job keeps its result and finish time');
SELECT is(fence.complete(:c1, :t1), false, 'a second complete with the same token: false');
SELECT is(fence.heartbeat(:c1, :t1, '1 min'), false, 'heartbeat of a completed job: false');
SELECT is(fence.fail(:c1, :t1, 'late'), false, 'fail of a completed job: false');

-- fail: backoff 2^attempt s x [1, 1.25), capped at 1 h; retry_at; max_attempts
SELECT token AS t2 FROM fence.jobs WHERE id = :j1 \gset
SELECT throws_ok($$SELECT fence.fail(NULL, 1, 'e')$$, '22023',
	'argument "job_id" must not be null', 'fail: NULL job_id');
SELECT throws_ok($$SELECT fence.fail(1, NULL, 'e')$$, '22023',
	'argument "token" must not be null', 'fail: NULL token');
SELECT throws_ok($$SELECT fence.fail(1, 1, 'e', 'infinity')$$, '22023',
	'argument "retry_at" must be finite', 'fail: an infinite retry_at');
SELECT throws_ok($$SELECT fence.fail(-42, 1, 'e')$$, 'P0002', 'job -42 does not exist',
	'fail: unknown job: P0002');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.fail(1, 1, 'e')$$, '25006',
	'cannot fail a job in a read-only transaction', 'fail: read-only transaction');
SELECT is(fence.fail(:j1, :t2 - 1, 'e'), false, 'fail with another token: false');
SELECT ok(fence.fail(:j1, :t2, 'boom'), 'fail with the claim''s token: true');
SELECT results_eq($$SELECT state, last_error, token,
                           run_at >= clock_timestamp() + interval '1.9 s',
                           run_at < clock_timestamp() + interval '2.6 s'
                      FROM fence.jobs WHERE id = $$ || :j1,
	$$VALUES ('queued'::text, 'boom'::text, $$ || :t2 || $$::bigint, true, true)$$,
	'a failed attempt with attempts left is queued again after 2^1 s (+ up to 25 %)');
SELECT is_empty($$SELECT * FROM fence.claim('tap/q', '1 min')$$, 'not runnable during its backoff');
SELECT ok(fence.retry(:j1), 'retry makes it runnable now');
SELECT job_id AS c3, token AS t3, attempt AS a3 FROM fence.claim('tap/q', '1 min') \gset
SELECT is(:a3, 2, 'the second claim is attempt 2');
SELECT ok(:t3 > :t2, 'the second claim has a larger token');
SELECT ok(fence.fail(:c3, :t3, 'again', pg_catalog.clock_timestamp() + interval '10 min'),
	'fail with retry_at');
SELECT ok((SELECT run_at > clock_timestamp() + interval '9 min' FROM fence.jobs WHERE id = :c3),
	'retry_at sets when it runs again');
SELECT fence.enqueue('tap/q1', '{}', max_attempts => 1) AS once \gset
SELECT job_id AS oj, token AS ot FROM fence.claim('tap/q1', '1 min') \gset
SELECT ok(fence.fail(:oj, :ot, 'last'), 'fail of the last attempt');
SELECT results_eq($$SELECT state, last_error, finished_at IS NOT NULL FROM fence.jobs WHERE id = $$ || :oj,
	$$VALUES ('failed'::text, 'last'::text, true)$$, 'after max_attempts the job is failed for good');
SELECT is_empty($$SELECT * FROM fence.claim('tap/q1', '1 min')$$, 'a failed job is not claimed');
SELECT ok(fence.retry(:oj), 'retry of a failed job');
SELECT results_eq($$SELECT state, finished_at IS NULL FROM fence.jobs WHERE id = $$ || :oj,
	$$VALUES ('queued'::text, true)$$, 'a retried job is queued again');
SELECT job_id AS oj2, attempt AS oa2 FROM fence.claim('tap/q1', '1 min') \gset
SELECT is(:oa2, 2, 'a retried job gets one more attempt, counted on');

-- rescue at expiry: the old token is refused, the new one is larger
SELECT fence.enqueue('tap/q/exp', '{}') AS ej \gset
SELECT token AS et1 FROM fence.claim('tap/q/exp', '100 ms') \gset
SELECT is_empty($$SELECT * FROM fence.claim('tap/q/exp', '1 min')$$, 'an unexpired claim is not claimable');
SELECT pg_sleep(0.2);
SELECT job_id AS ej2, token AS et2, attempt AS ea2 FROM fence.claim('tap/q/exp', '1 min') \gset
SELECT is(:ej2::bigint, :ej::bigint, 'an expired claim is claimed again');
SELECT ok(:et2 > :et1, 'with a larger token');
SELECT is(:ea2, 2, 'as attempt 2');
SELECT is(fence.heartbeat(:ej, :et1, '1 min'), false, 'the rescued token''s heartbeat: false');
SELECT is(fence.fail(:ej, :et1, 'zombie'), false, 'the rescued token''s fail: false');
SELECT throws_ok(format('SELECT fence.complete(%s, %s)', :ej, :et1), 'FN001',
	format('stale fencing token: job %s is not claimed under token %s', :ej, :et1),
	'the rescued token''s complete: FN001');
-- its fenced writes lose once the new claimant wrote
CREATE TEMP TABLE q_effect (id int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0) ON COMMIT DROP;
INSERT INTO q_effect VALUES (1, NULL, 0);
SELECT ok(fence.fenced_update('q_effect', '{"id": 1}', :et2, '{"v": "new"}'),
	'the new claimant writes its effect with its token');
SELECT is(fence.fenced_update('q_effect', '{"id": 1}', :et1, '{"v": "old"}'), false,
	'the rescued claimant''s fenced write is refused');
SELECT is((SELECT v FROM q_effect), 'new', 'the effect is the new claimant''s');
-- an expired claim not claimed again still completes (nobody else ran it)
SELECT fence.enqueue('tap/q/late', '{}') AS lj \gset
SELECT token AS lt FROM fence.claim('tap/q/late', '50 ms') \gset
SELECT pg_sleep(0.1);
SELECT ok(fence.heartbeat(:lj, :lt, '1 min'), 'an expired claim not claimed again still heartbeats');
SELECT ok(fence.complete(:lj, :lt), 'and completes');
-- a rescued job that used its last attempt fails for good
SELECT fence.enqueue('tap/q/last', '{}', max_attempts => 1) AS xj \gset
SELECT token AS xt FROM fence.claim('tap/q/last', '50 ms') \gset
SELECT pg_sleep(0.1);
SELECT is_empty($$SELECT * FROM fence.claim('tap/q/last', '1 min')$$,
	'an expired last attempt is not claimed again');
SELECT results_eq($$SELECT state, last_error LIKE 'attempt 1 of 1: the claim ended%' FROM fence.jobs WHERE id = $$ || :xj,
	$$VALUES ('failed'::text, true)$$, 'it is failed for good, and says why');

-- cancel and retry
SELECT throws_ok($$SELECT fence.cancel(NULL)$$, '22023', 'argument "job_id" must not be null',
	'cancel: NULL job_id');
SELECT throws_ok($$SELECT fence.cancel(-42)$$, 'P0002', 'job -42 does not exist', 'cancel: unknown job');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.cancel(1)$$, '25006',
	'cannot cancel a job in a read-only transaction', 'cancel: read-only transaction');
SELECT throws_ok($$SELECT fence.retry(NULL)$$, '22023', 'argument "job_id" must not be null',
	'retry: NULL job_id');
SELECT throws_ok($$SELECT fence.retry(-42)$$, 'P0002', 'job -42 does not exist', 'retry: unknown job');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.retry(1)$$, '25006',
	'cannot retry a job in a read-only transaction', 'retry: read-only transaction');
SELECT ok(fence.cancel(:ej), 'cancel of a running job: true');
SELECT is(fence.heartbeat(:ej, :et2, '1 min'), false, 'its claimant''s heartbeat: false');
SELECT throws_ok(format('SELECT fence.complete(%s, %s)', :ej, :et2), 'FN001',
	format('stale fencing token: job %s is not claimed under token %s', :ej, :et2),
	'its claimant''s complete: FN001');
SELECT is(fence.cancel(:ej), false, 'cancel of a cancelled job: false');
SELECT is(fence.retry(:c1), false, 'retry of a completed job: false');
SELECT is(fence.retry(:oj2), false, 'retry of a running job: false');
SELECT ok(fence.retry(:j3), 'retry of a scheduled job runs it now');
SELECT is((SELECT job_id FROM fence.claim('tap/q', '1 min')), :j3::bigint, 'and it is claimed');

-- queue_stats
SELECT fence.enqueue('tap/stats', '{}') AS s1 \gset
SELECT fence.enqueue('tap/stats', '{}', run_at => pg_catalog.clock_timestamp() + interval '1 h');
SELECT fence.enqueue('tap/stats', '{}');
SELECT fence.cancel(fence.enqueue('tap/stats', '{}'));
SELECT job_id AS sj, token AS st FROM fence.claim('tap/stats', '1 min') \gset
SELECT fence.complete(:sj, :st);
SELECT results_eq($$SELECT runnable, scheduled, running, completed, failed, cancelled,
                           oldest_runnable_age > interval '0'
                      FROM fence.queue_stats() WHERE queue = 'tap/stats'$$,
	$$VALUES (1::bigint, 1::bigint, 0::bigint, 1::bigint, 0::bigint, 1::bigint, true)$$,
	'queue_stats counts each state of the queue');

-- queue_purge
SELECT throws_ok($$SELECT fence.queue_purge('0')$$, '22023',
	'argument "older_than" must be greater than zero', 'queue_purge: older_than 0');
SELECT throws_ok($$SELECT fence.queue_purge(NULL, NULL)$$, '22023',
	'argument "max_jobs" must not be null', 'queue_purge: NULL max_jobs');
SELECT throws_ok($$SELECT fence.queue_purge(NULL, 0)$$, '22023',
	'argument "max_jobs" must be greater than zero', 'queue_purge: max_jobs 0');
SELECT throws_ok($$SET TRANSACTION READ ONLY; SELECT fence.queue_purge()$$, '25006',
	'cannot purge jobs in a read-only transaction', 'queue_purge: read-only transaction');
SELECT is(fence.queue_purge(), 0::bigint, 'nothing finished 7 days ago');
SELECT pg_sleep(0.01);
SELECT count(*) AS finished FROM fence.queue_jobs
 WHERE state IN ('completed', 'failed', 'cancelled') \gset
SELECT is(fence.queue_purge('1 ms', 1), 1::bigint, 'max_jobs bounds a purge');
SELECT is(fence.queue_purge('1 ms'), :finished - 1::bigint, 'the rest of the finished jobs are purged');
SELECT is((SELECT count(*) FROM fence.queue_jobs WHERE state IN ('completed', 'failed', 'cancelled')),
	0::bigint, 'no finished job is left');
SELECT ok((SELECT count(*) FROM fence.jobs WHERE state IN ('queued', 'running') AND queue LIKE 'tap/%') > 0,
	'unfinished jobs are never purged');

SELECT * FROM finish();
ROLLBACK;
