# act4_election.sh - demo act 4: three replicas elect a leader; the leader
# freezes past its TTL; a follower is elected with a higher term; the old
# leader wakes up and its write with the old term is rejected (FN001).
#
# Sourced by the demo driver inside the throwaway cluster (PG* set), from
# the repository root; defines act4, which returns non-zero if an
# invariant breaks: one leader at a time, a higher term for the new
# leader, the stale write rejected, the frozen leader's pg_fence exits 74.

# The service every replica runs under `pg_fence elect`: writes its
# heartbeat into the guarded row every 0.3 s, presenting its term (SET
# LOCAL fence.token: a write that leaves the fence unchanged presents none).
act4_service() {
	cat <<'EOF'
me=$1 dir=$2
echo $$ >"$dir/$me.pid"
echo "$FENCE_TOKEN" >"$dir/$me.term"
while :; do
	if out=$(psql -X -qAt -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
		-c "BEGIN; SET LOCAL fence.token = $FENCE_TOKEN;
			UPDATE act4_schedule SET leader = '$me', fence = $FENCE_TOKEN, beats = beats + 1 WHERE id = 1; COMMIT" 2>&1); then
		echo "$me (term $FENCE_TOKEN): heartbeat written" >>"$dir/log"
	else
		echo "$me (term $FENCE_TOKEN): heartbeat REJECTED: $(printf '%s' "$out" | head -n 1)" >>"$dir/log"
	fi
	sleep 0.3
done
EOF
}

# act4_wait SECONDS COMMAND...: until COMMAND succeeds (every 50 ms).
act4_wait() {
	local n=$(($1 * 20))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}

act4() {
	local pgf=${PG_FENCE_BIN:-$PWD/src/cli/pg_fence}
	local dir rc=0 i svc watch old new old_term new_term old_pid old_cmd
	local failed_before=$DEMO_FAILED_CHECKS
	declare -A pid=()
	echo
	echo "=== Act 4: leader election: the leader freezes, a follower takes over ==="
	if [ ! -x "$pgf" ]; then
		echo "act 4: $pgf is not built" >&2
		return 1
	fi
	if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.campaign(text,text,interval,interval)') IS NULL")" = t ]; then
		echo "act 4: this pg_fence has no fence.campaign; cannot run" >&2
		return 1
	fi
	psql -X -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS act4_schedule" \
		-c "CREATE TABLE act4_schedule (id int PRIMARY KEY, leader text, beats int NOT NULL DEFAULT 0, fence bigint NOT NULL DEFAULT 0)" \
		-c "INSERT INTO act4_schedule (id) VALUES (1)" -c "SELECT fence.guard('act4_schedule')" >/dev/null || return 1
	dir=$(mktemp -d)
	svc=$(act4_service)
	echo "Three replicas of a service run"
	echo "  pg_fence elect scheduler --ttl 2s --candidate replica-N -- service"
	echo "and the service writes a heartbeat into a guarded table with FENCE_TOKEN (its term)."
	echo "Meanwhile an operator runs  pg_fence leader --watch scheduler."
	echo

	"$pgf" leader --watch scheduler >"$dir/watch" 2>/dev/null &
	watch=$!
	demo_track "$watch"
	for i in 1 2 3; do
		"$pgf" elect scheduler --ttl 2s --candidate "replica-$i" -- sh -c "$svc" sh "replica-$i" "$dir" \
			2>"$dir/replica-$i.err" &
		pid[$i]=$!
		demo_track "${pid[$i]}"
		[ "$i" = 1 ] && act4_wait 10 test -s "$dir/replica-1.term"
	done
	old=replica-1
	old_term=$(cat "$dir/$old.term" 2>/dev/null)
	old_pid=${pid[1]}
	old_cmd=$(cat "$dir/$old.pid" 2>/dev/null)
	act4_wait 10 grep -q "$old (term $old_term): heartbeat written" "$dir/log"
	demo_check $? "replica-1 is elected (term $old_term) and writes its heartbeat; replica-2 and replica-3 wait in the server"

	kill -STOP "$old_pid" "-$old_cmd"
	echo "  replica-1 freezes (SIGSTOP of pg_fence and the service), as in a stalled VM."
	act4_wait 15 sh -c "ls '$dir'/replica-[23].term >/dev/null 2>&1"
	new=$(cd "$dir" && ls replica-[23].term 2>/dev/null | head -n 1)
	new=${new%.term}
	new_term=$(cat "$dir/$new.term" 2>/dev/null)
	[ -n "$new" ] && [ "$(ls "$dir"/replica-[23].term | wc -l)" -eq 1 ] && [ "$new_term" -gt "$old_term" ]
	demo_check $? "after replica-1's 2 s TTL, exactly one follower ($new) is elected, with a higher term ($new_term > $old_term)"
	act4_wait 10 grep -q "$new (term $new_term): heartbeat written" "$dir/log"
	demo_check $? "$new writes its heartbeat with term $new_term"

	kill -CONT "-$old_cmd"
	echo "  replica-1's service wakes up first, still believing it leads, and writes with term $old_term."
	act4_wait 10 grep -q "$old (term $old_term): heartbeat REJECTED: .*FN001" "$dir/log"
	demo_check $? "its write with the old term is rejected by the guarded table (FN001)"
	kill -CONT "$old_pid"
	echo "  Then replica-1's pg_fence wakes up: it sees the leadership lost and stops its service."
	wait "$old_pid"
	i=$?
	[ "$i" -eq 74 ]
	demo_check $? "replica-1's pg_fence exits 74 (leadership lost)"
	[ "$(psql -X -At -c "SELECT leader || ' ' || fence FROM act4_schedule")" = "$new $new_term" ]
	demo_check $? "the row carries $new's write and term"

	echo
	echo "The services' log (in order):"
	uniq -c "$dir/log" | sed 's/^ *\([0-9]*\) \(.*\)/  \2  (x\1)/'
	echo "replica-1's pg_fence on stderr:"
	sed 's/^/  /' "$dir/replica-1.err"
	echo "pg_fence leader --watch scheduler:"
	sleep 0.2
	sed 's/^/  /' "$dir/watch"

	# Stop: the current leader first (it resigns, the last replica is elected), then that one.
	kill "$watch" 2>/dev/null
	for i in 2 3; do
		[ "replica-$i" = "$new" ] && kill -TERM "${pid[$i]}" && wait "${pid[$i]}" 2>/dev/null
	done
	for i in 2 3; do
		[ "replica-$i" != "$new" ] && act4_wait 10 test -s "$dir/replica-$i.term" &&
			kill -TERM "${pid[$i]}" && wait "${pid[$i]}" 2>/dev/null
	done
	wait "$watch" 2>/dev/null
	[ "$DEMO_FAILED_CHECKS" -eq "$failed_before" ] || rc=1
	rm -rf "$dir"
	psql -X -q -c "SET client_min_messages = warning" -c "DROP TABLE act4_schedule"
	return $rc
}
