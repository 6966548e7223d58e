#!/usr/bin/env bash
# cli/enqueue.sh - `pg_fence enqueue QUEUE [PAYLOAD|-]`: the job id on
# stdout, the payload from the argument or stdin, --delay / --run-at,
# --priority, --max-attempts, --unique-key; bad input exits 64 and
# enqueues nothing.
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without the queue.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_enqueue
if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.enqueue(text,jsonb,timestamptz,integer,integer,text)') IS NOT NULL")" != t ]; then
	echo "cli_enqueue: skipped, no job queue"
	exit 77
fi
q() { psql -X -At -c "$1"; }

id=$("$PGF" enqueue mail '{"to": "ann"}')
is "enqueue exits 0" $? 0
is "prints the job id" "$(q "SELECT count(*) FROM fence.jobs WHERE id = '$id' AND queue = 'mail'")" 1
is "payload from the argument" "$(q "SELECT payload FROM fence.jobs WHERE id = $id")" '{"to": "ann"}'
is "state queued, attempt 0, priority 0, max_attempts 25" \
	"$(q "SELECT state, attempt, priority, max_attempts FROM fence.jobs WHERE id = $id")" "queued|0|0|25"

id2=$(echo '{"to": "bob", "n": [1, 2]}' | "$PGF" enqueue mail -)
is "payload from stdin (-)" "$(q "SELECT payload->>'to' FROM fence.jobs WHERE id = $id2")" bob
id3=$(printf '[1, 2, 3]' | "$PGF" enqueue mail)
is "payload from stdin (no PAYLOAD)" "$(q "SELECT payload FROM fence.jobs WHERE id = $id3")" "[1, 2, 3]"
is "ids increase" "$([ "$id2" -gt "$id" ] && [ "$id3" -gt "$id2" ] && echo yes)" yes

id4=$("$PGF" enqueue mail '{}' --delay 1h --priority 7 --max-attempts 3)
is "--delay: run_at about an hour ahead" \
	"$(q "SELECT run_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes' FROM fence.jobs WHERE id = $id4")" t
is "--priority, --max-attempts" "$(q "SELECT priority, max_attempts FROM fence.jobs WHERE id = $id4")" "7|3"
id5=$("$PGF" enqueue mail '{}' --run-at '2031-01-02 03:04:05+00')
is "--run-at" "$(q "SELECT run_at = '2031-01-02 03:04:05+00' FROM fence.jobs WHERE id = $id5")" t

u1=$("$PGF" enqueue mail '{"n": 1}' --unique-key daily)
u2=$("$PGF" enqueue mail '{"n": 2}' --unique-key daily)
is "--unique-key: a second enqueue returns the first job's id" "$u2" "$u1"
is "--unique-key: one job" "$(q "SELECT count(*) FROM fence.jobs WHERE unique_key = 'daily'")" 1

before=$(q "SELECT count(*) FROM fence.jobs")
bad_case() { # LABEL ARGS...
	local label=$1 out rc
	shift
	out=$("$PGF" "$@" </dev/null 2>&1)
	rc=$?
	is "$label: exit 64" "$rc" 64
}
bad_case "payload not JSON" enqueue mail '{nope'
bad_case "empty payload on stdin" enqueue mail -
bad_case "missing QUEUE" enqueue
bad_case "empty QUEUE" enqueue '' '{}'
bad_case "QUEUE over 1024 bytes" enqueue "$(printf 'q%.0s' $(seq 1 1025))" '{}'
bad_case "--run-at and --delay" enqueue mail '{}' --run-at now --delay 1s
bad_case "bad --run-at" enqueue mail '{}' --run-at 'not a time'
bad_case "bad --delay" enqueue mail '{}' --delay 5x
bad_case "--max-attempts 0" enqueue mail '{}' --max-attempts 0
bad_case "--priority not a number" enqueue mail '{}' --priority high
bad_case "empty --unique-key" enqueue mail '{}' --unique-key ''
bad_case "unknown option" enqueue mail '{}' --nope
bad_case "a third argument" enqueue mail '{}' extra
is "bad input enqueued nothing" "$(q "SELECT count(*) FROM fence.jobs")" "$before"
out=$("$PGF" enqueue mail '{nope' 2>&1)
has "a bad payload is named" "$out" "json"

# --help lists both commands.
out=$("$PGF" enqueue --help)
is "--help exits 0" $? 0
has "--help shows enqueue" "$out" "pg_fence enqueue QUEUE"
has "--help shows work" "$out" "pg_fence work QUEUE"

# No server: 69.
PGHOST=/nonexistent "$PGF" enqueue mail '{}' >/dev/null 2>&1
is "cannot connect: exit 69" $? 69

echo "cli_enqueue: $FAILS failed"
[ "$FAILS" -eq 0 ]
