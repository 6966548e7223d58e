// test/chaos/peers/zombie.js - the zombie-worker test against one queue:
// graphile-worker, pg-boss, a hand-written SKIP LOCKED queue without a
// fence, or pg_fence's queue (fence.claim / fence.complete with the guard).
//
//   node zombie.js PEER [--jobs N] [--expiry-ms MS] [--pause-ms MS]
//
// PEER: graphile-worker | pg-boss | skip-locked | pg_fence.  Connects with
// the libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE) of a throwaway
// database that test/chaos/peers.sh made for this run.
//
// The workload: N jobs are enqueued, each job's effect is one row in
// peers.effects (the same table for every queue, one row per job when all
// goes well).  Every job's first attempt stops for --pause-ms (4000) before
// writing its effect: a worker paused past the job's expiry (--expiry-ms,
// 2000), as a GC pause, a stopped VM or a swapped process is.  The queue's
// own rescue hands the job to another attempt meanwhile; the paused attempt
// then wakes up and writes its effect, and completes.  Counted: the jobs
// with an effect, the jobs whose effect was applied twice or more, the
// late writes a queue refused.  Prints one JSON line.
//
// The expiry of each queue is its own mechanism, at this scale:
//   graphile-worker  a job locked longer than 4 hours is unlocked by its
//                    resetLockedAt (fixed, not configurable in 0.17.3); the
//                    harness runs that same statement with --expiry-ms in
//                    place of 4 hours, every 100 ms
//   pg-boss          expireInSeconds (the queue's); work() fails a handler
//                    that runs longer and the job is retried (retryDelay 0)
//   skip-locked      a running job whose locked_until passed is claimable
//                    again (the usual hand-written rescue)
//   pg_fence         fence.claim's ttl; the effect is written through the
//                    guard with the claim's token, and fence.complete in the
//                    same transaction
//
// Copyright (c) 2026, The pg_fence Developers
'use strict';

const { Pool } = require('pg');

const args = process.argv.slice(2);
const peer = args[0];
function opt(name, dflt) {
	const i = args.indexOf(name);
	return i >= 0 ? Number(args[i + 1]) : dflt;
}
const N = opt('--jobs', 150);
const EXPIRY_MS = opt('--expiry-ms', 2000);
const PAUSE_MS = opt('--pause-ms', 4000);
const DEADLINE_MS = opt('--deadline-ms', 60000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pool = new Pool({ max: 20 });
pool.on('error', () => {});

// late_written: paused first attempts whose effect committed after all;
// late_refused: those the queue refused (pg_fence: FN001, rolled back).
const stats = { peer, jobs: N, expiry_ms: EXPIRY_MS, pause_ms: PAUSE_MS, first_attempts_done: 0,
	late_written: 0, late_refused: 0, errors: 0 };

async function effect(client, n, attempt) {
	await client.query('INSERT INTO peers.effects (peer, n, attempt) VALUES ($1, $2, $3)',
		[peer, n, attempt]);
}

// One attempt of job n: the first is the zombie, paused past the expiry,
// then writing its effect (write(), which throws when refused).
async function attempt(n, attempt, write) {
	if (attempt !== 1)
		return write();
	await sleep(PAUSE_MS);
	try {
		await write();
		stats.late_written++;
	} catch (e) {
		if (e.code !== 'FN001')
			throw e;
		stats.late_refused++;
	} finally {
		stats.first_attempts_done++;
	}
}

async function settle(done) {
	const t0 = Date.now();
	while (Date.now() - t0 < DEADLINE_MS) {
		if (stats.first_attempts_done >= N && (await done()))
			return true;
		await sleep(100);
	}
	return false;
}

async function graphileWorker() {
	const { run, makeWorkerUtils } = require('graphile-worker');
	const utils = await makeWorkerUtils({ pgPool: pool });
	await utils.migrate();
	await utils.addJobs(Array.from({ length: N }, (_, n) => ({ identifier: 'zombie', payload: { n },
		maxAttempts: 5 })));
	const runner = await run({
		pgPool: pool, concurrency: 2 * N, pollInterval: 100, noHandleSignals: true,
		logger: new (require('graphile-worker').Logger)(() => () => {}),
		taskList: {
			zombie: async (payload, helpers) => {
				const a = helpers.job.attempts;
				await attempt(payload.n, a, () => effect(pool, payload.n, a));
				// returning completes the job: DELETE ... WHERE id = $1
			},
		},
	});
	// resetLockedAt, with EXPIRY_MS for its fixed 4 hours.
	let stop = false;
	const expirer = (async () => {
		while (!stop) {
			await pool.query(`UPDATE graphile_worker._private_jobs SET locked_at = NULL, locked_by = NULL,
				run_at = greatest(run_at, now()) WHERE locked_at < now() - $1::int * interval '1 ms'`,
			[EXPIRY_MS]).catch(() => stats.errors++);
			await sleep(100);
		}
	})();
	const ok = await settle(async () =>
		(await pool.query('SELECT count(*)::int c FROM graphile_worker._private_jobs')).rows[0].c === 0);
	stop = true;
	await expirer;
	await runner.stop();
	await utils.release();
	return ok;
}

async function pgBoss() {
	const PgBoss = require('pg-boss');
	const boss = new PgBoss({ schema: 'pgboss', max: 10, maintenanceIntervalSeconds: 1,
		superviseIntervalSeconds: 1, application_name: 'peers-pg-boss' });
	boss.on('error', () => stats.errors++);
	await boss.start();
	const q = { retryLimit: 5, retryDelay: 0, retryBackoff: false,
		expireInSeconds: Math.max(1, Math.round(EXPIRY_MS / 1000)) };
	await boss.createQueue('zombie', q);
	await boss.insert(Array.from({ length: N }, (_, n) => ({ name: 'zombie', data: { n }, ...q })));
	const handler = async (jobs) => {
		await Promise.all(jobs.map(async (job) => {
			const a = job.retryCount + 1;
			await attempt(job.data.n, a, () => effect(pool, job.data.n, a));
		}));
	};
	// Two workers, as two machines would run (each fetches a batch).
	for (let i = 0; i < 2; i++)
		await boss.work('zombie', { batchSize: N, includeMetadata: true, pollingIntervalSeconds: 0.5 },
			handler);
	const ok = await settle(async () => (await pool.query(`SELECT count(*)::int c FROM pgboss.job
		WHERE name = 'zombie' AND state < 'completed'`)).rows[0].c === 0);
	await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => {});
	return ok;
}

async function inTransaction(body) {
	const c = await pool.connect();
	try {
		await c.query('BEGIN');
		await body(c);
		await c.query('COMMIT');
	} catch (e) {
		await c.query('ROLLBACK').catch(() => {});
		throw e;
	} finally {
		c.release();
	}
}

// Claimers claim up to `batch` jobs at a time and run each in its own
// handler, holding no connection while it runs (as graphile-worker does).
async function claimLoops(claim, handle, done) {
	let stop = false;
	const loops = Array.from({ length: 4 }, async () => {
		while (!stop) {
			let jobs = [];
			try {
				jobs = await claim();
			} catch (e) {
				stats.errors++;
			}
			for (const j of jobs)
				handle(j).catch(() => stats.errors++);
			if (jobs.length === 0)
				await sleep(50);
		}
	});
	const ok = await settle(done);
	stop = true;
	await Promise.all(loops);
	return ok;
}

async function skipLocked() {
	await pool.query(`CREATE TABLE peers.sl_jobs (id bigserial PRIMARY KEY, n int NOT NULL,
		state text NOT NULL DEFAULT 'queued', attempt int NOT NULL DEFAULT 0, locked_until timestamptz)`);
	await pool.query('INSERT INTO peers.sl_jobs (n) SELECT generate_series(0, $1 - 1)', [N]);
	const claim = async () => (await pool.query(`UPDATE peers.sl_jobs j SET state = 'running',
		attempt = attempt + 1, locked_until = now() + $1::int * interval '1 ms'
		WHERE id IN (SELECT id FROM peers.sl_jobs WHERE state = 'queued'
		             OR (state = 'running' AND locked_until < now())
		             ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED)
		RETURNING id, n, attempt`, [EXPIRY_MS])).rows;
	const handle = (j) => attempt(j.n, j.attempt, () => inTransaction(async (c) => {
		await effect(c, j.n, j.attempt);
		// the ack: by id and state, as River's or pg-boss's
		await c.query(`UPDATE peers.sl_jobs SET state = 'completed' WHERE id = $1
			AND state = 'running'`, [j.id]);
	}));
	return claimLoops(claim, handle, async () => (await pool.query(
		"SELECT count(*)::int c FROM peers.sl_jobs WHERE state <> 'completed'")).rows[0].c === 0);
}

async function pgFence() {
	await pool.query(`CREATE TABLE peers.fenced_effects (n int NOT NULL, attempt int NOT NULL,
		fence bigint NOT NULL DEFAULT 0)`);
	await pool.query("SELECT fence.guard('peers.fenced_effects', 'fence', ARRAY['n'])");
	await pool.query(`SELECT fence.enqueue('zombie', jsonb_build_object('n', n), max_attempts => 5)
		FROM generate_series(0, $1 - 1) n`, [N]);
	const claim = async () => (await pool.query(`SELECT job_id, token, attempt, payload
		FROM fence.claim('zombie', $1::int * interval '1 ms', 50, wait => interval '200 ms')`,
	[EXPIRY_MS])).rows;
	// the effect, fenced by the claim's token, and the completion: one transaction
	const handle = (j) => attempt(j.payload.n, j.attempt, () => inTransaction(async (c) => {
		await c.query(`SELECT set_config('fence.token', $1::text, true)`, [String(j.token)]);
		await c.query('INSERT INTO peers.fenced_effects (n, attempt) VALUES ($1, $2)',
			[j.payload.n, j.attempt]);
		await effect(c, j.payload.n, j.attempt);
		await c.query('SELECT fence.complete($1, $2)', [j.job_id, j.token]);
	}));
	return claimLoops(claim, handle, async () => (await pool.query(
		`SELECT count(*)::int c FROM fence.jobs WHERE queue = 'zombie'
		   AND state NOT IN ('completed', 'failed', 'cancelled')`)).rows[0].c === 0);
}

async function main() {
	await pool.query('CREATE SCHEMA IF NOT EXISTS peers');
	await pool.query(`CREATE TABLE IF NOT EXISTS peers.effects (peer text NOT NULL, n int NOT NULL,
		attempt int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
	const t0 = Date.now();
	const run = { 'graphile-worker': graphileWorker, 'pg-boss': pgBoss, 'skip-locked': skipLocked,
		'pg_fence': pgFence }[peer];
	if (!run)
		throw new Error(`unknown peer ${peer}`);
	stats.settled = await run();
	stats.seconds = Math.round((Date.now() - t0) / 100) / 10;
	const r = (await pool.query(`SELECT count(DISTINCT n)::int AS with_effect, count(*)::int AS effects,
		(SELECT count(*)::int FROM (SELECT n FROM peers.effects WHERE peer = $1 GROUP BY n
		  HAVING count(*) > 1) d) AS duplicated
		FROM peers.effects WHERE peer = $1`, [peer])).rows[0];
	Object.assign(stats, r);
	console.log(JSON.stringify(stats));
	await pool.end();
}

main().then(() => process.exit(0), (e) => {
	console.error(`zombie.js ${peer}: ${e.stack || e}`);
	process.exit(1);
});
