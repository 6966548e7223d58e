#!/usr/bin/env bash
# leases/paused_holder.sh - the paused-holder story with real processes.
#
# Run inside a throwaway cluster:
#   bash scripts/temp-cluster.sh bash test/shell/leases/paused_holder.sh
# Holder A (a bash process) acquires a lease with a 1 s TTL and is frozen
# with SIGSTOP for longer than that; B takes the lease over and writes the
# row with fence.fenced_update; A is resumed with SIGCONT and writes with
# its old token: the write must be rejected (false) and the row keep B's.
# Exits 77 (skip) when fence.fenced_update is not implemented (0A000).
set -euo pipefail

q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "lease_paused_holder: FAIL: $*" >&2; exit 1; }
DIR=$(mktemp -d)
A=""
trap '[ -n "$A" ] && kill -CONT "$A" 2>/dev/null; rm -rf "$DIR"' EXIT

q <<'SQL'
CREATE EXTENSION IF NOT EXISTS pg_fence;
DROP TABLE IF EXISTS paused_doc;
CREATE TABLE paused_doc (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0);
INSERT INTO paused_doc VALUES (1, 'initial', 0);
SQL

# token 0 is never a token (FN004): changes nothing if implemented
if ! out=$(psql -X -qAt -v VERBOSITY=sqlstate \
	-c "SELECT fence.fenced_update('paused_doc', '{\"id\": 1}', 0, '{\"body\": \"probe\"}')" 2>&1); then
	if grep -q 0A000 <<<"$out"; then
		echo "lease_paused_holder: skipped: fence.fenced_update is not implemented"
		exit 77
	fi
	grep -q FN004 <<<"$out" || fail "probe failed: $out"
fi

# Holder A: acquire, publish the token, then (after being paused) write.
(
	t=$(q -c "SELECT fence.lease_acquire('paused', '1 s', 'A')")
	echo "$t" >"$DIR/a_token"
	while [ ! -e "$DIR/go" ]; do sleep 0.05; done
	q -c "SELECT fence.fenced_update('paused_doc', '{\"id\": 1}', $t, '{\"body\": \"written by A\"}')" >"$DIR/a_result"
) &
A=$!

for _ in $(seq 1 100); do [ -s "$DIR/a_token" ] && break; sleep 0.05; done
ta=$(cat "$DIR/a_token")
[ -n "$ta" ] || fail "A did not get the lease"
kill -STOP "$A"
echo "A holds the lease with token $ta and is frozen (SIGSTOP)"

tb=$(q -c "SELECT fence.lease_acquire('paused', '10 s', 'B')")
[ -z "$tb" ] || fail "B got the lease ($tb) while A's was unexpired"
sleep 1.3
tb=$(q -c "SELECT fence.lease_acquire('paused', '10 s', 'B')")
[ -n "$tb" ] || fail "B could not take over the expired lease"
[ "$tb" -gt "$ta" ] || fail "B's token $tb is not larger than A's $ta"
rb=$(q -c "SELECT fence.fenced_update('paused_doc', '{\"id\": 1}', $tb, '{\"body\": \"written by B\"}')")
[ "$rb" = t ] || fail "B's write was not applied ($rb)"
echo "B took over with token $tb and wrote the row"

touch "$DIR/go"
kill -CONT "$A"
wait "$A" || fail "A's write failed with an error"
A=""
ra=$(cat "$DIR/a_result")
[ "$ra" = f ] || fail "A's write with stale token $ta returned '$ra', expected f"
row=$(q -c "SELECT body || '|' || fence FROM paused_doc WHERE id = 1")
[ "$row" = "written by B|$tb" ] || fail "row is '$row', expected 'written by B|$tb'"
renew=$(q -c "SELECT fence.lease_renew('paused', $ta, '1 s')")
[ "$renew" = f ] || fail "A renewed a lease it lost"
echo "A resumed: its write with token $ta was rejected and its renewal refused"
echo "lease_paused_holder: ok"
