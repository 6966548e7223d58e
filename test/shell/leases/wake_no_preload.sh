#!/usr/bin/env bash
# leases/wake_no_preload.sh - on PostgreSQL 17+ without shared_preload_libraries
# (fence.shared_memory() = dynamic), a waiter on a new connection is woken by
# a release, a resignation or the holder's expiry, not by polling.
#
# Starts its own throwaway cluster with shared_preload_libraries empty
# (FENCE_PRELOAD= scripts/temp-cluster.sh; it works nested inside another
# test cluster).  Every call runs on a new connection (one psql each), so no
# backend has attached pg_fence's named DSM segment before its call: the
# case of a worker that connects, takes a lease and releases it.
#
# What is asserted is the mechanism, not a latency: a waiter in the queue
# tries once when it starts, sleeps until it is woken or the holder's
# expiry, and then tries once more and gets it; a waiter outside the queue
# looks again after a backoff (10 ms doubling to 1 s), about 10 times in
# the 3 s the holder keeps the name here.  The waiter counts its reads of
# fence.leases itself: the scans of the table and its indexes in the
# transaction of the wait (pg_stat_get_xact_numscans), one per try, two for
# the try that takes over an expired lease.  Woken: 2 or 3; at most 4
# passes (one spurious wake-up); polling: 10 or more.
#
# Skips (77) on 15/16: no named DSM segments there, so no queue without the
# preload (docs/leases.md, fence.lease_acquire: a waiter polls with that backoff).
# Usage: bash test/shell/leases/wake_no_preload.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/check.sh
source test/shell/lib/clusters.sh
no_preload_17 FENCE_WAKE_NO_PRELOAD_INNER \
	"PostgreSQL 15/16 have no named DSM segments: without the preload a waiter polls"

DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

check "no shared_preload_libraries" "" "$(q -c 'SHOW shared_preload_libraries')"
q -c 'CREATE EXTENSION pg_fence' >/dev/null
check "shared memory in a named DSM segment" "dynamic" "$(q -c 'SELECT fence.shared_memory()')"

HOLD=3 # seconds the holder keeps the name while the waiter waits
MAX_SCANS=4

# The waiter, in the background on a new connection: CALL (a waiting
# acquire), then its scans of fence.leases; writes "granted|scans" to $DIR/TAG.
start_waiter() { # TAG CALL
	q -c 'BEGIN' -c "SELECT ($2) IS NOT NULL" \
		-c "SELECT sum(pg_stat_get_xact_numscans(c.oid)) FROM pg_class c
		     WHERE c.oid = 'fence.leases'::regclass
		        OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'fence.leases'::regclass)" \
		-c 'COMMIT' | paste -sd'|' >"$DIR/$1" &
	waiter_pid=$!
}

# Until the waiter sleeps in the server (wait event PgFenceLease), at most 30 s.
until_sleeping() { # TAG
	for _ in $(seq 1 300); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity
		            WHERE wait_event = 'PgFenceLease' AND query LIKE '%wake-$1%'")" = 1 ] && return 0
		sleep 0.1
	done
	echo "# the waiter of $1 never slept in the server" >&2
	return 1
}

# The waiter's result: granted (t) after at most MAX_SCANS scans.
check_waiter() { # TAG WHAT
	wait "$waiter_pid"
	local granted scans
	IFS='|' read -r granted scans <"$DIR/$1"
	check "$2: the waiter gets it" "t" "$granted"
	check "$2: the waiter was woken, not polling (scans: $scans)" "yes" \
		"$([ "${scans:-99}" -le "$MAX_SCANS" ] && echo yes || echo "no: $scans scans")"
}

# a release from a new connection wakes a waiter on a new connection
held=$(q -c "SELECT fence.lease_acquire('wake-release', '1 hour', 'holder')")
start_waiter release "fence.lease_acquire('wake-release', '1 hour', 'waiter', '60 s')"
until_sleeping release
sleep "$HOLD"
check "lease_release from a new connection" "t" "$(q -c "SELECT fence.lease_release('wake-release', $held)")"
check_waiter release "lease_acquire woken by a release"

# a resignation wakes a candidate campaigning on a new connection
term=$(q -c "SELECT fence.campaign('wake-resign', 'a', '1 hour')")
start_waiter resign "fence.campaign('wake-resign', 'b', '1 hour', '60 s')"
until_sleeping resign
sleep "$HOLD"
check "resign from a new connection" "t" "$(q -c "SELECT fence.resign('wake-resign', $term)")"
check_waiter resign "campaign woken by a resignation"

# the holder's expiry: the head waiter sleeps until then, without polling
q -c "SELECT fence.lease_acquire('wake-expiry', '$HOLD s', 'holder')" >/dev/null
start_waiter expiry "fence.lease_acquire('wake-expiry', '1 hour', 'waiter', '60 s')"
until_sleeping expiry
check_waiter expiry "lease_acquire woken at the holder's expiry"

exit $fail
