#!/usr/bin/env bash
# chaos/bounded.sh - the chaos test (test/chaos/chaos.sh), bounded for make
# test: two short runs of 4 workers against a two-node cluster of its own
# (the suite's cluster is not touched), one with a synchronous standby, one
# with an asynchronous standby that lags before each failover, every fault
# of the nemesis injected (pauses past the TTL, terminated backends, a
# worker killed with kill -9 and started again, an immediate restart, a
# failover), the job queue's and the idempotency keys' workloads with the
# locks' (and a drain of the queue at the end).  Passes when the checker proves every
# property on both histories (test/chaos/checks.cpp) and neither server
# log shows a crash (a failed assertion, an abort); the last run's
# history and timeline stay in test/chaos/out.
#
# CHAOS_BOUNDED_SECONDS sets the length of each run (default 25); the
# fault cycle puts the failover second, so that every fault fits.
#
# Run by test/run-all.sh: it uses the server installation of the suite's
# server (scripts/temp-cluster.sh's FENCE_PGBIN, or under make installcheck
# FENCE_SERVER_BIN, the running server's), not that server.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
SERVER_BIN=${FENCE_PGBIN:-${FENCE_SERVER_BIN:-}}

if ! make -s --no-print-directory chaos-tools >/tmp/chaos-build.$$ 2>&1; then
	cat /tmp/chaos-build.$$
	rm -f /tmp/chaos-build.$$
	echo "not ok - make chaos-tools"
	exit 1
fi
rm -f /tmp/chaos-build.$$

fail=0
for replication in sync async; do
	echo "== $replication replication"
	REPLICATION=$replication DURATION=${CHAOS_BOUNDED_SECONDS:-25} WORKERS=4 \
		CHAOS_NEMESIS="failover kill crash restart kill" \
		FENCE_SERVER_BIN=$SERVER_BIN CHAOS_OUT=$PWD/test/chaos/out-$replication \
		bash test/chaos/chaos.sh
	rc=$?
	[ "$rc" -eq 0 ] || { echo "not ok - chaos run with $replication replication (exit $rc)"; fail=1; }
	# Faults are the nemesis's, never the server's: no failed assertion
	# (a server built with --enable-cassert) and no backend killed by a
	# signal of its own, though the checker's properties survive one.
	crashes=$(grep -hE 'TRAP: |terminated by signal (6|11)' test/chaos/out-$replication/server-*.log 2>/dev/null)
	if [ -n "$crashes" ]; then
		echo "not ok - no server crash in the $replication run:"
		echo "$crashes" | head -5 | sed 's/^/    /'
		fail=1
	else
		echo "ok - no server crash in the $replication run"
	fi
done
# The timeline of the async run, where docs/chaos.md points.
rm -rf test/chaos/out && mv test/chaos/out-async test/chaos/out 2>/dev/null
rm -rf test/chaos/out-sync
exit "$fail"
