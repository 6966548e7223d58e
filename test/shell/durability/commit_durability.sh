#!/usr/bin/env bash
# durability/commit_durability.sh - pg_fence skips the commit's WAL flush only for
# transactions whose WAL needs none (src/server/pg/commit.hpp): one that only
# draws fencing tokens (already flushed), only releases a lease or only
# claims queue jobs.  Every other transaction that also took a lock, drew a
# token, released a lease or claimed a job must commit as durably as the
# caller configured.
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

# 8. a queue job enqueued and claimed in one transaction: the enqueue is durable
q -c 'BEGIN' -c "SELECT fence.enqueue('cq8', '{}')" -c "SELECT count(*) FROM fence.claim('cq8', '1 hour')" \
  -c 'COMMIT' >/dev/null
crash
check "enqueue then claim: the job survives" "SELECT count(*) FROM fence.jobs WHERE queue = 'cq8'" 1

# 9. claim, an effect and complete in one transaction: all durable
q -c "SELECT fence.enqueue('cq9', '{}')" >/dev/null
q -c 'BEGIN' -c "SELECT fence.complete(job_id, token) FROM fence.claim('cq9', '1 hour')" \
  -c 'INSERT INTO t VALUES (9)' -c 'COMMIT' >/dev/null
crash
check "claim, INSERT, complete: the INSERT survives" 'SELECT count(*) FROM t WHERE id = 9' 1
check "claim, INSERT, complete: the completion survives" \
	"SELECT state FROM fence.jobs WHERE queue = 'cq9'" completed

# 10. a claim alone (its commit may be asynchronous): lost or kept, the job is
#     not lost and its next claim's token is larger than the claim's
q -c "SELECT fence.enqueue('cq10', '{}')" >/dev/null
tok10=$(q -c "SELECT token FROM fence.claim('cq10', '1 hour')")
crash
check "claim alone: the job is queued again or still running under it" \
	"SELECT state = 'queued' OR (state = 'running' AND token = $tok10) FROM fence.jobs WHERE queue = 'cq10'" t
check "claim alone: the next claim's token is larger" \
	"SELECT token > $tok10 FROM fence.claim('cq10', '1 hour')" t

# 7. no setting the caller can see was changed along the way
check "synchronous_commit unchanged after a lock-only commit" \
	"SELECT fence.try_lock('c7') IS NOT NULL; SHOW synchronous_commit" "t
on"

if [ "$failures" -ne 0 ]; then
	echo "commit_durability: $failures failure(s)"
	exit 1
fi
echo "commit_durability: ok"
