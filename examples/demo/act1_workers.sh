# act1_workers.sh - demo, act 1: workers share one lock and one document, and
# a holder that freezes and loses its connection cannot write afterwards.
#
# Sourced by examples/demo/demo.sh, which calls act1 (and provides demo_ms,
# demo_sql, demo_session_*, demo_q, demo_track, demo_check, DEMO_TMP).
#
# Three workers A, B, C run as background processes, each driving its own
# psql session.  They loop: fence.lock('doc-editor') -> token, read demo.doc,
# append a line, write it back with fence.fenced_update(..., token, ...),
# fence.unlock.  On its second grant B freezes while holding the lock (it
# stops sending anything, as in a GC pause); the driver then cuts B's
# connection with pg_terminate_backend (a network partition), so the lock is
# freed and another worker takes it with a larger token and writes.  B then
# wakes up, finds its connection gone, reconnects and writes its stale copy
# with its old token: fenced_update must return false and change nothing.
#
# Workers report to an event log (one line per event: ms|who|event|fields);
# the driver prints it as it grows, steers the story (kill, wake up, stop)
# and checks the invariants at the end.

ACT1_LOCK=doc-editor
ACT1_WORK=0.25 # seconds a worker holds the lock per edit
ACT1_THINK=0.1 # seconds between a worker's edits

# act1_ev DIR WHO EVENT [FIELDS...]: appends one event line (a single write).
act1_ev() {
	local dir=$1 who=$2 now=${EPOCHREALTIME//[!0-9]/}
	shift 2
	local IFS='|'
	printf '%s|%s|%s\n' "$(((now - DEMO_T0) / 1000))" "$who" "$*" >>"$dir/events"
}

# act1_read_doc NAME: reads demo.doc row 1 in session NAME into
# ACT1_FENCE, ACT1_BODY and ACT1_LINES (number of lines in the body).
act1_read_doc() {
	local i first
	demo_q "$1" "SELECT fence, body FROM demo.doc WHERE id = 1" || return
	first=${DEMO_OUT[0]:-}
	ACT1_FENCE=${first%%|*}
	ACT1_BODY=${first#*|}
	for ((i = 1; i < ${#DEMO_OUT[@]}; i++)); do
		ACT1_BODY+=$'\n'"${DEMO_OUT[i]}"
	done
	ACT1_LINES=0
	[ -n "$ACT1_BODY" ] && ACT1_LINES=$(($(grep -c '' <<<"$ACT1_BODY")))
	return 0
}

# act1_write NAME TOKEN BODY: fenced_update of row 1 in session NAME;
# leaves t (applied) or f (stale) in DEMO_OUT[0].
act1_write() {
	case $3 in *'$doc$'*) return 1 ;; esac
	demo_q "$1" "SELECT fence.fenced_update('demo.doc', '{\"id\": 1}', $2,
	                 jsonb_build_object('body', \$doc\$$3\$doc\$::text))"
}

# act1_worker NAME DIR: one worker process.  B freezes on its second grant.
act1_worker() {
	local me=$1 dir=$2 round=0 token pid rc line newbody waited
	local ACT1_FENCE ACT1_BODY ACT1_LINES
	trap '' PIPE
	demo_session_open "$me" && demo_q "$me" "SELECT pg_backend_pid()" || {
		act1_ev "$dir" "$me" error 08006 "cannot connect: $DEMO_ERR"
		return 1
	}
	pid=${DEMO_OUT[0]}
	act1_ev "$dir" "$me" start "$pid"
	while [ "$me" = B ] || [ ! -e "$dir/stop" ]; do
		demo_q "$me" "SELECT fence.lock('$ACT1_LOCK', '5s')"
		rc=$?
		if [ "$rc" -eq 1 ] && [ "$DEMO_STATE" = 55P03 ]; then
			act1_ev "$dir" "$me" timeout
			continue
		elif [ "$rc" -ne 0 ]; then
			act1_ev "$dir" "$me" error "$DEMO_STATE" "fence.lock: $DEMO_ERR"
			return 1
		fi
		token=${DEMO_OUT[0]}
		round=$((round + 1))
		act1_ev "$dir" "$me" grant "$token"
		act1_read_doc "$me" || {
			act1_ev "$dir" "$me" error "$DEMO_STATE" "reading demo.doc: $DEMO_ERR"
			return 1
		}
		line="$me wrote this line with token $token"
		newbody=$line
		[ -n "$ACT1_BODY" ] && newbody="$ACT1_BODY"$'\n'"$line"

		if [ "$me" = B ] && [ "$round" -eq 2 ]; then
			# The pause: hold the lock and send nothing until woken up.
			act1_ev "$dir" "$me" pause "$token" "$pid" "$ACT1_LINES"
			waited=0
			while [ ! -e "$dir/wake" ] && [ "$waited" -lt 600 ]; do
				sleep 0.05
				waited=$((waited + 1))
			done
			act1_ev "$dir" "$me" wake "$token"
			# First try on the old connection, as the frozen process would.
			act1_write "$me" "$token" "$newbody"
			rc=$?
			if [ "$rc" -eq 2 ]; then
				demo_session_close "$me"
				demo_session_open "$me" && demo_q "$me" "SELECT pg_backend_pid()" || {
					act1_ev "$dir" "$me" error 08006 "cannot reconnect: $DEMO_ERR"
					return 1
				}
				pid=${DEMO_OUT[0]}
				act1_ev "$dir" "$me" lost "$pid"
				act1_write "$me" "$token" "$newbody"
				rc=$?
			fi
			if [ "$rc" -ne 0 ]; then
				act1_ev "$dir" "$me" error "$DEMO_STATE" "late fenced_update: $DEMO_ERR"
				return 1
			fi
			local result=${DEMO_OUT[0]:-}
			act1_read_doc "$me"
			act1_ev "$dir" "$me" late "$token" "$result" "$ACT1_FENCE" "$ACT1_LINES" "$line"
			continue
		fi

		sleep "$ACT1_WORK"
		if ! act1_write "$me" "$token" "$newbody"; then
			act1_ev "$dir" "$me" error "$DEMO_STATE" "fence.fenced_update: $DEMO_ERR"
			return 1
		fi
		act1_ev "$dir" "$me" write "$token" "${DEMO_OUT[0]:-}" "$((ACT1_LINES + 1))" "$line"
		if ! demo_q "$me" "SELECT fence.unlock('$ACT1_LOCK', $token)"; then
			act1_ev "$dir" "$me" error "$DEMO_STATE" "fence.unlock: $DEMO_ERR"
			return 1
		fi
		act1_ev "$dir" "$me" release "$token" "${DEMO_OUT[0]:-}"
		# B's edit after its rejected late write is its last one.
		[ "$me" = B ] && [ "$round" -ge 3 ] && break
		sleep "$ACT1_THINK"
	done
	demo_session_close "$me"
	act1_ev "$dir" "$me" "done"
}

# act1_lines N: "N line(s)".
act1_lines() {
	if [ "$1" -eq 1 ]; then echo "1 line"; else echo "$1 lines"; fi
}

# Time column: seconds since the act started.
act1_time() {
	local ms=$(($1 - ACT1_T0))
	[ "$ms" -lt 0 ] && ms=0
	printf '%3d.%02ds' $((ms / 1000)) $(((ms % 1000) / 10))
}

act1_row() {
	printf '  %7s  %-6s  %-22s %s\n' "$(act1_time "$1")" "$2" "$3" "${4:-}"
}

# act1_pump: prints the events logged since the last call and records them.
act1_pump() {
	local line t who ev a b c d rest
	while :; do
		if ! IFS= read -r -u "$ACT1_LOGFD" line; then
			ACT1_PARTIAL+=$line
			return 0
		fi
		line="$ACT1_PARTIAL$line"
		ACT1_PARTIAL=
		IFS='|' read -r t who ev a b c d rest <<<"$line"
		case $ev in
		start)
			act1_row "$t" "$who" "connected" "psql session, backend pid $a" ;;
		grant)
			act1_row "$t" "$who" "got the lock" "token $a"
			ACT1_GRANTS+=("$a")
			ACT1_HOLDER[$a]=$who
			ACT1_FROM[$a]=$t ;;
		write)
			if [ "$b" = t ]; then
				act1_row "$t" "$who" "write applied" "$(printf "token %-4s document: %s, fence %s" "$a" "$(act1_lines "$c")" "$a")"
				ACT1_APPLIED+=("$a")
				ACT1_APPLIED_LINES+=("$d")
				ACT1_WRITE[$a]="applied"
			else
				act1_row "$t" "$who" "write REJECTED" "$(printf "token %-4s (stale)" "$a")"
				ACT1_WRITE[$a]="rejected (stale)"
			fi ;;
		release)
			ACT1_UNTIL[$a]=$t
			if [ "$b" != t ]; then
				ACT1_ERRORS+=("$who: fence.unlock('$ACT1_LOCK', $a) returned '$b'")
				act1_row "$t" "$who" "unlock FAILED" "fence.unlock returned '$b' for token $a"
			fi ;;
		timeout)
			act1_row "$t" "$who" "gave up waiting (5 s)" "55P03 lock_not_available; tries again" ;;
		pause)
			ACT1_B_TOKEN=$a ACT1_B_PID=$b ACT1_B_LINES=$c ACT1_PAUSE_AT=$t
			act1_row "$t" "$who" "** FREEZES" "holding the lock (token $a), with its copy of the document ($(act1_lines "$c"))" ;;
		observe)
			act1_row "$t" "$who" "B is frozen" "B's session is $b, still holding the lock; waiting for it: $a" ;;
		kill)
			ACT1_KILL_AT=$t
			ACT1_UNTIL[$ACT1_B_TOKEN]=$t
			act1_row "$t" "$who" "** CUTS B's connection" "pg_terminate_backend($a): B's session ends, the lock is freed" ;;
		wake)
			ACT1_WAKE_AT=$t
			act1_row "$t" "$who" "** WAKES UP" "still believes it holds token $a; sends its edit" ;;
		lost)
			act1_row "$t" "$who" "connection lost" "reconnects (new backend pid $a) and sends the edit again" ;;
		late)
			ACT1_LATE_TOKEN=$a ACT1_LATE_RESULT=$b ACT1_LATE_FENCE=$c ACT1_LATE_LINES=$d ACT1_LATE_LINE=$rest
			if [ "$b" = f ]; then
				ACT1_WRITE[$a]="frozen; late write rejected"
				act1_row "$t" "$who" "late write REJECTED" "token $a is stale (fence read back: $c); fenced_update returned false"
			else
				ACT1_WRITE[$a]="LATE WRITE APPLIED"
				act1_row "$t" "$who" "late write APPLIED" "token $a, fenced_update returned '$b' (document fence now $c)"
			fi ;;
		done)
			ACT1_DONE+=("$who") ;;
		error)
			ACT1_ERRORS+=("$who: $a $b${c:+|$c}${d:+|$d}${rest:+|$rest}")
			act1_row "$t" "$who" "ERROR $a" "$b" ;;
		esac
	done
}

act1_alive() {
	local pid
	for pid in "${ACT1_PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null && return 0
	done
	return 1
}

act1() {
	local - dir="$DEMO_TMP/act1" w pid now deadline phase result
	local ACT1_T0 ACT1_LOGFD ACT1_PARTIAL=
	local ACT1_B_TOKEN='' ACT1_B_PID='' ACT1_B_LINES='' ACT1_PAUSE_AT='' ACT1_KILL_AT='' ACT1_WAKE_AT=''
	local ACT1_LATE_TOKEN='' ACT1_LATE_RESULT='' ACT1_LATE_FENCE='' ACT1_LATE_LINES='' ACT1_LATE_LINE=''
	local -a ACT1_PIDS=() ACT1_GRANTS=() ACT1_APPLIED=() ACT1_APPLIED_LINES=() ACT1_DONE=() ACT1_ERRORS=()
	local -A ACT1_HOLDER=() ACT1_FROM=() ACT1_UNTIL=() ACT1_WRITE=()
	set -u
	mkdir -p "$dir"
	: >"$dir/events"

	echo
	echo "=== Act 1: three workers, one lock, one document; one holder freezes ==="
	if ! demo_sql "DROP TABLE IF EXISTS demo.doc;
	               CREATE TABLE demo.doc (id int PRIMARY KEY, body text, fence bigint NOT NULL DEFAULT 0);
	               INSERT INTO demo.doc VALUES (1, '', 0)" >/dev/null; then
		echo "  BROKEN: cannot create demo.doc"
		return 1
	fi
	cat <<'TEXT'
  Table demo.doc holds one document: (id 1, body '', fence 0).
  Workers A, B and C are separate processes, each with its own psql session.
  Each one loops, editing the document under the lock "doc-editor":
    SELECT fence.lock('doc-editor', '5s');          -- waits; returns a fencing token
    SELECT fence, body FROM demo.doc WHERE id = 1;  -- reads the document
    SELECT fence.fenced_update('demo.doc', '{"id": 1}', token,
             jsonb_build_object('body', body || new line));  -- only if token > fence
    SELECT fence.unlock('doc-editor', token);
  On its second turn B freezes while holding the lock (a GC pause), then
  loses its connection (a network partition): what happens to its late write?

     time  who     what                   details
  -------  ------  ---------------------- ---------------------------------------
TEXT
	exec {ACT1_LOGFD}<"$dir/events"
	ACT1_T0=$(demo_ms)
	for w in A B C; do
		act1_worker "$w" "$dir" &
		pid=$!
		ACT1_PIDS+=("$pid")
		demo_track "$pid"
	done

	# Steer the story: kill B's connection 1.2 s into its pause; wake B once
	# another worker has written with a newer token; stop when B is done.
	deadline=$(($(demo_ms) + 40000))
	phase=wait-pause
	while act1_alive; do
		act1_pump
		now=$(demo_ms)
		if [ "$now" -gt "$deadline" ]; then
			ACT1_ERRORS+=("driver: the act did not finish within 40 s")
			break
		fi
		if [ "${#ACT1_ERRORS[@]}" -gt 0 ]; then
			touch "$dir/wake" "$dir/stop"
			break
		fi
		case $phase in
		wait-pause)
			[ -n "$ACT1_PAUSE_AT" ] && phase=observe ;;
		observe)
			if [ "$now" -ge $((ACT1_PAUSE_AT + 700)) ]; then
				result=$(demo_sql "SELECT coalesce(string_agg(substr(application_name, 12), ' and '
				                                   ORDER BY application_name)
				                                   FILTER (WHERE wait_event_type = 'Lock'), 'nobody'),
				                          coalesce(max(state) FILTER (WHERE pid = $ACT1_B_PID), 'gone')
				                     FROM pg_stat_activity
				                    WHERE application_name LIKE 'fence-demo-_'")
				act1_ev "$dir" driver observe "${result%%|*}" "${result#*|}"
				phase='kill'
			fi ;;
		kill)
			if [ "$now" -ge $((ACT1_PAUSE_AT + 1200)) ]; then
				# Logged first: the next grant may be logged before psql returns.
				act1_ev "$dir" driver kill "$ACT1_B_PID"
				result=$(demo_sql "SELECT pg_terminate_backend($ACT1_B_PID)")
				[ "$result" = t ] ||
					act1_ev "$dir" driver error - "pg_terminate_backend($ACT1_B_PID) returned '$result'"
				phase=wait-newer-write
			fi ;;
		wait-newer-write)
			if [ "${#ACT1_APPLIED[@]}" -gt 0 ] && [ "${ACT1_APPLIED[-1]}" -gt "$ACT1_B_TOKEN" ]; then
				touch "$dir/wake"
				phase=wait-b
			fi ;;
		wait-b)
			case " ${ACT1_DONE[*]} " in *" B "*)
				touch "$dir/stop"
				phase=finish ;;
			esac ;;
		esac
		sleep 0.05
	done
	for pid in "${ACT1_PIDS[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			sleep 1
			kill "$pid" 2>/dev/null
		fi
		wait "$pid" 2>/dev/null
	done
	act1_pump
	exec {ACT1_LOGFD}<&-

	act1_summary
}

act1_summary() {
	local token prev ok i fence body line highest=
	local -a body_lines=()

	echo
	echo "  Who held the lock, in grant order:"
	printf '    %5s  %-6s  %8s  %8s  %s\n' token holder from until "its write"
	printf '    %5s  %-6s  %8s  %8s  %s\n' ----- ------ -------- -------- ---------------------
	for token in "${ACT1_GRANTS[@]}"; do
		printf '    %5s  %-6s  %8s  %8s  %s\n' "$token" "${ACT1_HOLDER[$token]}" \
			"$(act1_time "${ACT1_FROM[$token]}")" \
			"$([ -n "${ACT1_UNTIL[$token]:-}" ] && act1_time "${ACT1_UNTIL[$token]}")" \
			"${ACT1_WRITE[$token]:-none}"
	done

	fence=$(demo_sql "SELECT fence FROM demo.doc WHERE id = 1")
	body=$(demo_sql "SELECT body FROM demo.doc WHERE id = 1")
	[ -n "$body" ] && mapfile -t body_lines <<<"$body"

	if [ -n "$ACT1_LATE_TOKEN" ]; then
		local word=$ACT1_LATE_RESULT
		case $word in t) word=true ;; f) word=false ;; esac
		echo
		if [ "$word" = false ]; then
			echo "  B's late write presented token $ACT1_LATE_TOKEN, older than the document's fence"
			echo "  ($ACT1_LATE_FENCE when B read it back): fence.fenced_update returned false and changed"
			echo "  nothing. Applied, B's stale copy (the $(act1_lines "$ACT1_B_LINES") it had read, plus its own)"
			echo "  would have replaced the document, erasing the $(act1_lines $((ACT1_LATE_LINES - ACT1_B_LINES)))"
			echo "  written while B was frozen."
		else
			echo "  B's late write with token $ACT1_LATE_TOKEN returned '$word': the stale copy it had read"
			echo "  ($(act1_lines "$ACT1_B_LINES")) was written over the document. The fence did not hold."
		fi
		# The server's own signal that a holder's timing assumptions broke.
		if [ -r "${FENCE_PGLOG:-}" ]; then
			line=$(grep -o 'pg_fence: stale write rejected: .*' "$FENCE_PGLOG" | tail -n 1)
			[ -n "$line" ] && printf '  The server log says:\n    LOG:  %s\n' "$line"
		fi
	fi

	echo
	echo "  Final row of demo.doc:"
	echo "    id     1"
	echo "    fence  $fence"
	if [ "${#body_lines[@]}" -eq 0 ]; then
		echo "    body   (empty)"
	else
		printf '    body   %s\n' "${body_lines[0]}"
		for ((i = 1; i < ${#body_lines[@]}; i++)); do
			printf '           %s\n' "${body_lines[i]}"
		done
	fi

	echo
	echo "  Checks:"
	local failed_before=$DEMO_FAILED_CHECKS

	local errors=
	[ "${#ACT1_ERRORS[@]}" -gt 0 ] && errors=$(printf '; %s' "${ACT1_ERRORS[@]}")
	demo_check "${#ACT1_ERRORS[@]}" "no worker hit an error${errors:+: ${errors#; }}"

	ok=0
	prev=
	for token in "${ACT1_GRANTS[@]}"; do
		[ -n "$prev" ] && [ "$token" -le "$prev" ] && ok=1
		prev=$token
	done
	[ "${#ACT1_GRANTS[@]}" -ge 2 ] || ok=1
	demo_check "$ok" "tokens strictly increase in grant order: ${ACT1_GRANTS[*]}"

	ok=1
	if [ "${#ACT1_APPLIED[@]}" -gt 0 ]; then
		highest=0
		for token in "${ACT1_APPLIED[@]}"; do
			[ "$token" -gt "$highest" ] && highest=$token
		done
		[ "$fence" = "$highest" ] && ok=0
	fi
	demo_check "$ok" "the document's fence ($fence) is the highest token that wrote (${highest:-none})"

	ok=1
	[ -n "$ACT1_PAUSE_AT" ] && [ -n "$ACT1_KILL_AT" ] && [ "$ACT1_LATE_RESULT" = f ] && ok=0
	demo_check "$ok" "B's late write with its old token ${ACT1_LATE_TOKEN:-?} returned false (stale)"

	ok=1
	for token in "${ACT1_APPLIED[@]}"; do
		# A write with a newer token than B's, by someone else, before B woke up.
		if [ -n "$ACT1_B_TOKEN" ] && [ -n "$ACT1_WAKE_AT" ] && [ "$token" -gt "$ACT1_B_TOKEN" ] &&
			[ "${ACT1_HOLDER[$token]}" != B ] && [ "${ACT1_FROM[$token]}" -lt "$ACT1_WAKE_AT" ]; then
			ok=0
		fi
	done
	demo_check "$ok" "while B was frozen, another worker took the lock with a larger token and wrote"

	ok=0
	[ "${#body_lines[@]}" -eq "${#ACT1_APPLIED_LINES[@]}" ] || ok=1
	for ((i = 0; i < ${#ACT1_APPLIED_LINES[@]}; i++)); do
		[ "${body_lines[i]:-}" = "${ACT1_APPLIED_LINES[i]}" ] || ok=1
	done
	[ "${#ACT1_APPLIED_LINES[@]}" -gt 0 ] || ok=1
	demo_check "$ok" "the body holds every applied write, in order (${#ACT1_APPLIED_LINES[@]} writes, ${#body_lines[@]} lines)"

	ok=0
	for line in "${body_lines[@]}"; do
		[ "$line" = "$ACT1_LATE_LINE" ] && ok=1
	done
	[ -n "$ACT1_LATE_LINE" ] || ok=1
	demo_check "$ok" "B's late line (\"${ACT1_LATE_LINE:-?}\") is not in the document"

	[ "$DEMO_FAILED_CHECKS" -eq "$failed_before" ]
}
