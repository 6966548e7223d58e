#!/usr/bin/env bash
# chaos/checker.sh - the chaos checker (test/chaos/chaos_check) fails on
# histories that break its properties.  test/chaos/fixtures/ok is a small
# hand-written history of two workers (every kind granted, writes applied,
# the final primary's audit, the holding backends' rows) on which every
# property holds; each case below copies it, adds the lines that break one
# property and expects exactly that property, and nothing else, to fail
# (the job queue's and the idempotency keys' too: a job's effect twice, a
# stale completion acknowledged (and a newer claim a failover lost, which
# is not one), a job left queued, a key finished twice, a
# superseded owner's effect).  A checker that passed any of these would
# pass a broken pg_fence.
#
# Needs no server: it only builds and runs the checker.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
. test/shell/lib/check.sh

if ! make -s --no-print-directory test/chaos/chaos_check >/tmp/chaos-check-build.$$ 2>&1; then
	cat /tmp/chaos-check-build.$$
	rm -f /tmp/chaos-check-build.$$
	echo "not ok - make test/chaos/chaos_check"
	exit 1
fi
rm -f /tmp/chaos-check-build.$$

FIX=test/chaos/fixtures/ok
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_chaos_check.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
# t MS: a time of the fixture, in µs since 1970: MS milliseconds after
# 1700000000 s.
t() { echo $((1700000000000000 + $1 * 1000)); }

# failing DIR: the properties that fail on DIR, sorted, joined with |;
# "rc=N" appended when the exit status does not match (0 iff none failed).
failing() {
	local out rc list
	out=$(test/chaos/chaos_check --dir "$1" --faults pause,kill)
	rc=$?
	list=$(sed -n 's/^not ok - \([^(]*\) (.*$/\1/p' <<<"$out" | sort | paste -sd'|' -)
	if { [ -z "$list" ] && [ "$rc" -ne 0 ]; } || { [ -n "$list" ] && [ "$rc" -ne 1 ]; }; then
		list="$list rc=$rc"
	fi
	echo "$list"
}

check "every property holds on the fixture" "" "$(failing "$FIX")"

# breaks TITLE EXPECTED: the lines from stdin, each "FILE FIELD FIELD...",
# added to that file of a copy of the fixture (fields separated by tabs
# there); EXPECTED: the failing properties (failing's format).
breaks() {
	local file fields
	rm -rf "$TMP/case"
	cp -r "$FIX" "$TMP/case"
	while read -r file fields; do
		tr ' ' '\t' <<<"$fields" >>"$TMP/case/$file"
	done
	check "$1" "$2" "$(failing "$TMP/case")"
}

LOCKS="session, xact and shared locks exclusive"

# w1 holds chaos/s0 (session, token 30) from 410 to 500 by its client's
# account; w0's client saw a grant at 430 and an unlock that returned true
# at 480.
breaks "two workers hold one session lock at once (clients' view)" "$LOCKS" <<EOF
w0.tsv grant session chaos/s0 35 w0 $(t 420) $(t 430) -1 -1 - -
w0.tsv release session chaos/s0 35 w0 $(t 480) $(t 485) -1 -1 ok -
EOF

# The same, known only from rows a backend wrote while holding (its client
# never learnt of the grant: a session terminated, say).
breaks "two backends hold one session lock at once (their rows)" "$LOCKS" <<EOF
holds.tsv 12 $(t 470) grant chaos/s0 36 exclusive session w0 103 $(t 3)
holds.tsv 13 $(t 480) beat chaos/s0 36 exclusive session w0 103 $(t 3)
EOF

breaks "an xact lock held while shared holders hold the name" "$LOCKS" <<EOF
holds.tsv 12 $(t 640) grant chaos/s1 55 exclusive xact w1 101 $(t 1)
holds.tsv 13 $(t 645) beat chaos/s1 55 exclusive xact w1 101 $(t 1)
EOF

breaks "a shared hold while a session lock is held" "$LOCKS" <<EOF
holds.tsv 12 $(t 450) grant chaos/s0 37 shared session w0 102 $(t 2)
EOF

breaks "an xact lock that overlaps a session lock by the clients' view" "$LOCKS" <<EOF
w0.tsv grant xact chaos/s0 38 w0 $(t 480) $(t 490) -1 -1 - -
w0.tsv release xact chaos/s0 38 w0 $(t 495) $(t 499) -1 -1 ok -
EOF

breaks "a third permit of a semaphore with two" "semaphore permits respected" <<EOF
lease_audit.tsv 15 $(t 840) grant chaos/m0 85 w0 $(t 840) $(t 1840) 2 2 0
lease_audit.tsv 16 $(t 850) release chaos/m0 85 w0 -1 -1 2 2 0
EOF

# The server records the permits of the call; the client's own count rules.
breaks "a third permit asked for with two, recorded with three" "semaphore permits respected" <<EOF
w0.tsv grant semaphore chaos/m0 85 w0 $(t 840) $(t 845) $(t 842) $(t 1842) - 2
lease_audit.tsv 15 $(t 842) grant chaos/m0 85 w0 $(t 842) $(t 1842) 2 3 0
EOF

breaks "two leaders of one term" "one leader per term, terms increase" <<EOF
w0.tsv renew election chaos/e0 90 w0 $(t 1080) $(t 1085) -1 $(t 2000) ok -
EOF

breaks "a later leader with a lower term" "one leader per term, terms increase" <<EOF
lease_audit.tsv 15 $(t 1300) grant chaos/e0 95 w1 $(t 1300) $(t 2300) 0 -1 1
lease_audit.tsv 16 $(t 1310) release chaos/e0 95 w1 -1 -1 0 -1 1
EOF

breaks "two leaders at once" "leases and leaderships never overlap" <<EOF
lease_audit.tsv 15 $(t 1150) grant chaos/e0 105 w1 $(t 1150) $(t 2150) 0 -1 1
lease_audit.tsv 16 $(t 1250) release chaos/e0 105 w1 -1 -1 0 -1 1
EOF

breaks "two lease holders at once" "leases and leaderships never overlap" <<EOF
w1.tsv grant lease chaos/l0 15 w1 $(t 120) $(t 130) $(t 125) $(t 1125) - -
EOF

breaks "a token issued twice" "no token issued twice" <<EOF
w1.tsv grant xact chaos/s2 30 w1 $(t 395) $(t 412) -1 -1 - -
EOF

breaks "a token below one granted earlier" "tokens beat every earlier grant" <<EOF
w1.tsv grant xact chaos/s2 25 w1 $(t 1500) $(t 1510) -1 -1 - -
EOF

breaks "a write applied below the row's fence" "fences only increase|no stale write applied" <<EOF
audit.tsv 6 $(t 580) guarded s0 40 35 w0-9
EOF

breaks "a write reported stale but applied" "no stale write applied" <<EOF
w0.tsv write fu l0 10 w0 $(t 260) $(t 265) -1 -1 stale w0-9
audit.tsv 6 $(t 270) fu l0 20 20 w0-9
EOF

breaks "an acknowledged write missing on the final primary" "acknowledged writes durable" <<EOF
w0.tsv write guarded l0 10 w0 $(t 180) $(t 190) -1 -1 applied w0-8
EOF

# The job queue: job/1 was claimed by w1 (token 110), rescued by w0 (120)
# and completed with its effect; w1's late completion was refused.
EFFECTS="every job's effect applied at most once"
STALE="no stale completion accepted"

breaks "a job's effect applied twice (the zombie's committed too)" "$EFFECTS|$STALE" <<EOF
job_effects.tsv 3 $(t 1715) 1 guard 110 w1-4
EOF

breaks "a second effect of a job by its own completing claim" "$EFFECTS" <<EOF
job_effects.tsv 3 $(t 1626) 1 fu 120 w0-9
EOF

breaks "an effect of a job that was not completed" "$EFFECTS" <<EOF
job_effects.tsv 3 $(t 1845) 3 guard 150 w1-9
EOF

breaks "a superseded claim's completion acknowledged" "$STALE" <<EOF
w1.tsv complete job job/1 110 w1 $(t 1722) $(t 1730) -1 -1 applied w1-9
EOF

breaks "a job completed, then claimed again" "$STALE" <<EOF
w1.tsv grant job job/1 125 w1 $(t 1640) $(t 1650) -1 -1 - 3
EOF

# A claim commits without a flush (docs/queue.md, Durability): a failover
# right after w1's newer claim of job/1 (125) may lose it, and w0's
# completion by 120 on the new primary is then the job's.  Counted, not
# failed; failed when the claim was used after the failover (it survived)
# or when the completion came before the failover.
FAILOVER="nemesis.tsv failover - 5433 -1 - $(t 1615) $(t 1618) -1 -1 - -"
breaks "a newer claim lost by a failover before the completion" "" <<EOF
w1.tsv grant job job/1 125 w1 $(t 1612) $(t 1614) -1 -1 - 3
$FAILOVER
EOF

breaks "a newer claim renewed after the failover (it survived)" "$STALE" <<EOF
w1.tsv grant job job/1 125 w1 $(t 1612) $(t 1614) -1 -1 - 3
$FAILOVER
w1.tsv renew job job/1 125 w1 $(t 1619) $(t 1621) -1 -1 ok -
EOF

breaks "a newer claim beaten by a completion before the failover" "$STALE" <<EOF
w1.tsv grant job job/1 125 w1 $(t 1612) $(t 1614) -1 -1 - 3
nemesis.tsv failover - 5433 -1 - $(t 1640) $(t 1645) -1 -1 - -
EOF

breaks "a job lost: queued after the drain" "no job lost" <<EOF
jobs.tsv 4 queued 0 -1 w1-9 8
EOF

breaks "a job lost: its row without its job" "no job lost" <<EOF
jobs.tsv 4 missing -1 -1 w1-9 -1
EOF

breaks "an acknowledged enqueue missing on the final primary" "acknowledged enqueues durable" <<EOF
w0.tsv enqueue job job/9 -1 w0 $(t 1850) $(t 1860) -1 -1 applied w0-9
EOF

# Idempotency key k1: w0 owned it (150), w1 took it over (160), wrote the
# effect and finished; w0's late effect was refused.
breaks "a key finished by two owners" "no key finished twice" <<EOF
w0.tsv finish once once/k1 150 w0 $(t 2080) $(t 2090) -1 -1 ok -
EOF

breaks "a key owned again after it was finished" "no key finished twice" <<EOF
w0.tsv grant once once/k1 170 w0 $(t 2200) $(t 2210) -1 -1 - effect
EOF

breaks "a superseded owner's key effect committed" "no key effect by a superseded owner" <<EOF
once_effects.tsv 2 $(t 2045) k1 150 w0-7
EOF

rm -rf "$TMP/case"
cp -r "$FIX" "$TMP/case"
: >"$TMP/case/holds.tsv"
check "no rows of holding backends" "history recorded" "$(failing "$TMP/case")"

exit "$fail"
