#!/usr/bin/env bash
# durability/standby_promote.sh - no grants on a standby, and no token reissued after a
# streaming standby is promoted (docs/guarantees.md guarantees 3 and 10).
#
# Makes a streaming standby of the throwaway cluster with pg_basebackup (as
# the cluster's OS user), starts it on another port, and checks:
#   1. every lock function (and lease_acquire, campaign and resign, and the
#      idempotency-key functions once_*, when present) raises 25006 read_only_sql_transaction on the standby, while
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
. "$(dirname "$0")/../lib/durability.sh"
. "$(dirname "$0")/../lib/standby.sh"
DB=fence_standby
STANDBY=$FENCE_CLUSTER_DIR/standby

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qs() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$SPORT" -d "$DB" "$@"; }

CLEANUP_SERVERS=("$STANDBY")
CLEANUP_REMOVE=("$STANDBY" "$STANDBY.log")

SPORT=$(standby_free_port) || { echo "no free port for the standby"; exit 1; }

require_streaming

fresh_db "$DB"
before_backup=$(q -c "SELECT fence.try_lock('standby/before-backup')")
has_elections=$(q -c "SELECT pg_catalog.to_regproc('fence.campaign') IS NOT NULL")
if [ "$has_elections" = t ]; then
	term=$(q -c "SELECT fence.campaign('standby/leader', 'node-p', interval '1 hour')")
fi

CLEANUP_RESET=(wal_writer_delay)
psql -X -q -c "ALTER SYSTEM SET wal_writer_delay = '10s'"
"$FENCE_CLUSTER_CTL" restart

standby_make "$STANDBY" "$SPORT" standby

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
if [ "$(qs -c "SELECT pg_catalog.to_regproc('fence.once_begin') IS NOT NULL")" = t ]; then
	calls+=("fence.once_begin('standby/x', interval '1 minute')" "fence.once_step('standby/x', 1, 's')"
		"fence.once_finish('standby/x', 1)" "fence.once_release('standby/x', 1)" "fence.once_purge()")
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
$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$STANDBY" -w -t 60 promote >/dev/null
[ "$(qs -c 'SELECT pg_catalog.pg_is_in_recovery()')" = f ] || { echo "the standby was not promoted"; exit 1; }

next=$(qs -c "SELECT fence.try_lock('standby/after-promote')")
if [[ "$next" =~ ^[0-9]+$ ]] && [ "$next" -gt "$max" ]; then
	echo "promoted standby: next token $next > $max (tokens seen: ${tokens[*]}): ok"
else
	echo "FAILED: promoted standby: next token '${next:-NULL}' is not greater than $max (tokens seen: ${tokens[*]})"
	fail=1
fi
exit "$fail"
