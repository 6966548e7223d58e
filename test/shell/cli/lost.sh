#!/usr/bin/env bash
# cli/lost.sh - losing the lease while the command runs.
#  1. pg_fence is frozen (SIGSTOP) past its TTL: another instance takes the
#     lease over and writes; the first command's late fenced write is
#     rejected; when pg_fence is resumed it notices the loss, kills its
#     command's process group and exits 74.
#     A stopped command (kill -STOP) does not stop pg_fence: it keeps the
#     lease renewed, and the command continues under it after SIGCONT.
#  2. pg_fence is SIGKILLed: its command dies with it (PR_SET_PDEATHSIG).
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without leases.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_lost
cli_env_require_leases
alive() { kill -0 "$1" 2>/dev/null && echo alive || echo dead; }

psql -X -q -c "CREATE TABLE report (id int PRIMARY KEY, writer text, fence bigint NOT NULL DEFAULT 0)" \
	-c "INSERT INTO report VALUES (1, 'nobody')" || exit 1

# 1. Frozen holder.  A's command waits for "go", then writes with its (old) token.
"$PGF" run --lease 2s job -- sh -c '
	echo $$ > "$1/a.pid"
	while [ ! -e "$1/go" ]; do sleep 0.05; done
	psql -X -At -c "SELECT fence.fenced_update(\$\$report\$\$, \$\${\"id\":1}\$\$, $FENCE_TOKEN, \$\${\"writer\":\"A\"}\$\$)" > "$1/a.result" 2>&1
	sleep 30' sh "$T" 2>"$T/a.err" & A=$!
waitfile "$T/a.pid" || { echo "not ok - A did not start"; exit 1; }
apid=$(cat "$T/a.pid")
kill -STOP "$A"
sleep 2.3 # past A's TTL
"$PGF" run --lease 2s job -- sh -c '
	psql -X -At -c "SELECT fence.fenced_update(\$\$report\$\$, \$\${\"id\":1}\$\$, $FENCE_TOKEN, \$\${\"writer\":\"B\"}\$\$)"' >"$T/b.result" 2>&1
is "B takes the expired lease over and runs" $? 0
is "B's fenced write is applied" "$(cat "$T/b.result")" "t"
touch "$T/go"
waitfile "$T/a.result" || echo "not ok - A's late write did not happen"
is "A's late write (old token) is rejected" "$(cat "$T/a.result")" "f"
is "the row keeps B's write" "$(psql -X -At -c 'SELECT writer FROM report')" "B"
is "A's command still runs while A is frozen" "$(alive "$apid")" "alive"
start=$(date +%s%N)
kill -CONT "$A"
wait "$A"; rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
is "resumed A exits 74 (lost)" "$rc" 74
is "resumed A stopped its command within a second" "$([ "$ms" -lt 1000 ] && echo yes || echo "no (${ms}ms)")" "yes"
is "A's command is dead" "$(alive "$apid")" "dead"
grep -q 'pg_fence: lost the lock "job"' "$T/a.err"
is "A says why on stderr" $? 0

# A command that ignores SIGTERM is SIGKILLed after the grace period.
"$PGF" run --lease 900ms stubborn -- sh -c 'trap "" TERM; echo $$ > "$1/s.pid"; while :; do sleep 0.05; done' sh "$T" 2>/dev/null & S=$!
waitfile "$T/s.pid" || echo "not ok - stubborn did not start"
kill -STOP "$S"; sleep 1; kill -CONT "$S"
wait "$S"; is "stubborn command: exits 74" $? 74
is "stubborn command was SIGKILLed" "$(alive "$(cat "$T/s.pid")")" "dead"

# A stopped command (kill -STOP, no terminal) does not stop pg_fence: it
# keeps renewing, so nobody else can take the lease while the command is
# stopped, and the command continues under the same lease after SIGCONT.
rm -f "$T/go"
"$PGF" run --lease 1500ms stp -- sh -c 'echo $$ > "$1/p.pid"; while [ ! -e "$1/go" ]; do sleep 0.05; done' sh "$T" 2>"$T/p.err" & P=$!
waitfile "$T/p.pid" || echo "not ok - stp did not start"
ppid_cmd=$(cat "$T/p.pid")
tok=$(psql -X -At -c "SELECT token FROM fence.leases WHERE name = 'stp'")
kill -STOP "$ppid_cmd"
sleep 2 # past the TTL
is "pg_fence is not stopped with its command" "$(awk '{print $3}' "/proc/$P/stat")" "S"
"$PGF" run --lease 5s stp -- true 2>/dev/null
is "the lease is still held (renewed) while the command is stopped: 75" $? 75
is "same token, not expired" "$(psql -X -At -c "SELECT token || ' ' || (expires_at > clock_timestamp())::text FROM fence.leases WHERE name = 'stp'")" "$tok true"
kill -CONT "$ppid_cmd"; touch "$T/go"
for _ in $(seq 1 60); do kill -0 "$P" 2>/dev/null || break; sleep 0.05; done
kill -CONT "$P" 2>/dev/null # (a pg_fence that stopped itself would hang the test)
wait "$P"; is "resumed command ends normally: exits 0" $? 0
is "no loss reported" "$(cat "$T/p.err")" ""

# 2. pg_fence SIGKILLed: the command dies too.
"$PGF" run --lease 5s orphan -- sh -c 'echo $$ > "$1/o.pid"; exec sleep 30' sh "$T" & O=$!
waitfile "$T/o.pid" || echo "not ok - orphan test did not start"
opid=$(cat "$T/o.pid")
kill -KILL "$O"; wait "$O" 2>/dev/null
for _ in $(seq 1 40); do [ "$(alive "$opid")" = dead ] && break; sleep 0.05; done
is "SIGKILL of pg_fence kills its command" "$(alive "$opid")" "dead"

echo "cli_lost: $FAILS failed"
[ "$FAILS" -eq 0 ]
