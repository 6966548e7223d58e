#!/usr/bin/env bash
# chaos.sh - the chaos test: workers taking pg_fence locks, claiming jobs
# and owning idempotency keys, writing with their tokens against a
# two-node streaming cluster, while a nemesis pauses workers past their
# TTL, terminates backends, kills workers (kill -9, started again),
# restarts the primary and fails over; then a drain finishes the queue's
# jobs, and the checker proves the history (test/chaos/checks.cpp,
# queue.cpp) and draws it (timeline.svg).
#
# Usage: test/chaos/chaos.sh        (from the repository; `make chaos` runs it)
#
# Environment:
#   DURATION      seconds of chaos (default 60)
#   WORKERS       worker processes (default 4)
#   REPLICATION   sync (default: synchronous_standby_names = '*') or async
#   CHAOS_TTL_MS  lease TTL of the workers (default 1000)
#   CHAOS_LAG_MS  with async: how long the standby stops receiving WAL
#                 before a failover (default 1500; nemesis.sh)
#   CHAOS_BURST   with async: tokens one client takes at once during that
#                 lag (default 5000, above the allocator's chunk of 4096)
#   CHAOS_OUT     where the history, the server logs and timeline.svg go
#                 (default test/chaos/out; emptied first)
#   CHAOS_NEMESIS the cycle of faults (default "kill restart crash kill
#                 failover"), repeated until the end; pauses run beside it
#                 all the time
#   CHAOS_DRAIN_S the drain at the end: seconds one more client has to
#                 finish the queue's jobs (default 20; it stops as soon as
#                 none is queued or running)
#   FENCE_SERVER_BIN / PG_CONFIG  the server to run (as scripts/temp-cluster.sh)
#   PATRONI       1: the nodes are run by Patroni with a throwaway etcd
#                 (test/chaos/patroni.sh; asynchronous replication), the
#                 cycle is "kill failover crash kill switchover"
#   FENCE_FSYNC   fsync of the nodes (default off: an immediate stop loses
#                 nothing the OS has)
#
# The cluster is its own: a new temporary directory, Unix sockets only, two
# free ports, removed on exit.  Needs pg_fence installed in that server and
# test/chaos/chaos_worker and chaos_check built (make chaos-tools).  Prints
# the checker's lines, the counts and "N passed, N failed" last; exit 0
# only when every property held.
#
# Copyright (c) 2026, The pg_fence Developers
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-60}
WORKERS=${WORKERS:-4}
REPLICATION=${REPLICATION:-sync}
TTL_MS=${CHAOS_TTL_MS:-1000}
LAG_MS=${CHAOS_LAG_MS:-1500}
BURST=${CHAOS_BURST:-5000}
CHAOS_OUT=${CHAOS_OUT:-$PWD/test/chaos/out}
PATRONI=${PATRONI:-}
[ "$PATRONI" = 0 ] && PATRONI=
if [ -n "$PATRONI" ]; then
	REPLICATION=async # Patroni's default; its synchronous_mode is not used here
	NEMESIS=(${CHAOS_NEMESIS:-kill failover crash kill switchover})
else
	NEMESIS=(${CHAOS_NEMESIS:-kill restart crash kill failover})
fi
DRAIN_S=${CHAOS_DRAIN_S:-20}
FSYNC=${FENCE_FSYNC:-off}
case $REPLICATION in sync | async) ;; *) echo "REPLICATION must be sync or async" >&2; exit 2 ;; esac
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 10 ] || { echo "DURATION: seconds, at least 10" >&2; exit 2; }
for tool in test/chaos/chaos_worker test/chaos/chaos_check; do
	[ -x "$tool" ] || { echo "$tool is not built: make chaos-tools" >&2; exit 2; }
done

# shellcheck source=scripts/lib/cluster.sh
. scripts/lib/cluster.sh
PGBIN=$(cluster_server_bin)
export PATH="$PGBIN:$PATH"
unset PGSERVICE PGPASSWORD PGHOSTADDR PGOPTIONS PGHOST PGPORT PGDATABASE PGUSER
CHAOS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_chaos.XXXXXX")
chmod 755 "$CHAOS_TMP"
cluster_owner "$CHAOS_TMP"
OWNER=$CLUSTER_OWNER
AS_OWNER=$CLUSTER_AS_OWNER
rm -rf "$CHAOS_OUT"
mkdir -p "$CHAOS_OUT"
: >"$CHAOS_OUT/nemesis.tsv"
PORTS=()
WORKER_PIDS=()
PRIMARY=0
PAUSER=
# shellcheck source=test/chaos/nemesis.sh
. test/chaos/nemesis.sh
# shellcheck source=test/chaos/patroni.sh
[ -n "$PATRONI" ] && . test/chaos/patroni.sh

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "$PAUSER" ] && kill "$PAUSER" 2>/dev/null
	[ -n "$PATRONI" ] && patroni_stop
	for pid in $(worker_pids); do kill -CONT "$pid" 2>/dev/null || true; done
	for pid in $(worker_pids); do kill -KILL "$pid" 2>/dev/null || true; done
	for n in 0 1; do
		[ -f "$CHAOS_TMP/n$n/postmaster.pid" ] && node_ctl "$n" -m immediate -w stop >/dev/null 2>&1
		[ -f "$CHAOS_TMP/n$n.log" ] && cp "$CHAOS_TMP/n$n.log" "$CHAOS_OUT/server-n$n.log"
	done
	rm -rf "$CHAOS_TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORTS[0]=$(free_port)
PORTS[1]=$(free_port)
if [ -n "$PATRONI" ]; then
	patroni_start
else
	init_primary 0
fi
nq "$PRIMARY" -d postgres -c 'CREATE DATABASE chaos'
nq "$PRIMARY" -d chaos -f test/chaos/schema.sql >/dev/null
# The rows of resources l0..l2 (guarded by leases), s0..s2 (session, shared
# and xact locks), e0 (leaderships) and m0-0, m0-1 (a semaphore's slots).
rows="SELECT 'l' || i FROM generate_series(0, 2) i UNION ALL SELECT 's' || i FROM generate_series(0, 2) i
	UNION ALL VALUES ('e0'), ('m0-0'), ('m0-1')"
nq "$PRIMARY" -d chaos -c "INSERT INTO chaos.guarded (id) $rows" -c "INSERT INTO chaos.fu (id) $rows"
if [ -z "$PATRONI" ]; then
	make_standby 1
	sync_primary
else
	wait_replica # the replica has the schema before anything can fail over
fi

# The run lasts DURATION seconds and at least until every fault of the
# cycle happened once (a loaded machine makes failovers slow), but never
# more than three times DURATION: then the workers are told to stop.
start_us=$(now_us)
end_us=$((start_us + DURATION * 1000000))
HARD_SECONDS=$((DURATION * 3 + 30))
hard_end_us=$((start_us + DURATION * 3000000))
CONNINFO="host=$CHAOS_TMP,$CHAOS_TMP port=${PORTS[0]},${PORTS[1]} dbname=chaos user=postgres target_session_attrs=read-write connect_timeout=2"
# start_worker I: worker I's process (again, after a crash: its history
# goes on in a file of its own, w<I>-<incarnation>.tsv); its pid in a file,
# where the pauser (a subshell) finds it.
start_worker() {
	local i=$1 inc=0 out
	[ -f "$CHAOS_TMP/inc.w$i" ] && inc=$(($(cat "$CHAOS_TMP/inc.w$i") + 1))
	echo "$inc" >"$CHAOS_TMP/inc.w$i"
	out=$CHAOS_OUT/w$i.tsv
	[ "$inc" -gt 0 ] && out=$CHAOS_OUT/w$i-$inc.tsv
	test/chaos/chaos_worker --id "$i" --seconds "$HARD_SECONDS" --out "$out" --incarnation "$inc" \
		--resources 3 --ttl-ms "$TTL_MS" --conninfo "$CONNINFO application_name=chaos-w$i" &
	WORKER_PIDS[i]=$!
	echo "$!" >"$CHAOS_TMP/pid.w$i"
}
for i in $(seq 0 $((WORKERS - 1))); do
	start_worker "$i"
done

# Pauses run on their own, all the time: one worker holding a lease is
# stopped at a time, 0.5-1.5 s after the last one woke up.
(
	while [ $(($(now_us) + 4000000)) -lt "$end_us" ]; do
		sleep "$((RANDOM % 2)).$((5 + RANDOM % 5))"
		nemesis_pause
	done
) &
PAUSER=$!

# The other faults: the cycle with a pause of 1-2.9 s between them,
# none started in the last 4 s (8 s for a failover, which takes a few).
step=0
while :; do
	sleep "$((1 + RANDOM % 2)).$((RANDOM % 10))"
	fault=${NEMESIS[$((step % ${#NEMESIS[@]}))]}
	margin=4000000
	[ "$fault" = failover ] && margin=8000000
	if [ $(($(now_us) + margin)) -ge "$end_us" ]; then
		[ "$step" -ge "${#NEMESIS[@]}" ] && break
		[ "$(now_us)" -ge "$hard_end_us" ] && break
	fi
	step=$((step + 1))
	"nemesis_$fault" || echo "chaos: nemesis $fault failed" >&2
done

wait "$PAUSER" 2>/dev/null || true
PAUSER=

# The workers stop when told to (after the call in flight); one stuck in a
# call for 20 s more is killed (its call in flight stays unknown).
while [ "$(now_us)" -lt "$end_us" ]; do sleep 0.2; done
end_us=$(now_us)
for pid in $(worker_pids); do kill -CONT "$pid" 2>/dev/null; kill -TERM "$pid" 2>/dev/null || true; done
for _ in $(seq 1 $((DURATION * 10 + 200))); do
	alive=0
	for pid in $(worker_pids); do kill -0 "$pid" 2>/dev/null && alive=1; done
	[ "$alive" -eq 0 ] && break
	[ "$(now_us)" -gt $((end_us + 20000000)) ] && break
	sleep 0.1
done
for pid in $(worker_pids); do kill -KILL "$pid" 2>/dev/null || true; done
wait $(worker_pids) 2>/dev/null || true # not Patroni and etcd, also our children

# The drain: one more client finishes the queue's jobs, as a worker would
# (claims of workers that died are claimable at once, expired ones at
# their expiry), until none is queued or running, DRAIN_S at most.
test/chaos/chaos_worker --id "$WORKERS" --drain "$DRAIN_S" --out "$CHAOS_OUT/w$WORKERS.tsv" \
	--ttl-ms "$TTL_MS" --conninfo "$CONNINFO application_name=chaos-drain" ||
	echo "chaos: the drain failed" >&2

# The truth about the writes, leases and lock holdings: the final primary's audit.
rwq -F $'\t' -c 'SELECT * FROM chaos.audit_dump' >"$CHAOS_OUT/audit.tsv"
rwq -F $'\t' -c 'SELECT * FROM chaos.lease_audit_dump' >"$CHAOS_OUT/lease_audit.tsv"
rwq -F $'\t' -c 'SELECT * FROM chaos.holds_dump' >"$CHAOS_OUT/holds.tsv"
rwq -F $'\t' -c 'SELECT * FROM chaos.jobs_dump' >"$CHAOS_OUT/jobs.tsv"
rwq -F $'\t' -c 'SELECT * FROM chaos.job_effects_dump' >"$CHAOS_OUT/job_effects.tsv"
rwq -F $'\t' -c 'SELECT * FROM chaos.once_keys_dump' >"$CHAOS_OUT/once_keys.tsv"
rwq -F $'\t' -c 'SELECT * FROM chaos.once_effects_dump' >"$CHAOS_OUT/once_effects.tsv"

echo "chaos: $WORKERS workers, ${DURATION} s, $REPLICATION replication${PATRONI:+ (Patroni)}, lease TTL ${TTL_MS} ms; history in $CHAOS_OUT"
faults=$(printf '%s\n' pause "${NEMESIS[@]}" | sort -u | paste -sd, -)
check_args=(--dir "$CHAOS_OUT" --svg "$CHAOS_OUT/timeline.svg" --faults "$faults")
[ "$REPLICATION" = async ] && check_args+=(--async)
test/chaos/chaos_check "${check_args[@]}"
