#!/usr/bin/env bash
# lease_bench.sh - pg_fence leases against the best plain-SQL lease, with pgbench.
#
#   pg_fence: fence.lease_acquire(name, '10 s') then fence.lease_release(name, token)
#   plain:    INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE expired
#             RETURNING token (token from nextval), then DELETE ... WHERE token
#
# each on random names (uncontended) and on 4 hot names, at 1 and 8 clients.
# A busy acquire (NULL / no row) skips the release in both.  Runs inside a
# throwaway cluster, with fsync on (both lease kinds commit durably):
#   FENCE_FSYNC=on bash scripts/temp-cluster.sh bash bench/lease_bench.sh
# BENCH_SECONDS (default 5) per run; BENCH_CLIENTS (default "1 8").
# Prints one line per scenario with both throughputs (acquire+release
# cycles per second, busy attempts included) and the ratio pg_fence / plain.
set -euo pipefail

SECONDS_PER_RUN=${BENCH_SECONDS:-5}
CLIENTS=${BENCH_CLIENTS:-"1 8"}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP TABLE IF EXISTS bench_lease;
CREATE TABLE bench_lease (name text PRIMARY KEY, token bigint NOT NULL, holder text,
                          owner oid NOT NULL, granted_at timestamptz NOT NULL,
                          expires_at timestamptz NOT NULL);
DROP SEQUENCE IF EXISTS bench_lease_seq;
CREATE SEQUENCE bench_lease_seq CACHE 1;
SQL
echo "fsync = $(psql -X -qAt -c 'SHOW fsync'), synchronous_commit = $(psql -X -qAt -c 'SHOW synchronous_commit')"

for kind in random hot; do
	if [ "$kind" = random ]; then range=10000000; else range=4; fi
	cat >"$DIR/fence_$kind.sql" <<EOF2
\set id random(1, $range)
SELECT coalesce(fence.lease_acquire('$kind' || :id, '10 s'), 0) AS tok \gset
\if :tok > 0
SELECT fence.lease_release('$kind' || :id, :tok);
\endif
EOF2
	cat >"$DIR/plain_$kind.sql" <<EOF2
\set id random(1, $range)
WITH g AS (
  INSERT INTO bench_lease AS l (name, token, holder, owner, granted_at, expires_at)
  VALUES ('$kind' || :id, nextval('bench_lease_seq'), NULL, 10,
          clock_timestamp(), clock_timestamp() + interval '10 s')
  ON CONFLICT (name) DO UPDATE
     SET token = EXCLUDED.token, holder = EXCLUDED.holder, owner = EXCLUDED.owner,
         granted_at = EXCLUDED.granted_at, expires_at = EXCLUDED.expires_at
   WHERE l.expires_at <= clock_timestamp()
  RETURNING token)
SELECT coalesce((SELECT token FROM g), 0) AS tok \gset
\if :tok > 0
DELETE FROM bench_lease WHERE name = '$kind' || :id AND token = :tok;
\endif
EOF2
done

# Grants so far: rows inserted or taken over (ON CONFLICT DO UPDATE) in a table.
grants() {
	sleep 0.5	# exiting backends flush their table counters
	psql -X -qAt -c "SELECT n_tup_ins + n_tup_upd FROM pg_stat_all_tables WHERE relid = '$1'::regclass"
}

# tps of one run; sets GRANTS_PER_S from the table's counters
tps() {
	local table=$3 before after out
	before=$(grants "$table")
	out=$(pgbench -n -M prepared -T "$SECONDS_PER_RUN" -c "$2" -j "$2" -f "$DIR/$1.sql" 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1)
	after=$(grants "$table")
	GRANTS_PER_S=$(echo "$before $after $SECONDS_PER_RUN" | awk '{printf "%.0f", ($2-$1)/$3}')
	TPS=$out
}

echo "cycles/s: acquire attempts (with the release when granted) per second; grants/s: leases granted per second"
printf '%-34s %8s %12s %12s %7s %10s %10s\n' scenario clients pg_fence plain ratio \
	fence_gr/s plain_gr/s
for c in $CLIENTS; do
	for kind in random hot; do
		tps "plain_$kind" "$c" bench_lease; p=$TPS; pg=$GRANTS_PER_S
		tps "fence_$kind" "$c" fence.leases; f=$TPS; fg=$GRANTS_PER_S
		case $kind in
			random) name="lease acquire+release (random)" ;;
			hot) name="lease acquire+release (4 hot)" ;;
		esac
		printf '%-34s %8s %12.0f %12.0f %7.2f %10s %10s\n' "$name" "$c" "$f" "$p" \
			"$(echo "$f $p" | awk '{printf "%.3f", $1/$2}')" "$fg" "$pg"
	done
done
