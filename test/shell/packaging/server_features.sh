#!/usr/bin/env bash
# packaging/server_features.sh - what pg_fence uses of the server version it runs on,
# and the shared lock registry under churn.
#
#   - fence.shared_memory() is 'preloaded' in the test cluster;
#   - a fence.lock waiting for another session shows in pg_stat_activity as
#     wait event Extension / PgFenceLock on PostgreSQL 17 and later (Lock /
#     advisory before), while pg_locks and pg_blocking_pids() still show the
#     advisory lock wait; likewise a fence.lock_shared (in ShareLock); after
#     the wait the backend's wait event is clear;
#   - on 18 and later, pg_get_loaded_modules() names the library with the
#     control file's version (PG_MODULE_MAGIC_EXT);
#   - the registry behind fence.locks (an open-addressing table) keeps
#     exactly the names held while thousands are granted and released in a
#     scattered order.
# Usage: bash test/shell/packaging/server_features.sh   (inside scripts/temp-cluster.sh)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/check.sh

DB=fence_features
dropdb --if-exists "$DB" >/dev/null 2>&1
createdb "$DB"
export PGDATABASE=$DB
WAITER=
cleanup() {
	[ -n "$WAITER" ] && kill "$WAITER" 2>/dev/null
	wait 2>/dev/null
	dropdb --if-exists "$DB" >/dev/null 2>&1 || true
}
trap cleanup EXIT
q -c 'CREATE EXTENSION pg_fence'

version=$(q -c 'SHOW server_version_num')
version_control=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_fence.control)
check "shared memory" "preloaded" "$(q -c 'SELECT fence.shared_memory()')"

# --- wait event of a waiting fence.lock -------------------------------------
# The holder keeps its session (and the lock) while psql sleeps.
q -c "SELECT fence.lock('feature-wait') > 0" -c 'SELECT pg_sleep(6)' >/dev/null &
HOLDER=$!
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM fence.locks WHERE name = 'feature-wait'")" = 1 ] && break
	sleep 0.05
done
PGAPPNAME=feature_waiter q -c "SELECT fence.lock('feature-wait', '20 s') > 0" >/dev/null 2>&1 &
WAITER=$!
seen=
for _ in $(seq 1 100); do
	seen=$(q -c "SELECT a.wait_event_type || '/' || a.wait_event || ' ' ||
	                    (SELECT count(*) FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted
	                        AND l.locktype = 'advisory') || ' ' ||
	                    (cardinality(pg_blocking_pids(a.pid)) = 1)
	               FROM pg_stat_activity a WHERE a.application_name = 'feature_waiter'
	                AND a.state = 'active'")
	case $seen in */*\ 1\ true) break ;; esac
	sleep 0.05
done
if [ "$version" -ge 170000 ]; then
	check "17+: waiting fence.lock shows Extension/PgFenceLock, still an advisory lock wait" \
		"Extension/PgFenceLock 1 true" "$seen"
else
	check "15/16: waiting fence.lock shows the lock manager's wait" \
		"Lock/advisory 1 true" "$seen"
fi
wait "$HOLDER"
wait "$WAITER"
rc=$?
WAITER=
check "the waiter got the lock when the holder left" "0" "$rc"

# the same for a fence.lock_shared waiting for an exclusive holder
q -c "SELECT fence.lock('feature-wait-sh') > 0" -c 'SELECT pg_sleep(4)' >/dev/null &
HOLDER=$!
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM fence.locks WHERE name = 'feature-wait-sh'")" = 1 ] && break
	sleep 0.05
done
PGAPPNAME=feature_waiter_sh q -c "SELECT fence.lock_shared('feature-wait-sh', '20 s') > 0" >/dev/null 2>&1 &
WAITER=$!
seen=
for _ in $(seq 1 100); do
	seen=$(q -c "SELECT a.wait_event_type || '/' || a.wait_event || ' ' ||
	                    (SELECT l.mode FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted
	                        AND l.locktype = 'advisory') || ' ' ||
	                    (cardinality(pg_blocking_pids(a.pid)) = 1)
	               FROM pg_stat_activity a WHERE a.application_name = 'feature_waiter_sh'
	                AND a.state = 'active'")
	case $seen in */*\ ShareLock\ true) break ;; esac
	sleep 0.05
done
if [ "$version" -ge 170000 ]; then
	check "17+: waiting fence.lock_shared shows Extension/PgFenceLock, a ShareLock advisory wait" \
		"Extension/PgFenceLock ShareLock true" "$seen"
else
	check "15/16: waiting fence.lock_shared shows the lock manager's wait, in ShareLock" \
		"Lock/advisory ShareLock true" "$seen"
fi
wait "$HOLDER"
wait "$WAITER"
rc=$?
WAITER=
check "the shared waiter got the lock when the holder left" "0" "$rc"

# after a wait that ended in an error, the backend's wait event is clear
out=$(q -c "SELECT fence.lock('feature-wait2') > 0" -c 'SELECT pg_sleep(3)' >/dev/null &
	sleep 1
	q -c '\set ON_ERROR_STOP 0' -c '\set VERBOSITY sqlstate' \
		-c "SELECT fence.lock('feature-wait2', '200 ms')" \
		-c "SELECT coalesce(wait_event_type, '-') || '/' || coalesce(wait_event, '-')
		      FROM pg_stat_activity WHERE pid = pg_backend_pid()" 2>&1
	wait)
check "after a timed-out wait: 55P03 and no wait event left" "ERROR:  55P03
-/-" "$out"

# --- module magic -----------------------------------------------------------
if [ "$version" -ge 180000 ]; then
	check "18+: pg_get_loaded_modules() names pg_fence with its version" \
		"pg_fence|$version_control" \
		"$(q -c "SELECT fence.shared_memory() IS NOT NULL" \
		     -c "SELECT module_name || '|' || version FROM pg_get_loaded_modules()
		          WHERE file_name = 'pg_fence.so'" | tail -n 1)"
fi

# --- registry churn ---------------------------------------------------------
# One session takes 3000 names, releases a scattered two thirds of them, takes
# 1000 more and releases some of those: the registry must list exactly the
# names still held (each once), with their tokens.
out=$(q <<'SQL'
CREATE TEMP TABLE held (name text PRIMARY KEY, token bigint);
INSERT INTO held SELECT 'churn-' || i, fence.try_lock('churn-' || i) FROM generate_series(1, 3000) i;
SELECT count(*) FILTER (WHERE fence.unlock(name, token)) FROM held WHERE hashtext(name) % 3 <> 0;
DELETE FROM held WHERE hashtext(name) % 3 <> 0;
INSERT INTO held SELECT 'churn2-' || i, fence.try_lock('churn2-' || i) FROM generate_series(1, 1000) i;
SELECT count(*) FILTER (WHERE fence.unlock(name, token)) FROM held WHERE name LIKE 'churn2-%' AND hashtext(name) % 2 = 0;
DELETE FROM held WHERE name LIKE 'churn2-%' AND hashtext(name) % 2 = 0;
SELECT (SELECT count(*) FROM held) = (SELECT count(*) FROM fence.held_locks() WHERE pid = pg_backend_pid());
SELECT count(*) FROM held h FULL JOIN (SELECT * FROM fence.held_locks() WHERE pid = pg_backend_pid()) r
    ON r.name = h.name AND r.token = h.token
 WHERE h.name IS NULL OR r.name IS NULL;
SELECT fence.unlock_all() = (SELECT count(*) FROM held);
SELECT count(*) FROM fence.held_locks() WHERE pid = pg_backend_pid();
SQL
)
expected_unlocked=$(q -c "SELECT count(*) FROM generate_series(1, 3000) i WHERE hashtext('churn-' || i) % 3 <> 0")
expected_unlocked2=$(q -c "SELECT count(*) FROM generate_series(1, 1000) i WHERE hashtext('churn2-' || i) % 2 = 0")
check "registry keeps exactly the held names through churn" "$expected_unlocked
$expected_unlocked2
t
0
t
0" "$out"

exit $fail
