#!/usr/bin/env bash
# run.sh - pg_fence against the alternatives it replaces, side by side, in one
# run: every pg_fence scenario is measured interleaved with its plain-SQL (or
# Redis) twin, so that both see the same machine at the same time, and the
# result is reported as a ratio.
#
# Runs inside a throwaway cluster (what `make bench` does):
#   FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/run.sh
# It may restart that cluster once (through FENCE_CLUSTER_CTL) to raise
# max_locks_per_transaction for the "locks held elsewhere" scenario.
#
# Environment (defaults in brackets):
#   BENCH_SECONDS [4]          length of one timed run
#   BENCH_CLIENTS ["1 4 8 16"] client counts
#   BENCH_ROUNDS [2]           interleaved rounds per system; the best is kept
#   BENCH_LEASE_SIZES ["1000 100000 1000000"]  names present in fence.leases
#   BENCH_HELD_LOCKS [10000]   session locks held by another session
#   BENCH_WAITERS [64]  BENCH_WAIT_ROUNDS [10]  BENCH_WAIT_HOLD_MS [1]
#   BENCH_MEM_CYCLES [1000000] try_lock+unlock cycles for the memory check
#   BENCH_RESULTS [bench/results.md]  (the SVG goes beside it, .svg)
#   BENCH_ONLY [all]           space-separated group ids to run (e.g.
#                              "fenced_update lwr guard_new guard_set"); the
#                              scale, waiter and memory scenarios run only
#                              without it
#
# Scenarios whose pg_fence functions do not exist (or do not work yet) in the
# installed extension are reported as skipped, never as failures.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T=${BENCH_SECONDS:-4}
CLIENTS=${BENCH_CLIENTS:-"1 4 8 16"}
ROUNDS=${BENCH_ROUNDS:-2}
LEASE_SIZES=${BENCH_LEASE_SIZES:-"1000 100000 1000000"}
HELD_LOCKS=${BENCH_HELD_LOCKS:-10000}
WAITERS=${BENCH_WAITERS:-64}
WAIT_ROUNDS=${BENCH_WAIT_ROUNDS:-10}
WAIT_HOLD_MS=${BENCH_WAIT_HOLD_MS:-1}
MEM_CYCLES=${BENCH_MEM_CYCLES:-1000000}
RESULTS=${BENCH_RESULTS:-$HERE/results.md}
SVG=${RESULTS%.md}.svg
DOCS=10000                      # rows in each written table; ids drawn from 1..DOCS
DRIVER=$HERE/redis_path
OUT=$HERE/out                   # working files (scripts, raw numbers, logs)

PGBENCH=pgbench
[ -n "${FENCE_PGBIN:-}" ] && [ -x "$FENCE_PGBIN/pgbench" ] && PGBENCH=$FENCE_PGBIN/pgbench

rm -rf "$OUT"
mkdir -p "$OUT/sql"
chmod 755 "$OUT" "$OUT/sql"
ERRLOG=$OUT/errors.log
: >"$ERRLOG"
START_EPOCH=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------------------
# Background processes we start, ended by pid on exit.
BG_PIDS=()
REDIS_PID=
cleanup() {
	local p
	for p in "${BG_PIDS[@]}" $REDIS_PID; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${BG_PIDS[@]}" $REDIS_PID; do
		wait "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT

say() { printf 'bench: %s\n' "$*" >&2; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
have_fn() { [ "$(q -c "SELECT to_regprocedure('$1') IS NOT NULL")" = t ]; }

# ---------------------------------------------------------------------------
# Cluster settings: enough lock-table slots for BENCH_HELD_LOCKS held locks.
maxconn=$(q -c "SELECT current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int")
want_locks=$(( (HELD_LOCKS + 8192) / maxconn + 1 ))
have_locks=$(q -c "SELECT current_setting('max_locks_per_transaction')::int")
if [ "$have_locks" -lt "$want_locks" ]; then
	if [ -n "${FENCE_CLUSTER_CTL:-}" ]; then
		say "raising max_locks_per_transaction to $want_locks (restart)"
		q -c "ALTER SYSTEM SET max_locks_per_transaction = $want_locks"
		"$FENCE_CLUSTER_CTL" restart
	else
		say "max_locks_per_transaction=$have_locks may be too low for $HELD_LOCKS held locks"
	fi
fi

# ---------------------------------------------------------------------------
# Schema for the plain-SQL twins and the written tables.
q <<SQL
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
-- The plain twin's token source, set up like fence.token_seq (CACHE 1, so
-- values are in time order across sessions).
CREATE SEQUENCE bench.plain_seq AS bigint CACHE 1;
CREATE TABLE bench.doc_f (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0);
CREATE TABLE bench.doc_p (LIKE bench.doc_f INCLUDING ALL);
CREATE TABLE bench.doc_r (LIKE bench.doc_f INCLUDING ALL);
CREATE TABLE bench.fu_f (LIKE bench.doc_f INCLUDING ALL);
CREATE TABLE bench.fu_p (LIKE bench.doc_f INCLUDING ALL);
CREATE TABLE bench.guarded (LIKE bench.doc_f INCLUDING ALL);
CREATE TABLE bench.unguarded (LIKE bench.doc_f INCLUDING ALL);
-- Append-only logs for guarded INSERTs (fence.guard with resource_columns).
CREATE TABLE bench.log_g (id bigserial PRIMARY KEY, stream text NOT NULL, body text,
                          fence bigint NOT NULL DEFAULT 0);
CREATE TABLE bench.log_u (LIKE bench.log_g INCLUDING ALL);
INSERT INTO bench.doc_f SELECT g, 'x', 0 FROM generate_series(1, $DOCS) g;
INSERT INTO bench.doc_p SELECT * FROM bench.doc_f;
INSERT INTO bench.doc_r SELECT * FROM bench.doc_f;
INSERT INTO bench.fu_f SELECT * FROM bench.doc_f;
INSERT INTO bench.fu_p SELECT * FROM bench.doc_f;
INSERT INTO bench.guarded SELECT * FROM bench.doc_f;
INSERT INTO bench.unguarded SELECT * FROM bench.doc_f;
-- The plain lease: what one writes by hand without pg_fence.
CREATE TABLE bench.lease (name text PRIMARY KEY, token bigint NOT NULL, holder text,
                          granted_at timestamptz NOT NULL, expires_at timestamptz NOT NULL);
CREATE TABLE bench.wait (sys text, pid int, round int, t0 timestamptz, t1 timestamptz, token bigint);
CREATE TABLE bench.barrier ();
VACUUM ANALYZE;
SQL

# ---------------------------------------------------------------------------
# Systems (one way of doing one job), groups (systems measured interleaved)
# and rows (a pg_fence system against an alternative, with a target).
declare -A SYS_KIND SYS_ARG SYS_NAME SYS_SKIP SYS_OPTS GROUP_RAN
ONLY=${BENCH_ONLY:-}
GROUPS_TSV=$OUT/groups.tsv      # gid  title  systems
ROWS_TSV=$OUT/rows.tsv          # label  fence_sys  alt_sys  min_ratio  target_text
TP_TSV=$OUT/throughput.tsv      # sys  clients  best_ops  all_rounds
SKIPS_TSV=$OUT/skipped.tsv      # what  reason
: >"$GROUPS_TSV"; : >"$ROWS_TSV"; : >"$TP_TSV"; : >"$SKIPS_TSV"

# sys ID KIND ARG DISPLAY-NAME; KIND is pgb (pgbench script file), sql (one
# statement for the driver, file) or redis (the driver's Redis path).
sys() { SYS_KIND[$1]=$2; SYS_ARG[$1]=$3; SYS_NAME[$1]=$4; }
# sys_opts ID OPTIONS: libpq PGOPTIONS for that system's sessions (e.g. a setting)
sys_opts() { SYS_OPTS[$1]=$2; }

script() {	# script NAME <<EOF ... : a pgbench script or a driver statement
	cat >"$OUT/sql/$1.sql"
	chmod 644 "$OUT/sql/$1.sql"
	echo "$OUT/sql/$1.sql"
}

first_error() {
	grep -m1 -E 'ERROR|FATAL|error|aborted' "$1" | sed 's/^.*ERROR: *//; s/^pgbench: error: //' | cut -c1-120
}

# measure SYS CLIENTS SECONDS -> prints ops/s, or ERR
measure() {
	local s=$1 c=$2 secs=$3 log=$OUT/last.log rc=0 v=
	case ${SYS_KIND[$s]} in
		pgb)
			PGOPTIONS="${SYS_OPTS[$s]:-}" "$PGBENCH" -n -M prepared -T "$secs" -c "$c" -j "$c" \
				-f "${SYS_ARG[$s]}" >"$log" 2>&1 || rc=$?
			v=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$log" | head -1) ;;
		sql)
			PGOPTIONS="${SYS_OPTS[$s]:-}" "$DRIVER" --mode sql --sql "$(cat "${SYS_ARG[$s]}")" --threads "$c" --seconds "$secs" \
				--ids "$DOCS" >"$log" 2>&1 || rc=$?
			v=$(sed -n 's/^ops_per_sec=\([0-9.]*\).*/\1/p' "$log") ;;
		redis)
			"$DRIVER" --mode redis --redis-port "$REDIS_PORT" --update "$(cat "${SYS_ARG[$s]}")" \
				--threads "$c" --seconds "$secs" --ids "$DOCS" >"$log" 2>&1 || rc=$?
			v=$(sed -n 's/^ops_per_sec=\([0-9.]*\).*/\1/p' "$log") ;;
	esac
	if [ "$rc" -ne 0 ] || [ -z "$v" ]; then
		{ echo "== $s, $c clients (exit $rc)"; tail -n 5 "$log"; } >>"$ERRLOG"
		echo ERR
	else
		echo "$v"
	fi
}

# probe SYS: one short run; on failure marks the system skipped with the error
probe() {
	local s=$1 log=$OUT/last.log rc=0
	case ${SYS_KIND[$s]} in
		pgb) PGOPTIONS="${SYS_OPTS[$s]:-}" "$PGBENCH" -n -M prepared -t 3 -c 1 -f "${SYS_ARG[$s]}" >"$log" 2>&1 || rc=$? ;;
		sql|redis)
			if [ ! -x "$DRIVER" ]; then
				SYS_SKIP[$s]="bench/redis_path not built (make bench-tools)"
				return
			fi
			if [ "${SYS_KIND[$s]}" = redis ] && [ -z "${REDIS_PORT:-}" ]; then
				SYS_SKIP[$s]="redis-server not available"
				return
			fi
			[ "$(measure "$s" 1 0.2)" = ERR ] && rc=1 ;;
	esac
	if [ "$rc" -ne 0 ]; then
		SYS_SKIP[$s]="error: $(first_error "$log")"
	fi
}

# need SYS 'fence.f(argtypes)'...: marks SYS skipped if a function is missing
need() {
	local s=$1 f
	shift
	for f in "$@"; do
		if ! have_fn "$f"; then
			SYS_SKIP[$s]="function missing: $f"
			return
		fi
	done
}

# group GID "TITLE" SYS...: probes, then measures the systems interleaved at
# every client count (round r runs them in order, r+1 in reverse order), and
# keeps each system's best round.
group() {
	local gid=$1 title=$2 s c r v order best all
	shift 2
	if [ -n "$ONLY" ] && [[ " $ONLY " != *" $gid "* ]]; then
		return 0
	fi
	for s in "$@"; do GROUP_RAN[$s]=1; done
	printf '%s\t%s\t%s\n' "$gid" "$title" "$*" >>"$GROUPS_TSV"
	for s in "$@"; do
		[ -z "${SYS_SKIP[$s]:-}" ] && probe "$s"
		if [ -n "${SYS_SKIP[$s]:-}" ]; then
			say "$title: ${SYS_NAME[$s]}: skipped (${SYS_SKIP[$s]})"
			printf '%s: %s\t%s\n' "$title" "${SYS_NAME[$s]}" "${SYS_SKIP[$s]}" >>"$SKIPS_TSV"
		fi
	done
	local live=()
	for s in "$@"; do [ -z "${SYS_SKIP[$s]:-}" ] && live+=("$s"); done
	[ ${#live[@]} -eq 0 ] && return 0
	for c in $CLIENTS; do
		declare -A best_of=() all_of=()
		for r in $(seq 1 "$ROUNDS"); do
			if [ $((r % 2)) -eq 1 ]; then order=("${live[@]}"); else
				order=(); for ((i = ${#live[@]} - 1; i >= 0; i--)); do order+=("${live[$i]}"); done
			fi
			for s in "${order[@]}"; do
				v=$(measure "$s" "$c" "$T")
				all_of[$s]="${all_of[$s]:-}${all_of[$s]:+ }$v"
				best=${best_of[$s]:-ERR}
				if [ "$v" != ERR ] && { [ "$best" = ERR ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a>b)}'; }; then
					best_of[$s]=$v
				else
					best_of[$s]=$best
				fi
			done
		done
		for s in "${live[@]}"; do
			printf '%s\t%s\t%s\t%s\n' "$s" "$c" "${best_of[$s]}" "${all_of[$s]}" >>"$TP_TSV"
			say "$title: ${SYS_NAME[$s]} x$c: ${best_of[$s]} ops/s (rounds: ${all_of[$s]})"
		done
		unset best_of all_of
	done
}

# row "LABEL" FENCE_SYS ALT_SYS MIN_RATIO "TARGET TEXT"  (MIN_RATIO - : none)
row() {
	[ -n "$ONLY" ] && [ -z "${GROUP_RAN[$2]:-}" ] && return 0
	printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS_TSV"
}

# ---------------------------------------------------------------------------
# Redis: a private server on a free loopback port, no persistence.
REDIS_PORT=
REDIS_VERSION="not installed"
if command -v redis-server >/dev/null 2>&1; then
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		grep -q "$(printf ':%04X ' "$p")" /proc/net/tcp /proc/net/tcp6 2>/dev/null && continue
		REDIS_PORT=$p
		break
	done
	mkdir -p "$OUT/redis"
	redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
		--protected-mode yes --daemonize no --dir "$OUT/redis" --logfile "$OUT/redis/redis.log" &
	REDIS_PID=$!
	for _ in $(seq 1 100); do
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break
		sleep 0.1
	done
	if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
		REDIS_VERSION=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
	else
		say "redis-server did not start; the Redis path is skipped"
		REDIS_PORT=
	fi
fi

# ---------------------------------------------------------------------------
say "throughput scenarios: ${T}s per run, clients $CLIENTS, $ROUNDS rounds"

# 1. Round-trip ceiling.
sys sel1 pgb "$(script sel1 <<'EOF'
SELECT 1;
EOF
)" "SELECT 1"
group ceiling "Round-trip ceiling (SELECT 1)" sel1
row "round-trip ceiling: SELECT 1" - sel1 - "(reference)"

# 2. Session lock + unlock: random names (uncontended) and 4 hot names.  The
#    plain twin hashes the text name to 64 bits (what one does by hand) and
#    draws a token from a sequence; both release only what they got.
for kind in rand hot; do
	if [ $kind = rand ]; then range=10000000; else range=4; fi
	sys lock_f_$kind pgb "$(script lock_f_$kind <<EOF
\\set n random(1, $range)
SELECT coalesce(fence.try_lock('k' || :n), 0) AS tok \\gset
SELECT CASE WHEN :tok > 0 THEN fence.unlock('k' || :n, :tok) END;
EOF
)" pg_fence
	sys lock_p_$kind pgb "$(script lock_p_$kind <<EOF
\\set n random(1, $range)
SELECT CASE WHEN pg_try_advisory_lock(hashtextextended('k' || :n, 0)) THEN nextval('bench.plain_seq') ELSE 0 END AS tok \\gset
SELECT CASE WHEN :tok > 0 THEN pg_advisory_unlock(hashtextextended('k' || :n, 0)) END;
EOF
)" "plain SQL"
	need lock_f_$kind 'fence.try_lock(text)' 'fence.unlock(text,bigint)'
done
group lock_rand "try_lock+unlock, random names" lock_f_rand lock_p_rand
row "try_lock+unlock, random names" lock_f_rand lock_p_rand 0.95 "≥ 0.95"
group lock_hot "try_lock+unlock, 4 hot names" lock_f_hot lock_p_hot
row "try_lock+unlock, 4 hot names" lock_f_hot lock_p_hot 0.95 "≥ 0.95"

# Tokens: a fenced write refuses a token this database never issued (FN004),
# so the fixed tokens the scripts below present (1000, GUARD_TOKEN) are
# issued first.
q -c "SELECT count(fence.unlock('bench-tokens', fence.try_lock('bench-tokens'))) FROM generate_series(1, 2000)" >/dev/null
GUARD_TOKEN=$(q -c "SELECT fence.try_lock('bench-token')")

# fenced_update against the hand-written fenced UPDATE.
sys fu_f pgb "$(script fu_f <<EOF
\\set id random(1, $DOCS)
SELECT fence.fenced_update('bench.fu_f', jsonb_build_object('id', (:id)::int), 1000, '{"body": "y"}', 'fence', true);
EOF
)" pg_fence
sys fu_p pgb "$(script fu_p <<EOF
\\set id random(1, $DOCS)
UPDATE bench.fu_p SET body = 'y', fence = 1000 WHERE id = :id AND fence <= 1000;
EOF
)" "plain SQL"
# The same with the FN004 check turned off (fence.require_issued_tokens, a
# superuser setting, through PGOPTIONS): the check's cost in the same run.
sys fu_f_off pgb "${SYS_ARG[fu_f]}" "pg_fence, FN004 check off"
sys_opts fu_f_off "-c fence.require_issued_tokens=off"
need fu_f 'fence.fenced_update(regclass,jsonb,bigint,jsonb,name,boolean,bigint)'
need fu_f_off 'fence.fenced_update(regclass,jsonb,bigint,jsonb,name,boolean,bigint)'
group fenced_update "fenced_update vs UPDATE" fu_f fu_p fu_f_off
row "fenced_update vs prepared UPDATE" fu_f fu_p 0.90 "≥ 0.90"
row "fenced_update: FN004 check on ÷ off (same token)" fu_f fu_f_off 0.95 "check costs ≤ 5%"

# 3. Lock, write, release.  pg_fence: one statement in autocommit (the
#    transaction lock lasts for the statement).  Plain twin: the same in one
#    statement with an advisory xact lock and nextval.  Redis: SET NX PX,
#    UPDATE, compare-and-delete.  All three driven by bench/redis_path.
sys lwr_f sql "$(script lwr_f <<'EOF'
WITH l AS MATERIALIZED (SELECT fence.try_xact_lock('doc' || $1::int) AS tok)
SELECT fence.fenced_update('bench.doc_f', jsonb_build_object('id', $1::int), l.tok, '{"body": "y"}')
FROM l WHERE l.tok IS NOT NULL
EOF
)" pg_fence
sys lwr_p sql "$(script lwr_p <<'EOF'
WITH l AS MATERIALIZED (
  SELECT nextval('bench.plain_seq') AS tok WHERE pg_try_advisory_xact_lock(hashtextextended('doc' || $1::int, 0)))
UPDATE bench.doc_p d SET body = 'y', fence = l.tok FROM l WHERE d.id = $1::int AND d.fence < l.tok
EOF
)" "plain SQL"
sys lwr_r redis "$(script lwr_r <<'EOF'
UPDATE bench.doc_r SET body = 'y' WHERE id = $1::int
EOF
)" "Redis path"
# With the FN004 check off: each write presents a fresh token, above what the
# backend remembers, so here the check reads the shared counter every time.
sys lwr_f_off sql "${SYS_ARG[lwr_f]}" "pg_fence, FN004 check off"
sys_opts lwr_f_off "-c fence.require_issued_tokens=off"
need lwr_f 'fence.try_xact_lock(text)' 'fence.fenced_update(regclass,jsonb,bigint,jsonb,name,boolean,bigint)'
need lwr_f_off 'fence.try_xact_lock(text)' 'fence.fenced_update(regclass,jsonb,bigint,jsonb,name,boolean,bigint)'
group lwr "Lock, write, release (one unit of work)" lwr_f lwr_p lwr_r lwr_f_off
row "lock-write-release vs Redis SET NX/UPDATE/EVAL" lwr_f lwr_r 1.0 "≥ 1.0"
row "lock-write-release vs plain SQL (one statement)" lwr_f lwr_p - "(info)"
row "lock-write-release: FN004 check on ÷ off (fresh token)" lwr_f lwr_f_off 0.95 "check costs ≤ 5%"

# 4. Lease acquire + release, random names and 4 hot names, against the
#    hand-written lease table (INSERT ... ON CONFLICT ... WHERE expired).
for kind in rand hot; do
	if [ $kind = rand ]; then range=10000000; else range=4; fi
	sys lease_f_$kind pgb "$(script lease_f_$kind <<EOF
\\set n random(1, $range)
SELECT coalesce(fence.lease_acquire('L' || :n, interval '30 seconds', 'bench'), 0) AS tok \\gset
SELECT CASE WHEN :tok > 0 THEN fence.lease_release('L' || :n, :tok) END;
EOF
)" pg_fence
	sys lease_p_$kind pgb "$(script lease_p_$kind <<EOF
\\set n random(1, $range)
WITH a AS (INSERT INTO bench.lease AS l (name, token, holder, granted_at, expires_at) VALUES ('L' || :n, nextval('bench.plain_seq'), 'bench', clock_timestamp(), clock_timestamp() + interval '30 seconds') ON CONFLICT (name) DO UPDATE SET token = excluded.token, holder = excluded.holder, granted_at = excluded.granted_at, expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp() RETURNING token) SELECT coalesce((SELECT token FROM a), 0) AS tok \\gset
DELETE FROM bench.lease WHERE :tok > 0 AND name = 'L' || :n AND token = :tok;
EOF
)" "plain SQL"
	need lease_f_$kind 'fence.lease_acquire(text,interval,text,interval)' 'fence.lease_release(text,bigint)'
done
group lease_rand "Lease acquire+release, random names" lease_f_rand lease_p_rand
row "lease acquire+release, random names" lease_f_rand lease_p_rand 1.0 "≥ 1.0"
group lease_hot "Lease acquire+release, 4 hot names" lease_f_hot lease_p_hot
row "lease acquire+release, 4 hot names" lease_f_hot lease_p_hot 1.0 "≥ 1.0"

# 5. Guard trigger overhead: the same UPDATE on a guarded and an unguarded
#    table, presenting the token as a new fence value (one statement) or with
#    SET LOCAL fence.token (a transaction of four statements).
GUARD_FN='fence.guard(regclass,name,name[])'
have_fn "$GUARD_FN" || GUARD_FN='fence.guard(regclass,name)'
GUARD_OK=
if have_fn "$GUARD_FN"; then
	if q -c "SELECT fence.guard('bench.guarded', 'fence')" >/dev/null 2>"$OUT/guard.err"; then
		GUARD_OK=1
	fi
fi
sys guard_g_new pgb "$(script guard_g_new <<EOF
\\set id random(1, $DOCS)
UPDATE bench.guarded SET body = 'y', fence = fence + 1 WHERE id = :id;
EOF
)" "pg_fence guard"
sys guard_u_new pgb "$(script guard_u_new <<EOF
\\set id random(1, $DOCS)
UPDATE bench.unguarded SET body = 'y', fence = fence + 1 WHERE id = :id;
EOF
)" "unguarded"
sys guard_g_set pgb "$(script guard_g_set <<EOF
\\set id random(1, $DOCS)
BEGIN;
SET LOCAL fence.token = $GUARD_TOKEN;
UPDATE bench.guarded SET body = 'y' WHERE id = :id;
COMMIT;
EOF
)" "pg_fence guard"
sys guard_u_set pgb "$(script guard_u_set <<EOF
\\set id random(1, $DOCS)
BEGIN;
SET LOCAL fence.token = $GUARD_TOKEN;
UPDATE bench.unguarded SET body = 'y' WHERE id = :id;
COMMIT;
EOF
)" "unguarded"
# The guarded statements with the FN004 check off: the check's cost in the
# same run.  (fence = fence + 1 stays far below GUARD_TOKEN on rows that
# guard_g_set has not yet stamped with it; it runs after guard_g_new.)
sys guard_g_new_off pgb "${SYS_ARG[guard_g_new]}" "pg_fence guard, FN004 check off"
sys_opts guard_g_new_off "-c fence.require_issued_tokens=off"
sys guard_g_set_off pgb "${SYS_ARG[guard_g_set]}" "pg_fence guard, FN004 check off"
sys_opts guard_g_set_off "-c fence.require_issued_tokens=off"
if [ -z "$GUARD_OK" ]; then
	if have_fn "$GUARD_FN"; then
		why="error: $(first_error "$OUT/guard.err")"
	else
		why="function missing: $GUARD_FN"
	fi
	SYS_SKIP[guard_g_new]=$why
	SYS_SKIP[guard_g_set]=$why
	SYS_SKIP[guard_g_new_off]=$why
	SYS_SKIP[guard_g_set_off]=$why
fi
group guard_new "Guarded UPDATE, new fence value" guard_g_new guard_u_new guard_g_new_off
row "guard trigger, UPDATE with new fence value" guard_g_new guard_u_new 0.909 "overhead ≤ 10%"
row "guard, new fence value: FN004 check on ÷ off" guard_g_new guard_g_new_off 0.95 "check costs ≤ 5%"
group guard_set "Guarded UPDATE, SET LOCAL fence.token" guard_g_set guard_u_set guard_g_set_off
row "guard trigger, SET LOCAL fence.token + UPDATE" guard_g_set guard_u_set 0.909 "overhead ≤ 10%"
row "guard, SET LOCAL fence.token: FN004 check on ÷ off" guard_g_set guard_g_set_off 0.95 "check costs ≤ 5%"

# 5b. Guarded INSERT: one row appended to a log of 1000 streams, on a table
#     guarded with resource_columns => ARRAY['stream'] and on an unguarded
#     twin.  The token is the one the stream's mark already holds (a holder
#     appending again: the common case), presented in the row.
GINS_FN='fence.guard(regclass,name,name[])'
if ! have_fn "$GINS_FN"; then
	SYS_SKIP[gins_g]="function missing: $GINS_FN"
elif ! q -c "SELECT fence.guard('bench.log_g', 'fence', ARRAY['stream'])" >/dev/null 2>"$OUT/guard_insert.err"; then
	SYS_SKIP[gins_g]="error: $(first_error "$OUT/guard_insert.err")"
fi
sys gins_g pgb "$(script gins_g <<'EOF'
\set s random(1, 1000)
INSERT INTO bench.log_g (stream, body, fence) VALUES ('stream-' || :s, 'event', 5);
EOF
)" "pg_fence guard"
sys gins_u pgb "$(script gins_u <<'EOF'
\set s random(1, 1000)
INSERT INTO bench.log_u (stream, body, fence) VALUES ('stream-' || :s, 'event', 5);
EOF
)" "unguarded"
group guard_insert "Guarded INSERT (resource_columns), token in the row" gins_g gins_u
row "guard trigger, INSERT into a log guarded with resource_columns" gins_g gins_u 0.87 "overhead ≤ 15%"

# ---------------------------------------------------------------------------
# Sections 6 and the memory check run only without BENCH_ONLY.
if [ -z "$ONLY" ]; then
# 6. Scale.  Latency of one client (µs per acquire+release pair).
SCALE_TSV=$OUT/scale.tsv        # case  condition  us  base_us  max_growth  target_text
: >"$SCALE_TSV"
lat_of() {	# SYS -> µs per transaction (best of BENCH_ROUNDS), or ERR
	local s=$1 best=ERR v r
	for r in $(seq 1 "$ROUNDS"); do
		v=$(measure "$s" 1 "$T")
		[ "$v" = ERR ] && continue
		if [ "$best" = ERR ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a>b)}'; then best=$v; fi
	done
	[ "$best" = ERR ] && { echo ERR; return; }
	awk -v t="$best" 'BEGIN{printf "%.1f", 1e6 / t}'
}

# 6a. Lease acquire+release on new names with N expired leases present.
sys lease_scale pgb "$(script lease_scale <<'EOF'
\set n random(1, 1000000000)
SELECT coalesce(fence.lease_acquire('S' || :n, interval '30 seconds', 'bench'), 0) AS tok \gset
SELECT CASE WHEN :tok > 0 THEN fence.lease_release('S' || :n, :tok) END;
EOF
)" pg_fence
need lease_scale 'fence.lease_acquire(text,interval,text,interval)' 'fence.lease_release(text,bigint)'
if [ -z "${SYS_SKIP[lease_scale]:-}" ] &&
	[ "$(q -c "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'fence' AND table_name = 'leases' AND column_name IN ('name','token','holder','owner','granted_at','expires_at')")" != 6 ]; then
	SYS_SKIP[lease_scale]="table fence.leases (name, token, holder, owner, granted_at, expires_at) missing"
fi
[ -z "${SYS_SKIP[lease_scale]:-}" ] && probe lease_scale
if [ -n "${SYS_SKIP[lease_scale]:-}" ]; then
	printf 'scale: lease names\t%s\n' "${SYS_SKIP[lease_scale]}" >>"$SKIPS_TSV"
	say "scale, lease names: skipped (${SYS_SKIP[lease_scale]})"
else
	q -c "TRUNCATE fence.leases"
	have=0 base=
	for size in $LEASE_SIZES; do
		say "scale: filling fence.leases to $size expired leases"
		if ! q >/dev/null 2>"$OUT/fill.err" <<SQL
INSERT INTO fence.leases (name, token, holder, owner, granted_at, expires_at)
SELECT 'fill' || g, nextval('fence.token_seq'), 'bench-fill',
       (SELECT oid FROM pg_roles WHERE rolname = current_user),
       clock_timestamp() - interval '2 hours', clock_timestamp() - interval '1 hour'
FROM generate_series($((have + 1)), $size) g;
VACUUM ANALYZE fence.leases;
SQL
		then
			printf 'scale: lease names\terror filling fence.leases: %s\n' "$(first_error "$OUT/fill.err")" >>"$SKIPS_TSV"
			break
		fi
		have=$size
		us=$(lat_of lease_scale)
		[ -z "$base" ] && base=$us
		printf 'lease acquire+release (1 client)\t%s names in fence.leases\t%s\t%s\t1.2\t≤ 1.2× the %s-name latency\n' \
			"$size" "$us" "$base" "$(echo "$LEASE_SIZES" | awk '{print $1}')" >>"$SCALE_TSV"
		say "scale: lease, $size names: $us µs"
	done
	q -c "TRUNCATE fence.leases"
fi

# 6b. try_lock+unlock (1 client) while another session holds HELD_LOCKS locks.
if [ -n "${SYS_SKIP[lock_f_rand]:-}" ]; then
	printf 'scale: %s locks held\t%s\n' "$HELD_LOCKS" "${SYS_SKIP[lock_f_rand]}" >>"$SKIPS_TSV"
else
	base=$(lat_of lock_f_rand)
	say "scale: holding $HELD_LOCKS session locks in another session"
	PGAPPNAME=bench_holder psql -X -q -v ON_ERROR_STOP=1 >/dev/null 2>"$OUT/holder.err" <<SQL &
SELECT count(fence.try_lock('held' || g)) FROM generate_series(1, $HELD_LOCKS) g;
SELECT pg_sleep(3600);
SQL
	holder=$!
	BG_PIDS+=("$holder")
	ready=
	for _ in $(seq 1 600); do
		if [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_holder' AND query LIKE 'SELECT pg_sleep%'")" = 1 ]; then
			ready=1; break
		fi
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$ready" ]; then
		us=$(lat_of lock_f_rand)
		printf 'try_lock+unlock (1 client)\t%s locks held by another session\t%s\t%s\t1.2\t≤ 1.2× the latency with none held\n' \
			"$HELD_LOCKS" "$us" "$base" >>"$SCALE_TSV"
		printf 'try_lock+unlock (1 client)\tnone held\t%s\t%s\t-\t(base)\n' "$base" "$base" >>"$SCALE_TSV"
		say "scale: try_lock+unlock with $HELD_LOCKS held: $us µs (none held: $base µs)"
	else
		printf 'scale: %s locks held\tholder failed: %s\n' "$HELD_LOCKS" "$(first_error "$OUT/holder.err")" >>"$SKIPS_TSV"
	fi
	q -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'bench_holder'" >/dev/null
	wait "$holder" 2>/dev/null || true
fi

# 6c. One name, WAITERS sessions queueing on it: grant throughput and fairness.
WAIT_TSV=$OUT/waiters.tsv       # system  grants  grants_per_s  median_ms  max_ms  inversions
: >"$WAIT_TSV"
run_waiters() {	# SYSNAME LOCK-STMT UNLOCK-STMT
	local name=$1 lock=$2 unlock=$3 i pids=() ok=1
	cat >"$OUT/sql/waiter_$name.sql" <<SQL
SELECT count(*) FROM bench.barrier;
DO \$\$
DECLARE t0 timestamptz; t1 timestamptz; tok bigint;
BEGIN
  FOR i IN 1..$WAIT_ROUNDS LOOP
    t0 := clock_timestamp();
    $lock
    t1 := clock_timestamp();
    PERFORM pg_sleep($WAIT_HOLD_MS / 1000.0);
    $unlock
    INSERT INTO bench.wait VALUES ('$name', pg_backend_pid(), i, t0, t1, tok);
  END LOOP;
END
\$\$;
SQL
	chmod 644 "$OUT/sql/waiter_$name.sql"
	PGAPPNAME=bench_barrier psql -X -q >/dev/null 2>&1 \
		-c "BEGIN; LOCK TABLE bench.barrier IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600); COMMIT" &
	local barrier=$!
	BG_PIDS+=("$barrier")
	for _ in $(seq 1 300); do
		[ "$(q -c "SELECT count(*) FROM pg_locks WHERE relation = 'bench.barrier'::regclass AND granted")" = 1 ] && break
		sleep 0.1
	done
	for i in $(seq 1 "$WAITERS"); do
		PGAPPNAME=bench_waiter timeout 600 psql -X -q -v ON_ERROR_STOP=1 -f "$OUT/sql/waiter_$name.sql" \
			>/dev/null 2>>"$OUT/waiters.err" &
		pids+=($!)
		BG_PIDS+=($!)
	done
	for _ in $(seq 1 600); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_waiter' AND wait_event_type = 'Lock'")" -ge "$WAITERS" ] && break
		sleep 0.1
	done
	q -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'bench_barrier'" >/dev/null
	wait "$barrier" 2>/dev/null || true
	for i in "${pids[@]}"; do wait "$i" || ok=; done
	[ -n "$ok" ] || { printf 'waiters: %s\tworker failed: %s\n' "$name" "$(first_error "$OUT/waiters.err")" >>"$SKIPS_TSV"; return; }
	q -F $'\t' >>"$WAIT_TSV" <<SQL
SELECT '$name', count(*),
       round((count(*) / extract(epoch FROM max(t1) - min(t0)))::numeric, 1),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t1 - t0)) * 1000)::numeric, 2),
       round((max(extract(epoch FROM t1 - t0)) * 1000)::numeric, 2),
       (SELECT count(*) FROM (SELECT token <= lag(token) OVER (ORDER BY t1) AS inv
                              FROM bench.wait WHERE sys = '$name') s WHERE inv)
FROM bench.wait WHERE sys = '$name';
SQL
	say "waiters: $name: $(tail -n 1 "$WAIT_TSV" | tr '\t' ' ')"
}
if have_fn 'fence.lock(text,interval)' && have_fn 'fence.unlock(text,bigint)'; then
	say "waiters: $WAITERS sessions x $WAIT_ROUNDS rounds on one name"
	run_waiters plain "PERFORM pg_advisory_lock(hashtextextended('bench_hot', 0)); tok := nextval('bench.plain_seq');" \
		"PERFORM pg_advisory_unlock(hashtextextended('bench_hot', 0));"
	run_waiters pg_fence "tok := fence.lock('bench_hot');" "PERFORM fence.unlock('bench_hot', tok);"
else
	printf 'waiters\tfunction missing: fence.lock(text,interval) or fence.unlock(text,bigint)\n' >>"$SKIPS_TSV"
fi

# ---------------------------------------------------------------------------
# Memory: backend RSS after 1k and after MEM_CYCLES try_lock+unlock cycles on
# distinct names, in one session (committing every 1000 cycles).
MEM_TSV=$OUT/memory.tsv
: >"$MEM_TSV"
if have_fn 'fence.try_lock(text)' && have_fn 'fence.unlock(text,bigint)'; then
	say "memory: $MEM_CYCLES try_lock+unlock cycles in one session"
	q <<'SQL'
CREATE PROCEDURE bench.cycles(n int, base int) LANGUAGE plpgsql AS $$
DECLARE tok bigint;
BEGIN
  FOR i IN 1..n LOOP
    tok := fence.try_lock('mem' || (base + i));
    PERFORM fence.unlock('mem' || (base + i), tok);
    IF i % 1000 = 0 THEN COMMIT; END IF;
  END LOOP;
END $$;
SQL
	if q >/dev/null 2>"$OUT/mem.err" <<SQL
SELECT pg_backend_pid() AS pid \gset
\setenv BENCH_PID :pid
CALL bench.cycles(1000, 0);
\! grep -E '^(VmRSS|RssAnon):' /proc/\$BENCH_PID/status | awk '{print "1000\t" \$1 "\t" \$2}' >> $MEM_TSV
CALL bench.cycles($((MEM_CYCLES - 1000)), 1000);
\! grep -E '^(VmRSS|RssAnon):' /proc/\$BENCH_PID/status | awk '{print "$MEM_CYCLES\t" \$1 "\t" \$2}' >> $MEM_TSV
SQL
	then
		say "memory: $(tr '\t\n' ' ;' <"$MEM_TSV")"
	else
		printf 'memory\terror: %s\n' "$(first_error "$OUT/mem.err")" >>"$SKIPS_TSV"
		: >"$MEM_TSV"
	fi
else
	printf 'memory\tfunction missing: fence.try_lock(text) or fence.unlock(text,bigint)\n' >>"$SKIPS_TSV"
fi
q -F $'\t' -c "SELECT name, allocated_size FROM pg_shmem_allocations WHERE name ILIKE '%fence%' ORDER BY name" \
	>"$OUT/shmem.tsv" || : >"$OUT/shmem.tsv"
else
	: >"${SCALE_TSV:=$OUT/scale.tsv}"; : >"$OUT/waiters.tsv"; : >"$OUT/memory.tsv"; : >"$OUT/shmem.tsv"
	say "BENCH_ONLY=$ONLY: scale, waiter and memory scenarios not run"
fi

# ---------------------------------------------------------------------------
ELAPSED=$(( $(date +%s) - START_EPOCH ))
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
export T CLIENTS ROUNDS ELAPSED LOAD_BEFORE LOAD_AFTER REDIS_VERSION MEM_CYCLES WAITERS WAIT_ROUNDS WAIT_HOLD_MS HELD_LOCKS
# display names for the report writers
for s in "${!SYS_NAME[@]}"; do printf '%s\t%s\n' "$s" "${SYS_NAME[$s]}"; done >"$OUT/sysnames.tsv"
for s in "${!SYS_SKIP[@]}"; do printf '%s\t%s\n' "$s" "${SYS_SKIP[$s]}"; done >"$OUT/sysskip.tsv"
q -F $'\t' -c "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers', 'wal_level', 'max_connections', 'max_locks_per_transaction', 'shared_preload_libraries', 'wal_sync_method', 'full_page_writes') ORDER BY name" >"$OUT/settings.tsv"
q -c "SELECT version()" >"$OUT/pgversion.txt"
q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'" >"$OUT/extversion.txt"
bash "$HERE/report.sh" "$OUT" "$RESULTS" "$SVG"
say "wrote $RESULTS and $SVG in ${ELAPSED}s"
