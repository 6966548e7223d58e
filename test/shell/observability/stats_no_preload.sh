#!/usr/bin/env bash
# observability/stats_no_preload.sh - on PostgreSQL 17+ without
# shared_preload_libraries (fence.shared_memory() = dynamic), a write that
# the guard rejects on a new connection is counted in fence.stats(), like
# on a connection that used pg_fence's shared memory before.
#
# Every statement runs on a new connection (one psql each), so the backend
# that rejects the write has not attached the named DSM segment yet: the
# counters of FN003 (missing_tokens) and of a stale guarded write
# (stale_writes_rejected) must attach it rather than drop the count.  The
# stale write is presented with fence.require_issued_tokens off, so that no
# check of the token attaches the segment before the rejection.
#
# Skips (77) on 15/16: no named DSM segments there, so no counters without
# the preload (fence.stats() returns NULLs).
# Usage: bash test/shell/observability/stats_no_preload.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/check.sh
source test/shell/lib/clusters.sh
no_preload_17 FENCE_STATS_NO_PRELOAD_INNER \
	"PostgreSQL 15/16 have no named DSM segments: no counters without the preload"

check "no shared_preload_libraries" "" "$(q -c 'SHOW shared_preload_libraries')"
q -c 'CREATE EXTENSION pg_fence' >/dev/null
q -c 'CREATE TABLE account (id int PRIMARY KEY, balance int, fence bigint)' \
	-c "SELECT fence.guard('account')" \
	-c 'CREATE TABLE events (stream text, fence bigint NOT NULL DEFAULT 0)' \
	-c "SELECT fence.guard('events', 'fence', ARRAY['stream'])" >/dev/null
t1=$(q -c "SELECT fence.lease_acquire('a', '1 hour')")
t2=$(q -c "SELECT fence.lease_acquire('b', '1 hour')")
q -c "BEGIN" -c "SET LOCAL fence.token = $t2" -c "INSERT INTO account VALUES (1, 0, $t2)" \
	-c "INSERT INTO events (stream) VALUES ('s')" -c "COMMIT"

# sqlstate SQL...: the SQLSTATE of the statements' error on a new connection
sqlstate() {
	psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$@" 2>&1 >/dev/null |
		sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | head -n 1
}
check "UPDATE without a token: FN003" "FN003" "$(sqlstate -c 'UPDATE account SET balance = 1')"
check "INSERT without a token: FN003" "FN003" "$(sqlstate -c "INSERT INTO events (stream) VALUES ('s')")"
check "a stale guarded UPDATE: FN001" "FN001" \
	"$(sqlstate -c 'SET fence.require_issued_tokens = off' -c "UPDATE account SET fence = $t1")"

check "missing_tokens counted on new connections" "2" \
	"$(q -c 'SELECT missing_tokens FROM fence.stats()')"
check "the stale write counted on a new connection" "1" \
	"$(q -c 'SELECT stale_writes_rejected FROM fence.stats()')"
exit $fail
