#!/usr/bin/env bash
# configs.sh - the grant and write paths with and without
# shared_preload_libraries, each against its plain-SQL twin in the same run.
#
# Usage (what `make bench` runs after bench/run.sh):
#   bash bench/configs.sh
# Starts one throwaway cluster per configuration (scripts/temp-cluster.sh,
# fsync = on):
#   preloaded   shared_preload_libraries = 'pg_fence'
#   extension   CREATE EXTENSION alone (no preload): on PostgreSQL 17+ the
#               shared memory is a named DSM segment; on 15/16 there is none
#               and tokens come from nextval() with a WAL flush per grant
# and in each measures, interleaved round by round with the twin:
#   try_lock+unlock, random names   vs  pg_try_advisory_lock + nextval
#                                       (CACHE 1 sequence) + pg_advisory_unlock
#   fenced_update                   vs  the hand-written UPDATE ... WHERE fence <= token
# Targets (issue "versions"): try_lock+unlock >= 0.95, fenced_update >= 0.90,
# at 1 and 8 clients, in both configurations.
#
# Environment: BENCH_SECONDS [4], BENCH_CLIENTS ["1 8"], BENCH_ROUNDS [3]
# (best of), BENCH_CONFIGS ["preloaded extension"], BENCH_CONFIG_RESULTS
# [bench/results-configs-pgMAJOR.md].  PG_CONFIG picks the server, as for
# make test (results for 17 come from the trixie chroot: docs/benchmarks.md).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
T=${BENCH_SECONDS:-4}
CLIENTS=${BENCH_CLIENTS:-"1 8"}
ROUNDS=${BENCH_ROUNDS:-3}
CONFIGS=${BENCH_CONFIGS:-"preloaded extension"}
MAJOR=$("${PG_CONFIG:-pg_config}" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
RESULTS=${BENCH_CONFIG_RESULTS:-$HERE/results-configs-pg$MAJOR.md}
DOCS=10000

# ---------------------------------------------------------------------------
# Outer level: one cluster per configuration, then the report.
if [ -z "${BENCH_CONFIG_INNER:-}" ]; then
	TSV=$(mktemp)
	trap 'rm -f "$TSV"' EXIT
	for cfg in $CONFIGS; do
		case $cfg in
			preloaded) preload=pg_fence ;;
			extension) preload= ;;
			*) echo "configs.sh: unknown configuration $cfg" >&2; exit 2 ;;
		esac
		echo "bench: configuration $cfg" >&2
		FENCE_FSYNC=on FENCE_PRELOAD=$preload BENCH_CONFIG_INNER=$cfg BENCH_TSV=$TSV \
			bash "$ROOT/scripts/temp-cluster.sh" bash "$0"
	done
	server=$(awk -F'\t' 'NR == 1 { print $7 }' "$TSV")
	{
		echo "# pg_fence with and without the preload"
		echo
		echo "Written by \`bench/configs.sh\` (run by \`make bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC'):"
		echo "PostgreSQL $server, $(nproc) cores, fsync on, ${T} s per run, best of $ROUNDS"
		echo "interleaved rounds. Ratio = pg_fence ÷ its plain-SQL twin (higher is better)."
		echo
		echo "| configuration | shared memory | scenario | clients | pg_fence ops/s | twin ops/s | ratio | target |"
		echo "|---|---|---|---:|---:|---:|---:|---|"
		awk -F'\t' '{
			ratio = $6 > 0 ? $5 / $6 : 0
			ok = ratio >= $8 ? "met" : "**not met**"
			printf "| %s | %s | %s | %d | %.0f | %.0f | %.2f | ≥ %.2f: %s |\n", $1, $2, $3, $4, $5, $6, ratio, $8, ok
		}' "$TSV"
	} >"$RESULTS"
	cat "$RESULTS"
	exit 0
fi

# ---------------------------------------------------------------------------
# Inner level: inside one throwaway cluster.
PGBENCH=pgbench
[ -n "${FENCE_PGBIN:-}" ] && [ -x "$FENCE_PGBIN/pgbench" ] && PGBENCH=$FENCE_PGBIN/pgbench
WORK=$(mktemp -d)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

q -c "SET client_min_messages = error" -c "CREATE EXTENSION IF NOT EXISTS pg_fence"
q <<SQL
SET client_min_messages = error;
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
CREATE SEQUENCE bench.plain_seq AS bigint CACHE 1;
CREATE TABLE bench.fu_f (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0);
CREATE TABLE bench.fu_p (LIKE bench.fu_f INCLUDING ALL);
INSERT INTO bench.fu_f SELECT g, 'x', 0 FROM generate_series(1, $DOCS) g;
INSERT INTO bench.fu_p SELECT * FROM bench.fu_f;
VACUUM ANALYZE bench.fu_f, bench.fu_p;
SQL
shmem=$(q -c "SET client_min_messages = error" -c "SELECT fence.shared_memory()")
server=$(q -c "SHOW server_version")

cat >"$WORK/lock_f.sql" <<'EOF'
\set n random(1, 10000000)
SELECT coalesce(fence.try_lock('k' || :n), 0) AS tok \gset
SELECT CASE WHEN :tok > 0 THEN fence.unlock('k' || :n, :tok) END;
EOF
cat >"$WORK/lock_p.sql" <<'EOF'
\set n random(1, 10000000)
SELECT CASE WHEN pg_try_advisory_lock(hashtextextended('k' || :n, 0)) THEN nextval('bench.plain_seq') ELSE 0 END AS tok \gset
SELECT CASE WHEN :tok > 0 THEN pg_advisory_unlock(hashtextextended('k' || :n, 0)) END;
EOF
cat >"$WORK/fu_f.sql" <<EOF
\\set id random(1, $DOCS)
SELECT fence.fenced_update('bench.fu_f', jsonb_build_object('id', (:id)::int), 1000, '{"body": "y"}', 'fence', true);
EOF
cat >"$WORK/fu_p.sql" <<EOF
\\set id random(1, $DOCS)
UPDATE bench.fu_p SET body = 'y', fence = 1000 WHERE id = :id AND fence <= 1000;
EOF
chmod 644 "$WORK"/*.sql

tps() {	# tps SCRIPT CLIENTS
	"$PGBENCH" -n -M prepared -T "$T" -c "$2" -j "$2" -f "$WORK/$1.sql" 2>"$WORK/err.log" |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1
}

# pair LABEL FENCE TWIN TARGET: best of ROUNDS, interleaved (order alternates)
pair() {
	local c r a b best_f=0 best_p=0
	for c in $CLIENTS; do
		best_f=0
		best_p=0
		for r in $(seq 1 "$ROUNDS"); do
			if [ $((r % 2)) -eq 1 ]; then
				a=$(tps "$2" "$c"); b=$(tps "$3" "$c")
			else
				b=$(tps "$3" "$c"); a=$(tps "$2" "$c")
			fi
			[ -n "$a" ] || { echo "bench: $2 failed: $(tail -n 3 "$WORK/err.log")" >&2; exit 1; }
			[ -n "$b" ] || { echo "bench: $3 failed: $(tail -n 3 "$WORK/err.log")" >&2; exit 1; }
			best_f=$(awk -v x="$best_f" -v y="$a" 'BEGIN { print (y > x ? y : x) }')
			best_p=$(awk -v x="$best_p" -v y="$b" 'BEGIN { print (y > x ? y : x) }')
		done
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BENCH_CONFIG_INNER" "$shmem" "$1" "$c" \
			"$best_f" "$best_p" "$server" "$4" >>"$BENCH_TSV"
		echo "bench: $BENCH_CONFIG_INNER ($shmem) $1, $c clients: $best_f vs $best_p ops/s" >&2
	done
}

pair "try_lock+unlock, random names" lock_f lock_p 0.95
# fu_f presents token 1000: make sure it was issued (FN004 refuses it otherwise)
q -c "SELECT count(fence.unlock('bench-tokens', fence.try_lock('bench-tokens'))) FROM generate_series(1, 1000)" >/dev/null
pair "fenced_update vs UPDATE" fu_f fu_p 0.90
