#!/usr/bin/env bash
# queue.sh - pg_fence's job queue against a hand-written SKIP LOCKED queue
# with the same durability, graphile-worker and pg-boss, in one run.
#
# Usage (what `make bench` runs):
#   FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/queue.sh
# Needs the load driver bench/queue (make bench-tools) and, for the peers,
# Node.js 20 with npm: graphile-worker and pg-boss (versions pinned in
# bench/peers/package.json and package-lock.json) are installed by this
# script with `npm ci` into BENCH_PEERS_DIR, outside the checkout.  Without
# Node or npm (or when the install fails) the peers' rows are skipped with
# the reason, and the rest runs.
#
# Parts (BENCH_QUEUE_PARTS, default all four):
#   throughput  jobs/s, BENCH_QUEUE_JOBS jobs queued before each timed run,
#               every system at each worker count, rounds interleaved
#               (order rotated), best round kept
#   latency     enqueue -> start with waiting workers
#   rescue      delay until a waiting worker gets a job whose claimant's
#               session died (SIGKILL of its process), and lateness past the
#               expiry of a claim whose TTL ran out
#   backlog     claim + complete latency with BENCH_QUEUE_BACKLOG jobs queued
#               against ~1k, alternating; the claim's plan (auto_explain)
# Systems of the throughput part (bench/queue.cpp, bench/peers/peers.js):
#   fence1     pg_fence: BEGIN; fence.claim(q, '30 s'); the UPDATE;
#              fence.complete(id, token); COMMIT   (one job per claim)
#   sl1        the same with the hand-written SKIP LOCKED queue
#   fence2     pg_fence, the claim committed on its own, then BEGIN; UPDATE;
#              complete; COMMIT
#   sl2        the same, hand-written
#   fenceB     pg_fence, BENCH_QUEUE_BATCH jobs per claim, one transaction
#   slB        the same, hand-written (LIMIT B ... FOR UPDATE SKIP LOCKED)
#   graphile   graphile-worker 0.17.3, concurrency = workers, default settings
#   pgboss100  pg-boss 10.4.2, one work() per worker, batchSize 100
#   pgboss1    pg-boss, batchSize 1 (capped at BENCH_QUEUE_BOSS1_SECONDS)
#
# Environment (defaults in brackets): BENCH_QUEUE_JOBS [20000],
# BENCH_QUEUE_WORKERS ["1 8"], BENCH_QUEUE_ROUNDS [2],
# BENCH_QUEUE_SYSTEMS ["fence1 sl1 fence2 sl2 fenceB slB graphile pgboss100 pgboss1"],
# BENCH_QUEUE_BATCH [10], BENCH_QUEUE_MAX_SECONDS [15] (a timed run ends when
# the queue is empty or after this long: jobs/s = jobs done ÷ time),
# BENCH_QUEUE_BOSS1_SECONDS [10], BENCH_LAT_WORKERS [4],
# BENCH_LAT_SAMPLES [400], BENCH_LAT_BOSS_SAMPLES [60],
# BENCH_GRAPHILE_POLL_MS [10], BENCH_RESCUE_SAMPLES [50],
# BENCH_RESCUE_TTL_MS [300], BENCH_QUEUE_BACKLOG [1000000],
# BENCH_BACKLOG_CLAIMS [2000], BENCH_QUEUE_PARTS ["throughput latency rescue backlog"],
# BENCH_PEERS_DIR [${XDG_CACHE_HOME:-~/.cache}/pg_fence/bench-peers],
# BENCH_QUEUE_RESULTS [bench/results-queue-pgMAJOR.md], BENCH_QUEUE_NOTE
# (written under the tables).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JOBS=${BENCH_QUEUE_JOBS:-20000}
WORKERS=${BENCH_QUEUE_WORKERS:-"1 8"}
ROUNDS=${BENCH_QUEUE_ROUNDS:-2}
SYSTEMS=${BENCH_QUEUE_SYSTEMS:-"fence1 sl1 fence2 sl2 fenceB slB graphile pgboss100 pgboss1"}
BATCH=${BENCH_QUEUE_BATCH:-10}
MAX_SECONDS=${BENCH_QUEUE_MAX_SECONDS:-15}
BOSS1_SECONDS=${BENCH_QUEUE_BOSS1_SECONDS:-10}
LAT_WORKERS=${BENCH_LAT_WORKERS:-4}
LAT_SAMPLES=${BENCH_LAT_SAMPLES:-400}
LAT_BOSS_SAMPLES=${BENCH_LAT_BOSS_SAMPLES:-60}
GRAPHILE_POLL_MS=${BENCH_GRAPHILE_POLL_MS:-10}
RESCUE_SAMPLES=${BENCH_RESCUE_SAMPLES:-50}
RESCUE_TTL_MS=${BENCH_RESCUE_TTL_MS:-300}
BACKLOG=${BENCH_QUEUE_BACKLOG:-1000000}
BACKLOG_CLAIMS=${BENCH_BACKLOG_CLAIMS:-2000}
PARTS=${BENCH_QUEUE_PARTS:-"throughput latency rescue backlog"}
PEERS_DIR=${BENCH_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pg_fence/bench-peers}
DRIVER=$HERE/queue
OUT=$HERE/out/queue

if [ -z "${FENCE_CLUSTER_DIR:-}" ]; then
	echo "queue.sh: run it on a throwaway cluster:" >&2
	echo "  FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/queue.sh" >&2
	exit 2
fi
if [ ! -x "$DRIVER" ]; then
	echo "queue.sh: $DRIVER missing: run make bench-tools" >&2
	exit 2
fi
rm -rf "$OUT"
mkdir -p "$OUT"
ERR=$OUT/errors.log
: >"$ERR"
say() { printf 'bench: %s\n' "$*" >&2; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
MAJOR=$(q -c "SELECT current_setting('server_version_num')::int / 10000")
RESULTS=${BENCH_QUEUE_RESULTS:-$HERE/results-queue-pg$MAJOR.md}
START_EPOCH=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
SKIPPED=()

q -c "CREATE EXTENSION IF NOT EXISTS pg_fence" >/dev/null
HAVE_FENCE=true
for f in "fence.enqueue(text,jsonb,timestamptz,integer,integer,text)" \
	"fence.claim(text,interval,integer,interval,text)" "fence.complete(bigint,bigint,jsonb)"; do
	if [ "$(q -c "SELECT to_regprocedure('$f') IS NOT NULL")" != t ]; then
		HAVE_FENCE=false
		SKIPPED+=("pg_fence's queue: function missing: $f")
	fi
done
q -v jobs="$JOBS" -f "$HERE/queue_setup.sql" >/dev/null

# ---------------------------------------------------------------------------
# The peers: npm ci into PEERS_DIR when its lock file differs from ours.
HAVE_PEERS=false
NODE_VERSION=
setup_peers() {
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		SKIPPED+=("graphile-worker, pg-boss: no node or npm (Node.js 20 needed)")
		return 1
	fi
	NODE_VERSION=$(node --version)
	mkdir -p "$PEERS_DIR"
	if ! cmp -s "$HERE/peers/package-lock.json" "$PEERS_DIR/package-lock.json" ||
		[ ! -d "$PEERS_DIR/node_modules/graphile-worker" ] || [ ! -d "$PEERS_DIR/node_modules/pg-boss" ]; then
		say "installing graphile-worker and pg-boss with npm ci into $PEERS_DIR"
		cp "$HERE/peers/package.json" "$HERE/peers/package-lock.json" "$PEERS_DIR/"
		if ! (cd "$PEERS_DIR" && npm ci --no-audit --no-fund --loglevel=error) >>"$ERR" 2>&1; then
			SKIPPED+=("graphile-worker, pg-boss: npm ci failed in $PEERS_DIR (bench/out/queue/errors.log)")
			return 1
		fi
	fi
	cp "$HERE/peers/peers.js" "$PEERS_DIR/peers.js"
	HAVE_PEERS=true
}
case " $SYSTEMS " in
	*" graphile "* | *" pgboss"*) setup_peers || true ;;
esac
peers() { node "$PEERS_DIR/peers.js" "$@"; }
GRAPHILE_VERSION=$( [ -f "$PEERS_DIR/node_modules/graphile-worker/package.json" ] &&
	node -p "require('$PEERS_DIR/node_modules/graphile-worker/package.json').version" 2>/dev/null || echo "")
BOSS_VERSION=$( [ -f "$PEERS_DIR/node_modules/pg-boss/package.json" ] &&
	node -p "require('$PEERS_DIR/node_modules/pg-boss/package.json').version" 2>/dev/null || echo "")

# ---------------------------------------------------------------------------
# Throughput
RAW=$OUT/throughput.tsv # system workers round done seconds effects
: >"$RAW"
prepare_run() { # system: a fresh queue of JOBS jobs, the effect rows at 0
	local sys=$1
	q -c "UPDATE bench_effect SET n = 0 WHERE n <> 0" >/dev/null
	case $sys in
		sl*)
			q -c "TRUNCATE sl_jobs" -c "INSERT INTO sl_jobs (queue, payload) SELECT 'bench', jsonb_build_object('k', g) FROM generate_series(1, $JOBS) g" >/dev/null
			;;
		fence*)
			q -c "SELECT count(fence.enqueue('bench', jsonb_build_object('k', g))) FROM generate_series(1, $JOBS) g" >/dev/null
			;;
	esac
	q -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
}
finish_run() { # system: what the run left is cancelled, then every finished job purged
	case $1 in
		fence*)
			q -c "SELECT count(fence.cancel(id)) FROM fence.jobs WHERE queue = 'bench' AND state IN ('queued', 'running')" >/dev/null
			local n
			while n=$(q -c "SELECT fence.queue_purge('1 microsecond', 100000)" 2>>"$ERR") && [ "$n" -gt 0 ]; do :; done
			;;
	esac
}
run_system() { # system workers -> "done seconds"
	local sys=$1 w=$2
	case $sys in
		fence1) "$DRIVER" --mode throughput --system fence --tx one --batch 1 --workers "$w" --max-seconds "$MAX_SECONDS" ;;
		sl1) "$DRIVER" --mode throughput --system sl --tx one --batch 1 --workers "$w" --max-seconds "$MAX_SECONDS" ;;
		fence2) "$DRIVER" --mode throughput --system fence --tx two --batch 1 --workers "$w" --max-seconds "$MAX_SECONDS" ;;
		sl2) "$DRIVER" --mode throughput --system sl --tx two --batch 1 --workers "$w" --max-seconds "$MAX_SECONDS" ;;
		fenceB) "$DRIVER" --mode throughput --system fence --tx one --batch "$BATCH" --workers "$w" --max-seconds "$MAX_SECONDS" ;;
		slB) "$DRIVER" --mode throughput --system sl --tx one --batch "$BATCH" --workers "$w" --max-seconds "$MAX_SECONDS" ;;
		graphile) peers throughput --system graphile --workers "$w" --jobs "$JOBS" --max-seconds "$MAX_SECONDS" ;;
		pgboss100) peers throughput --system pgboss --workers "$w" --jobs "$JOBS" --batch 100 --max-seconds "$MAX_SECONDS" ;;
		pgboss1) peers throughput --system pgboss --workers "$w" --jobs "$JOBS" --batch 1 --max-seconds "$BOSS1_SECONDS" ;;
		*) echo "queue.sh: unknown system $sys" >&2; return 2 ;;
	esac
}
runnable=()
for sys in $SYSTEMS; do
	case $sys in
		fence*) $HAVE_FENCE || continue ;;
		graphile | pgboss*) $HAVE_PEERS || continue ;;
	esac
	runnable+=("$sys")
done
if has_part throughput && [ ${#runnable[@]} -gt 0 ]; then
	n=${#runnable[@]}
	for w in $WORKERS; do
		for ((r = 0; r < ROUNDS; r++)); do
			for ((i = 0; i < n; i++)); do
				sys=${runnable[$(((i + r) % n))]}
				say "throughput: $w worker(s), round $((r + 1))/$ROUNDS: $sys"
				prepare_run "$sys"
				if ! res=$(run_system "$sys" "$w" 2>>"$ERR"); then
					say "$sys failed (see $ERR)"
					tail -n 5 "$ERR" >&2
					finish_run "$sys"
					continue
				fi
				effects=$(q -c "SELECT coalesce(sum(n), 0) FROM bench_effect")
				read -r done secs <<<"$res"
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$w" "$r" "$done" "$secs" "$effects" >>"$RAW"
				finish_run "$sys"
			done
		done
	done
fi

# ---------------------------------------------------------------------------
# Latency: enqueue -> start with waiting workers
LAT=$OUT/latency.tsv # system seq after_ack_us after_send_us
: >"$LAT"
if has_part latency; then
	if $HAVE_FENCE; then
		say "latency: pg_fence ($LAT_SAMPLES jobs, $LAT_WORKERS waiting workers)"
		"$DRIVER" --mode latency --queue lat --workers "$LAT_WORKERS" --samples "$LAT_SAMPLES" \
			--gap-min 5 --gap-spread 20 2>>"$ERR" | awk '{ print "fence\t" $0 }' >>"$LAT" ||
			SKIPPED+=("latency, pg_fence: failed (errors.log)")
	fi
	if $HAVE_PEERS; then
		say "latency: graphile-worker"
		peers latency --system graphile --workers "$LAT_WORKERS" --samples "$LAT_SAMPLES" \
			--gap-min 5 --gap-spread 20 --poll-ms "$GRAPHILE_POLL_MS" 2>>"$ERR" | awk '{ print "graphile\t" $0 }' >>"$LAT" ||
			SKIPPED+=("latency, graphile-worker: failed (errors.log)")
		say "latency: pg-boss"
		peers latency --system pgboss --workers "$LAT_WORKERS" --samples "$LAT_BOSS_SAMPLES" \
			--gap-min 100 --gap-spread 300 2>>"$ERR" | awk '{ print "pgboss\t" $0 }' >>"$LAT" ||
			SKIPPED+=("latency, pg-boss: failed (errors.log)")
	fi
fi

# ---------------------------------------------------------------------------
# Rescue
RKILL=$OUT/rescue-kill.tsv
RTTL=$OUT/rescue-ttl.tsv
: >"$RKILL"
: >"$RTTL"
if has_part rescue && $HAVE_FENCE; then
	say "rescue after a worker's session died ($RESCUE_SAMPLES samples)"
	"$DRIVER" --mode rescue-kill --queue rescue_kill --samples "$RESCUE_SAMPLES" >"$RKILL" 2>>"$ERR" ||
		SKIPPED+=("rescue after a session died: failed (errors.log)")
	say "rescue after a claim's TTL ($RESCUE_SAMPLES samples, TTL $RESCUE_TTL_MS ms)"
	"$DRIVER" --mode rescue-ttl --queue rescue_ttl --samples "$RESCUE_SAMPLES" --ttl-ms "$RESCUE_TTL_MS" >"$RTTL" 2>>"$ERR" ||
		SKIPPED+=("rescue after the TTL: failed (errors.log)")
fi

# ---------------------------------------------------------------------------
# Backlog
BL=$OUT/backlog.tsv
PLAN=$OUT/claim-plan.txt
: >"$BL"
: >"$PLAN"
BACKLOG_SECONDS=
if has_part backlog && $HAVE_FENCE; then
	small=$((1000 + BACKLOG_CLAIMS / 2))
	say "backlog: enqueueing $BACKLOG jobs (one statement) and $small"
	t0=$(date +%s)
	q -c "SELECT count(fence.enqueue('backlog_big', jsonb_build_object('k', g))) FROM generate_series(1, $BACKLOG) g" >/dev/null
	q -c "SELECT count(fence.enqueue('backlog_small', jsonb_build_object('k', g))) FROM generate_series(1, $small) g" >/dev/null
	q -c "VACUUM ANALYZE" >/dev/null
	BACKLOG_SECONDS=$(($(date +%s) - t0))
	say "backlog: $BACKLOG_CLAIMS claims, alternating"
	"$DRIVER" --mode backlog --queues backlog_small,backlog_big --claims "$BACKLOG_CLAIMS" >"$BL" 2>>"$ERR" ||
		SKIPPED+=("backlog: failed (errors.log)")
	# The claim's own statements, as auto_explain sees them (nested statements).
	psql -X -q -v ON_ERROR_STOP=1 >"$PLAN" 2>&1 <<'SQL' || true
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_timing = on;
SET client_min_messages = log;
BEGIN;
SELECT job_id, token, attempt FROM fence.claim('backlog_big', '30 s');
ROLLBACK;
SQL
fi

# ---------------------------------------------------------------------------
# Report
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(($(date +%s) - START_EPOCH))
best() { # system workers -> "jobs_per_s done seconds effects" of the best round
	awk -F'\t' -v s="$1" -v w="$2" '$1 == s && $2 == w && $5 > 0 {
		r = $4 / $5; if (r > b) { b = r; d = $4; t = $5; e = $6 } }
		END { if (b > 0) printf "%.0f %d %.2f %d", b, d, t, e }' "$RAW"
}
rounds_of() { awk -F'\t' -v s="$1" -v w="$2" '$1 == s && $2 == w && $5 > 0 { printf "%s%.0f", sep, $4 / $5; sep = ", " }' "$RAW"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b <= 0) print "—"; else printf "%.2f", a / b }'; }
met() { # ratio goal
	awk -v r="$1" -v g="$2" 'BEGIN { if (r == "—") print "—"; else if (r + 0 >= g) print "met"; else print "**not met**" }'
}
pct() { # file column percentile -> value (nearest rank)
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) { print ""; exit } i = int((p * NR + 99) / 100); if (i < 1) i = 1; print v[i] }'
}
lat_col() { # system column -> file of values
	awk -F'\t' -v s="$1" -v c="$2" '$1 == s { print $c }' "$LAT" >"$OUT/lat-$1-$2"
	echo "$OUT/lat-$1-$2"
}
ms() { awk -v u="$1" 'BEGIN { if (u == "") print "—"; else printf "%.2f", u / 1000 }'; }
label() {
	case $1 in
		fence1) echo "pg_fence: claim + effect + complete, one transaction, 1 job per claim" ;;
		sl1) echo "hand-written SKIP LOCKED: claim + effect + complete, one transaction, 1 job per claim" ;;
		fence2) echo "pg_fence: claim committed, then effect + complete in a second transaction" ;;
		sl2) echo "hand-written SKIP LOCKED: claim committed, then effect + complete in a second transaction" ;;
		fenceB) echo "pg_fence: $BATCH jobs per claim, claim + effects + completions in one transaction" ;;
		slB) echo "hand-written SKIP LOCKED: $BATCH jobs per claim, one transaction" ;;
		graphile) echo "graphile-worker $GRAPHILE_VERSION (concurrency = workers)" ;;
		pgboss100) echo "pg-boss $BOSS_VERSION, batchSize 100" ;;
		pgboss1) echo "pg-boss $BOSS_VERSION, batchSize 1 (first ${BOSS1_SECONDS} s)" ;;
	esac
}
server=$(q -c "SHOW server_version")
fsync=$(q -c "SHOW fsync")
scommit=$(q -c "SHOW synchronous_commit")
preload=$(q -c "SHOW shared_preload_libraries")
version=$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")
commit=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "# Job queue: throughput, latency, rescue, backlog"
	echo
	echo "Written by \`bench/queue.sh\` (run by \`make bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC') in ${ELAPSED} s."
	echo "How it measures: [README.md](README.md), \"Job queue\"."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| machine | $(nproc) CPUs, $cpu, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| load average (1/5/15 min) | before: $LOAD_BEFORE; after: $LOAD_AFTER |"
	echo "| PostgreSQL | $server, fsync $fsync, synchronous_commit $scommit, shared_preload_libraries '$preload' |"
	echo "| pg_fence | $version (commit $commit) |"
	echo "| Node.js | ${NODE_VERSION:-not run} |"
	echo "| jobs | $JOBS queued before each timed run; each handler one UPDATE of a row of a $JOBS-row table |"
	echo "| rounds | $ROUNDS interleaved rounds per worker count (order rotated), best kept |"
	if has_part throughput && [ -s "$RAW" ]; then
		echo
		echo "## Throughput (jobs/s)"
		echo
		echo "| system | workers | jobs/s (best) | rounds | jobs done | effects written |"
		echo "|---|---:|---:|---|---:|---:|"
		for w in $WORKERS; do
			for sys in "${runnable[@]}"; do
				read -r jps done secs effects <<<"$(best "$sys" "$w")"
				[ -n "${jps:-}" ] || continue
				echo "| $(label "$sys") | $w | $jps | $(rounds_of "$sys" "$w") | $done in ${secs} s | $effects |"
			done
		done
		echo
		echo "| ratio | workers | value | goal | |"
		echo "|---|---:|---:|---:|---|"
		for w in $WORKERS; do
			f1=$(best fence1 "$w" | cut -d' ' -f1)
			for pair in "fence1 sl1 0.90" "fence2 sl2 0.90" "fenceB slB 0.90" "fence1 graphile 1.0" "fence1 pgboss100 1.0" "fence1 pgboss1 1.0" "fenceB graphile 1.0" "fenceB pgboss100 1.0"; do
				read -r a b goal <<<"$pair"
				[ "$w" = 8 ] && [ "$a $b" = "fence1 graphile" ] && goal=1.3
				va=$(best "$a" "$w" | cut -d' ' -f1)
				vb=$(best "$b" "$w" | cut -d' ' -f1)
				[ -n "$va" ] && [ -n "$vb" ] || continue
				r=$(ratio "$va" "$vb")
				echo "| $a ÷ $b | $w | $r | ≥ $goal | $(met "$r" "$goal") |"
			done
			: "$f1"
		done
		bad=$(awk -F'\t' '$6 != $4 { n++ } END { print n + 0 }' "$RAW")
		echo
		echo "Effects written = the sum of the effect table after the run of the best round: each done job's UPDATE once. Over all runs it differs from the jobs done in $bad run(s): a run stopped at its time limit (pg-boss, batchSize 1) has handlers that wrote their effect but whose completion had not committed yet."
	fi
	if has_part latency && [ -s "$LAT" ]; then
		echo
		echo "## Enqueue → start latency, $LAT_WORKERS waiting workers"
		echo
		echo "| system | jobs | p50 after ack (ms) | p99 after ack (ms) | p50 after send (ms) | p99 after send (ms) |"
		echo "|---|---:|---:|---:|---:|---:|"
		for sys in fence graphile pgboss; do
			fa=$(lat_col "$sys" 3)
			fs=$(lat_col "$sys" 4)
			[ -s "$fa" ] || continue
			case $sys in
				fence) l="pg_fence: \`fence.claim(q, '30 s', 1, wait => '10 s')\`" ;;
				graphile) l="graphile-worker $GRAPHILE_VERSION, LISTEN/NOTIFY, pollInterval $GRAPHILE_POLL_MS ms" ;;
				pgboss) l="pg-boss $BOSS_VERSION, polling every 0.5 s (its minimum)" ;;
			esac
			echo "| $l | $(wc -l <"$fa") | $(ms "$(pct "$fa" 50)") | $(ms "$(pct "$fa" 99)") | $(ms "$(pct "$fs" 50)") | $(ms "$(pct "$fs" 99)") |"
		done
		echo
		echo "Goal (issue 25): pg_fence p50 ≤ 0.6 ms, p99 ≤ 2.4 ms. After ack: from the moment the enqueue returned to the enqueuer to the moment the worker got the job (negative when the worker got it first); after send: from the moment the enqueue was sent."
	fi
	if has_part rescue && { [ -s "$RKILL" ] || [ -s "$RTTL" ]; }; then
		echo
		echo "## Rescue"
		echo
		echo "| case | samples | returned to the worker: p50 (ms) | p99 (ms) | max (ms) | taken in the server: p50 (ms) | p99 (ms) | goal |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|"
		if [ -s "$RKILL" ]; then
			cut -f1 "$RKILL" >"$OUT/rk1"
			cut -f2 "$RKILL" >"$OUT/rk2"
			echo "| claimant's process killed (SIGKILL), from the kill | $(wc -l <"$RKILL") | $(ms "$(pct "$OUT/rk1" 50)") | $(ms "$(pct "$OUT/rk1" 99)") | $(ms "$(pct "$OUT/rk1" 100)") | $(ms "$(pct "$OUT/rk2" 50)") | $(ms "$(pct "$OUT/rk2" 99)") | p99 ≤ 1000 ms |"
		fi
		if [ -s "$RTTL" ]; then
			cut -f1 "$RTTL" >"$OUT/rt1"
			cut -f2 "$RTTL" >"$OUT/rt2"
			echo "| claim's TTL ($RESCUE_TTL_MS ms) ran out, past its claimed_until | $(wc -l <"$RTTL") | $(ms "$(pct "$OUT/rt1" 50)") | $(ms "$(pct "$OUT/rt1" 99)") | $(ms "$(pct "$OUT/rt1" 100)") | $(ms "$(pct "$OUT/rt2" 50)") | $(ms "$(pct "$OUT/rt2" 99)") | ≤ 10 ms |"
		fi
		echo
		echo "A worker waits in \`fence.claim(q, '60 s', 1, wait => '10 s')\` for the only job of its queue, claimed by another session. Returned to the worker: the moment its claim returned the job, on the client (the claim's commit, a WAL flush, included). Taken in the server: the start of its lease (\`claimed_until - ttl\`, read from \`fence.jobs\`: the instant the claim's scan took the job), on the server's clock, the same machine's."
	fi
	if has_part backlog && [ -s "$BL" ]; then
		echo
		echo "## Claim with a backlog"
		echo
		echo "One client, \`BEGIN; fence.claim(q, '30 s'); fence.complete(id, token); COMMIT\`, alternating between the two queues ($BACKLOG_CLAIMS claims; enqueueing the backlog took ${BACKLOG_SECONDS} s)."
		echo
		echo "| queue | jobs queued | claims | p50 (ms) | p99 (ms) |"
		echo "|---|---:|---:|---:|---:|"
		for qn in backlog_small backlog_big; do
			awk -F'\t' -v q="$qn" '$1 == q { print $2 }' "$BL" >"$OUT/bl-$qn"
			case $qn in backlog_small) size="$((1000 + BACKLOG_CLAIMS / 2)) → 1000" ;; *) size=$BACKLOG ;; esac
			echo "| $qn | $size | $(wc -l <"$OUT/bl-$qn") | $(ms "$(pct "$OUT/bl-$qn" 50)") | $(ms "$(pct "$OUT/bl-$qn" 99)") |"
		done
		p_small=$(pct "$OUT/bl-backlog_small" 50)
		p_big=$(pct "$OUT/bl-backlog_big" 50)
		echo
		echo "p50 with the backlog ÷ without: $(ratio "$p_big" "$p_small")."
		if [ -s "$PLAN" ]; then
			echo
			echo "The claim's statements as auto_explain logged them (ANALYZE, BUFFERS; claim from \`backlog_big\`):"
			echo
			echo '```'
			grep -v '^SET$\|^LOAD$\|^BEGIN$\|^ROLLBACK$' "$PLAN" | sed 's/^LOG:  //'
			echo '```'
		fi
	fi
	if [ -n "${BENCH_QUEUE_NOTE:-}" ]; then
		echo
		echo "$BENCH_QUEUE_NOTE"
	fi
	if [ ${#SKIPPED[@]} -gt 0 ]; then
		echo
		echo "Skipped:"
		for s in "${SKIPPED[@]}"; do
			echo "* $s"
		done
	fi
} >"$RESULTS"
cat "$RESULTS"
