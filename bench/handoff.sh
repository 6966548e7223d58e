#!/usr/bin/env bash
# handoff.sh - lease hand-off latency: pg_fence waiting in the server against
# polling clients and etcd's lock, in the same run, interleaved.
#
# Usage (what `make bench` runs after bench/configs.sh):
#   FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/handoff.sh
# Needs the load driver bench/handoff (make bench-tools) and, for the etcd
# rows, etcd from Debian's etcd-server package (scripts/install-deps.sh
# --bench).  Starts its own etcd member on free loopback ports (never 2379 or
# 2380), with its data directory in a temporary directory removed at the end.
#
# Systems (bench/handoff.cpp describes each):
#   wait     pg_fence: fence.lease_acquire(..., wait => '30 s'), woken in the
#            server when the release commits
#   waitnew  the same with a new connection per grant (bench/handoff
#            --connect each): the waiter connects just before it waits,
#            the holder disconnects after its release, so no backend has
#            used pg_fence before its acquire (a worker's pattern; with
#            fence.shared_memory() = dynamic, the case of issue 23)
#   poll50   pg_fence's lease_acquire without wait, retried every 50 ms
#   poll500  the same every 500 ms (50-500 ms: common Redis lock clients)
#   backoff  the same with exponential backoff, 10 ms doubling to 1 s
#   etcd     etcd v3 lock (POST /v3/lock/lock through the JSON gateway), which
#            waits in the server on the predecessor key
# Each round runs every system once, in an order rotated round by round, with
# the same hold times (same seed) for every system of the round.
#
# Environment: BENCH_HANDOFFS [200] (per system, split over the rounds),
# BENCH_HANDOFF_ROUNDS [4], BENCH_HANDOFF_SYSTEMS ["wait waitnew poll50
# poll500 backoff etcd"; for leader "wait waitnew poll100"], BENCH_HOLD_MIN_MS [20], BENCH_HOLD_SPREAD_MS [100] (hold
# time = min + uniform [0, spread) ms), BENCH_HANDOFF_RESULTS
# [bench/results-handoff-pgMAJOR.md; -dynamic.md or -none.md added to the
# stem when pg_fence is not preloaded], BENCH_HANDOFF_NOTE (a line or two about
# the run, e.g. other load on the machine, written under the table),
# BENCH_HANDOFF_KIND [lease]: `leader` hands over a leadership instead
# (fence.campaign / fence.resign: leader election), with results in
# bench/results-election-pgMAJOR.md by default, e.g.
#   BENCH_HANDOFF_KIND=leader BENCH_HANDOFF_SYSTEMS="wait poll100" \
#     FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/handoff.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HANDOFFS=${BENCH_HANDOFFS:-200}
ROUNDS=${BENCH_HANDOFF_ROUNDS:-4}
HOLD_MIN=${BENCH_HOLD_MIN_MS:-20}
HOLD_SPREAD=${BENCH_HOLD_SPREAD_MS:-100}
KIND=${BENCH_HANDOFF_KIND:-lease}
case $KIND in
	lease) TITLE="Lease hand-off latency" STEM=handoff ;;
	leader) TITLE="Leader hand-over latency (leader election)" STEM=election ;;
	*) echo "handoff.sh: BENCH_HANDOFF_KIND must be lease or leader" >&2; exit 2 ;;
esac
# leader: etcd's lock is no election, so by default pg_fence against its own polling at 100 ms.
if [ "$KIND" = leader ]; then
	SYSTEMS=${BENCH_HANDOFF_SYSTEMS:-"wait waitnew poll100"}
else
	SYSTEMS=${BENCH_HANDOFF_SYSTEMS:-"wait waitnew poll50 poll500 backoff etcd"}
fi
DRIVER=$HERE/handoff
OUT=$HERE/out/handoff

if [ -z "${FENCE_CLUSTER_DIR:-}" ]; then
	echo "handoff.sh: run it on a throwaway cluster:" >&2
	echo "  FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/handoff.sh" >&2
	exit 2
fi
if [ ! -x "$DRIVER" ]; then
	echo "handoff.sh: $DRIVER missing: run make bench-tools" >&2
	exit 2
fi
PER_ROUND=$(((HANDOFFS + ROUNDS - 1) / ROUNDS))
MAJOR=$(psql -XAtqc "SELECT current_setting('server_version_num')::int / 10000")
psql -XAtq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS pg_fence" >/dev/null
SHMEM=$(psql -XAtqc "SELECT fence.shared_memory()")
SUFFIX=
[ "$SHMEM" = preloaded ] || SUFFIX=-$SHMEM
RESULTS=${BENCH_HANDOFF_RESULTS:-$HERE/results-$STEM-pg$MAJOR$SUFFIX.md}
mkdir -p "$OUT"
RAW=$OUT/raw.tsv
: >"$RAW"
: >"$OUT/errors.log"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

server=$(psql -XAtqc "SHOW server_version")
fsync=$(psql -XAtqc "SHOW fsync")

# ---------------------------------------------------------------------------
# etcd: one member on two free loopback ports, stopped (by its pid) at exit.
ETCD_DIR=
ETCD_PID=
ETCD_URL=
SKIPPED=()
cleanup() {
	if [ -n "$ETCD_PID" ]; then
		kill "$ETCD_PID" 2>/dev/null || true
		wait "$ETCD_PID" 2>/dev/null || true
	fi
	[ -z "$ETCD_DIR" ] || rm -rf "$ETCD_DIR"
}
trap cleanup EXIT

port_in_use() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() {
	local candidate
	for _ in $(seq 1 100); do
		candidate=$((20000 + RANDOM % 40000))
		port_in_use "$candidate" && continue
		port_in_use $((candidate + 1)) && continue
		echo "$candidate"
		return 0
	done
	return 1
}

start_etcd() {
	if ! command -v etcd >/dev/null 2>&1; then
		SKIPPED+=("etcd: no etcd binary (Debian package etcd-server: scripts/install-deps.sh --bench)")
		return 1
	fi
	local port
	port=$(free_port) || { SKIPPED+=("etcd: no free port"); return 1; }
	ETCD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_etcd.XXXXXX")
	ETCD_URL=http://127.0.0.1:$port
	# ETCD_* variables would override the flags: start it without them.
	env $(env | sed -n 's/^\(ETCD_[A-Z_]*\)=.*/-u \1/p') etcd \
		--name handoff --data-dir "$ETCD_DIR/data" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-cluster "handoff=http://127.0.0.1:$((port + 1))" \
		--initial-cluster-state new >"$ETCD_DIR/etcd.log" 2>&1 &
	ETCD_PID=$!
	for _ in $(seq 1 100); do
		if curl -fsS -X POST "$ETCD_URL/v3/maintenance/status" -d '{}' >/dev/null 2>&1; then
			etcd_version=$(etcd --version | sed -n 's/^etcd Version: //p')
			return 0
		fi
		sleep 0.1
	done
	SKIPPED+=("etcd: did not start (see its log below)")
	cat "$ETCD_DIR/etcd.log" >>"$OUT/errors.log"
	return 1
}

etcd_version=
case " $SYSTEMS " in
	*" etcd "*)
		if ! start_etcd; then
			SYSTEMS=$(echo " $SYSTEMS " | sed 's/ etcd / /')
		fi
		;;
esac

# ---------------------------------------------------------------------------
# Rounds: every system once per round, order rotated.
read -r -a systems <<<"$SYSTEMS"
n=${#systems[@]}
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < n; i++)); do
		sys=${systems[$(((i + r) % n))]}
		case $sys in
			wait) args=(--mode wait) ;;
			waitnew) args=(--mode wait --connect each) ;;
			poll*) args=(--mode poll --interval "${sys#poll}") ;;
			backoff) args=(--mode backoff) ;;
			etcd) args=(--mode etcd --etcd "$ETCD_URL") ;;
			*) echo "handoff.sh: unknown system $sys" >&2; exit 2 ;;
		esac
		echo "bench: hand-off round $((r + 1))/$ROUNDS: $sys" >&2
		"$DRIVER" "${args[@]}" --kind "$KIND" --handoffs "$PER_ROUND" --name "$STEM-$sys-$r-$$" \
			--hold-min "$HOLD_MIN" --hold-spread "$HOLD_SPREAD" --seed $((r + 1)) \
			2>>"$OUT/errors.log" | awk -v s="$sys" -v r="$r" '{ print s "\t" r "\t" $0 }' >>"$RAW"
		if [ "${PIPESTATUS[0]}" -ne 0 ]; then
			echo "handoff.sh: $sys failed:" >&2
			cat "$OUT/errors.log" >&2
			exit 1
		fi
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------------------
# Report: per system, median and p99 (nearest rank) of both latencies, and
# the waiter's requests per hand-off; ratios against pg_fence's wait.
summary() { # system -> "count med_ack p99_ack med_send p99_send mean_req max_req over50"
	local sys=$1 col
	local -a out=()
	out+=("$(awk -F'\t' -v s="$sys" '$1 == s' "$RAW" | wc -l)")
	for col in 4 5; do
		mapfile -t v < <(awk -F'\t' -v s="$sys" -v c="$col" '$1 == s { print $c }' "$RAW" | sort -n)
		local count=${#v[@]}
		out+=("${v[$(((count + 1) / 2 - 1))]}")
		out+=("${v[$(((99 * count + 99) / 100 - 1))]}")
	done
	out+=("$(awk -F'\t' -v s="$sys" '$1 == s { t += $6; if ($6 > m) m = $6; if ($4 > 50000) o++; n++ }
		END { printf "%.1f %d %d", t / n, m, o }' "$RAW")")
	echo "${out[*]}"
}
label() {
	case $KIND/$1 in
		leader/wait) echo "pg_fence \`campaign\`, waiting in the server" ;;
		leader/waitnew) echo "pg_fence \`campaign\`, waiting in the server, a new connection per term" ;;
		leader/poll*) echo "pg_fence \`campaign\` polled every ${1#poll} ms (no wait)" ;;
		leader/backoff) echo "pg_fence \`campaign\` polled with backoff 10 ms → 1 s" ;;
		*/wait) echo "pg_fence, waiting in the server (\`wait =>\`)" ;;
		*/waitnew) echo "pg_fence, waiting in the server, a new connection per grant" ;;
		*/poll*) echo "pg_fence polled every ${1#poll} ms (no \`wait\`)" ;;
		*/backoff) echo "pg_fence polled with backoff 10 ms → 1 s" ;;
		*/etcd) echo "etcd $etcd_version lock (\`/v3/lock/lock\`)" ;;
	esac
}
ms() { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "—"; else printf "%.1f", a / b }'; }

read -r _ base_med base_p99 base_smed base_sp99 base_req _ _ <<<"$(summary wait)"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
version=$(psql -XAtqc "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")
{
	echo "# $TITLE"
	echo
	echo "Written by \`bench/handoff.sh\` (run by \`make bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo "How it measures: [README.md](README.md), \"Lease hand-off latency\"."
	[ "$KIND" = lease ] || echo "Kind: \`$KIND\` (the holder resigns with \`fence.resign\`, the waiter campaigns with \`fence.campaign\`)."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| machine | $(nproc) CPUs, $cpu |"
	echo "| load average (1/5/15 min) | before: $LOAD_BEFORE; after: $LOAD_AFTER |"
	case $SHMEM in
		preloaded) preload="pg_fence preloaded" ;;
		dynamic) preload="pg_fence not preloaded (\`fence.shared_memory()\` = dynamic: a named DSM segment)" ;;
		*) preload="pg_fence not preloaded (\`fence.shared_memory()\` = $SHMEM)" ;;
	esac
	echo "| PostgreSQL | $server, fsync $fsync, synchronous_commit on, $preload |"
	echo "| pg_fence | $version (commit $commit) |"
	if [ -n "$etcd_version" ]; then
		echo "| etcd | $etcd_version, one member, its own data directory on the same disk |"
	else
		echo "| etcd | not run |"
	fi
	echo "| runs | $ROUNDS interleaved rounds of $PER_ROUND hand-offs per system; hold time $HOLD_MIN ms + uniform [0, $HOLD_SPREAD) ms |"
	echo
	echo "Hand-off = from the moment holder A's release returned to A to the moment"
	echo "waiter B's acquire returned the lock to B (\"after ack\"); also from the moment"
	echo "A sent the release (\"after send\"). Requests = the waiter's acquire requests"
	echo "for one hand-off. × pg_fence = this system's value ÷ pg_fence's (waiting in"
	echo "the server) in the same run: above 1 pg_fence is faster, or sends fewer."
	case " $SYSTEMS " in
		*" waitnew "*)
			echo "\"A new connection per grant\": the waiter connects just before it starts"
			echo "waiting and the holder disconnects after its release, so no backend has"
			echo "used pg_fence before its acquire."
			;;
	esac
	echo
	echo "| waiter | hand-offs | median after ack (ms) | × pg_fence | p99 after ack (ms) | × pg_fence | median after send (ms) | p99 after send (ms) | requests per hand-off (mean, max) | × pg_fence | over 50 ms after ack |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for sys in "${systems[@]}"; do
		read -r cnt med p99 smed sp99 req maxreq over <<<"$(summary "$sys")"
		echo "| $(label "$sys") | $cnt | $(ms "$med") | $(ratio "$med" "$base_med") | $(ms "$p99") | $(ratio "$p99" "$base_p99") | $(ms "$smed") | $(ms "$sp99") | $req, $maxreq | $(ratio "$req" "$base_req") | $over |"
	done
	if [ -n "${BENCH_HANDOFF_NOTE:-}" ]; then
		echo
		echo "$BENCH_HANDOFF_NOTE"
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
