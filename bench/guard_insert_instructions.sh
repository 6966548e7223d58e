#!/usr/bin/env bash
# guard_insert_instructions.sh - the guarded INSERT's cost counted in CPU
# instructions (valgrind's callgrind), against the same INSERT into an
# unguarded twin: a ratio that the machine's load and its fsync latency do
# not move (the pgbench scenario guard_insert of bench/run.sh moves by ±10 %
# between runs at 1 client).
#
# A throwaway cluster (initdb in a temporary directory, fsync off) is set up
# as bench/run.sh's guard_insert scenario sets up its tables: a log of 1000
# streams guarded with fence.guard(rel, 'fence', ARRAY['stream']), every
# stream's mark at token 5, and an unguarded twin.  Then a single-user
# backend (postgres --single: each statement its own transaction, parsed
# and planned as a simple-protocol query is) runs N and 3N one-row INSERTs
# of a random stream with token 5 (a holder appending again) under
# callgrind, for each table; (Ir(3N) - Ir(N)) / 2N is the instructions of
# one INSERT, without the backend's start and shut-down.
#
# Usage: bash bench/guard_insert_instructions.sh [N]      (default N = 2000)
# Needs valgrind (scripts/install-deps.sh --bench) and an installed pg_fence.
# Prints one line per table and the ratio unguarded / guarded (1.0: free;
# the target of scenario 5b, overhead <= 15 %, is a ratio >= 0.87).
set -euo pipefail

N=${1:-2000}
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$("$PG_CONFIG" --bindir)
command -v valgrind >/dev/null || { echo "valgrind is missing: scripts/install-deps.sh --bench" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_instr.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
	chown postgres "$WORK"
	as_owner=(runuser -u postgres --)
fi

"${as_owner[@]}" "$BIN/initdb" -D "$WORK/data" -A trust >"$WORK/initdb.log" 2>&1
printf "shared_preload_libraries = 'pg_fence'\nfsync = off\n" >>"$WORK/data/postgresql.conf"

single() { "${as_owner[@]}" "$BIN/postgres" --single -D "$WORK/data" postgres; }

single >"$WORK/setup.log" 2>&1 <<'SQL'
CREATE EXTENSION pg_fence;
CREATE SCHEMA bench;
CREATE TABLE bench.log_g (id bigserial PRIMARY KEY, stream text NOT NULL, body text, fence bigint NOT NULL DEFAULT 0);
CREATE TABLE bench.log_u (LIKE bench.log_g INCLUDING ALL);
SELECT fence.guard('bench.log_g', 'fence', ARRAY['stream']);
SELECT count(fence.unlock('bench-tokens', fence.try_lock('bench-tokens'))) FROM generate_series(1, 5);
INSERT INTO bench.log_g (stream, body, fence) SELECT 'stream-' || g, 'first', 5 FROM generate_series(1, 1000) g;
INSERT INTO bench.log_u (stream, body, fence) SELECT 'stream-' || g, 'first', 5 FROM generate_series(1, 1000) g;
SQL

# inserts TABLE COUNT: COUNT one-row INSERTs, streams from a fixed LCG
inserts() {
	awk -v t="$1" -v n="$2" 'BEGIN { s = 12345;
		for (i = 0; i < n; i++) { s = (s * 1103515245 + 12345) % 2147483648;
			printf "INSERT INTO bench.log_%s (stream, body, fence) VALUES ('"'"'stream-%d'"'"', '"'"'event'"'"', 5);\n", t, 1 + s % 1000 } }'
}

# instructions TABLE COUNT: callgrind's total for a backend running the INSERTs
instructions() {
	inserts "$1" "$2" >"$WORK/in.sql"
	chmod 644 "$WORK/in.sql"
	"${as_owner[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$BIN/postgres" --single -D "$WORK/data" postgres <"$WORK/in.sql" >/dev/null 2>"$WORK/vg.log"
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/vg.log"
}

declare -A per
for t in g u; do
	a=$(instructions "$t" "$N")
	b=$(instructions "$t" $((3 * N)))
	per[$t]=$(( (b - a) / (2 * N) ))
done
echo "guarded INSERT:   ${per[g]} instructions"
echo "unguarded INSERT: ${per[u]} instructions"
awk -v g="${per[g]}" -v u="${per[u]}" 'BEGIN { printf "ratio (unguarded / guarded): %.3f\n", u / g }'
