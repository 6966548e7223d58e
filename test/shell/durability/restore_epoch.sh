#!/usr/bin/env bash
# durability/restore_epoch.sh - a copy of a database (pg_dump/restore into
# the same cluster or another, CREATE DATABASE ... TEMPLATE) starts a new
# epoch: its tokens beat every token its source hands out after the copy was
# taken (docs/guarantees.md guarantee 3; token_epoch.hpp, the rule for another lineage).
#
#   1. a source database issues tokens and is dumped; then it issues 5000
#      more (past the dumped fence.token_seq, and past the shared
#      allocator's ceiling of the time of the dump);
#   2. restored into a new database of the same cluster: its first token is
#      in a higher epoch than every token of the source, a zombie holding
#      the source's last token loses to it (fenced_update, allow_equal), and
#      the source's next tokens still lose to it (it stays in its epoch);
#   3. CREATE DATABASE ... TEMPLATE of the source: the same;
#   4. a restart, then a crash: the restored database and the copy keep
#      their epoch (no further jump), the source keeps its numbers;
#   5. restored into a second, fresh cluster: its first token is in a
#      higher epoch than every token of the source.
# Run under scripts/temp-cluster.sh (test/run-all.sh does), with or without
# the preload.
set -euo pipefail
. "$(dirname "$0")/../lib/durability.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/standby.sh"

SRC=fence_epoch_src
RESTORED=fence_epoch_restored
COPY=fence_epoch_copy
WORK=$FENCE_CLUSTER_DIR/restore_epoch
OTHER=$WORK/other

qd() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
qo() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$OPORT" -d "$RESTORED" "$@"; }
gt() { [ "$1" -gt "$2" ] && echo t || echo f; }
epoch() { echo $(($1 >> 40)); }

CLEANUP_SERVERS=("$OTHER")
CLEANUP_REMOVE=("$WORK")
CLEANUP_DBS=("$SRC" "$RESTORED" "$COPY")

for db in "$SRC" "$RESTORED" "$COPY"; do dropdb --if-exists "$db"; done
rm -rf "$WORK"
mkdir -p "$WORK"
[ -n "$STANDBY_AS_OWNER" ] && chown "$(stat -c %U "$PGDATA")" "$WORK"

# 1. The source: tokens, the dump, then 5000 more tokens.
createdb "$SRC"
qd "$SRC" -c 'CREATE EXTENSION pg_fence' \
	-c 'CREATE TABLE res (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0)' \
	-c "INSERT INTO res VALUES (1, 'initial')"
before=$(draw "$SRC" 100 epoch/before-dump)
num "$before"
pg_dump -Fc -d "$SRC" -f "$WORK/dump"
chmod 644 "$WORK/dump"
after=$(draw "$SRC" 5000 epoch/after-dump)
num "$after"
src_epoch=$(epoch "$after")
echo "source: $before before the dump, up to $after after it (epoch $src_epoch)"

# 2. Restored into a new database of this cluster.
createdb "$RESTORED"
pg_restore -d "$RESTORED" --exit-on-error "$WORK/dump"
first=$(qd "$RESTORED" -c "SELECT fence.try_lock('epoch/restored')")
num "$first"
check "restored into this cluster: its first token $first beats every token of the source ($after)" t \
	"$(gt "$first" "$after")"
check "  in a new epoch (above $src_epoch)" t "$(gt "$(epoch "$first")" "$src_epoch")"
applied=$(qd "$RESTORED" -c "SELECT fence.fenced_update('res', '{\"id\": 1}', $first, '{\"body\": \"new holder\"}', allow_equal => true)")
zombie=$(qd "$RESTORED" -c "SELECT fence.fenced_update('res', '{\"id\": 1}', $after, '{\"body\": \"zombie\"}', allow_equal => true)")
check "  the new holder writes (allow_equal), a zombie with the source's token $after loses" "t f" "$applied $zombie"
later=$(draw "$SRC" 100 epoch/after-restore)
check "  the source's next tokens (up to $later) stay in its epoch, below it" "$src_epoch t" \
	"$(epoch "$later") $(gt "$first" "$later")"

# 3. CREATE DATABASE ... TEMPLATE of the source (no session may be connected).
createdb -T "$SRC" "$COPY"
copied=$(qd "$COPY" -c "SELECT fence.try_lock('epoch/copy')")
num "$copied"
later=$(draw "$SRC" 100 epoch/after-copy)
check "CREATE DATABASE ... TEMPLATE: the copy's first token $copied beats every token of the source (up to $later)" t \
	"$(gt "$copied" "$later")"
check "  in a new epoch (above $src_epoch)" t "$(gt "$(epoch "$copied")" "$src_epoch")"

# 4. A restart, then a crash: no further jump, the source keeps its numbers.
for stop in restart crash; do
	if [ "$stop" = restart ]; then
		"$FENCE_CLUSTER_CTL" restart
	else
		qd postgres -c CHECKPOINT >/dev/null
		"$FENCE_CLUSTER_CTL" stop-immediate
		"$FENCE_CLUSTER_CTL" start
	fi
	for pair in "$RESTORED:$first" "$COPY:$copied" "$SRC:$later"; do
		db=${pair%%:*}
		seen=${pair#*:}
		next=$(qd "$db" -c "SELECT fence.try_lock('epoch/$stop')")
		num "$next"
		check "after a $stop: $db's next token $next is above $seen, in the same epoch ($(epoch "$seen"))" \
			"t $(epoch "$seen")" "$(gt "$next" "$seen") $(epoch "$next")"
		qd "$db" -c "SELECT fence.unlock_all()" >/dev/null
	done
done

# 5. Restored into another (fresh) cluster.
[ -x "$FENCE_PGBIN/initdb" ] || { echo "no initdb in $FENCE_PGBIN"; exit 1; }
OPORT=$(standby_free_port) || { echo "no free port"; exit 1; }
fresh_cluster "$OTHER" "$OPORT"
createdb -p "$OPORT" "$RESTORED"
pg_restore -p "$OPORT" -d "$RESTORED" --exit-on-error "$WORK/dump"
latest=$(draw "$SRC" 10 epoch/before-other)
other=$(qo -c "SELECT fence.try_lock('epoch/other-cluster')")
num "$other"
check "restored into another cluster: its first token $other beats every token of the source ($latest)" t \
	"$(gt "$other" "$latest")"
check "  in a new epoch (above $src_epoch)" t "$(gt "$(epoch "$other")" "$src_epoch")"
exit "$fail"
