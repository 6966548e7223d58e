// peers.js - the job queues pg_fence's queue is compared with, driven the
// way their documentation shows: graphile-worker 0.17.3 and pg-boss 10.4.2
// (bench/peers/package.json; bench/queue.sh installs them with npm into a
// cache directory outside the checkout and runs this script with Node 20).
//
//   node peers.js throughput --system graphile|pgboss --workers N --jobs J
//        [--batch B] [--max-seconds S]
//     Enqueues J jobs {k: 1..J} (not timed), then starts the workers and
//     times them until every job is completed (or S seconds have passed).
//     Each job's handler is one UPDATE of bench_effect (the row k), on a
//     pool connection, in autocommit: neither queue lets a handler's write
//     share the completion's transaction.
//       graphile: run({concurrency: N, taskList}), default settings
//       pgboss:   N calls of work(queue, {batchSize: B}) (a handler gets B
//                 jobs and runs one UPDATE per job); polling interval 0.5 s,
//                 its minimum
//     Output: jobs_done  seconds (from starting the workers to the moment
//     the last completion was seen committed)
//
//   node peers.js latency --system graphile|pgboss --workers N --samples M
//        --gap-min MS --gap-spread MS [--poll-ms P]
//     enqueue -> start latency with N waiting workers: one job every
//     gap-min + uniform [0, gap-spread) ms, enqueued on a connection of its
//     own in this process (graphile_worker.add_job / boss.send); the
//     handler notes the time it was called.
//       graphile: LISTEN/NOTIFY for new jobs, and pollInterval P ms
//       pgboss:   polling every 0.5 s (its minimum), batchSize 1
//     Output, one line per job: seq  after_ack_us  after_send_us
//
// Connection: PGHOST (a socket directory), PGPORT, PGUSER, PGDATABASE.
'use strict'

const pg = require('pg')

function args () {
  const a = process.argv.slice(2)
  const o = { mode: a[0], workers: 1, jobs: 20000, batch: 1, maxSeconds: 60, samples: 100, gapMin: 5, gapSpread: 20, pollMs: 10, seed: 1 }
  for (let i = 1; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase())
    o[k] = k === 'system' ? a[i + 1] : Number(a[i + 1])
  }
  return o
}

function newPool (max) {
  const pool = new pg.Pool(pgConfig(max))
  pool.on('error', err => { console.error('pool:', err.message) })
  return pool
}

function pgConfig (max) {
  return {
    host: process.env.PGHOST,
    port: Number(process.env.PGPORT || 5432),
    user: process.env.PGUSER,
    database: process.env.PGDATABASE,
    max
  }
}

const now = () => process.hrtime.bigint()
const us = (ns) => Number(ns / 1000n)
const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

// A tiny deterministic generator (the gaps of one seed are the same in every system).
function rng (seed) {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 4294967296
  }
}

const silentLogger = () => {
  const { Logger } = require('graphile-worker')
  return new Logger(() => () => {})
}

async function waitUntil (client, sql, params, deadline) {
  for (;;) {
    const { rows } = await client.query(sql, params)
    if (rows[0].done) return true
    if (Date.now() > deadline) return false
    await sleep(2)
  }
}

// ---------------------------------------------------------------------------
async function graphileThroughput (o) {
  const { run, runMigrations } = require('graphile-worker')
  const pool = newPool(o.workers + 2)
  const logger = silentLogger()
  await runMigrations({ pgPool: pool, logger })
  await pool.query('DELETE FROM graphile_worker._private_jobs')
  await pool.query(`SELECT graphile_worker.add_job('bench', json_build_object('k', g))
                    FROM generate_series(1, $1::int) g`, [o.jobs])
  await pool.query('VACUUM ANALYZE graphile_worker._private_jobs')
  await pool.query('CHECKPOINT')
  let handled = 0
  const taskList = {
    bench: async (payload, helpers) => {
      await helpers.query('UPDATE bench_effect SET n = n + 1 WHERE id = $1', [payload.k])
      handled++
    }
  }
  const watcher = new pg.Client(pgConfig())
  await watcher.connect()
  const t0 = now()
  const deadline = Date.now() + o.maxSeconds * 1000
  const runner = await run({ pgPool: pool, concurrency: o.workers, noHandleSignals: true, logger, taskList })
  while (handled < o.jobs && Date.now() < deadline) await sleep(2)
  // the job rows of handled jobs are deleted by their completion
  await waitUntil(watcher, 'SELECT count(*) <= $1::int AS done FROM graphile_worker._private_jobs', [o.jobs - handled], deadline + 1000)
  const t1 = now()
  await runner.stop()
  const { rows } = await watcher.query('SELECT $1::int - count(*)::int AS done FROM graphile_worker._private_jobs', [o.jobs])
  await pool.query('DELETE FROM graphile_worker._private_jobs')
  await watcher.end()
  await pool.end()
  return [rows[0].done, Number(t1 - t0) / 1e9]
}

async function bossStart (o) {
  const PgBoss = require('pg-boss')
  const boss = new PgBoss({ ...pgConfig(o.workers + 4), schedule: false })
  boss.on('error', err => { console.error('pg-boss:', err.message) })
  await boss.start()
  return boss
}

async function bossThroughput (o) {
  const boss = await bossStart(o)
  const queue = 'bench'
  await boss.deleteQueue(queue).catch(() => {})
  await boss.createQueue(queue)
  const jobs = []
  for (let k = 1; k <= o.jobs; k++) jobs.push({ name: queue, data: { k } })
  for (let i = 0; i < jobs.length; i += 5000) await boss.insert(jobs.slice(i, i + 5000))
  const pool = newPool(o.workers)
  await pool.query('VACUUM ANALYZE pgboss.job')
  await pool.query('CHECKPOINT')
  let handled = 0
  const t0 = now()
  const deadline = Date.now() + o.maxSeconds * 1000
  const handler = async (batch) => {
    for (const job of batch) {
      await pool.query('UPDATE bench_effect SET n = n + 1 WHERE id = $1', [job.data.k])
      handled++
    }
  }
  for (let w = 0; w < o.workers; w++) {
    await boss.work(queue, { batchSize: o.batch, pollingIntervalSeconds: 0.5 }, handler)
  }
  while (handled < o.jobs && Date.now() < deadline) await sleep(2)
  await waitUntil(pool, "SELECT count(*) = $2::int AS done FROM pgboss.job WHERE name = $1 AND state = 'completed'",
    [queue, handled], deadline + 1000)
  const t1 = now()
  await boss.offWork(queue)
  const { rows } = await pool.query("SELECT count(*)::int AS done FROM pgboss.job WHERE name = $1 AND state = 'completed'", [queue])
  await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => {})
  await pool.query('DELETE FROM pgboss.job WHERE name = $1', [queue])
  await pool.end()
  const seconds = Math.min(Number(t1 - t0) / 1e9, o.maxSeconds)
  return [rows[0].done, seconds]
}

// ---------------------------------------------------------------------------
async function latency (o, startWorkers, enqueue, stop) {
  const s = []
  for (let i = 0; i < o.samples; i++) s.push({ send: 0n, ack: 0n, start: 0n })
  let started = 0
  const onJob = (seq) => {
    if (seq >= 0 && s[seq].start === 0n) {
      s[seq].start = now()
      started++
    }
  }
  await startWorkers(onJob)
  await sleep(1000)
  const r = rng(o.seed)
  for (let i = 0; i < o.samples; i++) {
    await sleep(o.gapMin + Math.floor(r() * o.gapSpread))
    s[i].send = now()
    await enqueue(i)
    s[i].ack = now()
  }
  const deadline = Date.now() + 10000
  while (started < o.samples && Date.now() < deadline) await sleep(5)
  await stop()
  if (started < o.samples) throw new Error(`only ${started} of ${o.samples} jobs started within 10 s`)
  return s.map((x, i) => `${i}\t${us(x.start - x.ack)}\t${us(x.start - x.send)}`)
}

async function graphileLatency (o) {
  const { run, runMigrations } = require('graphile-worker')
  const pool = newPool(o.workers + 2)
  const logger = silentLogger()
  await runMigrations({ pgPool: pool, logger })
  await pool.query('DELETE FROM graphile_worker._private_jobs')
  const client = new pg.Client(pgConfig())
  await client.connect()
  let runner
  return latency(o,
    async (onJob) => {
      runner = await run({
        pgPool: pool,
        concurrency: o.workers,
        pollInterval: o.pollMs,
        noHandleSignals: true,
        logger,
        taskList: { lat: async (payload) => { onJob(payload.seq) } }
      })
    },
    (i) => client.query("SELECT graphile_worker.add_job('lat', json_build_object('seq', $1::int))", [i]),
    async () => { await runner.stop(); await client.end(); await pool.end() })
}

async function bossLatency (o) {
  const boss = await bossStart(o)
  const queue = 'lat'
  await boss.deleteQueue(queue).catch(() => {})
  await boss.createQueue(queue)
  return latency(o,
    async (onJob) => {
      for (let w = 0; w < o.workers; w++) {
        await boss.work(queue, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => { onJob(job.data.seq) })
      }
    },
    (i) => boss.send(queue, { seq: i }),
    async () => { await boss.offWork(queue); await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => {}) })
}

async function main () {
  const o = args()
  if (o.mode === 'throughput') {
    const f = o.system === 'graphile' ? graphileThroughput : o.system === 'pgboss' ? bossThroughput : null
    if (!f) throw new Error(`unknown --system ${o.system}`)
    const [done, seconds] = await f(o)
    process.stdout.write(`${done}\t${seconds.toFixed(6)}\n`)
  } else if (o.mode === 'latency') {
    const f = o.system === 'graphile' ? graphileLatency : o.system === 'pgboss' ? bossLatency : null
    if (!f) throw new Error(`unknown --system ${o.system}`)
    const lines = await f(o)
    process.stdout.write(lines.join('\n') + '\n')
  } else {
    throw new Error('usage: peers.js throughput|latency --system graphile|pgboss ...')
  }
  process.exit(0)
}

main().catch(err => {
  console.error('peers.js:', err.stack || err.message)
  process.exit(1)
})
