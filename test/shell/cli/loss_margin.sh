#!/usr/bin/env bash
# cli/loss_margin.sh - under CPU load, `pg_fence run --lease` kills its
# command before the server can let anyone else take the lease.
#
# The command ignores SIGTERM, so only the SIGKILL that pg_fence sends at
# (local deadline + grace) ends it: the latest moment pg_fence acts.  Its
# renewals are blocked by stopping (SIGSTOP) the backend of pg_fence's
# lease connection, so the server keeps the expiry of the last renewal it
# executed.  Meanwhile 2 x nproc busy loops (bounded by timeout(1)) load
# every core.
#
# "Dead before the expiry" is judged by the server, never by this script's
# timing: the command holds an advisory lock through a psql it started
# (stdin a pipe, so its backend is idle in recv and exits as soon as the
# command's process group dies).  A watcher session waits for that lock
# and, once granted, compares clock_timestamp() with the lease's
# expires_at.  Every delay on the way (the backend noticing the close,
# waking the watcher, the load) only makes the watcher's time later, so a
# pass cannot be a fluke of scheduling.
#
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without leases.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_margin
cli_env_require_leases
q() { psql -X -At -c "$1"; }
# wait_for SQL: up to 30 s for SQL to return t
wait_for() { for _ in $(seq 1 600); do [ "$(q "$1")" = t ] && return 0; sleep 0.05; done; return 1; }

STOPPED=""
BUSY=()
cleanup_margin() {
	[ -n "$STOPPED" ] && ${FENCE_AS_OWNER:-} kill -CONT "$STOPPED" 2>/dev/null
	[ ${#BUSY[@]} -gt 0 ] && kill "${BUSY[@]}" 2>/dev/null
	cli_env_cleanup
}
trap cleanup_margin EXIT

KEY=424242
TTL=3s	# grace 1 s, signal allowance 250 ms: SIGKILL due 256 ms before sent + TTL

"$PGF" run --lease "$TTL" --holder margin-test margin -- sh -c '
	trap "" TERM
	(echo "SELECT pg_advisory_lock('"$KEY"');"; exec sleep 600) | psql -X -q >/dev/null' \
	2>"$T/run.err" & RUN=$!

wait_for "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = $KEY AND granted)" ||
	{ echo "not ok - the command did not take its advisory lock"; exit 1; }
# pg_fence's lease connection: the session whose last statement acquired or renewed "margin"
renewer=$(q "SELECT pid FROM pg_stat_activity WHERE query ~ 'fence\.(lease_acquire|lease_renew)' AND query ~ 'margin' AND pid <> pg_backend_pid()")
[ -n "$renewer" ] || { echo "not ok - pg_fence's lease connection not found"; exit 1; }

# load every core, each loop ending by itself after 60 s at the latest
for _ in $(seq 1 $((2 * $(nproc)))); do
	bash -c 'while [ $SECONDS -lt 60 ]; do :; done' >/dev/null 2>&1 &
	BUSY+=($!)
done

# The watcher queues for the command's advisory lock now, before anything happens.
psql -X -At -v ON_ERROR_STOP=1 -c "SET statement_timeout = '60s'" \
	-c "SELECT pg_advisory_lock($KEY)" \
	-c "SELECT (clock_timestamp() < expires_at)::text || ' ' || (expires_at - clock_timestamp())::text
	      FROM fence.leases WHERE name = 'margin'" >"$T/watch.out" 2>&1 & WATCH=$!
wait_for "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = $KEY AND NOT granted)" ||
	{ echo "not ok - the watcher did not queue"; exit 1; }

${FENCE_AS_OWNER:-} kill -STOP "$renewer" && STOPPED=$renewer
expires=$(q "SELECT expires_at FROM fence.leases WHERE name = 'margin'")

wait "$WATCH"; is "the watcher got the lock (the command died)" $? 0
wait "$RUN"; is "pg_fence exits 74 (lost)" $? 74
verdict=$(tail -n 1 "$T/watch.out")
echo "# server expiry $expires; the command's lock freed with ${verdict#* } left"
is "the command was dead before the lease expired on the server" "${verdict%% *}" "true"
is "the server kept the expiry of the last renewal it executed" \
	"$(q "SELECT expires_at = '$expires' FROM fence.leases WHERE name = 'margin'")" "t"
grep -q 'pg_fence: lost the lock "margin"' "$T/run.err"
is "pg_fence says why on stderr" $? 0

${FENCE_AS_OWNER:-} kill -CONT "$STOPPED"; STOPPED=""
echo "cli_margin: $FAILS failed"
[ "$FAILS" -eq 0 ]
