#!/usr/bin/env bash
# durability/lease_crash.sh - leases across an immediate shutdown (a crash).
#
# Run inside a throwaway cluster:
#   FENCE_FSYNC=on bash scripts/temp-cluster.sh bash test/shell/durability/lease_crash.sh
# Acquires leases (kept) and acquires + releases others, then stops the
# server with -m immediate and starts it again.  Checks:
#   - every acquisition survives (same row, same token);
#   - every released lease is either released or still held under its own
#     token until its TTL (a release may be lost: its commit is asynchronous
#     when the transaction did nothing else), never anything else;
#   - no token seen before the crash is issued again: new grants are larger.
set -euo pipefail
. "$(dirname "$0")/../lib/clusters.sh"
require_own_cluster crash

q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "lease_crash: FAIL: $*" >&2; exit 1; }

q -c "CREATE EXTENSION IF NOT EXISTS pg_fence"
q -c "SHOW synchronous_commit" | grep -qx on || fail "synchronous_commit is not on"

N=20
declare -A held released
max_seen=0
for i in $(seq 1 "$N"); do
	t=$(q -c "SELECT fence.lease_acquire('crash_held_$i', '1 hour', 'kept')")
	held[$i]=$t
	t=$(q -c "SELECT fence.lease_acquire('crash_rel_$i', '3 s', 'released')")
	r=$(q -c "SELECT fence.lease_release('crash_rel_$i', $t)")
	[ "$r" = t ] || fail "release of crash_rel_$i returned $r"
	released[$i]=$t
	[ "$t" -gt "$max_seen" ] && max_seen=$t
done

"$FENCE_CLUSTER_CTL" stop-immediate
"$FENCE_CLUSTER_CTL" start

lost=0
for i in $(seq 1 "$N"); do
	t=$(q -c "SELECT token FROM fence.leases WHERE name = 'crash_held_$i'")
	[ "$t" = "${held[$i]}" ] || fail "acquisition crash_held_$i lost or changed: '$t' instead of ${held[$i]}"
	t=$(q -c "SELECT token FROM fence.leases WHERE name = 'crash_rel_$i'")
	if [ -n "$t" ]; then
		[ "$t" = "${released[$i]}" ] || fail "crash_rel_$i has token $t, expected ${released[$i]} or no row"
		lost=$((lost + 1))
	fi
done
echo "lease_crash: $N acquisitions survived; $lost of $N releases were lost (held until their TTL)"

# Every lease granted from now on has a token larger than any seen before
# the crash; a lost release is taken over once its TTL has passed.
for i in $(seq 1 "$N"); do
	t=""
	for _ in $(seq 1 40); do
		t=$(q -c "SELECT fence.lease_acquire('crash_rel_$i', '1 min')")
		[ -n "$t" ] && break
		sleep 0.1
	done
	[ -n "$t" ] || fail "crash_rel_$i still held after its TTL"
	[ "$t" -gt "$max_seen" ] || fail "token $t issued after the crash is not larger than $max_seen"
	max_seen=$t
done
t=$(q -c "SELECT fence.lease_acquire('crash_held_1', '1 min')")
[ -z "$t" ] || fail "crash_held_1 was granted again ($t) while held"
echo "lease_crash: ok"
