#!/usr/bin/env bash
# durability/standby_promote.sh - no grants on a standby, and no token reissued after a
# streaming standby is promoted (docs/guarantees.md guarantees 3 and 10).
#
# Makes a streaming standby of the throwaway cluster with pg_basebackup (as
# the cluster's OS user), starts it on another port, and checks:
#   1. every lock function (and lease_acquire, campaign and resign, when
#      present) raises 25006 read_only_sql_transaction on the standby, while
#      fence.leader, which only reads, reports the leader elected on the
#      primary;
#   2. after tokens are handed out on the primary (committed, in a
#      transaction that rolls back, with synchronous_commit = off; with
#      wal_writer_delay = 10s) and the standby has replayed the WAL the
#      primary has flushed, the primary is stopped immediately, the standby
#      promoted, and fence.try_lock there returns a token greater than every
#      token seen.
# The standby is removed and the primary started again on exit.
#
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail

: "${FENCE_CLUSTER_CTL:?run this under scripts/temp-cluster.sh}"
: "${FENCE_PGBIN:?run this under scripts/temp-cluster.sh}"
DB=fence_standby
AS_OWNER=${FENCE_AS_OWNER:-}
SOCKDIR=$PGHOST
STANDBY=${FENCE_CLUSTER_DIR:-$(dirname "$PGDATA")}/standby
STANDBY_LOG=$STANDBY.log

# standby_free_port (the standbys' helpers, shared with the failover tests)
. "$(dirname "$0")/../lib/standby.sh"

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qs() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$SPORT" -d "$DB" "$@"; }
server_up() { psql -X -q -d postgres -c 'SELECT 1' >/dev/null 2>&1; }

cleanup() {
	local rc=$?
	trap - EXIT
	if [ -f "$STANDBY/postmaster.pid" ]; then
		$AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$STANDBY" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ "$rc" -ne 0 ] && [ -f "$STANDBY_LOG" ]; then
		echo "standby log (last lines):"
		tail -n 20 "$STANDBY_LOG" || true
	fi
	rm -rf "$STANDBY" "$STANDBY_LOG"
	server_up || "$FENCE_CLUSTER_CTL" start || true
	if [ -n "$reset_conf" ]; then
		psql -X -q -c 'ALTER SYSTEM RESET wal_writer_delay' && "$FENCE_CLUSTER_CTL" restart || true
	fi
	dropdb --if-exists "$DB" >/dev/null 2>&1 || true
	exit "$rc"
}
reset_conf=
trap cleanup EXIT

SPORT=$(standby_free_port) || { echo "no free port for the standby"; exit 1; }

[ "$(psql -X -At -c 'SHOW wal_level')" != minimal ] || { echo "wal_level = minimal: no streaming replication"; exit 77; }

dropdb --if-exists "$DB"
createdb "$DB"
q -c 'CREATE EXTENSION pg_fence'
before_backup=$(q -c "SELECT fence.try_lock('standby/before-backup')")
has_elections=$(q -c "SELECT pg_catalog.to_regproc('fence.campaign') IS NOT NULL")
if [ "$has_elections" = t ]; then
	term=$(q -c "SELECT fence.campaign('standby/leader', 'node-p', interval '1 hour')")
fi

reset_conf=1
psql -X -q -c "ALTER SYSTEM SET wal_writer_delay = '10s'"
"$FENCE_CLUSTER_CTL" restart

# Replication connections over the Unix socket, trusted like the others.
if ! grep -q '^local[[:space:]]\+replication[[:space:]]' "$PGDATA/pg_hba.conf"; then
	echo 'local replication all trust' | $AS_OWNER tee -a "$PGDATA/pg_hba.conf" >/dev/null
	psql -X -q -c 'SELECT pg_catalog.pg_reload_conf()' >/dev/null
fi

rm -rf "$STANDBY" "$STANDBY_LOG"
$AS_OWNER "$FENCE_PGBIN/pg_basebackup" -D "$STANDBY" -h "$SOCKDIR" -p "$PGPORT" -U postgres \
	--write-recovery-conf --wal-method=stream --checkpoint=fast --no-sync
$AS_OWNER tee -a "$STANDBY/postgresql.conf" >/dev/null <<CONF
# standby of the pg_fence throwaway cluster
port = $SPORT
hot_standby = on
CONF
$AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$STANDBY" -l "$STANDBY_LOG" -w -t 60 start >/dev/null

fail=0
[ "$(qs -c 'SELECT pg_catalog.pg_is_in_recovery()')" = t ] || { echo "the standby is not in recovery"; exit 1; }

# 1. No grants on a standby.
calls=("fence.try_lock('standby/x')" "fence.lock('standby/x')"
	"fence.lock('standby/x', interval '1 second')"
	"fence.try_xact_lock('standby/x')" "fence.xact_lock('standby/x')")
if [ "$(qs -c "SELECT pg_catalog.to_regproc('fence.lease_acquire') IS NOT NULL")" = t ]; then
	calls+=("fence.lease_acquire('standby/x', interval '1 minute')")
fi
if [ "$(qs -c "SELECT pg_catalog.to_regproc('fence.lock_shared') IS NOT NULL")" = t ]; then
	calls+=("fence.try_lock_shared('standby/x')" "fence.lock_shared('standby/x')"
		"fence.lock_shared('standby/x', interval '1 second')")
fi
if [ "$has_elections" = t ]; then
	calls+=("fence.campaign('standby/x', 'node-s', interval '1 minute')"
		"fence.campaign('standby/x', 'node-s', interval '1 minute', interval '1 second')"
		"fence.resign('standby/leader', $term)")
fi
for call in "${calls[@]}"; do
	out=$(psql -X -q -At -p "$SPORT" -d "$DB" -v VERBOSITY=sqlstate -c "SELECT $call" 2>&1 || true)
	if [ "$out" = "ERROR:  25006" ]; then
		echo "standby: $call raises 25006: ok"
	else
		echo "FAILED: standby: SELECT $call gave '$out', expected ERROR 25006"
		fail=1
	fi
done

# leader() only reads: allowed on the standby, showing the primary's leader
if [ "$has_elections" = t ]; then
	out=$(qs -c "SELECT candidate || ' ' || term FROM fence.leader('standby/leader')" 2>&1 || true)
	if [ "$out" = "node-p $term" ]; then
		echo "standby: fence.leader reports the primary's leader: ok"
	else
		echo "FAILED: standby: fence.leader('standby/leader') gave '$out', expected 'node-p $term'"
		fail=1
	fi
fi

# 2. Tokens on the primary, then failover.  After a checkpoint the token
# sequence writes a new WAL record at its next value, so the token handed out
# in the rolled-back transaction is covered by a record nothing but pg_fence
# flushes (no commit, and the WAL writer waits 10 s), and the standby only
# receives flushed WAL.
tokens=("$before_backup" "$(q -c "SELECT fence.try_lock('standby/committed')")")
q -c CHECKPOINT
tokens+=("$(q -c BEGIN -c "SELECT fence.try_lock('standby/rolled-back')" -c ROLLBACK)")
tokens+=("$(q -c 'SET synchronous_commit = off' -c "SELECT fence.try_lock('standby/async')")")
max=0
for t in "${tokens[@]}"; do
	[[ "$t" =~ ^[0-9]+$ ]] || { echo "not a token: '$t'"; exit 1; }
	[ "$t" -gt "$max" ] && max=$t
done
# What the primary has made durable is what a standby can have received.
flushed=$(psql -X -At -c 'SELECT pg_catalog.pg_current_wal_flush_lsn()')
replayed=
for _ in $(seq 1 200); do
	replayed=$(qs -c "SELECT pg_catalog.pg_last_wal_replay_lsn() >= '$flushed'::pg_lsn")
	[ "$replayed" = t ] && break
	sleep 0.05
done
[ "$replayed" = t ] || { echo "the standby did not replay up to $flushed within 10 s"; exit 1; }

"$FENCE_CLUSTER_CTL" stop-immediate
$AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$STANDBY" -w -t 60 promote >/dev/null
[ "$(qs -c 'SELECT pg_catalog.pg_is_in_recovery()')" = f ] || { echo "the standby was not promoted"; exit 1; }

next=$(qs -c "SELECT fence.try_lock('standby/after-promote')")
if [[ "$next" =~ ^[0-9]+$ ]] && [ "$next" -gt "$max" ]; then
	echo "promoted standby: next token $next > $max (tokens seen: ${tokens[*]}): ok"
else
	echo "FAILED: promoted standby: next token '${next:-NULL}' is not greater than $max (tokens seen: ${tokens[*]})"
	fail=1
fi
exit "$fail"
