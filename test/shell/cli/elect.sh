#!/usr/bin/env bash
# cli/elect.sh - pg_fence elect and pg_fence leader [--watch].
#  1. elect runs the command with FENCE_TOKEN = its term; leader prints it.
#  2. A second elect waits in the server and takes over as soon as the first
#     one's command exits (resign), long before the first one's TTL.
#  3. elect --wait gives up with 73; a signal cancels a campaign's wait in
#     the server (the candidate that is gone is never elected).
#  4. The leader's pg_fence frozen (SIGSTOP) past its TTL: a follower is
#     elected with a higher term; the resumed one stops its command, exit 74.
#  5. leader's exit codes (0 leader, 1 none); leader --watch prints each
#     change (state at start, elected, resigned, expired) within a bound.
#  6. Usage errors exit 64: also a candidate over 1024 bytes (before
#     campaigning), a TTL above fence.max_lease_ttl (the server's 22023),
#     an empty NAME for leader as for elect; server errors say "pg_fence: "
#     once.
#  7. A leader without a candidate (fence.lease_acquire without holder):
#     leader and leader --watch print an empty CANDIDATE; --watch prints a
#     plain lease released at once (from its notifications).
#  8. Candidates waiting through a server restart, a terminated backend and
#     a cancelled wait keep campaigning (application_name = candidate);
#     when the leader resigns, one of them is elected; so does a waiting
#     run --lease --wait whose backend is terminated.
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without fence.campaign.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_elect
if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.campaign(text,text,interval,interval)') IS NOT NULL")" != t ]; then
	echo "cli_elect: skipped, no fence.campaign"
	exit 77
fi
waitgrep() { for _ in $(seq 1 400); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
alive() { kill -0 "$1" 2>/dev/null && echo alive || echo dead; }

# 1. A leads, with a TTL of a minute, until "go" appears.
"$PGF" elect svc --ttl 60s --candidate A -- sh -c '
	echo "$FENCE_TOKEN" > "$1/a.token"
	while [ ! -e "$1/go" ]; do sleep 0.05; done' sh "$T" 2>"$T/a.err" & A=$!
waitfile "$T/a.token" 400 || { echo "not ok - A was not elected"; exit 1; }
aterm=$(cat "$T/a.token")
out=$("$PGF" leader svc); rc=$?
is "leader exits 0 while A leads" "$rc" 0
is "leader prints A and its term first" "$(printf '%s\n' "$out" | cut -f1,2)" "$(printf 'A\t%s' "$aterm")"
is "FENCE_TOKEN is the term fence.leader reports" \
	"$(psql -X -At -c "SELECT term FROM fence.leader('svc')")" "$aterm"
grep -q "elected: leadership of \"svc\" as \"A\", term $aterm" "$T/a.err"
is "A logs its election and term" $? 0

# 2. B campaigns (waiting in the server) and is elected when A's command exits.
"$PGF" elect svc --ttl 60s --candidate B -- sh -c 'echo "$FENCE_TOKEN" > "$1/b.token"' sh "$T" 2>"$T/b.err" & B=$!
waitgrep 'campaigning' "$T/b.err"
sleep 0.5
is "B does not run its command while A leads" "$([ -e "$T/b.token" ] && echo ran || echo waiting)" waiting
start=$(date +%s%N)
touch "$T/go"
wait "$A"; is "A exits with its command's code" $? 0
waitfile "$T/b.token" 400 || echo "not ok - B was not elected"
ms=$((($(date +%s%N) - start) / 1000000))
is "B is elected within 10 s of A's exit (A's TTL is 60 s)" "$([ "$ms" -lt 10000 ] && echo yes || echo "no (${ms}ms)")" yes
is "B's term is higher than A's" "$([ "$(cat "$T/b.token")" -gt "$aterm" ] && echo yes || echo no)" yes
wait "$B"; is "B exits 0" $? 0
grep -q 'resigned: leadership of "svc"' "$T/a.err"
is "A says it resigned" $? 0

# 3. --wait elapses while another candidate leads: 73.
"$PGF" elect svc --ttl 60s --candidate C -- sh -c 'echo up > "$1/c.up"; sleep 30' sh "$T" 2>/dev/null & C=$!
waitfile "$T/c.up" 400 || echo "not ok - C was not elected"
"$PGF" elect svc --candidate D --wait 300ms -- true 2>"$T/d.err"
is "elect --wait 300ms with a leader in office exits 73" $? 73
grep -q 'is still another candidate' "$T/d.err"
is "...and says why" $? 0
# A campaigning pg_fence that gets a signal cancels its wait in the server,
# so that the server cannot elect a candidate that is gone.
campaigners() { psql -X -At -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%fence.campaign(%' AND state = 'active' AND pid <> pg_backend_pid()"; }
"$PGF" elect svc --candidate gone -- true 2>/dev/null & G=$!
for _ in $(seq 1 200); do [ "$(campaigners)" = 1 ] && break; sleep 0.05; done
is "a second candidate waits in the server" "$(campaigners)" 1
kill -TERM "$G"; wait "$G"
is "a campaigning pg_fence killed by SIGTERM dies by it" $? 143
for _ in $(seq 1 200); do [ "$(campaigners)" = 0 ] && break; sleep 0.05; done
is "...and its wait in the server is cancelled at once" "$(campaigners)" 0
kill -TERM "$C"; wait "$C"
is "a SIGTERMed leader's command: 128+15" $? 143
"$PGF" leader svc >/dev/null 2>&1
is "after the leader resigned, nobody leads (the gone candidate was not elected)" $? 1

# 4. The leader's pg_fence frozen past its TTL.
psql -X -q -c "CREATE TABLE report (id int PRIMARY KEY, writer text, fence bigint NOT NULL DEFAULT 0)" \
	-c "INSERT INTO report VALUES (1, 'nobody')" || exit 1
"$PGF" elect frozen --ttl 2s --candidate E -- sh -c '
	echo $$ > "$1/e.pid"
	while [ ! -e "$1/go2" ]; do sleep 0.05; done
	psql -X -At -c "SELECT fence.fenced_update(\$\$report\$\$, \$\${\"id\":1}\$\$, $FENCE_TOKEN, \$\${\"writer\":\"E\"}\$\$)" > "$1/e.result" 2>&1
	sleep 30' sh "$T" 2>"$T/e.err" & E=$!
waitfile "$T/e.pid" 400 || { echo "not ok - E was not elected"; exit 1; }
epid=$(cat "$T/e.pid")
kill -STOP "$E"
"$PGF" elect frozen --ttl 2s --candidate F -- sh -c '
	psql -X -At -c "SELECT fence.fenced_update(\$\$report\$\$, \$\${\"id\":1}\$\$, $FENCE_TOKEN, \$\${\"writer\":\"F\"}\$\$)"' >"$T/f.result" 2>"$T/f.err"
is "F is elected once E's term expires, and runs" $? 0
is "F's fenced write is applied" "$(cat "$T/f.result")" t
touch "$T/go2"
waitfile "$T/e.result" 400 || echo "not ok - E's late write did not happen"
is "E's late write with its old term is rejected" "$(cat "$T/e.result")" f
is "the row keeps F's write" "$(psql -X -At -c 'SELECT writer FROM report')" F
kill -CONT "$E"
wait "$E"; is "resumed E exits 74 (leadership lost)" $? 74
is "E's command is dead" "$(alive "$epid")" dead
grep -q 'lost the leadership of "frozen"' "$T/e.err"
is "E says why" $? 0

# 5. leader's exit codes, and --watch.
"$PGF" leader frozen >"$T/none.out" 2>"$T/none.err"
is "leader exits 1 when there is no leader" $? 1
is "...prints nothing on stdout" "$(cat "$T/none.out")" ""
grep -q 'election "frozen" has no leader' "$T/none.err"
is "...and says so on stderr" $? 0
"$PGF" leader --watch --count 5 watched >"$T/watch.out" 2>"$T/watch.err" & W=$!
waitgrep 'none' "$T/watch.out" || echo "not ok - leader --watch printed no first line"
"$PGF" elect watched --ttl 60s --candidate G -- sh -c 'echo "$FENCE_TOKEN" > "$1/g.token"' sh "$T" 2>/dev/null
"$PGF" elect watched --ttl 1s --candidate H -- sh -c 'echo "$FENCE_TOKEN" > "$1/h.token"; kill -STOP $PPID; sleep 30' sh "$T" 2>/dev/null & H=$!
waitfile "$T/h.token" 400 || echo "not ok - H was not elected"
# H's pg_fence is stopped: its term expires (no NOTIFY); the watch re-reads at expires_at.
start=$(date +%s%N)
for _ in $(seq 1 200); do kill -0 "$W" 2>/dev/null || break; sleep 0.05; done
ms=$((($(date +%s%N) - start) / 1000000))
is "leader --watch --count 5 has printed its 5 lines within 10 s" "$(alive "$W")" dead
cut -f2- "$T/watch.out" >"$T/watch.events"
is "watch lines: none, G elected, none (resigned), H elected, none (expired)" "$(tr '\t\n' ' |' <"$T/watch.events")" \
	"none|leader G $(cat "$T/g.token")|none|leader H $(cat "$T/h.token")|none|"
is "each line starts with an ISO 8601 UTC time" \
	"$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z	' "$T/watch.out")" 5
kill -CONT "$H"; wait "$H"

# 6. Usage errors.
"$PGF" elect 2>/dev/null; is "elect without NAME: 64" $? 64
"$PGF" elect x --ttl 10s 2>/dev/null; is "elect without COMMAND: 64" $? 64
"$PGF" elect x --ttl 0 -- true 2>/dev/null; is "elect --ttl 0: 64" $? 64
"$PGF" elect x --candidate= -- true 2>/dev/null; is "elect --candidate '': 64" $? 64
"$PGF" elect x --bogus -- true 2>/dev/null; is "elect with an unknown option: 64" $? 64
"$PGF" leader 2>/dev/null; is "leader without NAME: 64" $? 64
"$PGF" leader a b 2>/dev/null; is "leader with two NAMEs: 64" $? 64
"$PGF" leader x --count 2 2>/dev/null; is "leader --count without --watch: 64" $? 64
"$PGF" leader x --watch --count 0 2>/dev/null; is "leader --watch --count 0: 64" $? 64
"$PGF" leader -d "host=/nonexistent-dir" x 2>/dev/null; is "leader, cannot connect: 69" $? 69
long=$(head -c 1025 /dev/zero | tr '\0' x)
"$PGF" elect n --candidate "$long" -- true 2>"$T/long.err"; is "elect --candidate of 1025 bytes: 64" $? 64
is "...refused before campaigning" "$(grep -c campaigning "$T/long.err")" 0
"$PGF" elect n --candidate "${long%x}" --wait 1ms -- true 2>/dev/null
is "elect --candidate of 1024 bytes is accepted (elected, command run)" $? 0
"$PGF" elect n --ttl 25h -- true 2>"$T/ttl.err"; is "elect --ttl 25h (above fence.max_lease_ttl): 64" $? 64
grep -q '^pg_fence: .*exceeds fence.max_lease_ttl' "$T/ttl.err"
is "...with the server's message" $? 0
is "...prefixed \"pg_fence: \" once" "$(grep -c 'pg_fence: pg_fence' "$T/ttl.err")" 0
"$PGF" run --lease 25h n -- true 2>/dev/null; is "run --lease 25h: 64" $? 64
"$PGF" leader '' 2>"$T/empty.err"; is "leader '': 64" $? 64
grep -q 'election NAME must not be empty' "$T/empty.err"
is "...says NAME must not be empty, as elect ''" $? 0

# 7. A leader without a candidate.
ntok=$(psql -X -At -c "SELECT fence.lease_acquire('nullc', '60 s')")
out=$("$PGF" leader nullc 2>"$T/nullc.err"); rc=$?
is "leader of a lease without holder: 0" "$rc" 0
is "...prints an empty CANDIDATE and the term" "$(printf '%s\n' "$out" | cut -f1,2)" "$(printf '\t%s' "$ntok")"
out=$("$PGF" leader --watch --count 1 nullc 2>>"$T/nullc.err"); rc=$?
is "leader --watch of a lease without holder: 0" "$rc" 0
is "...prints leader, an empty CANDIDATE and the term" "$(printf '%s\n' "$out" | cut -f2-)" "$(printf 'leader\t\t%s' "$ntok")"
psql -X -At -c "SELECT fence.lease_release('nullc', $ntok)" >/dev/null
# A plain lease held for a moment only is printed from its notifications:
# granted and released in one statement (fence.leader() never shows it to
# another session), then in two statements right after each other.
"$PGF" leader --watch --count 5 shortl >"$T/shortl.out" 2>"$T/shortl.err" & SW=$!
waitgrep 'none' "$T/shortl.out" || echo "not ok - leader --watch printed no first line"
s1=$(psql -X -At -c "WITH a AS (SELECT fence.lease_acquire('shortl', '60 s', 'plain') AS t)
	SELECT t FROM a WHERE fence.lease_release('shortl', t)")
s2=$(psql -X -At -c "SELECT fence.lease_acquire('shortl', '60 s')")
psql -X -At -c "SELECT fence.lease_release('shortl', $s2)" >/dev/null
for _ in $(seq 1 200); do kill -0 "$SW" 2>/dev/null || break; sleep 0.05; done
is "leader --watch printed a short plain lease's 5 lines within 10 s" "$(alive "$SW")" dead
is "...none, the lease held for one statement, none, the one held for two, none" \
	"$(cut -f2- "$T/shortl.out" | tr '\t\n' ' |')" "none|leader plain $s1|none|leader  $s2|none|"

# 8. Candidates waiting through a restart, a terminated backend, a cancelled wait.
if [ -n "${FENCE_CLUSTER_CTL:-}" ]; then
	hterm=$(psql -X -At -c "SELECT fence.campaign('cc', 'holder', '5 min')")
	for f in F1 F2; do
		"$PGF" elect cc --candidate "$f" -- sh -c 'echo "$FENCE_TOKEN" > "$1/$2.token"' sh "$T" "$f" 2>"$T/$f.err" &
		eval "$f=\$!"
	done
	apps() { psql -X -At -c "SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_stat_activity WHERE query LIKE '%fence.campaign(%' AND state = 'active' AND pid <> pg_backend_pid()" 2>/dev/null; }
	waitapps() { for _ in $(seq 1 400); do [ "$(apps)" = "F1,F2" ] && return 0; sleep 0.05; done; return 1; }
	waitapps; is "two candidates wait in the server, application_name = candidate" "$(apps)" "F1,F2"
	"$FENCE_CLUSTER_CTL" restart >/dev/null 2>&1
	waitapps; is "after a restart, both campaign again" "$(apps)" "F1,F2"
	is "F1 is still running" "$(alive "$F1")" alive
	psql -X -At -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'F1' AND state = 'active'" >/dev/null
	psql -X -At -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'F2' AND state = 'active'" >/dev/null
	sleep 0.2
	waitapps; is "after pg_terminate_backend (F1) and pg_cancel_backend (F2), both campaign again" "$(apps)" "F1,F2"
	is "the leader's term survived the restart" "$(psql -X -At -c "SELECT fence.resign('cc', $hterm)")" t
	wait "$F1"; is "F1 is elected after the resign and exits 0" $? 0
	wait "$F2"; is "F2 is elected after F1 and exits 0" $? 0
	is "both ran with a term above the old leader's" \
		"$([ "$(cat "$T/F1.token")" -gt "$hterm" ] && [ "$(cat "$T/F2.token")" -gt "$hterm" ] && echo yes || echo no)" yes
	grep -q 'campaign failed: .*trying again' "$T/F1.err"
	is "F1 said it campaigns again" $? 0
	# run --lease --wait shares the path: its terminated wait is made again.
	ltok=$(psql -X -At -c "SELECT fence.lease_acquire('rw', '5 min', 'holder')")
	"$PGF" run --lease 60s --wait 60s --holder RW rw -- true 2>"$T/rw.err" & RW=$!
	rwpid() { psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'RW' AND state = 'active' AND query LIKE '%lease_acquire(%'"; }
	for _ in $(seq 1 400); do [ -n "$(rwpid)" ] && break; sleep 0.05; done
	p1=$(rwpid)
	psql -X -At -c "SELECT pg_terminate_backend($p1)" >/dev/null
	for _ in $(seq 1 400); do p2=$(rwpid); [ -n "$p2" ] && [ "$p2" != "$p1" ] && break; sleep 0.05; done
	is "run --lease --wait waits again after its backend is terminated" "$([ -n "$p2" ] && [ "$p2" != "$p1" ] && echo yes || echo no)" yes
	psql -X -At -c "SELECT fence.lease_release('rw', $ltok)" >/dev/null
	wait "$RW"; is "...and gets the lease when it is released, exit 0" $? 0
else
	echo "ok - # SKIP restart: not under scripts/temp-cluster.sh"
fi

[ "$FAILS" -eq 0 ]
