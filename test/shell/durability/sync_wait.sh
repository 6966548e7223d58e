#!/usr/bin/env bash
# durability/sync_wait.sh - a wait for a synchronous standby that is
# cancelled, timed out or skipped never yields a token (docs/guarantees.md guarantees 3
# and 8), and a promoted synchronous standby reissues nothing.
#
# A standby streams from the throwaway cluster, named in
# synchronous_standby_names.  The primary is restarted so that its next
# token needs new WAL; the standby's WAL receiver is then stopped (SIGSTOP),
# so that the standby confirms nothing more.  Then:
#   1. statement_timeout ends a try_lock's wait: 57014, no token, nothing
#      held (fence.locks); the same for lease_acquire when present, and for
#      synchronous_commit = remote_write;
#   2. pg_cancel_backend ends a lock()'s wait (seen as wait event SyncRep):
#      57014, nothing held;
#   3. synchronous_commit = local and off: 55000 at once, nothing held;
#   4. the primary is lost, the standby promoted: its tokens beat every token
#      the old primary returned.
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail
. "$(dirname "$0")/../lib/durability.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/standby.sh"

DB=fence_sync_wait
STANDBY=$FENCE_CLUSTER_DIR/sync_standby

qp() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qs() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$SPORT" -d "$DB" "$@"; }
# SQLSTATE of a statement (after SETs), or its value
# "error SQLSTATE" or the value (a WARNING of PostgreSQL's may come first;
# the call's outcome is the last line)
last_outcome() { grep -v -e '^SET$' -e '^WARNING:' | tail -n 1 | sed 's/^ERROR:  /error /'; }
sqlstate() { timeout 60 psql -X -q -At -d "$DB" -v VERBOSITY=sqlstate "$@" 2>&1 | last_outcome || true; }
held() { qp -c "SELECT count(*) FROM fence.locks WHERE name LIKE 'sync/%'"; }

CLEANUP_SERVERS=("$STANDBY")
CLEANUP_REMOVE=("$STANDBY" "$STANDBY.log" "$STANDBY.cancel")

require_streaming
SPORT=$(standby_free_port) || { echo "no free port for the standby"; exit 1; }

fresh_db "$DB"
have_leases=$(qp -c "SELECT pg_catalog.to_regproc('fence.lease_acquire') IS NOT NULL")

standby_make "$STANDBY" "$SPORT" sync_standby
CLEANUP_RESET=(synchronous_standby_names)
psql -X -q -c "ALTER SYSTEM SET synchronous_standby_names = 'sync_standby'"
"$FENCE_CLUSTER_CTL" restart
standby_poll 600 "SELECT 1 FROM pg_catalog.pg_stat_replication
	WHERE application_name = 'sync_standby' AND sync_state = 'sync'" "$PGPORT" >/dev/null ||
	{ echo "the standby did not become synchronous"; exit 1; }
walreceiver=$(standby_walreceiver_pid "$SPORT") || { echo "no WAL receiver on the standby"; exit 1; }
CLEANUP_CONT=("$walreceiver")
kill -STOP "$walreceiver"

returned=()
# 1. statement_timeout ends the wait.
out=$(sqlstate -c "SET statement_timeout = '500ms'" -c "SELECT fence.try_lock('sync/timeout')")
check "try_lock whose synchronous wait times out raises 57014 (got: $out)" "error 57014" "$out"
[[ "$out" =~ ^[0-9]+$ ]] && returned+=("$out")
check "nothing is held after it" 0 "$(held)"
out=$(sqlstate -c "SET statement_timeout = '500ms'" -c "SET synchronous_commit = remote_write" \
	-c "SELECT fence.try_lock('sync/remote-write')")
check "with synchronous_commit = remote_write too (got: $out)" "error 57014" "$out"
[[ "$out" =~ ^[0-9]+$ ]] && returned+=("$out")
if [ "$have_leases" = t ]; then
	out=$(sqlstate -c "SET statement_timeout = '500ms'" -c "SELECT fence.lease_acquire('sync/lease', interval '1 hour')")
	check "lease_acquire whose synchronous wait times out raises 57014 (got: $out)" "error 57014" "$out"
	[[ "$out" =~ ^[0-9]+$ ]] && returned+=("$out")
fi
check "nothing is held after them" 0 "$(held)"

# 2. pg_cancel_backend ends the wait.
timeout 120 psql -X -q -At -d "$DB" -v VERBOSITY=sqlstate -c "SET application_name = 'sync_cancelled'" \
	-c "SELECT fence.lock('sync/cancel')" >"$STANDBY.cancel" 2>&1 &
waiter=$!
standby_poll 600 "SELECT pid FROM pg_catalog.pg_stat_activity
	WHERE application_name = 'sync_cancelled' AND wait_event = 'SyncRep'" "$PGPORT" >/dev/null ||
	{ echo "the lock() call did not wait for the synchronous standby"; exit 1; }
psql -X -q -At -c "SELECT pg_catalog.pg_cancel_backend(pid) FROM pg_catalog.pg_stat_activity
	WHERE application_name = 'sync_cancelled'" >/dev/null
wait "$waiter" || true
out=$(last_outcome <"$STANDBY.cancel")
check "lock() whose synchronous wait is cancelled raises 57014 (got: $out)" "error 57014" "$out"
[[ "$out" =~ ^[0-9]+$ ]] && returned+=("$out")
check "nothing is held after it" 0 "$(held)"

# 3. A session that would skip the wait.
for mode in local off; do
	out=$(sqlstate -c "SET synchronous_commit = $mode" -c "SELECT fence.try_lock('sync/$mode')")
	check "synchronous_commit = $mode raises 55000 (got: $out)" "error 55000" "$out"
	[[ "$out" =~ ^[0-9]+$ ]] && returned+=("$out")
done
check "nothing is held after them" 0 "$(held)"

# 4. Failover: everything the old primary returned loses.
"$FENCE_CLUSTER_CTL" stop-immediate
kill -CONT "$walreceiver"
CLEANUP_CONT=()
standby_promote "$STANDBY" "$SPORT" || { echo "the standby was not promoted"; exit 1; }
next=$(qs -c "SELECT fence.try_lock('sync/after-promote')")
max=0
for t in "${returned[@]}"; do [ "$t" -gt "$max" ] && max=$t; done
check "the promoted standby's first token $next beats every token returned (${returned[*]:-none})" t \
	"$([[ "$next" =~ ^[0-9]+$ ]] && [ "$next" -gt "$max" ] && echo t || echo f)"
exit "$fail"
