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
. "$(dirname "$0")/../lib/durability.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/standby.sh"

DB=fence_restore_failover
WORK=$FENCE_CLUSTER_DIR/restore_failover
FRESH=$WORK/fresh
STANDBY=$WORK/standby

qa() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qf() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$FPORT" -d "$DB" "$@"; }
qs() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$SPORT" -d "$DB" "$@"; }

CLEANUP_SERVERS=("$STANDBY" "$FRESH")
CLEANUP_REMOVE=("$WORK")

require_streaming
FPORT=$(standby_free_port) || { echo "no free port"; exit 1; }
SPORT=$(standby_free_port) || { echo "no free port"; exit 1; }
[ "$SPORT" != "$FPORT" ] || SPORT=$(standby_free_port)

# 1. A source database whose tokens are in epoch 3.
fresh_db "$DB"
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
fresh_cluster "$FRESH" "$FPORT"
createdb -p "$FPORT" "$DB"
pg_restore -p "$FPORT" -d "$DB" --exit-on-error "$WORK/dump"
src_max=${src[5]}
num "$src_max"

# 3. Its standby, made before the first grant, misses the first grants.
standby_make "$STANDBY" "$SPORT" restore_standby "$FPORT" "$FRESH"
standby_wait_replay "$SPORT" "$(psql -X -At -p "$FPORT" -d postgres -c 'SELECT pg_catalog.pg_current_wal_flush_lsn()')" ||
	{ echo "the standby did not replay the restore"; exit 1; }
walsender=$(standby_walsender_pid "$FPORT" restore_standby) || { echo "no walsender for the standby"; exit 1; }
CLEANUP_CONT=("$walsender")
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
