#!/usr/bin/env bash
# durability/async_failover.sh - tokens are never reissued after an
# asynchronous standby is promoted, even when it missed the last tokens and
# the old primary keeps granting (docs/guarantees.md guarantee 3: epochs, one per timeline, docs/failover.md).
#
#   1. an asynchronous standby streams from the throwaway cluster; tokens are
#      granted and replayed;
#   2. replication stalls: the primary's walsender is stopped (SIGSTOP), so
#      nothing more reaches the standby, while the primary grants 5000 more
#      tokens (past a move of the shared allocator's ceiling), in committed,
#      rolled-back and synchronous_commit = off transactions and as leases;
#      the standby's fence.token_seq is checked to be below them (it did
#      miss them: otherwise the test would prove nothing);
#   3. the standby is promoted while the old primary still runs (split brain):
#      its tokens are above every token the old primary returned;
#   4. the old primary keeps granting: all its tokens stay below every token
#      of the new primary; then it is lost (immediate stop) and the new
#      primary keeps issuing above everything; fence.advance there accepts its
#      tokens, lets the old primary's lose, refuses one above (FN004).
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail
. "$(dirname "$0")/../lib/durability.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/standby.sh"

DB=fence_async_failover
STANDBY=$FENCE_CLUSTER_DIR/async_standby

qp() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qs() { psql -X -q -At -v ON_ERROR_STOP=1 -p "$SPORT" -d "$DB" "$@"; }

CLEANUP_SERVERS=("$STANDBY")
CLEANUP_REMOVE=("$STANDBY" "$STANDBY.log")

require_streaming
SPORT=$(standby_free_port) || { echo "no free port for the standby"; exit 1; }

fresh_db "$DB"
have_leases=$(qp -c "SELECT pg_catalog.to_regproc('fence.lease_acquire') IS NOT NULL")

# 1. A streaming asynchronous standby, and tokens it has replayed.
standby_make "$STANDBY" "$SPORT" async_failover
replicated=$(qp -c "SELECT fence.try_lock('failover/replicated')")
standby_wait_replay "$SPORT" "$(psql -X -At -c 'SELECT pg_catalog.pg_current_wal_flush_lsn()')" ||
	{ echo "the standby did not replay the first token"; exit 1; }

# 2. Replication stalls; the primary keeps granting.
walsender=$(standby_walsender_pid "$PGPORT" async_failover) || { echo "no walsender for the standby"; exit 1; }
CLEANUP_CONT=("$walsender")
kill -STOP "$walsender"
old=("$replicated" "$(draw "$DB" 5000 failover/stalled)")
old+=("$(qp -c BEGIN -c "SELECT fence.try_lock('failover/rolled-back')" -c ROLLBACK)")
old+=("$(qp -c 'SET synchronous_commit = off' -c "SELECT fence.try_lock('failover/async')")")
if [ "$have_leases" = t ]; then
	old+=("$(qp -c "SELECT fence.lease_acquire('failover/lease', interval '1 hour')")")
fi
old_max=0
for t in "${old[@]}"; do
	[[ "$t" =~ ^[0-9]+$ ]] || { echo "not a token: '$t'"; exit 1; }
	[ "$t" -gt "$old_max" ] && old_max=$t
done
seen=$(qs -c 'SELECT last_value FROM fence.token_seq')
check "the stalled standby has not seen the last tokens (its token_seq $seen < $old_max)" t \
	"$([ "$seen" -lt "$old_max" ] && echo t || echo f)"

# 3. Split brain: the standby is promoted while the old primary runs.
standby_promote "$STANDBY" "$SPORT" || { echo "the standby was not promoted"; exit 1; }
new=()
for i in 1 2 3; do new+=("$(qs -c "SELECT fence.try_lock('failover/new-$i')")"); done
if [ "$have_leases" = t ]; then
	new+=("$(qs -c "SELECT fence.lease_acquire('failover/lease-new', interval '1 hour')")")
fi
new_min=${new[0]}
for t in "${new[@]}"; do
	[[ "$t" =~ ^[0-9]+$ ]] || { echo "not a token on the new primary: '$t'"; exit 1; }
	[ "$t" -lt "$new_min" ] && new_min=$t
done
check "the promoted standby's tokens (${new[*]}) beat every token the old primary returned (max $old_max)" t \
	"$([ "$new_min" -gt "$old_max" ] && echo t || echo f)"

# 4. The old primary keeps granting (split brain), then is lost.
split=$(draw "$DB" 100 failover/split-brain)
check "the old primary's tokens after the promotion (max $split) lose to the new primary's (min $new_min)" t \
	"$([ "$split" -lt "$new_min" ] && echo t || echo f)"
# A resource fenced on the new primary: its tokens are issued (FN004 knows
# the jump), the old primary's lose, one above the last issued is forged.
if [ "$(qs -c "SELECT pg_catalog.to_regproc('fence.advance') IS NOT NULL")" = t ]; then
	last=$(qs -c "SELECT fence.try_lock('failover/fenced')")
	check "the new primary's last token fences a resource" t "$(qs -c "SELECT fence.advance('failover/r', $last)")"
	check "  the old primary's token loses there" f "$(qs -c "SELECT fence.advance('failover/r', $split)")"
	check "  one above the last token issued is refused (FN004)" FN004 \
		"$(psql -X -q -At -p "$SPORT" -d "$DB" -v VERBOSITY=sqlstate \
			-c "SELECT fence.advance('failover/r', $last + 1)" 2>&1 | sed 's/^ERROR:  //' || true)"
	new+=("$last")
fi
"$FENCE_CLUSTER_CTL" stop-immediate
after=$(qs -c "SELECT fence.try_lock('failover/after-loss')")
check "the new primary keeps issuing above everything ($after)" t \
	"$([ "$after" -gt "$split" ] && [ "$after" -gt "${new[-1]}" ] && echo t || echo f)"
exit "$fail"
