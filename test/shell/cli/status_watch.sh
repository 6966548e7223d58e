#!/usr/bin/env bash
# cli/status_watch.sh - `pg_fence status --watch`: a live view redrawn every
# --interval, --count frames: held locks and leases (held for, expiry),
# one line per waiter with how long it has waited and who holds the lock,
# the counters; the screen is cleared between frames on a terminal only;
# usage errors exit 64.
# Usage: bash scripts/temp-cluster.sh bash test/shell/cli/status_watch.sh
set -uo pipefail
source "$(dirname "$0")/../lib/cli_env.sh"
source test/shell/lib/check.sh
cli_env_setup status_watch

has() {
	if grep -qE -- "$3" <<<"$2"; then echo "ok - $1"; else
		echo "not ok - $1"; echo "  no match for: $3"; echo "  in:"; sed 's/^/    /' <<<"$2"; fail=1
	fi
}

# a holder, a waiter behind it, a live lease and an expired one
psql -X -q -c "SET application_name = 'sw-holder'" -c "SELECT fence.try_lock('job-1')" \
	-c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM fence.locks WHERE name = 'job-1'")" = 1 ] && break
	sleep 0.1
done
psql -X -q -c "SET application_name = 'sw-waiter'" -c "SELECT fence.lock('job-1')" >/dev/null 2>&1 &
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM fence.waiters WHERE wait_started IS NOT NULL")" = 1 ] && break
	sleep 0.1
done
holder_pid=$(q -c "SELECT pid FROM fence.locks WHERE name = 'job-1'")
waiter_pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'sw-waiter'")
if [ "$LEASES" = t ]; then
	q -c "SELECT fence.lease_acquire('lease-live', '1 hour', 'worker-7'),
	             fence.lease_acquire('lease-dead', '10 ms', 'worker-0')" >/dev/null
fi
sleep 0.3

start=$(date +%s%N)
out=$("$PGF" status --watch --interval 300ms --count 3 2>&1)
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
check "status --watch --count 3 exits 0" 0 "$rc"
check "three frames" 3 "$(grep -c '^pg_fence status, database status_watch_' <<<"$out")"
check "frames 300ms apart: at least 600ms for three" yes "$([ "$elapsed_ms" -ge 600 ] && echo yes || echo "no: ${elapsed_ms}ms")"
check "not a terminal: no escape sequences" 0 "$(grep -c $'\033' <<<"$out")"
has "the holder: name, kind, pid, application_name, 1 waiter, its wait" "$out" \
	"^job-1 +session +[0-9]+ +$holder_pid +sw-holder +[0-9.]+(ms|s) +1 +[0-9.]+(ms|s)$"
has "the waiter: what it waits for, pid, application_name, waited, holder" "$out" \
	"^job-1 +$waiter_pid +sw-waiter +[0-9.]+(ms|s) +$holder_pid$"
has "the counters" "$out" "^since .*: grants 1 session, 0 xact, [0-9]+ lease; busy 0; waits 0"
if [ "$LEASES" = t ]; then
	has "a live lease: holder and expiry" "$out" "^lease-live +lease +[0-9]+ +worker-7 +[0-9.]+(ms|s) +in 59m[0-9]{2}s +0"
	has "an expired lease says so" "$out" "^lease-dead +lease +[0-9]+ +worker-0 +[0-9.]+(ms|s) +EXPIRED [0-9.]+(ms|s) ago +0"
fi

# NAME: only that lock and its waiters
out=$("$PGF" status --watch --count 1 job-1 2>&1)
check "status --watch NAME shows only that name" "job-1 job-1" \
	"$(grep -E '^(job|lease)-' <<<"$out" | awk '{ print $1 }' | xargs)"

# on a terminal each frame starts by clearing the screen (script(1) gives a pty)
out=$(script -qec "$PGF status --watch --interval 100ms --count 2" /dev/null 2>&1)
check "on a terminal: the screen is cleared before each of the 2 frames" 2 \
	"$(grep -o $'\033\\[H\033\\[2J' <<<"$out" | wc -l)"

# usage errors
for args in "--watch --count 0" "--watch --count x" "--watch --interval 0" "--watch --interval soon" \
	"--count 2" "--interval 1s"; do
	# shellcheck disable=SC2086
	"$PGF" status $args >/dev/null 2>&1
	check "status $args: usage error (64)" 64 "$?"
done
exit $fail
