# act6_once.sh - demo act 6: the daily digest e-mail, sent once by three
# cron machines with an idempotency key (pg_fence once); the owner freezes
# mid-way and is taken over; its late "sent" record is refused.
#
# Sourced by the demo driver inside the throwaway cluster (PG* set), from
# the repository root; defines act6, which returns non-zero if an
# invariant breaks: one digest in the mailbox, one "sent" record (the
# owner's of the key at the time), the frozen owner's record refused.
#
# The e-mail cannot check a fencing token: the mailbox here is a file the
# command appends to.  What protects it is the key's step: the owner records
# "sent" (fence.once_step) right after sending, and an owner that takes the
# key over is told the step reached (FENCE_STEP) and does not send again.
# The "sent" record in the database is a fenced write (a guarded table,
# resource column day), so the superseded owner cannot write it late.

# The digest job every machine's crontab runs under
#   pg_fence once digest --key-per day --ttl 4s -- sh -c "$(act6_job)" sh MACHINE DIR
# (the key is digest:YYYY-MM-DD).  A first owner pauses after sending (the
# demo freezes it there); an owner that takes over knows from FENCE_STEP.
act6_job() {
	cat <<'EOF'
me=$1 dir=$2
echo $$ >"$dir/$me.pid"
echo "$me: owns $FENCE_KEY with token $FENCE_TOKEN (step reached before: ${FENCE_STEP:-none})" >>"$dir/log"
step() { psql -X -qAt -c "SELECT fence.once_step('$FENCE_KEY', $FENCE_TOKEN, '$1')" >/dev/null; }
if [ "$FENCE_STEP" != sent ]; then
	# render the digest, send it (the mailbox here), record the step at once
	echo "digest $FENCE_KEY, sent by $me (token $FENCE_TOKEN)" >>"$dir/mailbox"
	step sent
	echo "$me: digest sent (step: sent); now recording it ..." >>"$dir/log"
	while [ ! -e "$dir/go" ]; do sleep 0.05; done   # mid-way (the demo freezes it here)
else
	echo "$me: the digest already went out (step: sent): only the record is left" >>"$dir/log"
fi
if out=$(psql -X -qAt -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
	-c "BEGIN; SET LOCAL fence.token = $FENCE_TOKEN;
	    INSERT INTO act6_digest_log (day, machine) VALUES (current_date, '$me'); COMMIT" 2>&1); then
	echo "$me: \"sent\" recorded with token $FENCE_TOKEN" >>"$dir/log"
else
	echo "$me: \"sent\" record REFUSED: $(printf '%s' "$out" | head -n 1)" >>"$dir/log"
	exit 1
fi
EOF
}

# act6_wait SECONDS COMMAND...: until COMMAND succeeds (every 50 ms).
act6_wait() {
	local n=$(($1 * 20))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}

# act6_cron DIR MACHINE...: one cron tick on each MACHINE at once, in the
# background; each one's pg_fence pid goes to DIR/MACHINE.pgf, its exit
# status to DIR/MACHINE.rc, its stderr to DIR/MACHINE.err.
act6_cron() {
	local dir=$1 m
	shift
	for m in "$@"; do
		rm -f "$dir/$m.rc" "$dir/$m.pgf" "$dir/$m.err"
		(
			"$ACT6_PGF" once digest --key-per day --ttl 4s -- sh -c "$ACT6_JOB" sh "$m" "$dir" 2>"$dir/$m.err" &
			echo $! >"$dir/$m.pgf"
			wait $!
			echo $? >"$dir/$m.rc"
		) &
		ACT6_PID[$m]=$!
		demo_track "${ACT6_PID[$m]}"
	done
}

# act6_say MACHINE RC: what an exit status of pg_fence once means.
act6_say() {
	case $2 in
		0) echo "exit 0" ;;
		75) echo "exit 75: the key is in progress on another machine, nothing done" ;;
		74) echo "exit 74: the key was lost while the job ran" ;;
		*) echo "exit $2" ;;
	esac
}

act6() {
	ACT6_PGF=${PG_FENCE_BIN:-$PWD/src/cli/pg_fence}
	ACT6_JOB=$(act6_job)
	declare -gA ACT6_PID=()
	local dir rc=0 m owner owner_pgf owner_job taker key rc1
	local failed_before=$DEMO_FAILED_CHECKS
	echo
	echo "=== Act 6: the daily digest, once: three cron machines, an idempotency key ==="
	if [ ! -x "$ACT6_PGF" ] || ! "$ACT6_PGF" --help 2>&1 | grep 'pg_fence once' >/dev/null; then
		echo "act 6: $ACT6_PGF has no 'once' command" >&2
		return 1
	fi
	if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.once_begin(text,interval,text)') IS NULL")" != f ]; then
		echo "act 6: this pg_fence has no idempotency keys (fence.once_begin); cannot run" >&2
		return 1
	fi
	key=$(psql -X -At -c "SELECT 'digest:' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')")
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL || return 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS act6_digest_log;
CREATE TABLE act6_digest_log (id serial PRIMARY KEY, day date NOT NULL, machine text,
                              fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('act6_digest_log', 'fence', ARRAY['day']);
-- A rerun on the same database starts the day afresh (the demo's own reset:
-- as a superuser; nobody else may touch fence.once_entries).
DELETE FROM fence.once_entries WHERE key = '$key';
SQL
	dir=$(mktemp -d)
	echo "Three machines run the same crontab line every minute in the morning:"
	echo "  pg_fence once digest --key-per day --ttl 4s -- send-digest"
	echo "(the key is $key).  send-digest renders and sends the digest, records step \"sent\""
	echo "(fence.once_step), then writes a \"sent\" row with its token into a guarded table."
	echo "The mailbox cannot check a token; the step tells a later owner not to send again."
	echo

	echo "  07:00, first tick, on all three at once:"
	act6_cron "$dir" machine-1 machine-2 machine-3
	act6_wait 10 sh -c "grep -q 'now recording it' '$dir/log' 2>/dev/null"
	owner=$(sed -n 's/^\(machine-[123]\): digest sent.*/\1/p' "$dir/log" | head -n 1)
	# The frozen machine: its pg_fence and its job's process group.
	owner_pgf=$(cat "$dir/$owner.pgf" 2>/dev/null)
	owner_job=$(cat "$dir/$owner.pid" 2>/dev/null)
	if ! [[ "$owner_pgf" =~ ^[0-9]+$ && "$owner_job" =~ ^[0-9]+$ ]]; then
		echo "  BROKEN: no machine got to send the digest:"
		sed 's/^/    /' "$dir/log" "$dir"/*.err
		touch "$dir/go"
		wait "${ACT6_PID[@]}" 2>/dev/null
		rm -rf "$dir"
		return 1
	fi
	if ! kill -STOP "$owner_pgf" "-$owner_job" 2>/dev/null; then
		echo "  BROKEN: $owner's job ended before it could be frozen:"
		sed 's/^/    /' "$dir/$owner.err"
		touch "$dir/go"
		wait "${ACT6_PID[@]}" 2>/dev/null
		rm -rf "$dir"
		return 1
	fi
	for m in machine-1 machine-2 machine-3; do
		[ "$m" = "$owner" ] && continue
		act6_wait 10 test -s "$dir/$m.rc"
		echo "    $m: $(act6_say "$m" "$(cat "$dir/$m.rc" 2>/dev/null)")"
	done
	sed 's/^/    /' "$dir/log"
	echo "    $owner freezes (SIGSTOP of pg_fence and the job) before recording, as in a stalled VM."
	[ "$(grep -c . "$dir/mailbox" 2>/dev/null)" = 1 ]
	demo_check $? "one machine ($owner) owns the key and sent the digest; the other two exited 75"

	sleep 4.3
	: >"$dir/log"
	echo "  07:01, next tick ($owner's 4 s lease has expired), on the other two:"
	taker=
	act6_cron "$dir" $(printf '%s\n' machine-1 machine-2 machine-3 | grep -vx "$owner")
	for m in machine-1 machine-2 machine-3; do
		[ "$m" = "$owner" ] && continue
		act6_wait 10 test -s "$dir/$m.rc"
		wait "${ACT6_PID[$m]}" 2>/dev/null
		if grep -q "^$m: \"sent\" recorded" "$dir/log"; then
			taker=$m
			echo "    $m: $(act6_say "$m" "$(cat "$dir/$m.rc" 2>/dev/null)"): it took the key over, ran the job; the key is recorded done"
		else
			echo "    $m: $(act6_say "$m" "$(cat "$dir/$m.rc" 2>/dev/null)")"
		fi
	done
	sed 's/^/    /' "$dir/log"
	[ -n "$taker" ] && grep -q "^$taker: the digest already went out" "$dir/log"
	demo_check $? "${taker:-nobody} took the key over (a larger token, told step \"sent\") and recorded it without sending again"

	: >"$dir/log"
	echo "  $owner wakes up (SIGCONT), its job first, still believing it owns the key:"
	touch "$dir/go"
	kill -CONT "-$owner_job"
	act6_wait 10 sh -c "grep -q 'record' '$dir/log' 2>/dev/null"
	sed 's/^/    /' "$dir/log"
	grep -q "^$owner: \"sent\" record REFUSED: .*FN001" "$dir/log"
	demo_check $? "$owner's late \"sent\" record is refused (FN001): a newer owner's token is on the day"
	kill -CONT "$owner_pgf"
	act6_wait 10 test -s "$dir/$owner.rc"
	wait "${ACT6_PID[$owner]}" 2>/dev/null
	rc1=$(cat "$dir/$owner.rc" 2>/dev/null)
	echo "    then its pg_fence wakes up: $(act6_say "$owner" "$rc1")"
	sed 's/^/      /' "$dir/$owner.err"
	[ -n "$rc1" ] && [ "$rc1" != 0 ]
	demo_check $? "$owner's pg_fence does not record the key done (exit $rc1)"

	echo "  07:02, next tick, on $owner: the key is done:"
	act6_cron "$dir" "$owner"
	act6_wait 10 test -s "$dir/$owner.rc"
	wait "${ACT6_PID[$owner]}" 2>/dev/null
	echo "    $owner: $(act6_say "$owner" "$(cat "$dir/$owner.rc" 2>/dev/null)"), without running the job: $(tail -n 1 "$dir/$owner.err")"

	echo
	echo "The mailbox:"
	sed 's/^/  /' "$dir/mailbox"
	echo "The \"sent\" records (act6_digest_log):"
	psql -X -P footer=off -c "SELECT day, machine, fence AS token FROM act6_digest_log ORDER BY id" | sed 's/^/  /'
	echo "The key (fence.once_keys):"
	psql -X -P footer=off -c "SELECT key, state, token, step FROM fence.once_keys WHERE key = '$key'" | sed 's/^/  /'
	[ "$(grep -c . "$dir/mailbox")" = 1 ]
	demo_check $? "the digest was sent exactly once"
	[ "$(psql -X -At -c "SELECT count(*) || ' ' || min(machine) FROM act6_digest_log")" = "1 $taker" ]
	demo_check $? "exactly one \"sent\" record, $taker's"
	[ "$(psql -X -At -c "SELECT state || ' ' || step FROM fence.once_keys WHERE key = '$key'")" = "done sent" ]
	demo_check $? "the key is done (step sent); later ticks exit 0 without running the job"

	[ "$DEMO_FAILED_CHECKS" -eq "$failed_before" ] || rc=1
	rm -rf "$dir"
	psql -X -q -c "SET client_min_messages = warning" -c "DROP TABLE act6_digest_log"
	return $rc
}
