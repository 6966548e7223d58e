#!/usr/bin/env bash
# observability/prometheus_exporter.sh - the shipped exporter configuration,
# for real: Debian's prometheus-postgres-exporter (a process of this test's
# own, on a free loopback port, never the packaged service nor port 9187)
# runs monitoring/postgres_exporter/queries.yaml against this cluster as an
# unprivileged role; after a scripted workload, /metrics must show exactly
# the counts of that workload, the gauges of what is held and waiting right
# now, Prometheus' types and help texts, and no per-name label.
# Usage: bash scripts/temp-cluster.sh bash test/shell/observability/prometheus_exporter.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source test/shell/lib/check.sh

EXPORTER=$(command -v prometheus-postgres-exporter || true)
if [ -z "$EXPORTER" ] || ! command -v curl >/dev/null; then
	# scripts/install-deps.sh installs both: missing means a broken setup
	echo "not ok - prometheus-postgres-exporter and curl are installed (scripts/install-deps.sh)"
	exit 1
fi

DB=prom_$$
T=$(mktemp -d)
EXPORTER_PID=
cleanup() {
	[ -n "$EXPORTER_PID" ] && kill "$EXPORTER_PID" 2>/dev/null && wait "$EXPORTER_PID" 2>/dev/null
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	dropdb --if-exists --force "$DB" 2>/dev/null
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS prom_reader" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

createdb "$DB" || exit 1
export PGDATABASE=$DB
q -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION pg_fence' \
	-c 'CREATE ROLE prom_reader LOGIN' || exit 1

# --- the workload -----------------------------------------------------------
before=$(q -c "SELECT extract(epoch FROM clock_timestamp())")
q -c "SELECT fence.stats_reset()" >/dev/null
after=$(q -c "SELECT extract(epoch FROM clock_timestamp())")

# a session holding two locks (2 session grants) until the end
psql -X -q -c "SELECT fence.try_lock('held-1'), fence.try_lock('held-2')" \
	-c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM fence.locks WHERE kind = 'session'")" = 2 ] && break
	sleep 0.1
done
# busy, and a wait that times out (a wait, a timeout, >= 0.2 s waited)
q -c "SELECT fence.try_lock('held-1') IS NULL" >/dev/null
psql -X -q -c "SELECT fence.lock('held-2', '200ms')" >/dev/null 2>&1
# transaction locks: one waited-for-nothing grant and one try (2 xact grants)
q -c "BEGIN" -c "SELECT fence.xact_lock('x-1', '1s'), fence.try_xact_lock('x-2')" -c "COMMIT" >/dev/null
# leases: five grants (one a takeover), two renewals, one release, one late
# renewal (an expiration), one lease left expired
q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT fence.lease_acquire('l-live', '1 hour', 'w1') AS t \gset
SELECT fence.lease_renew('l-live', :t, '1 hour'), fence.lease_renew('l-live', :t, '1 hour');
SELECT fence.lease_acquire('l-rel', '1 hour', 'w1') AS t \gset
SELECT fence.lease_release('l-rel', :t);
SELECT fence.lease_acquire('l-exp', '10 ms', 'w1') AS t \gset
SELECT fence.lease_acquire('l-dead', '10 ms', 'w1');
SELECT pg_sleep(0.05);
SELECT fence.lease_renew('l-exp', :t, '1 hour');
SELECT fence.lease_acquire('l-exp', '1 hour', 'w2');
SQL
# stale writes: fenced_update false, guard FN001; a missing token: FN003
q -c "CREATE TABLE acct (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0)" \
	-c "INSERT INTO acct VALUES (1, 0, 10)" \
	-c "SELECT fence.fenced_update('acct', '{\"id\": 1}', 5, '{\"v\": 1}')" \
	-c "SELECT fence.guard('acct')" >/dev/null
psql -X -q -c "UPDATE acct SET v = 2, fence = 3" >/dev/null 2>&1
psql -X -q -c "UPDATE acct SET v = 2" >/dev/null 2>&1
# the job queue, as the exporter's own role (a plain role counts its own
# roles' jobs; pg_monitor members count every role's): 4 runnable and 1
# scheduled enqueued, 2 claimed, 1 of them completed, 1 runnable cancelled
q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET ROLE prom_reader;
SELECT fence.enqueue('mail', '{}') FROM generate_series(1, 4);
SELECT fence.enqueue('mail', '{}', run_at => clock_timestamp() + interval '1 hour');
CREATE TEMP TABLE c AS SELECT * FROM fence.claim('mail', '1 hour', 2);
SELECT fence.complete(job_id, token) FROM c ORDER BY job_id LIMIT 1;
SELECT fence.cancel(max(id)) FROM fence.jobs WHERE state = 'queued' AND run_at <= clock_timestamp();
SQL
# a waiter, still waiting at the scrape (its wait is not counted yet)
psql -X -q -c "SELECT fence.lock('held-1')" >/dev/null 2>&1 &
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM fence.waiters WHERE wait_started IS NOT NULL")" = 1 ] && break
	sleep 0.1
done
sleep 0.3

# --- the exporter -------------------------------------------------------------
port_in_use() { grep -q "$(printf ':%04X ' "$1")" /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
PORT=
for _ in $(seq 1 100); do
	c=$((20000 + RANDOM % 40000))
	[ "$c" -eq 9187 ] || [ "$c" -eq 5432 ] || port_in_use "$c" || { PORT=$c; break; }
done
[ -n "$PORT" ] || { echo "not ok - a free loopback port"; exit 1; }

DATA_SOURCE_NAME="host=$PGHOST port=$PGPORT user=prom_reader dbname=$DB sslmode=disable" \
	"$EXPORTER" --web.listen-address="127.0.0.1:$PORT" \
	--extend.query-path="$PWD/monitoring/postgres_exporter/queries.yaml" \
	--disable-default-metrics --disable-settings-metrics --log.level=warn \
	>"$T/exporter.log" 2>&1 &
EXPORTER_PID=$!
scrape=
for _ in $(seq 1 100); do
	if curl -sf "http://127.0.0.1:$PORT/metrics" >"$T/metrics" 2>/dev/null &&
		grep -q '^pg_fence_grants_total' "$T/metrics"; then
		scrape=ok
		break
	fi
	kill -0 "$EXPORTER_PID" 2>/dev/null || break
	sleep 0.1
done
check "the exporter answers on 127.0.0.1:$PORT with pg_fence metrics" "ok" "$scrape"
if [ "$scrape" != ok ]; then
	echo "exporter log:"; cat "$T/exporter.log"
	exit 1
fi

# Samples as "name{labels} value" with the exporter's own "server" label
# (added by older versions) removed, pg_fence's only.
samples() {
	grep '^pg_fence_' "$T/metrics" |
		sed -E 's/server="[^"]*",?//; s/,\}/}/; s/\{\}//' | sort
}
value() { samples | awk -v m="$1" '$1 == m { print $2 }'; }

check "counters and gauges after the workload" \
	"pg_fence_busy_total 1
pg_fence_expired_leases 1
pg_fence_grants_total{kind=\"lease\"} 5
pg_fence_grants_total{kind=\"session\"} 2
pg_fence_grants_total{kind=\"xact\"} 2
pg_fence_held_locks{kind=\"lease\"} 2
pg_fence_held_locks{kind=\"semaphore\"} 0
pg_fence_held_locks{kind=\"session\"} 2
pg_fence_held_locks{kind=\"shared\"} 0
pg_fence_held_locks{kind=\"xact\"} 0
pg_fence_lease_expirations_total 1
pg_fence_lease_takeovers_total 1
pg_fence_missing_tokens_total 1
pg_fence_queue_cancelled{queue=\"mail\"} 1
pg_fence_queue_completed{queue=\"mail\"} 1
pg_fence_queue_failed{queue=\"mail\"} 0
pg_fence_queue_runnable{queue=\"mail\"} 1
pg_fence_queue_running{queue=\"mail\"} 1
pg_fence_queue_scheduled{queue=\"mail\"} 1
pg_fence_releases_total 1
pg_fence_renewals_total 2
pg_fence_stale_writes_rejected_total 2
pg_fence_timeouts_total 1
pg_fence_waiters 1
pg_fence_waits_total 1" \
	"$(samples | grep -v -E '^pg_fence_(wait_seconds_total|wait_max_seconds|longest_wait_seconds|stats_reset_timestamp_seconds|queue_oldest_runnable_age_seconds[^ ]*) ')"

ge() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 >= b + 0) ? "yes" : "no: " a " < " b }'; }
check "wait_seconds_total >= 0.2 (the timed-out wait)" yes "$(ge "$(value pg_fence_wait_seconds_total)" 0.2)"
check "wait_max_seconds >= 0.2" yes "$(ge "$(value pg_fence_wait_max_seconds)" 0.2)"
check "wait_max_seconds <= wait_seconds_total" yes \
	"$(ge "$(value pg_fence_wait_seconds_total)" "$(value pg_fence_wait_max_seconds)")"
check "longest_wait_seconds >= 0.3 (the waiter still waiting)" yes "$(ge "$(value pg_fence_longest_wait_seconds)" 0.3)"
reset=$(value pg_fence_stats_reset_timestamp_seconds)
check "stats_reset_timestamp_seconds is the time of fence.stats_reset()" "yes yes" \
	"$(ge "$reset" "$before") $(ge "$after" "$reset")"

# Prometheus conventions: _total names are counters, the rest gauges, each
# with a help text; no lock name ever becomes a label
types=$(grep '^# TYPE pg_fence_' "$T/metrics" | awk '{ print $3, $4 }' | sort)
bad=$(echo "$types" | awk '($1 ~ /_total$/) != ($2 == "counter") { print }')
check "every pg_fence_*_total is a counter and every other one a gauge" "" "$bad"
check "queue_oldest_runnable_age_seconds > 0 (the runnable job)" yes \
	"$(ge "$(value 'pg_fence_queue_oldest_runnable_age_seconds{queue="mail"}')" 0.000001)"
check "24 pg_fence metrics, each with a help text" "24 24" \
	"$(echo "$types" | wc -l) $(grep -c '^# HELP pg_fence_' "$T/metrics")"
check "no per-name labels" "" "$(samples | grep -E 'held-|l-live|name=' || true)"
check "no per-job labels" "" "$(samples | grep -E 'job|token=' || true)"

# a reset shows at the next scrape: counters back to zero, a new timestamp
q -c "SELECT fence.stats_reset()" >/dev/null
sleep 0.1
curl -sf "http://127.0.0.1:$PORT/metrics" >"$T/metrics"
check "after fence.stats_reset(): counters zero" \
	"pg_fence_busy_total 0
pg_fence_grants_total{kind=\"session\"} 0
pg_fence_stale_writes_rejected_total 0" \
	"$(samples | grep -E '^pg_fence_(busy_total|grants_total\{kind="session"\}|stale_writes_rejected_total) ')"
check "after fence.stats_reset(): a later stats_reset timestamp" yes \
	"$(ge "$(value pg_fence_stats_reset_timestamp_seconds)" "$after")"
exit $fail
