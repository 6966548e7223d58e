#!/usr/bin/env bash
# cli/semaphore.sh - pg_fence run --semaphore N: N commands at once, each
# with a token of its own; the N+1st is busy (75) or waits in the server
# (--wait) and starts as soon as a permit is released; usage errors; the
# permit is renewed like a lease and lost like one (74); --wait for a lease
# waits in the server (one call, a backend with wait event Extension).
#
# Runs inside scripts/temp-cluster.sh (PG* variables set), from the repo
# root, against src/cli/pg_fence.  Uses a database of its own.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_semaphore
cli_env_require_leases
if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.semaphore_acquire(text,integer,interval,text,interval)') IS NOT NULL")" != t ]; then
	echo "cli_semaphore: skipped, no fence.semaphore_acquire"
	exit 77
fi

holders() { psql -X -At -c "SELECT count(*) FROM fence.locks WHERE name = '$1' AND kind = '$2' AND NOT expired"; }

# --- usage ---------------------------------------------------------------
for args in "run --semaphore 0 n -- true" "run --semaphore -1 n -- true" "run --semaphore x n -- true" \
	"run --semaphore 10001 n -- true" "run --semaphore 2 --session n -- true" "run --semaphore"; do
	# shellcheck disable=SC2086
	err=$("$PGF" $args 2>&1 >/dev/null); rc=$?
	is "usage error exits 64: pg_fence $args" "$rc" 64
	has "usage error message is prefixed: pg_fence $args" "$err" "^pg_fence: "
done
has "--help documents --semaphore" "$("$PGF" --help)" "--semaphore N"

# --- two permits: two commands at once, the third is busy -----------------
"$PGF" run --semaphore 2 --lease 5s pool -- sh -c 'echo $FENCE_TOKEN > "$0"; sleep 30' "$T/a" 2>"$T/a.err" &
A=$!
"$PGF" run --semaphore 2 --lease 5s pool -- sh -c 'echo $FENCE_TOKEN > "$0"; sleep 30' "$T/b" 2>"$T/b.err" &
B=$!
waitfile "$T/a" && waitfile "$T/b"; is "two holders of a 2-permit semaphore run at once" $? 0
ta=$(cat "$T/a"); tb=$(cat "$T/b")
if [ -n "$ta" ] && [ -n "$tb" ] && [ "$ta" != "$tb" ]; then ok "each holder has its own token"; else bad "tokens '$ta' '$tb'"; fi
is "fence.locks shows two semaphore permits" "$(holders pool semaphore)" 2
err=$("$PGF" run --semaphore 2 --lease 5s pool -- true 2>&1); rc=$?
is "third holder is busy: exits 75" "$rc" 75
has "busy message names the semaphore" "$err" 'semaphore "pool" (2 permits) has all its permits held'
err=$("$PGF" run --lease 5s pool -- true 2>&1); rc=$?
is "a lease of a name held as a semaphore is refused (70)" "$rc" 70
has "the refusal names the reason" "$err" "is held as a semaphore"

# --- renewed like a lease: still held after several TTLs ------------------
sleep 6
is "permits are renewed past their TTL" "$(holders pool semaphore)" 2

# --- --wait: started as soon as a permit is released (server-side wait) ---
start=$(date +%s%N)
"$PGF" run --semaphore 2 --lease 5s --wait 30s pool -- sh -c 'echo $FENCE_TOKEN > "$0"' "$T/c" 2>"$T/c.err" &
C=$!
sleep 1
is "the waiter has not started its command" "$([ -s "$T/c" ] && echo started || echo waiting)" waiting
is "the waiter sleeps in the server" \
	"$(psql -X -At -c "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%semaphore_acquire(%pool%'")" 1
kill -TERM $A; wait $A
waitfile "$T/c"; is "the waiter ran once a permit was released" $? 0
wait $C; is "the waiter's command exited 0" $? 0
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$elapsed" -lt 10000 ]; then ok "the waiter did not wait out --wait ($elapsed ms)"; else bad "waited $elapsed ms"; fi
tc=$(cat "$T/c")
if [ "$tc" -gt "$tb" ] 2>/dev/null; then ok "the waiter's token is newer"; else bad "token '$tc' vs '$tb'"; fi

# --- --wait times out: 73 -------------------------------------------------
"$PGF" run --semaphore 1 --lease 5s one -- sleep 30 2>/dev/null &
D=$!
sleep 0.7
err=$("$PGF" run --semaphore 1 --lease 5s --wait 500ms one -- true 2>&1); rc=$?
is "--wait that times out exits 73" "$rc" 73
has "timeout message" "$err" 'semaphore "one" (1 permit) still has all its permits held after waiting 500ms'

# --- lost like a lease: 74 --------------------------------------------------
"$PGF" run --semaphore 3 --lease 2s lossy -- sleep 30 2>"$T/lost.err" &
E=$!
for _ in $(seq 1 100); do [ "$(holders lossy semaphore)" = 1 ] && break; sleep 0.05; done
# a superuser deletes the permit behind its back: the next renewal is refused
psql -X -q -c "DELETE FROM fence.leases WHERE name = 'lossy'"
wait $E; is "a permit lost while the command runs exits 74" $? 74
has "loss message" "$(cat "$T/lost.err")" "renewal refused"

# --- --lease --wait waits in the server too ---------------------------------
held=$(psql -X -At -c "SELECT fence.lease_acquire('leased', '1 hour')")
"$PGF" run --lease 5s --wait 30s leased -- sh -c 'echo $FENCE_TOKEN > "$0"' "$T/l" 2>"$T/l.err" &
L=$!
sleep 1
is "a lease waiter sleeps in the server (one call)" \
	"$(psql -X -At -c "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%lease_acquire(%leased%wait =>%'")" 1
busy1=$(psql -X -At -c "SELECT busy FROM fence.stats()")
sleep 1
is "no lease_acquire came back busy meanwhile (no polling)" "$(psql -X -At -c "SELECT busy FROM fence.stats()")" "$busy1"
psql -X -At -c "SELECT fence.lease_release('leased', $held)" >/dev/null
waitfile "$T/l"; is "the lease waiter ran once the lease was released" $? 0
wait $L; is "the lease waiter exited 0" $? 0

kill -TERM $B $D 2>/dev/null; wait $B $D 2>/dev/null
[ "$FAILS" -eq 0 ]
