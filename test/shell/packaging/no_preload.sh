#!/usr/bin/env bash
# packaging/no_preload.sh - pg_fence without shared_preload_libraries.
#
# Starts its own throwaway cluster with shared_preload_libraries empty
# (FENCE_PRELOAD= scripts/temp-cluster.sh; it works nested inside another
# test cluster) and checks what docs/observability.md and docs/settings.md promise:
#   - locks and the guard trigger work;
#   - fence.locks still lists connection-bound locks (from pg_locks) with
#     pid and holder, but NULL name, kind, token and granted_at;
#   - fence.stats() is one row of NULLs, fence.held_locks() is empty;
#   - fence.token follows the same transaction rule even when it was SET
#     before the library was loaded (placeholder);
#   - the LOG line of a stale write is still written;
#   - lease_acquire with wait gets the lease at expiry and after a release;
#   - fence.max_lease_ttl SET by an ordinary role before the library was
#     loaded (a placeholder) is not applied when it loads.
# Usage: bash test/shell/packaging/no_preload.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/clusters.sh
nested_cluster FENCE_NO_PRELOAD_INNER FENCE_PRELOAD=

source test/shell/lib/check.sh

check "no shared_preload_libraries" "" "$(q -c 'SHOW shared_preload_libraries')"
version=$(q -c 'SHOW server_version_num')
created=$(q -c 'CREATE EXTENSION pg_fence' 2>&1)
q -c 'CREATE TABLE np_acct (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0)' \
  -c 'INSERT INTO np_acct VALUES (1, 0, 5)' \
  -c "SELECT fence.guard('np_acct')" >/dev/null

hint='HINT:  Add pg_fence to shared_preload_libraries in postgresql.conf and restart the server.'
if [ "$version" -ge 170000 ]; then
	check "17+: CREATE EXTENSION says nothing" "" "$created"
	check "17+: shared memory in a named DSM segment" "dynamic" "$(q -c 'SELECT fence.shared_memory()')"
else
	check "15/16: CREATE EXTENSION says what is missing" \
		"WARNING:  pg_fence is not in shared_preload_libraries: locks and leases work, but slower and less visible|$hint" \
		"$(grep -E '^(WARNING|HINT):' <<<"$created" | paste -sd'|')"
	check "15/16: no shared memory" "none" "$(q -c 'SELECT fence.shared_memory()' 2>/dev/null)"
	check "15/16: fence.locks says what is missing" \
		"NOTICE:  pg_fence is not in shared_preload_libraries: fence.locks shows no lock names|$hint" \
		"$(q -c "SELECT fence.try_lock('np-notice')" -c 'SELECT count(*) FROM fence.locks' 2>&1 >/dev/null |
			grep -E '^(NOTICE|HINT):' | paste -sd'|')"
	check "15/16: fence.stats() says what is missing" \
		"NOTICE:  pg_fence is not in shared_preload_libraries: fence.stats() counts nothing|$hint" \
		"$(q -c 'SELECT * FROM fence.stats()' 2>&1 >/dev/null | grep -E '^(NOTICE|HINT):' | paste -sd'|')"
fi

# locks work; without shared memory the view degrades to pg_locks
out=$(PGAPPNAME=np_holder q -c "SELECT fence.try_lock('np-a') IS NOT NULL" \
  -c "SELECT fence.try_lock('np-b') IS NOT NULL" \
  -c "SELECT count(*), count(name), count(kind), count(token), count(granted_at),
             bool_and(pid = pg_backend_pid()), bool_and(holder = 'np_holder'),
             sum(waiters), count(expires_at)
        FROM fence.locks WHERE kind IS DISTINCT FROM 'lease'" \
  -c "SELECT count(*) FROM fence.held_locks()" \
  -c "SELECT row(s.acquired, s.acquired_session, s.busy, s.waits, s.stats_reset IS NOT NULL)::text
        FROM fence.stats() s" 2>/dev/null)
if [ "$version" -ge 170000 ]; then
	check "17+: locks granted, view shows them with names, stats count" \
	"t
t
2|2|2|2|2|t|t|0|0
2
(2,2,0,0,t)" "$out"
	check "17+: fence.stats_reset() zeroes the counters in the DSM segment" "(0,0,t)" \
		"$(q -c 'SELECT fence.stats_reset()' \
			-c "SELECT row(s.acquired, s.releases, s.stats_reset > now() - interval '1 minute')::text
			      FROM fence.stats() s" |
			tail -1)"
else
	check "15/16: locks granted, view shows them without names, stats NULL" \
	"t
t
2|0|0|0|0|t|t|0|0
0
(,,,,f)" "$out"
	check "15/16: fence.stats_reset() does nothing and says why" \
		"NOTICE:  pg_fence is not in shared_preload_libraries: fence.stats_reset() has no counters to reset|$hint" \
		"$(q -c 'SELECT fence.stats_reset()' 2>&1 >/dev/null | grep -E '^(NOTICE|HINT):' | paste -sd'|')"
fi

# after the session ends, nothing is left
check "nothing held after disconnect" "0" \
	"$(q -c "SELECT count(*) FROM fence.locks WHERE kind IS DISTINCT FROM 'lease'")"

# No forged tokens (FN004) without the preload: on 15/16 the bound is read
# from the token sequence, on 17+ from the named segment.  A fresh session
# (nothing remembered) accepts the highest token issued, refuses the next.
q -c "SELECT count(fence.unlock('np-tokens', fence.try_lock('np-tokens'))) FROM generate_series(1, 10)" >/dev/null
highest=$(q -c "SELECT fence.try_lock('np-highest')")
check "highest issued token accepted" "t" "$(q -c "SELECT fence.advance('np-r', $highest)")"
out=$(q -c '\set ON_ERROR_STOP 0' -c '\set VERBOSITY sqlstate' \
	-c "SELECT fence.advance('np-r', $highest + 1)" 2>&1 || true)
check "token above the highest issued refused (FN004)" "ERROR:  FN004" "$out"
out=$(q -c 'BEGIN' -c "SET LOCAL fence.token = $((highest + 1))" -c '\set ON_ERROR_STOP 0' \
	-c '\set VERBOSITY sqlstate' -c 'UPDATE np_acct SET v = 9 WHERE id = 1' -c 'ROLLBACK' 2>&1 || true)
check "guard: fence.token above the highest issued refused (FN004)" "ERROR:  FN004" "$out"

# fence.token SET LOCAL before the library is loaded counts in its transaction
out=$(q -c 'BEGIN' -c 'SET LOCAL fence.token = 7' \
	-c 'UPDATE np_acct SET v = 1 WHERE id = 1' -c 'COMMIT' \
	-c 'SELECT v, fence FROM np_acct')
check "SET LOCAL before load counts" "1|7" "$out"

# a session-level SET before the library is loaded is left over in later transactions
out=$(q -c 'SET fence.token = 9' -c 'BEGIN' \
	-c '\set ON_ERROR_STOP 0' -c '\set VERBOSITY sqlstate' \
	-c 'UPDATE np_acct SET v = 2 WHERE id = 1' -c 'ROLLBACK' 2>&1 || true)
check "leftover SET before load ignored (FN003)" "ERROR:  FN003" "$out"

# a leftover session value brought back by ROLLBACK TO, after the library was
# loaded inside the savepoint, still does not count (it was re-applied while
# the setting was defined, but not set in this transaction)
out=$(q -c 'SET fence.token = 42' -c 'BEGIN' -c 'SAVEPOINT a' -c "SET LOCAL fence.token = ''" \
	-c "SELECT fence.try_xact_lock('np-load') > 0" -c 'ROLLBACK TO a' \
	-c '\set ON_ERROR_STOP 0' -c '\set VERBOSITY sqlstate' \
	-c 'UPDATE np_acct SET v = 4 WHERE id = 1' -c 'ROLLBACK' 2>&1 || true)
check "leftover SET restored by ROLLBACK TO after load ignored (FN003)" "t
ERROR:  FN003" "$out"

# stale write: rejected, logged
out=$(q -c '\set VERBOSITY sqlstate' -c '\set ON_ERROR_STOP 0' \
	-c 'UPDATE np_acct SET v = 3, fence = 6 WHERE id = 1' 2>&1 || true)
check "stale write rejected (FN001)" "ERROR:  FN001" "$out"
sleep 0.2
check "LOG line written" "1" \
	"$(grep -c 'pg_fence: stale write rejected: guard public.np_acct (id)=(1): token 6, current fence 7' "$FENCE_PGLOG" || true)"

# lease_acquire(..., wait) works without a queue in shared memory too (15/16:
# it looks again at the holder's expiry; 17+: the DSM segment's queue)
held=$(q -c "SELECT fence.lease_acquire('np-wait', '1 second')")
got=$(q -c "SELECT fence.lease_acquire('np-wait', '1 hour', 'waiter', '30 seconds') > $held")
check "a waiting lease_acquire gets the lease at the holder's expiry" "t" "$got"
q -c "DELETE FROM fence.leases WHERE name = 'np-wait'" >/dev/null
held=$(q -c "SELECT fence.lease_acquire('np-wait', '1 hour')")
(sleep 0.5; q -c "SELECT fence.lease_release('np-wait', $held)" >/dev/null) &
got=$(q -c "SELECT fence.lease_acquire('np-wait', '1 hour', 'waiter', '30 seconds') > $held")
wait
check "a waiting lease_acquire gets the lease after a release" "t" "$got"

# An ordinary role's SET of the superuser setting before the library is
# loaded in its session stays a placeholder that loading refuses.
q -c "CREATE ROLE np_squatter LOGIN" >/dev/null
out=$(psql -X -A -t -q -U np_squatter -v VERBOSITY=terse -c "SET fence.max_lease_ttl = '100 years'" \
	-c "SELECT fence.lease_acquire('np-squat', '50 years')" -c "SHOW fence.max_lease_ttl" 2>&1 | paste -sd'|')
check "a placeholder fence.max_lease_ttl set by an ordinary role does not count" \
	'WARNING:  permission denied to set parameter "fence.max_lease_ttl"|ERROR:  argument "ttl" exceeds fence.max_lease_ttl|1d' "$out"
q -c "DROP ROLE np_squatter" >/dev/null

exit $fail
