#!/usr/bin/env bash
# durability/pitr_failover.sh - a point-in-time recovery starts a new
# timeline: its tokens beat every token of the timeline it branched from,
# including those issued after the recovery target, while that server keeps
# granting (docs/guarantees.md guarantee 3; token_epoch.hpp).
#
# WAL archiving to a directory; a base backup; tokens; the target LSN; more
# tokens (which the recovered server never sees); the backup is recovered
# to the target and promoted (timeline 2) while the original keeps granting.
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail
. "$(dirname "$0")/../lib/durability.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/standby.sh"

DB=fence_pitr_failover
WORK=$FENCE_CLUSTER_DIR/pitr
ARCH=$WORK/archive
BACKUP=$WORK/backup

qp() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qr() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$RPORT" -d "$DB" "$@"; }

CLEANUP_SERVERS=("$BACKUP")
CLEANUP_REMOVE=("$WORK")

require_streaming
RPORT=$(standby_free_port) || { echo "no free port"; exit 1; }
owner=$(stat -c %U "$PGDATA")
rm -rf "$WORK"
mkdir -p "$ARCH"
chown -R "$owner" "$WORK"

CLEANUP_RESET=(archive_mode archive_command)
psql -X -q -c 'ALTER SYSTEM SET archive_mode = on' -c "ALTER SYSTEM SET archive_command = 'cp %p $ARCH/%f'"
"$FENCE_CLUSTER_CTL" restart
fresh_db "$DB"
before=$(qp -c "SELECT fence.try_lock('pitr/before-backup')")
num "$before"

standby_allow_replication "$PGDATA" "$PGPORT"
$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_basebackup" -D "$BACKUP" -h "$PGHOST" -p "$PGPORT" -U postgres \
	--wal-method=stream --checkpoint=fast --no-sync

first=$(draw "$DB" 100 pitr/first)
target=$(psql -X -At -c 'SELECT pg_catalog.pg_current_wal_flush_lsn()')
later=$(draw "$DB" 10000 pitr/after-target)
num "$first"
num "$later"
# archive everything up to here
last_wal=$(psql -X -At -c 'SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())')
for _ in $(seq 1 600); do
	[ -f "$ARCH/$last_wal" ] && break
	sleep 0.1
done
[ -f "$ARCH/$last_wal" ] || { echo "WAL file $last_wal was not archived within 60 s"; exit 1; }

# Recover the backup to the target and promote it.
$STANDBY_AS_OWNER tee -a "$BACKUP/postgresql.conf" >/dev/null <<CONF
# point-in-time recovery of the pg_fence throwaway cluster
port = $RPORT
archive_mode = off
restore_command = 'cp $ARCH/%f %p'
recovery_target_lsn = '$target'
recovery_target_action = 'promote'
CONF
$STANDBY_AS_OWNER touch "$BACKUP/recovery.signal"
$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$BACKUP" -l "$BACKUP.log" -w -t 120 start >/dev/null
standby_poll 1200 "SELECT 1 WHERE NOT pg_catalog.pg_is_in_recovery()" "$RPORT" >/dev/null ||
	{ echo "the recovered server did not finish recovery"; exit 1; }
seen=$(qr -c 'SELECT last_value FROM fence.token_seq')
check "the recovered server stopped before the later tokens (its token_seq $seen < $later)" t \
	"$([ "$seen" -lt "$later" ] && echo t || echo f)"
check "it is on a new timeline" t \
	"$(qr -c "SELECT ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::int > 1")"
recovered=$(qr -c "SELECT fence.try_lock('pitr/recovered')")
num "$recovered"
check "its first token ($recovered) beats every token of the timeline it left (max $later)" t \
	"$([ "$recovered" -gt "$later" ] && echo t || echo f)"
split=$(draw "$DB" 100 pitr/original-continues)
check "the original server's later tokens (max $split) lose to it" t \
	"$([ "$split" -lt "$recovered" ] && echo t || echo f)"
exit "$fail"
