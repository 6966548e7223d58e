#!/usr/bin/env bash
# lock_bench.sh - pg_fence's connection-bound locks and fenced_update against
# the plain SQL that does the same work, in the same run, with pgbench.
#
#   (a) fence.try_lock + fence.unlock
#       vs pg_try_advisory_lock + nextval, then pg_advisory_unlock
#   (b) fence.fenced_update
#       vs a hand-written prepared UPDATE ... WHERE id = $1 AND fence <= $2
#
# Runs inside a throwaway cluster:
#   bash scripts/temp-cluster.sh bash bench/lock_bench.sh
# BENCH_SECONDS (default 5) per run; BENCH_CLIENTS (default "1 8").
# Prints one line per scenario with both throughputs and their ratio
# (pg_fence / plain): above 1.0 means pg_fence is faster.
set -euo pipefail

SECONDS_PER_RUN=${BENCH_SECONDS:-5}
CLIENTS=${BENCH_CLIENTS:-"1 8"}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP TABLE IF EXISTS bench_doc;
CREATE TABLE bench_doc (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO bench_doc SELECT g, 'x', 0 FROM generate_series(1, 1000) g;
DROP SEQUENCE IF EXISTS bench_plain_seq;
CREATE SEQUENCE bench_plain_seq CACHE 1;
VACUUM ANALYZE bench_doc;
SQL

cat >"$DIR/fence_lock.sql" <<'EOF2'
\set id random(1, 10000000)
SELECT fence.try_lock('k' || :id) AS tok \gset
SELECT fence.unlock('k' || :id, :tok);
EOF2
cat >"$DIR/plain_lock.sql" <<'EOF2'
\set id random(1, 10000000)
SELECT pg_try_advisory_lock(:id), nextval('bench_plain_seq') AS tok \gset
SELECT pg_advisory_unlock(:id);
EOF2
cat >"$DIR/fence_update.sql" <<'EOF2'
\set id random(1, 1000)
SELECT fence.fenced_update('bench_doc', jsonb_build_object('id', :id::int), 1000, '{"body": "y"}', 'fence', true);
EOF2
cat >"$DIR/plain_update.sql" <<'EOF2'
\set id random(1, 1000)
UPDATE bench_doc SET body = 'y', fence = 1000 WHERE id = :id AND fence <= 1000;
EOF2

tps() {
	pgbench -n -M prepared -T "$SECONDS_PER_RUN" -c "$2" -j "$2" -f "$DIR/$1.sql" 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1
}

printf '%-34s %8s %12s %12s %7s\n' scenario clients pg_fence plain ratio
for c in $CLIENTS; do
	for pair in lock update; do
		# interleave: plain, fence, plain, fence; take the better of each
		p1=$(tps "plain_$pair" "$c"); f1=$(tps "fence_$pair" "$c")
		p2=$(tps "plain_$pair" "$c"); f2=$(tps "fence_$pair" "$c")
		p=$(echo "$p1 $p2" | awk '{print ($1>$2)?$1:$2}')
		f=$(echo "$f1 $f2" | awk '{print ($1>$2)?$1:$2}')
		case $pair in
			lock) name="try_lock+unlock (random names)" ;;
			update) name="fenced_update vs UPDATE" ;;
		esac
		printf '%-34s %8s %12.0f %12.0f %7.2f\n' "$name" "$c" "$f" "$p" \
			"$(echo "$f $p" | awk '{printf "%.3f", $1/$2}')"
	done
done
