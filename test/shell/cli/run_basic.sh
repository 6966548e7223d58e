#!/usr/bin/env bash
# cli/run_basic.sh - pg_fence run/status: exit codes of every path, the
# command's environment (FENCE_TOKEN, FENCE_NAME), transparency of stdin,
# stdout and exit codes, signal forwarding, error messages, stopped commands
# and job control (via script(1)), a signal while waiting for a session lock.
#
# Runs inside scripts/temp-cluster.sh (PG* variables set), from the repo
# root, against src/cli/pg_fence.  Uses a database of its own.  Lease
# checks are skipped (reported) when the server has no lease functions.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_run_basic


# --- usage, help, version ------------------------------------------------
"$PGF" --help >"$T/out" 2>"$T/err"; is "--help exits 0" $? 0
has "--help shows the synopsis on stdout" "$(cat "$T/out")" "pg_fence run \[OPTION\]... NAME -- COMMAND"
is "--help writes nothing to stderr" "$(cat "$T/err")" ""
out=$("$PGF" --version); is "--version exits 0" $? 0
has "--version prints the version" "$out" "^pg_fence [0-9]"
for args in "" "run" "run name" "run name --" "frobnicate" "run --lease 10x n -- true" \
	"run --lease 0s n -- true" "run --wait abc n -- true" "run --lease 5s --session n -- true" \
	"run --bogus n -- true" "run --lease" "status a b"; do
	# shellcheck disable=SC2086
	err=$("$PGF" $args 2>&1 >/dev/null); rc=$?
	is "usage error exits 64: pg_fence $args" "$rc" 64
	has "usage error message is prefixed: pg_fence $args" "$err" "^pg_fence: "
done
err=$("$PGF" run --lease 10parsecs n -- true 2>&1); has "bad duration is named" "$err" 'invalid lease TTL "10parsecs"'
for args in "run --lease -5s n -- true" "run --wait -5s n -- true" "run --lease 0s n -- true" "run --wait=0 n -- true"; do
	# shellcheck disable=SC2086
	err=$("$PGF" $args 2>&1 >/dev/null); rc=$?
	is "not positive: exits 64: pg_fence $args" "$rc" 64
	has "not positive: says so: pg_fence $args" "$err" "must be positive"
done
for args in "run --help" "run -h" "run --lease 5s --help" "status --help" "status -h" "status --dbname x --help"; do
	# shellcheck disable=SC2086
	"$PGF" $args >"$T/out" 2>"$T/err"; rc=$?
	is "help exits 0: pg_fence $args" "$rc" 0
	has "help shows the synopsis: pg_fence $args" "$(cat "$T/out")" "pg_fence status \[--dbname CONNINFO\] \[NAME\]"
	is "help writes nothing to stderr: pg_fence $args" "$(cat "$T/err")" ""
done
err=$("$PGF" run --dbname "nosuchoption=1" n -- true 2>&1); rc=$?
is "invalid connection string exits 64" "$rc" 64
has "invalid connection string is explained" "$err" "invalid connection string"

# --- connection and installation errors ----------------------------------
err=$(PGHOST=/nonexistent/dir "$PGF" run --session n -- true 2>&1); rc=$?
is "unreachable server exits 69" "$rc" 69
has "unreachable server message" "$err" "pg_fence: could not connect to the database"
err=$("$PGF" run --session --dbname no_such_db_$$ n -- true 2>&1); rc=$?
is "missing database exits 69" "$rc" 69
createdb -T template0 "${DB}_noext" || exit 1
err=$("$PGF" run --session --dbname "${DB}_noext" n -- true 2>&1); rc=$?
is "missing extension exits 69" "$rc" 69
has "missing extension hint" "$err" "CREATE EXTENSION pg_fence"
err=$("$PGF" status --dbname "${DB}_noext" 2>&1); rc=$?
is "status without extension exits 69" "$rc" 69
dropdb --force "${DB}_noext"

# --- transparency -------------------------------------------------------
"$PGF" run --session t1 -- sh -c 'exit 7' 2>"$T/err"; is "command's exit code passes through" $? 7
is "no pg_fence output on success" "$(cat "$T/err")" ""
out=$(printf 'line 1\nline "2"\n' | "$PGF" run --session t1 -- cat 2>"$T/err")
is "stdin reaches the command, its stdout reaches ours" "$out" $'line 1\nline "2"'
is "stderr stays clean" "$(cat "$T/err")" ""
out=$("$PGF" run --session t1 -- printf '%s|' "a b" "" "*" '$x' 2>/dev/null)
is "arguments pass untouched" "$out" 'a b||*|$x|'
"$PGF" run --session t1 -- /no/such/command 2>"$T/err"; is "command not found exits 127" $? 127
has "command not found message" "$(cat "$T/err")" "pg_fence: command not found: /no/such/command"
"$PGF" run --session t1 -- /etc/passwd 2>/dev/null; is "command not executable exits 126" $? 126
"$PGF" run --session t1 -- sh -c 'kill -USR1 $$' 2>/dev/null; is "killed by signal N exits 128+N" $? $((128 + 10))

# --- environment: FENCE_TOKEN and FENCE_NAME (session) -------------------
FENCE_TOKEN=stale FENCE_NAME=stale "$PGF" run --session "env lock" -- sh -c '
	echo "$FENCE_TOKEN" > "$1/tok"; echo "$FENCE_NAME" > "$1/name"
	psql -X -At -c "SELECT fence.try_lock(\$\$env lock\$\$) IS NULL" > "$1/heldelsewhere"' sh "$T"
is "session run exits 0" $? 0
tok=$(cat "$T/tok")
has "FENCE_TOKEN is a positive integer" "$tok" "^[1-9][0-9]*$"
is "FENCE_NAME is the lock name" "$(cat "$T/name")" "env lock"
is "the lock is held while the command runs" "$(cat "$T/heldelsewhere")" "t"
next=$(psql -X -At -c "SELECT fence.try_lock('env lock')")
is "released after the command" "$([ -n "$next" ] && [ "$next" -gt "$tok" ] && echo yes)" "yes"

# --- busy, timeout (session) ---------------------------------------------
"$PGF" run --session busy -- sh -c 'echo up > "$1/up"; sleep 3' sh "$T" & HOLDER=$!
waitfile "$T/up" || bad "holder did not start"
err=$("$PGF" run --session busy -- echo never 2>&1); rc=$?
is "busy session lock exits 75" "$rc" 75
has "busy message" "$err" 'pg_fence: lock "busy" is held by another session'
start=$(date +%s%N)
err=$("$PGF" run --session --wait 400ms busy -- echo never 2>&1); rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
is "session --wait timeout exits 73" "$rc" 73
is "waited at least the timeout" "$([ "$ms" -ge 350 ] && echo yes)" "yes"
out=$("$PGF" run --session --wait 10s busy -- echo got it); rc=$?
is "--wait gets the lock once it is released" "$rc:$out" "0:got it"
wait "$HOLDER"

# --- signal forwarding ---------------------------------------------------
rm -f "$T/up"
"$PGF" run --session sig -- sh -c 'trap "echo got TERM > \"$1/trap\"; exit 42" TERM; echo up > "$1/up"; while :; do sleep 0.05; done' sh "$T" & P=$!
waitfile "$T/up" || bad "signal test command did not start"
kill -TERM "$P"; wait "$P"; rc=$?
is "SIGTERM is forwarded and the command's code returned" "$rc" 42
is "the command saw SIGTERM" "$(cat "$T/trap" 2>/dev/null)" "got TERM"
rm -f "$T/up"
"$PGF" run --session sig -- sh -c 'echo up > "$1/up"; exec sleep 30' sh "$T" & P=$!
waitfile "$T/up" || bad "signal test command did not start"
sleep 0.1
kill -HUP "$P"; wait "$P"; is "SIGHUP kills the command: 128+1" $? 129
is "lock free after a forwarded signal" "$(psql -X -At -c "SELECT fence.try_lock('sig') IS NOT NULL")" "t"

# --- lost session: the backend is terminated ------------------------------
rm -f "$T/up"
"$PGF" run --session --holder "cli-basic-$$" lost -- sh -c 'echo $$ > "$1/up"; exec sleep 30' sh "$T" 2>"$T/err" & P=$!
waitfile "$T/up" || bad "lost test command did not start"
cpid=$(cat "$T/up")
psql -X -At -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cli-basic-$$'" >/dev/null
wait "$P"; is "terminated session: exits 74 (lost)" $? 74
has "lost message" "$(cat "$T/err")" 'pg_fence: lost the lock "lost"'
has "lost message names the connection loss plainly" "$(cat "$T/err")" 'lost the connection to the server'
is "lost message has no libpqxx internals" "$(grep -c "client encoding" "$T/err")" "0"
is "the command was killed" "$(kill -0 "$cpid" 2>/dev/null && echo alive || echo dead)" "dead"

# --- a stopped command: pg_fence does not stop itself -------------------
# Not at a terminal, a stopped command must not freeze pg_fence: it keeps
# checking the lock and, on a loss, still kills the (stopped) command.
rm -f "$T/up"
"$PGF" run --session --holder "cli-stop-$$" stopped -- sh -c 'echo $$ > "$1/up"; while :; do sleep 0.05; done' sh "$T" 2>"$T/err" & P=$!
waitfile "$T/up" || bad "stop test command did not start"
cpid=$(cat "$T/up")
kill -STOP "$cpid"
sleep 0.3
is "pg_fence is not stopped with its command" "$(awk '{print $3}' "/proc/$P/stat")" "S"
psql -X -At -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cli-stop-$$'" >/dev/null
for _ in $(seq 1 60); do kill -0 "$P" 2>/dev/null || break; sleep 0.05; done
is "loss while the command is stopped: pg_fence ends within 3s" "$(kill -0 "$P" 2>/dev/null && echo running || echo ended)" "ended"
kill -CONT "$P" 2>/dev/null
wait "$P"; is "loss while the command is stopped: exits 74" $? 74
for _ in $(seq 1 20); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.05; done
is "the stopped command was killed" "$(kill -0 "$cpid" 2>/dev/null && echo alive || echo dead)" "dead"

# --- job control at a terminal (script(1) gives pg_fence a pty) ---------
if ! command -v script >/dev/null; then
	echo "ok - # SKIP job control checks: no script(1)"
else
	state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
	waitstate() { for _ in $(seq 1 60); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.05; done; return 1; }
	# --session: ^Z suspends the job like a shell job, the lock stays held.
	rm -f "$T/tz.pid" "$T/tz.go"
	script -qfec "$PGF run --session tz -- sh -c 'echo \$\$ > $T/tz.pid; while [ ! -e $T/tz.go ]; do sleep 0.05; done'" /dev/null </dev/null >"$T/tz.out" 2>&1 & S=$!
	waitfile "$T/tz.pid" || bad "tty session command did not start"
	cpid=$(cat "$T/tz.pid"); fpid=$(awk '{print $4}' "/proc/$cpid/stat")
	kill -TSTP "$cpid"
	waitstate "$fpid" T; is "^Z of a --session job stops pg_fence too" "$(state "$fpid")" "T"
	is "the session lock stays held while suspended" "$(psql -X -At -c "SELECT fence.try_lock('tz') IS NULL")" "t"
	kill -CONT "$fpid" "$S" # (script(1) stops itself too when its child stops)
	waitstate "$cpid" S; is "resumed pg_fence continues its command" "$(state "$cpid")" "S"
	touch "$T/tz.go"; wait "$S"; is "resumed --session job exits 0" $? 0
	# --lease: ^Z is refused (a stopped pg_fence could not renew): the command continues.
	rm -f "$T/tz.pid" "$T/tz.go"
fi
if [ "$LEASES" != "t" ] || ! command -v script >/dev/null; then
	echo "ok - # SKIP lease job control checks: no lease functions or no script(1)"
else
	script -qfec "$PGF run --lease 3s tz -- sh -c 'echo \$\$ > $T/tz.pid; while [ ! -e $T/tz.go ]; do sleep 0.05; done'" /dev/null </dev/null >"$T/tz.out" 2>&1 & S=$!
	waitfile "$T/tz.pid" || bad "tty lease command did not start"
	cpid=$(cat "$T/tz.pid"); fpid=$(awk '{print $4}' "/proc/$cpid/stat")
	kill -TSTP "$cpid"
	sleep 0.3
	# not stopped (T): sleeping (S) or, caught between two sleeps, running (R);
	# pg_fence continues the stopped command at once, which under load can
	# take a moment: look for up to 3 s
	notstopped() {
		local st
		for _ in $(seq 1 60); do
			st=$(state "$1")
			case "$st" in S | R) echo yes; return ;; esac
			sleep 0.05
		done
		echo "no ($st)"
	}
	is "^Z of a --lease job: pg_fence keeps running" "$(notstopped "$fpid")" "yes"
	is "^Z of a --lease job: the command continues" "$(notstopped "$cpid")" "yes"
	touch "$T/tz.go"; wait "$S"; is "--lease job after ^Z exits 0" $? 0
	has "^Z of a --lease job is explained" "$(cat "$T/tz.out")" "cannot be suspended while it holds a lease"
fi

# --- SIGTERM while waiting for a session lock: the server-side wait ends --
rm -f "$T/up" "$T/go"
"$PGF" run --session ws -- sh -c 'echo up > "$1/up"; while [ ! -e "$1/go" ]; do sleep 0.05; done' sh "$T" & HOLDER=$!
waitfile "$T/up" || bad "ws holder did not start"
"$PGF" run --session --wait 10s --holder "cli-ws-$$" ws -- touch "$T/waiter-ran" 2>"$T/err" & W=$!
for _ in $(seq 1 100); do [ "$(psql -X -At -c "SELECT waiters FROM fence.locks WHERE name = 'ws'")" = 1 ] && break; sleep 0.05; done
is "the waiter is queued" "$(psql -X -At -c "SELECT waiters FROM fence.locks WHERE name = 'ws'")" "1"
kill -TERM "$W"; { wait "$W"; } 2>/dev/null; is "SIGTERM while waiting: exits 143" $? 143
n=x
for _ in $(seq 1 20); do
	n=$(psql -X -At -c "SELECT (SELECT waiters FROM fence.locks WHERE name = 'ws') || '/' || (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cli-ws-$$')")
	[ "$n" = "0/0" ] && break
	sleep 0.05
done
is "the killed waiter left the lock queue and its session ended within 1s" "$n" "0/0"
touch "$T/go"; wait "$HOLDER"
is "free at once after the holder ends" "$(psql -X -At -c "SELECT fence.try_lock('ws') IS NOT NULL")" "t"
is "the killed waiter never ran its command" "$([ -e "$T/waiter-ran" ] && echo ran || echo no)" "no"

# --- leases ---------------------------------------------------------------
if [ "$LEASES" != "t" ]; then
	echo "ok - # SKIP lease checks: fence.lease_acquire(text,interval,text,interval) not installed"
else
	rm -f "$T/up" "$T/tok"
	"$PGF" run --lease 1500ms --holder "cli basic holder" lease1 -- sh -c '
		echo "$FENCE_TOKEN" > "$1/tok"
		psql -X -At -c "SELECT token FROM fence.leases WHERE name = \$\$lease1\$\$" > "$1/leases"
		psql -X -At -c "SELECT token FROM fence.locks WHERE name = \$\$lease1\$\$ AND kind = \$\$lease\$\$" > "$1/locks"
		echo up > "$1/up"; sleep 2.5' sh "$T" 2>"$T/err" & P=$!
	waitfile "$T/up" || bad "lease command did not start"
	tok=$(cat "$T/tok")
	is "FENCE_TOKEN matches fence.leases" "$(cat "$T/leases")" "$tok"
	is "FENCE_TOKEN matches fence.locks" "$(cat "$T/locks")" "$tok"
	out=$("$PGF" status lease1); rc=$?
	is "status NAME of a held lease exits 0" "$rc" 0
	has "status shows the holder" "$out" "cli basic holder"
	has "status shows the token" "$out" "lease1 *lease *$tok "
	"$PGF" status no-such-lock-$$ >/dev/null; is "status NAME of a free lock exits 1" $? 1
	err=$("$PGF" run --lease 5s lease1 -- echo never 2>&1); rc=$?
	is "busy lease exits 75" "$rc" 75
	has "busy lease message" "$err" 'pg_fence: lease "lease1" is held by another holder'
	err=$("$PGF" run --lease 5s --wait 300ms lease1 -- echo never 2>&1); rc=$?
	is "lease --wait timeout exits 73" "$rc" 73
	# The command outlives the TTL (2.5s > 1.5s): renewals keep the lease.
	wait "$P"; is "lease renewed past its TTL: command's code 0" $? 0
	is "no loss reported" "$(cat "$T/err")" ""
	is "lease released at exit" "$(psql -X -At -c "SELECT count(*) FROM fence.leases WHERE name = 'lease1' AND expires_at > clock_timestamp()")" "0"
	out=$("$PGF" run --lease 5s --wait 5s lease1 -- sh -c 'echo "$FENCE_TOKEN"')
	is "a later grant has a higher token" "$([ "$out" -gt "$tok" ] && echo yes)" "yes"
	"$PGF" run lease-default -- sh -c 'psql -X -At -c "SELECT round(extract(epoch FROM expires_at - granted_at)) FROM fence.leases WHERE name = \$\$lease-default\$\$"' >"$T/ttl"
	is "default mode is a 30s lease" "$(cat "$T/ttl")" "30"
fi

echo "cli_run_basic: $FAILS failed"
[ "$FAILS" -eq 0 ]
