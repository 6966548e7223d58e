#!/usr/bin/env bash
# durability/restore_failover.sh - tokens after pg_dump/restore into a fresh
# cluster (a copy: a new lineage, timeline 1 again), and after a promotion of
# that cluster's asynchronous standby that missed its first tokens (docs/guarantees.md
# guarantee 3; token_epoch.hpp, the rule for a copy).
#
#   1. in the throwaway cluster, tokens are moved into a higher epoch by an
#      administrator's setval (3 << 40) and a restart: grants continue above
#      it;
#   2. the database is dumped, the source grants on, and the dump is
#      restored into a second, fresh cluster: its tokens continue above
#      every token of the source, also those granted after the dump;
#   3. a standby of the fresh cluster is made before its first grant (so it
#      has the restored state but not the fresh cluster's claim); its
#      walsender is stopped; the fresh cluster grants; the standby is
#      promoted: its tokens beat every token the fresh cluster returned.
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/standby.sh"
: "${FENCE_CLUSTER_CTL:?run this under scripts/temp-cluster.sh}"

DB=fence_restore_failover
WORK=${FENCE_CLUSTER_DIR:-$(dirname "$PGDATA")}/restore_failover
FRESH=$WORK/fresh
STANDBY=$WORK/standby
walsender=

qa() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qf() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$FPORT" -d "$DB" "$@"; }
qs() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$SPORT" -d "$DB" "$@"; }
num() { [[ "$1" =~ ^[0-9]+$ ]] || { echo "not a token: '$1'"; exit 1; }; }

cleanup() {
	local rc=$?
	trap - EXIT
	[ -n "$walsender" ] && kill -CONT "$walsender" 2>/dev/null || true
	standby_stop "$STANDBY"
	standby_stop "$FRESH"
	if [ "$rc" -ne 0 ]; then
		for log in "$FRESH.log" "$STANDBY.log"; do
			[ -f "$log" ] && { echo "$log (last lines):"; tail -n 15 "$log"; }
		done
	fi
	rm -rf "$WORK"
	dropdb --if-exists "$DB" >/dev/null 2>&1 || true
	exit "$rc"
}
trap cleanup EXIT

[ "$(psql -X -At -c 'SHOW wal_level')" != minimal ] || { echo "wal_level = minimal: no streaming replication"; exit 77; }
FPORT=$(standby_free_port) || { echo "no free port"; exit 1; }
SPORT=$(standby_free_port) || { echo "no free port"; exit 1; }
[ "$SPORT" != "$FPORT" ] || SPORT=$(standby_free_port)

# 1. A source database whose tokens are in epoch 3.
dropdb --if-exists "$DB"
createdb "$DB"
qa -c 'CREATE EXTENSION pg_fence'
src=("$(qa -c "SELECT fence.try_lock('restore/a')")")
qa -c "SELECT pg_catalog.setval('fence.token_seq', (3::bigint << 40) + 5)" >/dev/null
# (the shared allocator's running counter takes a higher value at its next start)
"$FENCE_CLUSTER_CTL" restart
src+=("$(qa -c "SELECT fence.try_lock('restore/b')")" "$(qa -c "SELECT fence.try_lock('restore/c')")")
for t in "${src[@]}"; do num "$t"; done
check "after a setval into epoch 3, grants continue above it (${src[1]})" t \
	"$([ "${src[1]}" -gt $(((3 << 40) + 5)) ] && echo t || echo f)"

# 2. Dump, and restore into a fresh cluster.
mkdir -p "$WORK"
[ -n "$STANDBY_AS_OWNER" ] && chown "$(stat -c %U "$PGDATA")" "$WORK"
pg_dump -Fc -d "$DB" -f "$WORK/dump"
chmod 644 "$WORK/dump"
for i in 1 2 3; do src+=("$(qa -c "SELECT fence.try_lock('restore/after-dump-$i')")"); done
$STANDBY_AS_OWNER "$FENCE_PGBIN/initdb" -D "$FRESH" -U postgres --auth=trust --no-instructions >/dev/null
preload=$(psql -X -At -c 'SHOW shared_preload_libraries')
$STANDBY_AS_OWNER tee -a "$FRESH/postgresql.conf" >/dev/null <<CONF
port = $FPORT
listen_addresses = ''
unix_socket_directories = '$PGHOST'
shared_preload_libraries = '$preload'
fsync = off
CONF
$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$FRESH" -l "$FRESH.log" -w -t 60 start >/dev/null
createdb -p "$FPORT" "$DB"
pg_restore -p "$FPORT" -d "$DB" --exit-on-error "$WORK/dump"
src_max=${src[5]}
num "$src_max"

# 3. Its standby, made before the first grant, misses the first grants.
standby_make "$STANDBY" "$SPORT" restore_standby "$FPORT" "$FRESH"
standby_wait_replay "$SPORT" "$(psql -X -At -p "$FPORT" -d postgres -c 'SELECT pg_catalog.pg_current_wal_flush_lsn()')" ||
	{ echo "the standby did not replay the restore"; exit 1; }
walsender=$(standby_walsender_pid "$FPORT" restore_standby) || { echo "no walsender for the standby"; exit 1; }
kill -STOP "$walsender"
fresh=()
for i in 1 2 3; do fresh+=("$(qf -c "SELECT fence.try_lock('restore/fresh-$i')")"); done
for t in "${fresh[@]}"; do num "$t"; done
check "the restored database's tokens (${fresh[*]}) continue above the source's ($src_max)" t \
	"$([ "${fresh[0]}" -gt "$src_max" ] && echo t || echo f)"
seen=$(qs -c 'SELECT last_value FROM fence.token_seq')
check "the stalled standby has not seen them (its token_seq $seen)" t \
	"$([ "$seen" -lt "${fresh[2]}" ] && echo t || echo f)"
standby_promote "$STANDBY" "$SPORT" || { echo "the standby was not promoted"; exit 1; }
next=$(qs -c "SELECT fence.try_lock('restore/promoted')")
num "$next"
check "the promoted standby of the restored cluster: $next beats every token returned (${fresh[2]})" t \
	"$([ "$next" -gt "${fresh[2]}" ] && echo t || echo f)"
split=$(qf -c "SELECT fence.try_lock('restore/split-brain')")
check "and the old primary's next token ($split) loses to it" t \
	"$([ "$split" -lt "$next" ] && echo t || echo f)"
exit "$fail"
