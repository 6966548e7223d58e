#!/usr/bin/env bash
# cli/work.sh - `pg_fence work QUEUE -- COMMAND`:
#  1. payload on stdin, FENCE_TOKEN / FENCE_JOB_ID / FENCE_ATTEMPT /
#     FENCE_QUEUE in the environment, exit 0 completes the job;
#  2. a non-zero exit fails it with the status and stderr's tail (stderr
#     also flows to pg_fence's), retried after the backoff, failed for
#     good after max_attempts;
#  3. --concurrency N runs N commands at once;
#  4. a frozen pg_fence (SIGSTOP past its TTL) loses its claim: another
#     worker claims the job again and completes it, the first command's
#     late fenced write is stale, and once resumed pg_fence stops its
#     command and does not complete the job;
#  5. a claim lost while pg_fence runs (the job cancelled) stops the
#     command at the next heartbeat;
#  6. SIGTERM lets the job in hand finish and exits 0; a second SIGTERM
#     stops the command and fails its job for an immediate retry;
#  7. --wait: exits 0 once idle; bad options exit 64, no server 69.
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without the queue.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_work
if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.claim(text,interval,integer,interval,text)') IS NOT NULL")" != t ]; then
	echo "cli_work: skipped, no job queue"
	exit 77
fi
q() { psql -X -At -c "$1"; }
alive() { kill -0 "$1" 2>/dev/null && echo alive || echo dead; }
enq() { "$PGF" enqueue "$@"; }

# 1. Payload, environment, completion.
j1=$(enq basic '{"to": "ann"}')
j2=$(enq basic '{"to": "bob"}')
timeout 60 "$PGF" work basic --max-jobs 2 -- sh -c 'cat > "$1/payload.$FENCE_JOB_ID"; env | grep -E "^FENCE_(TOKEN|JOB_ID|ATTEMPT|QUEUE)=" | sort > "$1/env.$FENCE_JOB_ID"' sh "$T" 2>"$T/basic.err"
is "work --max-jobs 2 exits 0" $? 0
is "job 1 completed" "$(q "SELECT state FROM fence.jobs WHERE id = $j1")" completed
is "job 2 completed" "$(q "SELECT state FROM fence.jobs WHERE id = $j2")" completed
is "payload on stdin" "$(cat "$T/payload.$j1")" '{"to": "ann"}'
tok=$(q "SELECT token FROM fence.jobs WHERE id = $j1")
is "FENCE_ATTEMPT, FENCE_JOB_ID, FENCE_QUEUE, FENCE_TOKEN" "$(tr '\n' ' ' <"$T/env.$j1")" \
	"FENCE_ATTEMPT=1 FENCE_JOB_ID=$j1 FENCE_QUEUE=basic FENCE_TOKEN=$tok "
is "nothing on stderr" "$(cat "$T/basic.err")" ""

# 2. Failure: status and stderr's tail; retried after the backoff; failed for good.
jf=$(enq failing '{}' --max-attempts 2)
timeout 60 "$PGF" work failing --max-jobs 1 -- sh -c 'echo "first line" >&2; echo "boom: disk full" >&2; exit 3' 2>"$T/fail.err"
is "work exits 0 after a failed job" $? 0
is "the failed attempt is queued again" "$(q "SELECT state, attempt FROM fence.jobs WHERE id = $jf")" "queued|1"
err=$(q "SELECT last_error FROM fence.jobs WHERE id = $jf")
has "last_error has the exit status" "$err" "exit status 3"
has "last_error has stderr's tail" "$err" "boom: disk full"
has "the command's stderr flows to pg_fence's" "$(cat "$T/fail.err")" "boom: disk full"
is "retry after the backoff (run_at ahead)" "$(q "SELECT run_at > clock_timestamp() FROM fence.jobs WHERE id = $jf")" t
# --wait 10s: waits (in the server) for run_at, runs attempt 2, which fails for good.
timeout 60 "$PGF" work failing --wait 10s --max-jobs 1 -- sh -c 'echo "again" >&2; exit 4' 2>/dev/null
is "second run exits 0" $? 0
is "after max_attempts the job is failed for good" "$(q "SELECT state, attempt FROM fence.jobs WHERE id = $jf")" "failed|2"
has "last_error of the last attempt" "$(q "SELECT last_error FROM fence.jobs WHERE id = $jf")" "exit status 4"
jk=$(enq failing '{}' --max-attempts 1)
timeout 60 "$PGF" work failing --max-jobs 1 -- sh -c 'kill -TERM $$' 2>/dev/null
has "a command killed by a signal: named in last_error" "$(q "SELECT last_error FROM fence.jobs WHERE id = $jk")" "killed by signal 15"
# Invalid UTF-8 on stderr (Latin-1), and a 2000-byte tail that starts inside a
# character: the job is failed with a valid text, and the worker goes on.
jl=$(enq latin '{}' --max-attempts 1)
ju=$(enq latin '{}' --max-attempts 1)
timeout 60 "$PGF" work latin --max-jobs 2 -- sh -c 'if [ "$FENCE_JOB_ID" = '"$jl"' ]; then printf "caf\351 failed\n" >&2; else python3 -c "import sys; sys.stderr.buffer.write(b\"\\xe2\\x82\\xac\" * 1000)"; fi; exit 5' 2>/dev/null
is "invalid UTF-8 on stderr: work exits 0" $? 0
is "invalid UTF-8 on stderr: both jobs failed" "$(q "SELECT string_agg(state::text, ',' ORDER BY id) FROM fence.jobs WHERE id IN ($jl, $ju)")" "failed,failed"
has "an invalid byte is replaced by U+FFFD" "$(q "SELECT last_error FROM fence.jobs WHERE id = $jl")" "caf$(printf '\357\277\275') failed"
is "a tail cut inside a character starts at a character" "$(q "SELECT left(split_part(last_error, 'stderr: ', 2), 1), octet_length(split_part(last_error, 'stderr: ', 2)) FROM fence.jobs WHERE id = $ju")" "$(printf '\342\202\254')|1998"
jn=$(enq failing '{}' --max-attempts 1)
timeout 60 "$PGF" work failing --max-jobs 1 -- /nonexistent/command 2>/dev/null
has "a command not found: exit status 127" "$(q "SELECT last_error FROM fence.jobs WHERE id = $jn")" "exit status 127"

# 3. --concurrency 3: three commands at once (each waits for the other two).
for i in 1 2 3; do enq conc "{\"i\": $i}" >/dev/null; done
timeout 30 "$PGF" work conc --concurrency 3 --max-jobs 3 -- sh -c '
	touch "$1/c.$FENCE_JOB_ID"
	n=0; while [ "$(ls "$1"/c.* | wc -l)" -lt 3 ]; do sleep 0.05; n=$((n+1)); [ $n -gt 300 ] && exit 1; done
	exit 0' sh "$T" 2>/dev/null
is "--concurrency 3: exits 0" $? 0
is "--concurrency 3: the three ran at once and completed" \
	"$(q "SELECT count(*) FROM fence.jobs WHERE queue = 'conc' AND state = 'completed'")" 3

# 4. Frozen pg_fence.
psql -X -q -c "CREATE TABLE report (id int PRIMARY KEY, writer text, fence bigint NOT NULL DEFAULT 0)" \
	-c "INSERT INTO report VALUES (1, 'nobody')" || exit 1
jz=$(enq frozen '{}')
"$PGF" work frozen --ttl 2s --max-jobs 1 -- sh -c '
	echo $$ > "$1/a.pid"
	while [ ! -e "$1/go" ]; do sleep 0.05; done
	psql -X -At -c "SELECT fence.fenced_update(\$\$report\$\$, \$\${\"id\":1}\$\$, $FENCE_TOKEN, \$\${\"writer\":\"A\"}\$\$)" > "$1/a.result" 2>&1
	sleep 30' sh "$T" 2>"$T/a.err" & A=$!
waitfile "$T/a.pid" || { echo "not ok - A did not start"; exit 1; }
apid=$(cat "$T/a.pid")
atok=$(q "SELECT token FROM fence.jobs WHERE id = $jz")
kill -STOP "$A"
start=$(date +%s%N)
timeout 30 "$PGF" work frozen --ttl 5s --max-jobs 1 -- sh -c '
	psql -X -At -c "SELECT fence.fenced_update(\$\$report\$\$, \$\${\"id\":1}\$\$, $FENCE_TOKEN, \$\${\"writer\":\"B\"}\$\$)" > "$1/b.result"' sh "$T" 2>/dev/null
is "B (waiting in the server) claims the expired job and exits 0" $? 0
ms=$((($(date +%s%N) - start) / 1000000))
is "B got it once A's 2 s claim expired" "$([ "$ms" -lt 5000 ] && echo yes || echo "no (${ms}ms)")" yes
is "B's fenced write is applied" "$(cat "$T/b.result")" t
is "the job is completed by B, attempt 2" "$(q "SELECT state, attempt FROM fence.jobs WHERE id = $jz")" "completed|2"
btok=$(q "SELECT token FROM fence.jobs WHERE id = $jz")
is "B's token is larger" "$([ "$btok" -gt "$atok" ] && echo yes)" yes
touch "$T/go"
waitfile "$T/a.result" || echo "not ok - A's late write did not happen"
is "A's late write (old token) is stale" "$(cat "$T/a.result")" f
is "the row keeps B's write" "$(q 'SELECT writer FROM report')" B
is "A's command still runs while A is frozen" "$(alive "$apid")" alive
is "A itself is still there (stopped)" "$(alive "$A")" alive
[ "$(alive "$A")" = alive ] || sed 's/^/#   A: /' "$T/a.err"
kill -CONT "$A"
wait "$A"; rc=$?
is "resumed A exits 0" "$rc" 0
is "A's command was stopped" "$(alive "$apid")" dead
has "A says the claim was lost" "$(cat "$T/a.err")" "lost its claim"
is "the job stays completed by B" "$(q "SELECT state, token FROM fence.jobs WHERE id = $jz")" "completed|$btok"

# 5. A claim lost while pg_fence runs: cancelled, the next heartbeat is refused.
jc=$(enq lost '{}')
"$PGF" work lost --ttl 6s --max-jobs 1 -- sh -c 'echo $$ > "$1/l.pid"; exec sleep 30' sh "$T" 2>"$T/l.err" & L=$!
waitfile "$T/l.pid" || echo "not ok - lost test did not start"
q "SELECT fence.cancel($jc)" >/dev/null
start=$(date +%s%N)
wait "$L"; rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
is "cancelled job: pg_fence exits 0" "$rc" 0
# Refused at the next heartbeat (every 2 s), before the claim's local deadline (3.75 s).
is "cancelled job: the command was stopped at the next heartbeat" \
	"$([ "$ms" -lt 3700 ] && echo yes || echo "no (${ms}ms)")" yes
is "cancelled job: command dead" "$(alive "$(cat "$T/l.pid")")" dead
has "cancelled job: the refusal is reported" "$(cat "$T/l.err")" "heartbeat refused"
is "cancelled job stays cancelled" "$(q "SELECT state FROM fence.jobs WHERE id = $jc")" cancelled

# 6. SIGTERM: the job in hand finishes and is completed; exit 0.
jt=$(enq term '{}')
"$PGF" work term -- sh -c 'echo $$ > "$1/t.pid"; sleep 1; echo finished > "$1/t.out"' sh "$T" 2>"$T/t.err" & W=$!
waitfile "$T/t.pid" || echo "not ok - term test did not start"
kill -TERM "$W"
wait "$W"; rc=$?
is "SIGTERM: exits 0" "$rc" 0
is "SIGTERM: the command finished" "$(cat "$T/t.out" 2>/dev/null)" finished
is "SIGTERM: its job completed" "$(q "SELECT state FROM fence.jobs WHERE id = $jt")" completed
has "SIGTERM: says so" "$(cat "$T/t.err")" "stopping"
# A second SIGTERM stops the command; its job is failed and claimable at once.
jt2=$(enq term '{}')
"$PGF" work term -- sh -c 'echo $$ > "$1/t2.pid"; exec sleep 30' sh "$T" 2>/dev/null & W=$!
waitfile "$T/t2.pid" || echo "not ok - second term test did not start"
kill -TERM "$W"; sleep 0.3; kill -TERM "$W"
wait "$W"; rc=$?
is "two SIGTERMs: exits 0" "$rc" 0
is "two SIGTERMs: the command was stopped" "$(alive "$(cat "$T/t2.pid")")" dead
is "two SIGTERMs: the job is queued again, runnable now" \
	"$(q "SELECT state, attempt, run_at <= clock_timestamp() FROM fence.jobs WHERE id = $jt2")" "queued|1|t"
has "two SIGTERMs: last_error names the signal" "$(q "SELECT last_error FROM fence.jobs WHERE id = $jt2")" "signal 15"

# A command ignoring SIGTERM: the second SIGTERM's SIGKILL follows after the
# grace (TTL/3 = 1 s), and the job is failed for an immediate retry.
jt3=$(enq termign '{}')
"$PGF" work termign --ttl 3s -- sh -c 'trap "" TERM; echo $$ > "$1/t3.pid"; while :; do sleep 0.1; done' sh "$T" 2>/dev/null & W=$!
waitfile "$T/t3.pid" || echo "not ok - ignored term test did not start"
kill -TERM "$W"; sleep 0.3; kill -TERM "$W"
start=$(date +%s%N)
timeout 20 tail --pid="$W" -f /dev/null
ms=$((($(date +%s%N) - start) / 1000000))
wait "$W"; rc=$?
is "SIGTERM ignored: two SIGTERMs exit 0" "$rc" 0
is "SIGTERM ignored: SIGKILL after the grace" "$([ "$ms" -lt 4000 ] && echo yes || echo "no (${ms}ms)")" yes
is "SIGTERM ignored: the command was killed" "$(alive "$(cat "$T/t3.pid")")" dead
is "SIGTERM ignored: the job is queued again, runnable now" \
	"$(q "SELECT state, attempt, run_at <= clock_timestamp(), last_error LIKE '%signal 9%' FROM fence.jobs WHERE id = $jt3")" "queued|1|t|t"

# The claimant session ends while every slot is busy (-j 1): the command is
# stopped at once, not at its claim's deadline.
jc=$(enq claimant '{}')
"$PGF" work claimant -j 1 --max-jobs 2 --holder wfix-claimant -- sh -c '[ "$FENCE_ATTEMPT" = 1 ] || exit 0; echo $$ > "$1/c.pid"; exec sleep 30' sh "$T" 2>"$T/c.err" & W=$!
waitfile "$T/c.pid" || echo "not ok - claimant test did not start"
q "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.objsubid = 26231 AND a.application_name = 'wfix-claimant'" >/dev/null
sleep 1.5
has "claimant session ended: the loss is reported at once" "$(cat "$T/c.err")" "claimant session ended"
is "claimant session ended: the command was stopped" "$(alive "$(cat "$T/c.pid")")" dead
timeout 20 tail --pid="$W" -f /dev/null; wait "$W"
is "claimant session ended: the job rescued, its result discarded, attempt 2 completes" \
	"$(q "SELECT state, attempt FROM fence.jobs WHERE id = $jc")" "completed|2"

# After that loss, with free slots (-j 2), nothing is claimed again while the
# lost command still runs (it ignores SIGTERM; SIGKILL after 1 s).
jr=$(enq rescue '{}')
rm -f "$T/r.pid"
"$PGF" work rescue -j 2 --max-jobs 2 --ttl 3s --holder wfix-rescue -- sh -c 'if [ "$FENCE_ATTEMPT" = 1 ]; then trap "" TERM; echo $$ > "$1/r.pid"; while :; do sleep 0.1; done; else kill -0 "$(cat "$1/r.pid")" 2>/dev/null && echo alive > "$1/r.out" || echo dead > "$1/r.out"; fi' sh "$T" 2>/dev/null & W=$!
waitfile "$T/r.pid" || echo "not ok - rescue test did not start"
q "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.objsubid = 26231 AND a.application_name = 'wfix-rescue'" >/dev/null
waitfile "$T/r.out" || echo "not ok - rescue test: attempt 2 did not run"
timeout 20 tail --pid="$W" -f /dev/null; wait "$W"
is "lost command still running: not claimed again until it is gone" "$(cat "$T/r.out")" dead
is "the rescued job completed by attempt 2" "$(q "SELECT state, attempt FROM fence.jobs WHERE id = $jr")" "completed|2"

# An idle worker (waiting in the server for a job) stops at once on SIGTERM.
"$PGF" work idle -- true 2>/dev/null & W=$!
sleep 0.5
start=$(date +%s%N)
kill -TERM "$W"
wait "$W"; rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
is "idle worker: SIGTERM exits 0" "$rc" 0
is "idle worker: at once (its wait in the server is cancelled)" "$([ "$ms" -lt 2000 ] && echo yes || echo "no (${ms}ms)")" yes
is "idle worker: no waiting claim left behind" \
	"$(q "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%fence.claim(%' AND pid <> pg_backend_pid()")" 0

# A stopped command (kill -STOP) does not stop pg_fence: it keeps the claim
# alive past its TTL, and the job completes once the command continues.
js=$(enq stopped '{}')
rm -f "$T/go"
"$PGF" work stopped --ttl 1500ms --max-jobs 1 -- sh -c 'echo $$ > "$1/s.pid"; while [ ! -e "$1/go" ]; do sleep 0.05; done' sh "$T" 2>"$T/s.err" & W=$!
waitfile "$T/s.pid" || echo "not ok - stopped test did not start"
stok=$(q "SELECT token FROM fence.jobs WHERE id = $js")
kill -STOP "$(cat "$T/s.pid")"
sleep 2.5 # past the TTL
is "stopped command: the claim is kept (same token, not expired)" \
	"$(q "SELECT state, token, claimed_until > clock_timestamp() FROM fence.jobs WHERE id = $js")" "running|$stok|t"
kill -CONT "$(cat "$T/s.pid")"; touch "$T/go"
wait "$W"; rc=$?
is "stopped command: pg_fence exits 0" "$rc" 0
is "stopped command: the job completed with the first claim" "$(q "SELECT state, attempt FROM fence.jobs WHERE id = $js")" "completed|1"
is "stopped command: no loss reported" "$(cat "$T/s.err")" ""

# 7. --wait: idle exit; bad options 64; no server 69.
start=$(date +%s%N)
timeout 20 "$PGF" work empty --wait 500ms -- true
is "--wait 500ms on an empty queue: exits 0" $? 0
ms=$((($(date +%s%N) - start) / 1000000))
is "--wait 500ms: soon" "$([ "$ms" -lt 3000 ] && echo yes || echo "no (${ms}ms)")" yes
bad_case() { # LABEL ARGS...
	local label=$1
	shift
	"$PGF" "$@" </dev/null >/dev/null 2>&1
	is "$label: exit 64" $? 64
}
bad_case "missing QUEUE" work
bad_case "missing COMMAND" work q
bad_case "missing COMMAND after --" work q --
bad_case "--concurrency 0" work q --concurrency 0 -- true
bad_case "--concurrency x" work q --concurrency x -- true
bad_case "--ttl bad" work q --ttl 5x -- true
bad_case "--ttl too short" work q --ttl 10ms -- true
bad_case "--max-jobs 0" work q --max-jobs 0 -- true
bad_case "--wait -1s" work q --wait -1s -- true
bad_case "unknown option" work q --nope -- true
bad_case "empty QUEUE" work '' -- true
bad_case "a TTL above fence.max_lease_ttl (22023)" work q --ttl 100000h -- true
PGHOST=/nonexistent "$PGF" work q -- true >/dev/null 2>&1
is "cannot connect: exit 69" $? 69
out=$("$PGF" work --help)
has "work --help" "$out" "Options for work"

echo "cli_work: $FAILS failed"
[ "$FAILS" -eq 0 ]
