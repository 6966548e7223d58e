-- test/pgtap/queue_roles.sql - the job queue's privileges model
-- (docs/queue.md, "Privileges"): a role acts on, and sees, only the jobs
-- enqueued by roles whose privileges it has (pg_has_role USAGE); superusers
-- and members of fence_admin on every job.  Another role's job is not
-- visible and is refused as unknown (P0002), without telling whether it
-- exists.  Run by pg_prove as a superuser; everything is rolled back.
BEGIN;
SELECT plan(34);

CREATE ROLE tap_qa;
CREATE ROLE tap_qb;
CREATE ROLE tap_qc;
CREATE ROLE tap_qn NOINHERIT;
CREATE ROLE tap_qm;
GRANT pg_monitor TO tap_qm;
GRANT fence_admin TO tap_qc;

SET LOCAL ROLE tap_qa;
SELECT fence.enqueue('tap/roles', '{"secret": 1}') AS ja \gset
SELECT is((SELECT count(*) FROM fence.jobs WHERE id = :ja), 1::bigint, 'the enqueuing role sees its job');
SELECT throws_ok($$SELECT * FROM fence.queue_jobs$$, '42501', NULL,
	'a plain role cannot read fence.queue_jobs directly');

SET LOCAL ROLE tap_qb;
SELECT is((SELECT count(*) FROM fence.jobs WHERE id = :ja), 0::bigint, 'another role does not see it');
SELECT is_empty($$SELECT * FROM fence.queue_stats() WHERE queue = 'tap/roles'$$,
	'nor counts it in queue_stats');
SELECT is_empty($$SELECT * FROM fence.claim('tap/roles', '1 min')$$, 'nor claims it');
SELECT throws_ok(format('SELECT fence.cancel(%s)', :ja), 'P0002', format('job %s does not exist', :ja),
	'nor cancels it (P0002, as for an unknown job)');
SELECT throws_ok(format('SELECT fence.retry(%s)', :ja), 'P0002', format('job %s does not exist', :ja),
	'nor retries it');
SELECT fence.enqueue('tap/roles', '{"mine": 1}') AS jb \gset

SET LOCAL ROLE tap_qa;
SELECT job_id AS ca, token AS ta FROM fence.claim('tap/roles', '1 min', 10) \gset
SELECT is(:ca::bigint, :ja::bigint, 'a role claims its own job, not another role''s in the same queue');
SELECT is((SELECT state FROM fence.jobs WHERE id = :jb), NULL, 'and does not see the other role''s job');

SET LOCAL ROLE tap_qb;
SELECT throws_ok(format('SELECT fence.heartbeat(%s, %s, %L)', :ca, :ta, '1 min'), 'P0002',
	format('job %s does not exist', :ca), 'another role cannot heartbeat it, even with its token');
SELECT throws_ok(format('SELECT fence.complete(%s, %s)', :ca, :ta), 'P0002',
	format('job %s does not exist', :ca), 'nor complete it');
SELECT throws_ok(format('SELECT fence.fail(%s, %s, %L)', :ca, :ta, 'x'), 'P0002',
	format('job %s does not exist', :ca), 'nor fail it');
SELECT throws_ok($$SELECT fence.queue_purge()$$, '42501', NULL, 'a plain role cannot purge');

RESET ROLE;
SELECT results_eq(format('SELECT state, token FROM fence.jobs WHERE id = %s', :ca),
	format('VALUES (%L::text, %s::bigint)', 'running', :ta), 'the refused calls changed nothing');

-- membership with the role's privileges: the member acts on its jobs
GRANT tap_qa TO tap_qb;
SET LOCAL ROLE tap_qb;
SELECT is((SELECT count(*) FROM fence.jobs WHERE id = :ja), 1::bigint,
	'a member of the enqueuing role sees its jobs');
SELECT ok(fence.heartbeat(:ca, :ta, '1 min'), 'and may heartbeat them with the token');
SELECT is((SELECT count(*) FROM fence.jobs WHERE id IN (:ja, :jb)), 2::bigint,
	'and still sees its own');

-- NOINHERIT: membership without the privileges does not count
RESET ROLE;
GRANT tap_qa TO tap_qn;
SET LOCAL ROLE tap_qn;
SELECT is((SELECT count(*) FROM fence.jobs WHERE id = :ja), 0::bigint,
	'a NOINHERIT member does not see the role''s jobs');
SELECT throws_ok(format('SELECT fence.cancel(%s)', :ja), 'P0002', format('job %s does not exist', :ja),
	'nor cancels them');

-- pg_monitor (pg_read_all_stats): every queue's counts, no job
SET LOCAL ROLE tap_qm;
SELECT ok((SELECT runnable + running FROM fence.queue_stats() WHERE queue = 'tap/roles') = 2,
	'a member of pg_monitor counts every role''s jobs in queue_stats');
SELECT is((SELECT count(*) FROM fence.jobs WHERE id IN (:ja, :jb)), 0::bigint,
	'but sees none of them in fence.jobs');
SELECT throws_ok(format('SELECT fence.cancel(%s)', :ja), 'P0002', format('job %s does not exist', :ja),
	'nor acts on them');

-- fence_admin: every job
SET LOCAL ROLE tap_qc;
SELECT is((SELECT count(*) FROM fence.jobs WHERE id IN (:ja, :jb)), 2::bigint,
	'a member of fence_admin sees every role''s jobs');
SELECT ok((SELECT runnable + running FROM fence.queue_stats() WHERE queue = 'tap/roles') = 2,
	'and counts them in queue_stats');
SELECT is(fence.heartbeat(:ca, :ta - 1, '1 min'), false, 'a wrong token is still refused for an admin');
SELECT ok(fence.cancel(:jb), 'a member of fence_admin may cancel any job');
SELECT ok(fence.retry(:jb), 'and retry it');
SELECT job_id AS cc, token AS tc FROM fence.claim('tap/roles', '1 min') \gset
SELECT is(:cc::bigint, :jb::bigint, 'and claim it');
SELECT ok(fence.complete(:cc, :tc), 'and complete it');
SELECT ok(fence.queue_purge() >= 0, 'and purge');

-- the owner recorded is the enqueuing role, not the session user
RESET ROLE;
SELECT is((SELECT owner FROM fence.queue_jobs WHERE id = :ja), 'tap_qa'::regrole::oid,
	'a job records the role that enqueued it');
SELECT is((SELECT owner FROM fence.queue_jobs WHERE id = :jb), 'tap_qb'::regrole::oid,
	'under SET ROLE too');

-- a superuser sees and acts on every job
SELECT is((SELECT count(*) FROM fence.jobs WHERE id IN (:ja, :jb)), 2::bigint, 'a superuser sees every job');
SELECT ok(fence.complete(:ca, :ta), 'and may complete with the claim''s token');

SELECT * FROM finish();
ROLLBACK;
