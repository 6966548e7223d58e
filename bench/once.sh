#!/usr/bin/env bash
# once.sh - pg_fence's idempotency keys (fence.once_begin + fence.once_finish)
# against a hand-written INSERT ... ON CONFLICT key table with the same
# durability, in one run, interleaved.
#
# Usage (what `make bench` runs):
#   FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/once.sh
#
# One unit of work = a request with a new idempotency key: the key is taken
# (begin), the effect is assumed done, and the response is recorded (finish);
# two statements in autocommit, as a request handler runs them.
#   pg_fence:  SELECT token FROM fence.once_begin(key, '30 s');
#              SELECT fence.once_finish(key, token, '{"ok": true}')
#   by hand:   INSERT INTO once_keys ... VALUES (key, 'in_progress',
#                nextval(...), clock_timestamp() + '30 s')
#              ON CONFLICT (key) DO UPDATE SET token = nextval(...), ...
#                WHERE the old owner's lease has expired
#              RETURNING token;
#              UPDATE once_keys SET state = 'done', response = ...
#                WHERE key = $1 AND token = $2 AND state = 'in_progress'
# Keys are drawn at random from 10^12 (new every time).  pgbench -M prepared,
# every client count, rounds interleaved (order alternating), best kept.
# Target (issue 26): pg_fence ÷ by hand ≥ 0.9.
#
# Environment: BENCH_SECONDS [5], BENCH_ONCE_CLIENTS ["1 8"],
# BENCH_ONCE_ROUNDS [3], BENCH_ONCE_RESULTS [bench/results-once-pgMAJOR.md],
# BENCH_ONCE_NOTE (written under the table).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T=${BENCH_SECONDS:-5}
CLIENTS=${BENCH_ONCE_CLIENTS:-"1 8"}
ROUNDS=${BENCH_ONCE_ROUNDS:-3}
OUT=$HERE/out/once
if [ -z "${FENCE_CLUSTER_DIR:-}" ]; then
	echo "once.sh: run it on a throwaway cluster:" >&2
	echo "  FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/once.sh" >&2
	exit 2
fi
PGBENCH=pgbench
[ -n "${FENCE_PGBIN:-}" ] && [ -x "$FENCE_PGBIN/pgbench" ] && PGBENCH=$FENCE_PGBIN/pgbench
rm -rf "$OUT"
mkdir -p "$OUT"
chmod 755 "$OUT"
ERR=$OUT/errors.log
: >"$ERR"
say() { printf 'bench: %s\n' "$*" >&2; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
MAJOR=$(q -c "SELECT current_setting('server_version_num')::int / 10000")
RESULTS=${BENCH_ONCE_RESULTS:-$HERE/results-once-pg$MAJOR.md}
START_EPOCH=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
SKIPPED=()

q -c "CREATE EXTENSION IF NOT EXISTS pg_fence" >/dev/null
q >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS once_keys;
DROP SEQUENCE IF EXISTS once_token_seq;
CREATE SEQUENCE once_token_seq;
-- What one writes by hand (Stripe-style keys): the key, its state, the
-- owner's token and lease, the fingerprint, the recovery point, the response.
CREATE TABLE once_keys (
	key text PRIMARY KEY,
	state text NOT NULL,
	token bigint NOT NULL,
	owner name NOT NULL DEFAULT current_user,
	fingerprint text,
	step text,
	response jsonb,
	expires_at timestamptz,
	created_at timestamptz NOT NULL DEFAULT now(),
	finished_at timestamptz
);
SQL
cat >"$OUT/fence.sql" <<'SQL'
\set k random(1, 1000000000000)
SELECT token FROM fence.once_begin('key:' || :k, '30 s') \gset
SELECT fence.once_finish('key:' || :k, :token, '{"ok": true}');
SQL
cat >"$OUT/hand.sql" <<'SQL'
\set k random(1, 1000000000000)
INSERT INTO once_keys AS o (key, state, token, expires_at)
  VALUES ('key:' || :k, 'in_progress', nextval('once_token_seq'), clock_timestamp() + interval '30 s')
  ON CONFLICT (key) DO UPDATE SET token = nextval('once_token_seq'), expires_at = excluded.expires_at
  WHERE o.state = 'in_progress' AND o.expires_at <= clock_timestamp()
  RETURNING token \gset
UPDATE once_keys SET state = 'done', response = '{"ok": true}', finished_at = now(), expires_at = NULL
  WHERE key = 'key:' || :k AND token = :token AND state = 'in_progress';
SQL

systems=(hand)
if [ "$(q -c "SELECT to_regprocedure('fence.once_begin(text,interval,text)') IS NOT NULL AND to_regprocedure('fence.once_finish(text,bigint,jsonb)') IS NOT NULL")" != t ]; then
	SKIPPED+=("pg_fence: fence.once_begin(text, interval, text) or fence.once_finish(text, bigint, jsonb) missing")
elif ! "$PGBENCH" -n -M prepared -t 3 -c 1 -f "$OUT/fence.sql" >/dev/null 2>>"$ERR"; then
	SKIPPED+=("pg_fence: the first probe failed: $(grep -m1 -i error "$ERR" || true)")
else
	# the probe's keys: new, taken and finished (the check the bench cannot make itself)
	got=$(q -c "SELECT fence.once_finish('probe', (SELECT token FROM fence.once_begin('probe', '30 s')), '{}')")
	state=$(q -c "SELECT status FROM fence.once_begin('probe', '30 s')")
	[ "$got" = t ] && [ "$state" = done ] || SKIPPED+=("pg_fence: probe: once_finish returned '$got', then once_begin '$state' (expected t, done)")
	systems=(fence hand)
fi

RAW=$OUT/raw.tsv # system clients round tps
: >"$RAW"
for c in $CLIENTS; do
	j=$((c < 2 ? c : 2))
	for ((r = 0; r < ROUNDS; r++)); do
		order=("${systems[@]}")
		if [ $((r % 2)) -eq 1 ] && [ ${#systems[@]} -eq 2 ]; then order=("${systems[1]}" "${systems[0]}"); fi
		for sys in "${order[@]}"; do
			say "once: $c client(s), round $((r + 1))/$ROUNDS: $sys"
			q -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
			if ! out=$("$PGBENCH" -n -M prepared -T "$T" -c "$c" -j "$j" -f "$OUT/$sys.sql" 2>>"$ERR"); then
				say "$sys failed: $(tail -n 3 "$ERR")"
				continue
			fi
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
			printf '%s\t%s\t%s\t%s\n' "$sys" "$c" "$r" "$tps" >>"$RAW"
		done
	done
done
keys_fence=$(q -c "SELECT count(*) FROM fence.once_keys" 2>/dev/null || echo "?")
keys_hand=$(q -c "SELECT count(*) FILTER (WHERE state = 'done') || ' of ' || count(*) FROM once_keys")

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(($(date +%s) - START_EPOCH))
best() { awk -F'\t' -v s="$1" -v c="$2" '$1 == s && $2 == c && $4 > b { b = $4 } END { if (b > 0) printf "%.0f", b }' "$RAW"; }
rounds_of() { awk -F'\t' -v s="$1" -v c="$2" '$1 == s && $2 == c { printf "%s%.0f", sep, $4; sep = ", " }' "$RAW"; }
server=$(q -c "SHOW server_version")
fsync=$(q -c "SHOW fsync")
preload=$(q -c "SHOW shared_preload_libraries")
version=$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")
commit=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "# Idempotency keys: once_begin + once_finish against a hand-written key table"
	echo
	echo "Written by \`bench/once.sh\` (run by \`make bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC') in ${ELAPSED} s."
	echo "How it measures: [README.md](README.md), \"Idempotency keys\"."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| machine | $(nproc) CPUs, $cpu |"
	echo "| load average (1/5/15 min) | before: $LOAD_BEFORE; after: $LOAD_AFTER |"
	echo "| PostgreSQL | $server, fsync $fsync, synchronous_commit on, shared_preload_libraries '$preload' |"
	echo "| pg_fence | $version (commit $commit) |"
	echo "| runs | pgbench -M prepared, ${T} s each, $ROUNDS interleaved rounds per client count, best kept |"
	echo
	echo "One unit = a request with a new key: begin (take the key: token + 30 s lease), then finish (record the response), two statements in autocommit."
	echo
	echo "| clients | pg_fence (units/s) | rounds | by hand, INSERT … ON CONFLICT (units/s) | rounds | ratio | goal | |"
	echo "|---:|---:|---|---:|---|---:|---:|---|"
	for c in $CLIENTS; do
		f=$(best fence "$c")
		h=$(best hand "$c")
		r=$(awk -v a="$f" -v b="$h" 'BEGIN { if (a == "" || b == "") print "—"; else printf "%.2f", a / b }')
		m=$(awk -v r="$r" 'BEGIN { if (r == "—") print "—"; else if (r + 0 >= 0.9) print "met"; else print "**not met**" }')
		echo "| $c | ${f:-—} | $(rounds_of fence "$c") | ${h:-—} | $(rounds_of hand "$c") | $r | ≥ 0.90 | $m |"
	done
	echo
	echo "Keys after the run: fence.once_keys $keys_fence rows; the hand-written table $keys_hand done."
	if [ -n "${BENCH_ONCE_NOTE:-}" ]; then
		echo
		echo "$BENCH_ONCE_NOTE"
	fi
	if [ ${#SKIPPED[@]} -gt 0 ]; then
		echo
		echo "Skipped:"
		for s in "${SKIPPED[@]}"; do echo "* $s"; done
	fi
} >"$RESULTS"
cat "$RESULTS"
