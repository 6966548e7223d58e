#!/usr/bin/env bash
# cli/once.sh - "pg_fence once KEY -- COMMAND" (idempotency keys):
#   - three at once on one key: exactly one runs COMMAND, the others exit 75
#     (in progress) or 0 (already done), three rounds;
#   - exit 0 records the key done: a later run does not run COMMAND (exit 0,
#     "is already done");
#   - a non-zero exit releases the key: the next run runs COMMAND at once,
#     with FENCE_STEP = the step the failed run recorded (fence.once_step);
#   - the environment: FENCE_TOKEN, FENCE_KEY, FENCE_STEP (empty at first);
#   - a frozen owner (SIGSTOP past the TTL) is taken over; continued, it
#     finds the key lost, stops its command before it writes again, exits 74;
#   - a key used with another --fingerprint exits 65, COMMAND not run;
#   - --key-per day appends the server's UTC date (KEY:YYYY-MM-DD);
#   - a KEY beginning with '-' after "--" ("-- -k -- COMMAND");
#   - another role's key: the error names SQLSTATE 42501;
#   - with FENCE_CLUSTER_CTL: a restart while COMMAND runs, the server
#     down when it exits 0 or 5 (finish / release retried on a new
#     connection), and down past the key's local deadline (exit 74);
#   - bad options exit 64.
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without
# idempotency keys (fence.once_begin).
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_once
if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.once_begin(text,interval,text)') IS NOT NULL")" != t ]; then
	echo "cli_once: skipped, no idempotency keys (fence.once_begin)"
	exit 77
fi

# --- three at once -------------------------------------------------------------
for round in 1 2 3; do
	key="digest-$round"
	rm -f "$T"/ran.* "$T"/rc.* "$T/go"
	for i in 1 2 3; do
		( while [ ! -e "$T/go" ]; do sleep 0.01; done
		  "$PGF" once --ttl 10s "$key" -- sh -c 'echo "$FENCE_TOKEN" > "$1/ran.$2"; sleep 1' sh "$T" "$i" 2>"$T/err.$i"
		  echo $? > "$T/rc.$i" ) &
	done
	touch "$T/go"
	wait
	is "round $round: exactly one ran the command" "$(ls "$T"/ran.* 2>/dev/null | wc -l)" 1
	codes=$(cat "$T"/rc.* | sort | tr '\n' ' ')
	case "$codes" in
		"0 0 0 " | "0 0 75 " | "0 75 75 ") ok "round $round: exit codes $codes (0 for the runner; 75 in progress or 0 done for the others)" ;;
		*) bad "round $round: exit codes: '$codes'"; cat "$T"/err.* ;;
	esac
	out=$("$PGF" once "$key" -- sh -c 'echo ran > "$1/again"' sh "$T" 2>&1)
	rc=$?
	is "round $round: a later run exits 0" "$rc" 0
	has "round $round: ... saying the key is already done" "$out" "pg_fence: $key is already done"
	is "round $round: ... without running the command" "$([ -e "$T/again" ] && echo ran || echo not-run)" not-run
done

# --- the environment; a failure releases the key, with its step -----------------
out=$("$PGF" once --ttl 5s env-key -- sh -c 'echo "token=$FENCE_TOKEN key=$FENCE_KEY step=[$FENCE_STEP]"
	psql -X -Atq -c "SELECT fence.once_step('\''env-key'\'', $FENCE_TOKEN, '\''mailed'\'')" >/dev/null
	exit 3' 2>"$T/err")
rc=$?
is "a failing command's exit code is pg_fence's" "$rc" 3
has "FENCE_KEY and an empty FENCE_STEP on first use" "$out" "key=env-key step=\[\]"
t1=$(sed -n 's/^token=\([0-9]*\) .*/\1/p' <<<"$out")
has "FENCE_TOKEN is a token" "$t1" "^[0-9][0-9]*$"
has "the release is reported" "$(cat "$T/err")" "env-key released"
out=$("$PGF" once --ttl 5s env-key -- sh -c 'echo "token=$FENCE_TOKEN step=[$FENCE_STEP]"' 2>"$T/err")
rc=$?
is "after a failure, the next run runs the command" "$rc" 0
has "... told the step the failed run reached" "$out" "step=\[mailed\]"
t2=$(sed -n 's/^token=\([0-9]*\) .*/\1/p' <<<"$out")
is "... with a larger token" "$([ -n "$t2" ] && [ -n "$t1" ] && [ "$t2" -gt "$t1" ] && echo yes)" yes
"$PGF" once env-key -- sh -c 'exit 9' 2>/dev/null
is "then it is done: the command does not run again" "$?" 0

# --- a frozen owner --------------------------------------------------------------
"$PGF" once --ttl 2s frozen-key -- sh -c 'echo $$ > "$1/pid"; echo start >> "$1/log"; sleep 6; echo late >> "$1/log"' sh "$T" 2>"$T/frozen.err" &
pgf=$!
waitfile "$T/pid" || bad "the frozen owner's command started"
kill -STOP "$pgf"
sleep 3 # past the 2 s TTL: the key's lease expires in the server
"$PGF" once --ttl 10s frozen-key -- sh -c 'echo second >> "$1/log"' sh "$T" 2>"$T/second.err"
is "a second owner takes the expired key over and runs" "$?" 0
kill -CONT "$pgf"
wait "$pgf"
is "the continued first owner exits 74 (lost)" "$?" 74
has "... saying it lost the key" "$(cat "$T/frozen.err")" 'lost the idempotency key "frozen-key"'
sleep 0.5
is "... its command was stopped (no write after the loss)" "$(tr '\n' ' ' <"$T/log")" "start second "
is "... and is gone" "$(kill -0 "$(cat "$T/pid")" 2>/dev/null && echo alive || echo gone)" gone
"$PGF" once frozen-key -- true 2>/dev/null
is "the key is done (by the second owner)" "$?" 0

# --- a command that runs longer than the TTL ------------------------------------------
renew=$(psql -X -At -c "SELECT to_regprocedure('fence.once_renew(text,bigint,interval)') IS NOT NULL")
"$PGF" once --ttl 1500ms long-key -- sh -c 'sleep 3.5; echo done > "$1/long"' sh "$T" 2>"$T/long.err"
rc=$?
if [ "$renew" = t ]; then
	is "renewed: a command longer than the TTL runs to its end" "$rc" 0
	is "... and finishes" "$(cat "$T/long" 2>/dev/null)" done
	"$PGF" once long-key -- true 2>/dev/null
	is "... the key is done" "$?" 0
else
	is "no fence.once_renew: the key is held for its TTL only, exit 74" "$rc" 74
	has "... said at start" "$(cat "$T/long.err")" "note: this server's pg_fence cannot renew"
	is "... the command was stopped" "$([ -e "$T/long" ] && echo finished || echo stopped)" stopped
fi

# --- fingerprints ------------------------------------------------------------------
"$PGF" once --fingerprint sha-a fp-key -- true 2>/dev/null
is "a run with a fingerprint" "$?" 0
out=$("$PGF" once --fingerprint sha-b fp-key -- sh -c 'echo ran > "$1/fp"' sh "$T" 2>&1)
is "another fingerprint: exit 65" "$?" 65
has "... saying so" "$out" "fp-key was used with another fingerprint"
is "... without running the command" "$([ -e "$T/fp" ] && echo ran || echo not-run)" not-run
"$PGF" once --fingerprint sha-a fp-key -- sh -c 'echo ran > "$1/fp"' sh "$T" 2>/dev/null
is "the same fingerprint: done, exit 0" "$?" 0

# --- --key-per day -------------------------------------------------------------------
today=$(psql -X -At -c "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')")
out=$("$PGF" once --key-per day daily -- sh -c 'echo "$FENCE_KEY"' 2>/dev/null)
is "--key-per day runs the command" "$?" 0
is "... with KEY:YYYY-MM-DD (the server's UTC date)" "$out" "daily:$today"
out=$("$PGF" once daily --key-per=day -- sh -c 'echo ran' 2>&1)
is "a second run the same day exits 0" "$?" 0
has "... and finds the day's key done" "$out" "daily:$today is already done"
out=$("$PGF" once --key-per hour hourly -- sh -c 'echo "$FENCE_KEY"' 2>/dev/null)
has "--key-per hour: KEY:YYYY-MM-DDTHH" "$out" "^hourly:$today"'T[0-9][0-9]$'

# --- a KEY that begins with '-': -- KEY -- COMMAND ------------------------------------
out=$("$PGF" once -- -dash-key -- sh -c 'echo "key=$FENCE_KEY"' 2>&1)
is "-- KEY -- COMMAND: a KEY beginning with '-' runs" "$?" 0
is "... with FENCE_KEY = that KEY" "$out" "key=-dash-key"
is "... and records it done" "$(psql -X -At -c "SELECT state FROM fence.once_keys WHERE key = '-dash-key'")" done
"$PGF" once -- -dash-key2 echo hi >/dev/null 2>&1
is "-- KEY without a second -- before COMMAND: exit 64" "$?" 64

# --- another role's key: the real SQLSTATE (42501) ------------------------------------
ra="cli_once_ra_$$" rb="cli_once_rb_$$"
psql -X -q -c "CREATE ROLE $ra LOGIN; CREATE ROLE $rb LOGIN" 2>/dev/null
PGUSER=$ra "$PGF" once role-key -- true 2>/dev/null
is "role A finishes its key" "$?" 0
out=$(PGUSER=$rb "$PGF" once role-key -- true 2>&1)
has "role B on role A's key: permission denied with SQLSTATE 42501" "$out" "permission denied.*(SQLSTATE 42501)"
psql -X -q -c "DELETE FROM fence.once_entries WHERE key = 'role-key'" >/dev/null 2>&1
psql -X -q -c "DROP OWNED BY $ra, $rb; DROP ROLE $ra, $rb" >/dev/null 2>&1

# --- the server restarts or is down while COMMAND runs or when it exits -------------
if [ -n "${FENCE_CLUSTER_CTL:-}" ]; then
	# restarted while COMMAND runs: renewed on a new connection, finished
	"$PGF" once --ttl 20s rs-run -- sh -c 'sleep 3; echo "$FENCE_TOKEN" >> "$1/rs-run"' sh "$T" 2>"$T/rs.err" & p=$!
	sleep 1; "$FENCE_CLUSTER_CTL" restart >/dev/null 2>&1
	wait "$p"; is "restart while COMMAND runs: exit 0" "$?" 0
	is "... the key is done" "$(psql -X -At -c "SELECT state FROM fence.once_keys WHERE key = 'rs-run'")" done
	"$PGF" once rs-run -- sh -c 'echo "$FENCE_TOKEN" >> "$1/rs-run"' sh "$T" 2>/dev/null
	is "... a retry does not run COMMAND again" "$(wc -l < "$T/rs-run")" 1
	# down when COMMAND exits 0, back 2.5 s later: once_finish retried on a new connection
	"$PGF" once --ttl 20s rs-exit -- sh -c 'sleep 1' 2>"$T/rs.err" & p=$!
	sleep 0.5; "$FENCE_CLUSTER_CTL" stop-immediate >/dev/null 2>&1; sleep 2.5; "$FENCE_CLUSTER_CTL" start >/dev/null 2>&1
	wait "$p"; is "server down when COMMAND exits 0: exit 0 once it is back" "$?" 0
	is "... the key is done" "$(psql -X -At -c "SELECT state FROM fence.once_keys WHERE key = 'rs-exit'")" done
	has "... the retry is reported" "$(cat "$T/rs.err")" "once_finish failed: .*retrying on a new connection"
	# down when COMMAND fails: once_release retried
	"$PGF" once --ttl 20s rs-fail -- sh -c 'sleep 1; exit 5' 2>"$T/rs.err" & p=$!
	sleep 0.5; "$FENCE_CLUSTER_CTL" stop-immediate >/dev/null 2>&1; sleep 2.5; "$FENCE_CLUSTER_CTL" start >/dev/null 2>&1
	wait "$p"; is "server down when COMMAND exits 5: exit 5" "$?" 5
	is "... the key is released" "$(psql -X -At -c "SELECT state FROM fence.once_keys WHERE key = 'rs-fail'")" released
	# down past the key's local deadline: exit 74, the key is left to be taken over
	"$PGF" once --ttl 3s rs-lost -- sh -c 'sleep 0.5' 2>"$T/rs.err" & p=$!
	sleep 0.25; "$FENCE_CLUSTER_CTL" stop-immediate >/dev/null 2>&1; sleep 4; "$FENCE_CLUSTER_CTL" start >/dev/null 2>&1
	wait "$p"; is "server down past the key's deadline: exit 74" "$?" 74
	has "... COMMAND ran, its result could not be recorded" "$(cat "$T/rs.err")" "the command ran, its result could not be recorded: .*will be taken over"
else
	echo "cli_once: restart checks skipped (no FENCE_CLUSTER_CTL)"
fi

# --- usage errors ------------------------------------------------------------------
for args in "" "--ttl" "k" "k --" "--ttl 0 k -- true" "--ttl 1x k -- true" "--key-per week k -- true" \
	"--bogus k -- true" "--fingerprint $(head -c 1100 /dev/zero | tr '\0' f) k -- true"; do
	# shellcheck disable=SC2086
	"$PGF" once $args >/dev/null 2>&1
	is "usage error exits 64: once ${args:0:40}" "$?" 64
done
"$PGF" once "" -- true >/dev/null 2>&1
is "usage error exits 64: an empty KEY" "$?" 64
"$PGF" once "$(head -c 1020 /dev/zero | tr '\0' k)" --key-per day -- true >/dev/null 2>&1
is "usage error exits 64: KEY too long with its --key-per suffix" "$?" 64
out=$("$PGF" once --help)
is "--help exits 0" "$?" 0
has "--help shows once" "$out" "pg_fence once KEY"

echo "cli_once: $FAILS failed"
[ "$FAILS" -eq 0 ]
