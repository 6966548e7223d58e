#!/usr/bin/env bash
# leases/race.sh - 8 sessions hammering one short lease.
#
# Run inside a throwaway cluster:
#   bash scripts/temp-cluster.sh bash test/shell/leases/race.sh
# Each of 8 background psql sessions runs a procedure that, for a bounded
# number of rounds (and at most ~8 s), acquires the lease "race" (TTL
# 200 ms), holds it a few milliseconds (now and then past its TTL, so that
# expired leases are taken over), releases it, and records the grant:
# token, granted_at and the end of the hold (the clock just before a
# successful release, or expires_at when the lease had expired).  Then SQL
# checks, from those intervals, that no two grants overlapped and that
# tokens increase strictly in grant order.
set -euo pipefail

q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "lease_race: FAIL: $*" >&2; exit 1; }
WORKERS=${RACE_WORKERS:-8}
ROUNDS=${RACE_ROUNDS:-400}

q <<'SQL'
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP TABLE IF EXISTS race_grants;
CREATE TABLE race_grants (worker int, token bigint, granted_at timestamptz,
                          end_at timestamptz, released boolean);
CREATE OR REPLACE PROCEDURE race_worker(w int, rounds int)
LANGUAGE plpgsql AS $$
DECLARE
	t bigint;
	g timestamptz;
	e timestamptz;
	before_release timestamptz;
	ok boolean;
	deadline timestamptz := clock_timestamp() + interval '8 s';
BEGIN
	FOR i IN 1..rounds LOOP
		EXIT WHEN clock_timestamp() > deadline;
		t := fence.lease_acquire('race', '200 ms', 'w' || w);
		COMMIT;
		IF t IS NULL THEN
			PERFORM pg_sleep(random() * 0.005);
			CONTINUE;
		END IF;
		SELECT granted_at, expires_at INTO g, e FROM fence.leases
		 WHERE name = 'race' AND token = t;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'granted token % not found in fence.leases', t;
		END IF;
		COMMIT;
		IF random() < 0.05 THEN
			PERFORM pg_sleep(0.25);		-- outlive the TTL
		ELSE
			PERFORM pg_sleep(random() * 0.01);
		END IF;
		before_release := clock_timestamp();
		ok := fence.lease_release('race', t);
		COMMIT;
		INSERT INTO race_grants
		VALUES (w, t, g, CASE WHEN ok THEN before_release ELSE e END, ok);
		COMMIT;
	END LOOP;
END $$;
SQL

pids=()
for w in $(seq 1 "$WORKERS"); do
	q -c "CALL race_worker($w, $ROUNDS)" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
[ "$rc" -eq 0 ] || fail "a worker failed"

read -r total workers released takeovers overlaps nonmono <<<"$(q -F ' ' <<'SQL'
WITH g AS (
	SELECT *,
	       max(end_at) OVER w AS prev_end,
	       max(token) OVER w AS prev_token
	  FROM race_grants
	WINDOW w AS (ORDER BY granted_at, token ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
SELECT count(*), count(DISTINCT worker), count(*) FILTER (WHERE released),
       count(*) FILTER (WHERE NOT released),
       count(*) FILTER (WHERE prev_end > granted_at),
       count(*) FILTER (WHERE prev_token >= token)
  FROM g;
SQL
)"
echo "lease_race: $total grants to $workers workers ($released released, $takeovers expired before release); overlaps: $overlaps; tokens out of order: $nonmono"
[ "$total" -ge 50 ] || fail "too few grants ($total) to mean anything"
[ "$workers" -ge 2 ] || fail "only $workers worker(s) ever got the lease"
[ "$overlaps" -eq 0 ] || fail "two holders at once"
[ "$nonmono" -eq 0 ] || fail "tokens not strictly increasing in grant order"
echo "lease_race: ok"
