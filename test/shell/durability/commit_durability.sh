#!/usr/bin/env bash
# durability/commit_durability.sh - pg_fence skips the commit's WAL flush only for
# transactions whose WAL needs none (src/server/pg/commit.hpp): one that only
# draws fencing tokens (already flushed) or only releases a lease.  Every
# other transaction that also took a lock, drew a token or released a lease
# must commit as durably as the caller configured.
#
# Each case runs one transaction that mixes pg_fence calls with a durable
# change, then crashes the server at once (test/shell/lib/crash_env.sh) and
# checks after the restart that the change survived.  If pg_fence wrongly made such a commit asynchronous,
# the commit record would be lost and the check fails.
#
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail

. "$(dirname "$0")/../lib/crash_env.sh"
DB=fence_commit_durability
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

crash_env_use_db "$DB"
q -c 'CREATE EXTENSION pg_fence' \
  -c 'CREATE TABLE t (id int PRIMARY KEY)' \
  -c 'CHECKPOINT'

failures=0
check() {	# check NAME SQL EXPECTED
	local got
	got=$(q -c "$2")
	if [ "$got" = "$3" ]; then
		echo "ok   $1"
	else
		echo "FAIL $1: got '$got', expected '$3'"
		failures=$((failures + 1))
	fi
}

# 1. lock first, then a durable write
q -c 'BEGIN' -c "SELECT fence.try_lock('c1')" -c 'INSERT INTO t VALUES (1)' -c 'COMMIT' >/dev/null
crash
check "try_lock then INSERT: the INSERT survives" 'SELECT count(*) FROM t WHERE id = 1' 1

# 2. a durable write first, then a lock
q -c 'BEGIN' -c 'INSERT INTO t VALUES (2)' -c "SELECT fence.try_xact_lock('c2')" -c 'COMMIT' >/dev/null
crash
check "INSERT then try_xact_lock: the INSERT survives" 'SELECT count(*) FROM t WHERE id = 2' 1

# 3. lock, write, lock again (the last call must not re-arm the async commit)
q -c 'BEGIN' -c "SELECT fence.try_xact_lock('c3')" -c 'INSERT INTO t VALUES (3)' \
  -c "SELECT fence.try_lock('c3b')" -c 'COMMIT' >/dev/null
crash
check "lock, INSERT, lock: the INSERT survives" 'SELECT count(*) FROM t WHERE id = 3' 1

# 4. a lease acquisition in autocommit: token and row are both durable
tok=$(q -c "SELECT fence.lease_acquire('c4', '1 hour', 'case 4')")
crash
check "lease_acquire in autocommit: the lease survives" \
	"SELECT count(*) FROM fence.leases WHERE name = 'c4' AND token = $tok" 1

# 5. a lease renewal in autocommit is durable
q -c "SELECT fence.lease_renew('c4', $tok, '5 hours')" >/dev/null
crash
check "lease_renew in autocommit: the renewal survives" \
	"SELECT expires_at > clock_timestamp() + interval '4 hours' FROM fence.leases WHERE name = 'c4'" t

# 6. a lease release together with a durable write
q -c 'BEGIN' -c "SELECT fence.lease_release('c4', $tok)" -c 'INSERT INTO t VALUES (6)' -c 'COMMIT' >/dev/null
crash
check "lease_release then INSERT: the INSERT survives" 'SELECT count(*) FROM t WHERE id = 6' 1
check "lease_release then INSERT: the release survives" "SELECT count(*) FROM fence.leases WHERE name = 'c4'" 0

# 7. no setting the caller can see was changed along the way
check "synchronous_commit unchanged after a lock-only commit" \
	"SELECT fence.try_lock('c7') IS NOT NULL; SHOW synchronous_commit" "t
on"

if [ "$failures" -ne 0 ]; then
	echo "commit_durability: $failures failure(s)"
	exit 1
fi
echo "commit_durability: ok"
