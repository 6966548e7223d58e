-- test/pgtap/once_zombie.sql - the zombie owner of an idempotency key
-- (issue 26; brandur.org/idempotency-keys): a request whose lease on the
-- key expired is taken over, yet in a hand-written key table the original
-- can still advance the recovery point, record its effect and, on its
-- error path, clear the newer request's lock.  Here the old owner, woken
-- after the takeover, is refused everything: once_step, once_finish and
-- once_release return false, and its write with its token is refused by
-- fence.fenced_update (false) and by the guard (FN001) once the new owner
-- wrote.  Run by pg_prove as a superuser; everything is rolled back.  One
-- session plays both owners: the key's lease ends on the server clock.
BEGIN;
SELECT plan(22);

-- The effect's record: the day's digest, guarded, and a plain table
-- written with fenced_update.
CREATE TABLE public.tap_digest (day date PRIMARY KEY, sent_by text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO public.tap_digest VALUES ('2026-12-02', NULL, 0);
SELECT lives_ok($$SELECT fence.guard('public.tap_digest')$$, 'the digest table is guarded');
CREATE TABLE public.tap_outbox (id integer PRIMARY KEY, state text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO public.tap_outbox VALUES (1, 'pending', 0);

-- Owner A begins the key, records a recovery point, then stalls (a GC
-- pause, a stopped VM) past its lease.
CREATE TEMP TABLE a ON COMMIT DROP AS SELECT * FROM fence.once_begin('digest:2026-12-02', '100 ms', 'digest-v1');
SELECT is((SELECT status FROM a), 'new', 'A owns the key');
SELECT (SELECT token FROM a) AS ta \gset
SELECT ok(fence.once_step('digest:2026-12-02', :ta, 'rendered'), 'A records its recovery point');
SELECT pg_sleep(0.2);

-- Owner B arrives after A's lease ended: takes the key over.
CREATE TEMP TABLE b ON COMMIT DROP AS SELECT * FROM fence.once_begin('digest:2026-12-02', '1 min', 'digest-v1');
SELECT is((SELECT status FROM b), 'new', 'B takes the expired key over');
SELECT (SELECT token FROM b) AS tb \gset
SELECT ok(:tb > :ta, 'B''s token is larger than A''s');
SELECT is((SELECT step FROM b), 'rendered', 'B resumes from A''s recovery point');
SELECT ok(fence.once_step('digest:2026-12-02', :tb, 'sending'), 'B records its own step');

-- B sends and records the effect with its token.
SET LOCAL fence.token = :tb;
UPDATE public.tap_digest SET sent_by = 'B' WHERE day = '2026-12-02';
RESET fence.token;
SELECT ok(fence.fenced_update('public.tap_outbox', '{"id": 1}', :tb, '{"state": "sent by B"}'),
	'B''s fenced_update with its token is applied');

-- A wakes up and carries on as if it still owned the key.
SELECT ok(NOT fence.once_step('digest:2026-12-02', :ta, 'sent'),
	'A''s once_step is refused: false (the recovery point is not moved back)');
SELECT is((SELECT step FROM fence.once_keys WHERE key = 'digest:2026-12-02'), 'sending',
	'the step is still B''s');
SELECT throws_ok(format($$SET LOCAL fence.token = %s; UPDATE public.tap_digest SET sent_by = 'A' WHERE day = '2026-12-02'$$, :ta),
	'FN001', NULL, 'A''s guarded write with its token is refused: FN001');
SELECT ok(NOT fence.fenced_update('public.tap_outbox', '{"id": 1}', :ta, '{"state": "sent by A"}'),
	'A''s fenced_update with its token is refused: false');
SELECT ok(NOT fence.once_finish('digest:2026-12-02', :ta, '{"sent_by": "A"}'),
	'A''s once_finish is refused: false');
-- A's error path "releases the lock", which in brandur's design clears B's.
SELECT ok(NOT fence.once_release('digest:2026-12-02', :ta),
	'A''s once_release cannot clear B''s ownership: false');
SELECT is((SELECT state || ' ' || token FROM fence.once_keys WHERE key = 'digest:2026-12-02'),
	'in_progress ' || :tb, 'the key is still in progress under B''s token');
SELECT is((SELECT status FROM fence.once_begin('digest:2026-12-02', '1 min', 'digest-v1')), 'in_progress',
	'a third request sees B''s run in progress (not a free key)');
SELECT is((SELECT sent_by FROM public.tap_digest WHERE day = '2026-12-02'), 'B', 'the digest record is B''s');
SELECT is((SELECT state FROM public.tap_outbox WHERE id = 1), 'sent by B', 'the outbox row is B''s');

-- B finishes; everyone else replays B's response.
SELECT ok(fence.once_finish('digest:2026-12-02', :tb, '{"sent_by": "B"}'), 'B finishes the key');
SELECT results_eq($$SELECT status, response FROM fence.once_begin('digest:2026-12-02', '1 min', 'digest-v1')$$,
	$$VALUES ('done'::text, '{"sent_by": "B"}'::jsonb)$$, 'later requests replay B''s response');
SELECT ok(NOT fence.once_finish('digest:2026-12-02', :ta, '{"sent_by": "A"}'),
	'A''s late finish after B''s is still refused');
SELECT is((SELECT response FROM fence.once_keys WHERE key = 'digest:2026-12-02'), '{"sent_by": "B"}'::jsonb,
	'the stored response is B''s');

SELECT * FROM finish();
ROLLBACK;
