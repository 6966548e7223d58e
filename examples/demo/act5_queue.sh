# act5_queue.sh - demo act 5: a queue of e-mail jobs; a worker freezes past
# its claim, another rescues the job and sends the e-mail; the frozen one
# wakes and can neither send it again nor complete the job.
#
# Sourced by examples/demo/demo.sh, which calls act5 (and provides demo_ms,
# demo_session_*, demo_q, demo_track, demo_check).
#
# Three e-mail jobs are enqueued in queue "emails" (fence.enqueue).  Worker
# A claims one (fence.claim with a 1-second claim: a token), starts writing
# its e-mail and freezes (SIGSTOP of its process; its session stays
# connected, so the claim is only rescued when it expires).  Worker B sends
# the other two, then waits inside the server (fence.claim ... wait) and is
# woken when A's claim expires: it claims A's job again with a larger token
# and sends it.  Each send is one transaction: the e-mail row inserted into
# demo.emails with the claim's token (SET LOCAL fence.token; the table is
# guarded with resource column job_id, so each job's e-mails are fenced by
# its claims' tokens) and fence.complete(job, token).  A then wakes up and
# runs the same transaction with its old token: the INSERT is refused
# (FN001) and rolls back; its bare fence.complete raises FN001 too, and its
# heartbeat returns false.  At the end: exactly one e-mail row per job.

ACT5_QUEUE=emails
ACT5_CLAIM=1s # A's claim, the TTL it freezes past

# act5_ev DIR WHO TEXT: one line of the act's event log (ms|who|text).
act5_ev() {
	printf '%s|%s|%s\n' "$(demo_ms)" "$2" "$3" >>"$1/events"
}

# act5_print DIR: prints the events not printed yet.
act5_print() {
	local dir=$1 n ms who text
	n=$(cat "$dir/printed" 2>/dev/null || echo 0)
	tail -n +"$((n + 1))" "$dir/events" 2>/dev/null | while IFS='|' read -r ms who text; do
		printf '  %4d.%02ds  %-9s %s\n' "$((ms / 1000))" "$((ms % 1000 / 10))" "$who" "$text"
	done
	wc -l <"$dir/events" 2>/dev/null | tr -d ' ' >"$dir/printed"
}

# act5_wait SECONDS COMMAND...: until COMMAND succeeds (every 50 ms).
act5_wait() {
	local n=$(($1 * 20))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}

# act5_send SESSION JOB TOKEN TO SUBJECT WHO: the worker's transaction (one
# query string, one implicit transaction): the e-mail row with the claim's
# token, then the job's completion.  An error rolls back both.
act5_send() {
	demo_q "$1" "SET LOCAL fence.token = $3 \\;
		INSERT INTO demo.emails (job_id, recipient, subject, sent_by) VALUES ($2, '$4', '$5', '$6') \\;
		SELECT fence.complete($2, $3, jsonb_build_object('sent_by', '$6'))"
}

# Worker A: claims one job, then "writes the e-mail" until the driver lets
# it go (it is frozen meanwhile), then sends with its token.
act5_worker_a() {
	local dir=$1 job token to subject
	trap '' PIPE
	demo_session_open A || return 1
	demo_q A "SELECT job_id || '|' || token || '|' || (payload->>'to') || '|' || (payload->>'subject')
	            FROM fence.claim('$ACT5_QUEUE', '$ACT5_CLAIM', holder => 'worker A')" || {
		act5_ev "$dir" A "claim failed: $DEMO_STATE $DEMO_ERR"
		return 1
	}
	IFS='|' read -r job token to subject <<<"${DEMO_OUT[0]:-}"
	echo "$job|$token" >"$dir/a_claim"
	act5_ev "$dir" "worker A" "claims job $job (to $to) with token $token, for $ACT5_CLAIM; starts writing the e-mail"
	while [ ! -e "$dir/a_go" ]; do sleep 0.05; done
	act5_ev "$dir" "worker A" "** WAKES UP, still believing it owns job $job: sends the e-mail and completes, token $token"
	if act5_send A "$job" "$token" "$to" "$subject" "worker A"; then
		echo "ok" >"$dir/a_send"
		act5_ev "$dir" "worker A" "e-mail inserted and job $job completed (!)"
	else
		echo "$DEMO_STATE|$DEMO_ERR" >"$dir/a_send"
		act5_ev "$dir" "worker A" "REFUSED, rolled back: $DEMO_STATE $DEMO_ERR"
	fi
	if demo_q A "SELECT fence.complete($job, $token)"; then
		echo "ok ${DEMO_OUT[0]:-}" >"$dir/a_complete"
		act5_ev "$dir" "worker A" "fence.complete($job, $token) returned ${DEMO_OUT[0]:-} (!)"
	else
		echo "$DEMO_STATE|$DEMO_ERR" >"$dir/a_complete"
		act5_ev "$dir" "worker A" "fence.complete($job, $token) alone: $DEMO_STATE $DEMO_ERR"
	fi
	demo_q A "SELECT fence.heartbeat($job, $token, '$ACT5_CLAIM')"
	echo "${DEMO_OUT[0]:-$DEMO_STATE}" >"$dir/a_heartbeat"
	act5_ev "$dir" "worker A" "fence.heartbeat($job, $token) returned ${DEMO_OUT[0]:-$DEMO_STATE $DEMO_ERR}: the job is not its own any more"
	demo_session_close A
}

# Worker B: claims and sends jobs one at a time, waiting inside the server
# (up to 5 s per claim) when none is runnable, until told to stop (the
# driver cancels its last wait).
act5_worker_b() {
	local dir=$1 job token attempt to subject at t0
	trap '' PIPE
	demo_session_open B || return 1
	while [ ! -e "$dir/b_stop" ]; do
		t0=$(demo_ms)
		demo_q B "SELECT job_id || '|' || token || '|' || attempt || '|' || (payload->>'to') || '|' ||
		                 (payload->>'subject') || '|' || clock_timestamp()
		            FROM fence.claim('$ACT5_QUEUE', '5s', wait => '5s', holder => 'worker B')" || {
			[ -e "$dir/b_stop" ] && break
			act5_ev "$dir" "worker B" "claim failed: $DEMO_STATE $DEMO_ERR"
			return 1
		}
		[ -n "${DEMO_OUT[0]:-}" ] || continue
		IFS='|' read -r job token attempt to subject at <<<"${DEMO_OUT[0]}"
		if [ "$attempt" -gt 1 ]; then
			echo "$job|$token|$at" >"$dir/b_rescue"
			act5_ev "$dir" "worker B" "** A's claim has expired: claims job $job again (attempt $attempt) with token $token$(
				[ $(($(demo_ms) - t0)) -lt 200 ] || echo " (woken after $(($(demo_ms) - t0)) ms waiting inside fence.claim)")"
		else
			act5_ev "$dir" "worker B" "claims job $job (to $to) with token $token"
		fi
		if act5_send B "$job" "$token" "$to" "$subject" "worker B"; then
			act5_ev "$dir" "worker B" "e-mail to $to inserted with token $token, job $job completed (one transaction)"
		else
			act5_ev "$dir" "worker B" "send failed: $DEMO_STATE $DEMO_ERR"
		fi
	done
	demo_session_close B
}

act5() {
	local dir rc=0 a_pid b_pid a_job a_token b_job b_token b_at a_until delay
	local ids jobs rows one_each state line
	local failed_before=$DEMO_FAILED_CHECKS
	echo
	echo "=== Act 5: a job queue: a worker freezes past its claim, another rescues the job ==="
	if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.claim(text,interval,integer,interval,text)') IS NULL")" != f ]; then
		echo "act 5: this pg_fence has no job queue (fence.claim); cannot run" >&2
		return 1
	fi
	# A rerun on the same database: earlier jobs of the queue are cancelled.
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL || return 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS demo.emails;
CREATE TABLE demo.emails (id bigserial PRIMARY KEY, job_id bigint NOT NULL, recipient text,
                          subject text, sent_by text, fence bigint NOT NULL DEFAULT 0);
SELECT fence.guard('demo.emails', 'fence', ARRAY['job_id']);
SELECT fence.cancel(id) FROM fence.jobs WHERE queue = '$ACT5_QUEUE' AND state IN ('queued', 'running');
SQL
	dir=$(mktemp -d)
	echo "  Three welcome e-mails are enqueued in one transaction: fence.enqueue('$ACT5_QUEUE', payload)."
	echo "  Sending one is one transaction: the e-mail row, inserted with the claim's token into"
	echo "  demo.emails (guarded per job: fence.guard('demo.emails', 'fence', ARRAY['job_id'])),"
	echo "  and fence.complete(job, token)."
	ids=$(psql -X -At -v ON_ERROR_STOP=1 <<SQL
SELECT string_agg(fence.enqueue('$ACT5_QUEUE', jsonb_build_object('to', r, 'subject', 'Welcome, ' || split_part(r, '@', 1) || '!'))::text,
                  ',' ORDER BY n)
  FROM unnest(ARRAY['alice@example.com', 'bob@example.com', 'carol@example.com']) WITH ORDINALITY AS t(r, n);
SQL
	) || { rm -rf "$dir"; return 1; }
	jobs=$(psql -X -At -c "SELECT string_agg(id || ' (' || (payload->>'to') || ')', ', ' ORDER BY id) FROM fence.jobs WHERE id IN ($ids)")
	echo "  Jobs: $jobs.  Workers A and B are two processes, each with its own session."
	echo

	act5_worker_a "$dir" 2>>"$dir/stderr" &
	a_pid=$!
	demo_track "$a_pid"
	act5_wait 10 test -s "$dir/a_claim"
	IFS='|' read -r a_job a_token <"$dir/a_claim" 2>/dev/null
	kill -STOP "$a_pid"
	act5_ev "$dir" "worker A" "** FREEZES (SIGSTOP) mid-way, as in a GC pause; its session stays connected"
	a_until=$(psql -X -At -c "SELECT claimed_until FROM fence.jobs WHERE id = ${a_job:-0}")

	act5_worker_b "$dir" 2>>"$dir/stderr" &
	b_pid=$!
	demo_track "$b_pid"
	act5_wait 15 test -s "$dir/b_rescue"
	# B sends the rescued job: then every job is completed.
	act5_wait 10 test "$(psql -X -At -c "SELECT count(*) FILTER (WHERE state <> 'completed') FROM fence.jobs WHERE id IN ($ids)")" = 0
	IFS='|' read -r b_job b_token b_at <"$dir/b_rescue" 2>/dev/null
	# B is waiting in fence.claim again: stop it (cancel its wait).
	touch "$dir/b_stop"
	psql -X -At -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'fence-demo-B'" >/dev/null
	wait "$b_pid" 2>/dev/null
	act5_print "$dir"

	touch "$dir/a_go"
	kill -CONT "$a_pid"
	act5_wait 10 test -s "$dir/a_heartbeat"
	wait "$a_pid" 2>/dev/null
	act5_print "$dir"
	echo

	delay=$(psql -X -At -c "SELECT round(extract(epoch FROM '${b_at:-infinity}'::timestamptz - '${a_until:-infinity}'::timestamptz) * 1000)" 2>/dev/null)
	[ -n "$a_job" ] && [ "$b_job" = "$a_job" ] && [ -n "$b_token" ] && [ "$b_token" -gt "$a_token" ]
	demo_check $? "B rescued A's job $a_job when its claim expired (${delay:-?} ms after), with a larger token ($b_token > $a_token)"
	state=$(cut -d'|' -f1 "$dir/a_send" 2>/dev/null)
	[ "$state" = FN001 ]
	demo_check $? "A's late e-mail (token $a_token) refused by the guarded table (${state:-no error}), its transaction rolled back"
	state=$(cut -d'|' -f1 "$dir/a_complete" 2>/dev/null)
	[ "$state" = FN001 ]
	demo_check $? "A's fence.complete with token $a_token raises ${state:-nothing} (it would roll back A's writes with it)"
	[ "$(cat "$dir/a_heartbeat" 2>/dev/null)" = f ]
	demo_check $? "A's heartbeat returns false: A knows it lost the job"
	if [ -r "${FENCE_PGLOG:-}" ]; then
		echo "  The server log says:"
		for line in "stale write rejected" "stale completion rejected"; do
			line=$(grep -o "pg_fence: $line: .*" "$FENCE_PGLOG" | tail -n 1)
			[ -z "$line" ] || printf '    LOG:  %s\n' "$line"
		done
	fi

	echo
	echo "  The jobs (fence.jobs):"
	psql -X -A -F ' | ' -P footer=off -c "SELECT id, state, attempt, token, holder, payload->>'to' AS to
	                              FROM fence.jobs WHERE id IN ($ids) ORDER BY id" | sed 's/^/    /'
	echo "  The e-mails sent (demo.emails):"
	psql -X -A -F ' | ' -P footer=off -c "SELECT job_id, recipient, subject, sent_by, fence AS token
	                                        FROM demo.emails ORDER BY job_id, id" | sed 's/^/    /'
	rows=$(psql -X -At -c "SELECT count(*) FROM demo.emails")
	one_each=$(psql -X -At -c "SELECT count(*) = 3 AND bool_and(n = 1) FROM (SELECT j.id, count(e.id) AS n
	                             FROM fence.jobs j LEFT JOIN demo.emails e ON e.job_id = j.id
	                            WHERE j.id IN ($ids) GROUP BY j.id) s")
	[ "$one_each" = t ] && [ "$rows" = 3 ]
	demo_check $? "exactly one e-mail per job ($rows e-mails for 3 jobs)"
	[ "$(psql -X -At -c "SELECT count(*) FROM fence.jobs WHERE id IN ($ids) AND state = 'completed'")" = 3 ]
	demo_check $? "every job completed"
	[ "$(psql -X -At -c "SELECT sent_by || ' ' || fence FROM demo.emails WHERE job_id = ${a_job:-0}")" = "worker B $b_token" ]
	demo_check $? "job $a_job's e-mail is B's, with B's token $b_token"

	[ "$DEMO_FAILED_CHECKS" -eq "$failed_before" ] || rc=1
	if [ -s "$dir/stderr" ]; then
		echo "  The workers' stderr:"
		sed 's/^/    /' "$dir/stderr"
	fi
	rm -rf "$dir"
	return $rc
}
