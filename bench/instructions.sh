#!/usr/bin/env bash
# instructions.sh - the guarded INSERT's cost counted in CPU
# instructions (valgrind's callgrind), against the same INSERT into an
# unguarded twin, and the cost of the FN004 check (no forged tokens) in a
# guarded INSERT and in fence.fenced_update: ratios that the machine's load
# and its fsync latency do not move (the pgbench scenarios of bench/run.sh
# move by ±10 % between runs at 1 client).
#
# A throwaway cluster (initdb in a temporary directory, fsync off) is set up
# as bench/run.sh's guard_insert scenario sets up its tables: a log of 1000
# streams guarded with fence.guard(rel, 'fence', ARRAY['stream']), every
# stream's mark at token 5, and an unguarded twin.  Then a single-user
# backend (postgres --single: each statement its own transaction, parsed
# and planned as a simple-protocol query is) runs N and 3N one-row INSERTs
# of a random stream with token 5 (a holder appending again) under
# callgrind, for each table; (Ir(3N) - Ir(N)) / 2N is the instructions of
# one INSERT, without the backend's start and shut-down.  The same for the
# guarded INSERT with fence.require_issued_tokens = off, and for
# fence.fenced_update(..., allow_equal => true) of one of 1000 rows with
# the check on and off, beside the plain UPDATE ... WHERE fence <= token
# it replaces (simple protocol on both sides).
#
# Usage: bash bench/instructions.sh [N]      (default N = 2000)
# Needs valgrind (scripts/install-deps.sh --bench) and an installed pg_fence.
# Prints the instructions of each statement and the ratios (1.0: free; the
# target of scenario 5b, overhead <= 15 %, is a ratio >= 0.87; the FN004
# check's is <= 5 %, a ratio >= 0.95).
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
CREATE TABLE bench.doc (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0);
INSERT INTO bench.doc SELECT g, 0, 0 FROM generate_series(1, 1000) g;
SQL

# statements PREFIX TEMPLATE COUNT: PREFIX, then COUNT statements, each
# TEMPLATE with its %d replaced by a stream (or row) number 1..1000 from a
# fixed LCG
statements() {
	printf '%s\n' "$1"
	awk -v tpl="$2" -v n="$3" 'BEGIN { s = 12345;
		for (i = 0; i < n; i++) { s = (s * 1103515245 + 12345) % 2147483648;
			line = tpl; sub(/%d/, 1 + s % 1000, line); print line } }'
}

# per_statement PREFIX TEMPLATE: callgrind's count of one statement,
# (Ir(3N) - Ir(N)) / 2N
per_statement() {
	local n total a=0
	for n in "$N" $((3 * N)); do
		statements "$1" "$2" "$n" >"$WORK/in.sql"
		chmod 644 "$WORK/in.sql"
		"${as_owner[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$BIN/postgres" --single -D "$WORK/data" postgres <"$WORK/in.sql" >/dev/null 2>"$WORK/vg.log"
		total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/vg.log")
		[ -n "$total" ] || { echo "callgrind failed:" >&2; tail -n 20 "$WORK/vg.log" >&2; exit 1; }
		if [ "$n" -eq "$N" ]; then a=$total; else echo $(((total - a) / (2 * N))); fi
	done
}

OFF="SET fence.require_issued_tokens = off;"
INS="INSERT INTO bench.log_%s (stream, body, fence) VALUES ('stream-%d', 'event', 5);"
FU="SELECT fence.fenced_update('bench.doc', '{\"id\": %d}', 5, '{\"v\": 1}', 'fence', true);"
g=$(per_statement "" "${INS/log_%s/log_g}")
u=$(per_statement "" "${INS/log_%s/log_u}")
g_off=$(per_statement "$OFF" "${INS/log_%s/log_g}")
f=$(per_statement "" "$FU")
f_off=$(per_statement "$OFF" "$FU")
p=$(per_statement "" "UPDATE bench.doc SET v = 1, fence = 5 WHERE id = %d AND fence <= 5;")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
echo "instructions per statement (callgrind, single-user backend, N = $N):"
printf '  %-44s %8d\n' "guarded INSERT" "$g" "unguarded INSERT" "$u" \
	"guarded INSERT, FN004 check off" "$g_off" "fenced_update (same token)" "$f" \
	"fenced_update, FN004 check off" "$f_off" "UPDATE ... WHERE fence <= token" "$p"
echo "ratio guarded INSERT (unguarded / guarded):          $(ratio "$u" "$g")"
echo "ratio guarded INSERT, FN004 check (off / on):        $(ratio "$g_off" "$g")"
echo "ratio fenced_update, FN004 check (off / on):         $(ratio "$f_off" "$f")"
echo "ratio fenced_update (UPDATE / fenced_update):        $(ratio "$p" "$f")"
