#!/usr/bin/env bash
# durability/token_durability.sh - a fencing token a client has seen is never reissued
# after a crash (docs/guarantees.md guarantee 3).
#
# Run under scripts/temp-cluster.sh (test/run-all.sh does).  The server is
# stopped with "pg_ctl stop -m immediate", which loses every WAL record still
# in the server's WAL buffers (the OS keeps what was written, so fsync = off
# in the throwaway cluster does not matter).  wal_writer_delay = 10s keeps the
# WAL writer from writing those buffers on its own during a round.
#
# Each round, in a new database, hands out tokens in one way, crashes the
# server at once, starts it and checks that fence.try_lock on a new name
# returns a token greater than every token seen in that database:
#   committed  autocommit try_lock / committed try_xact_lock
#   rollback   try_lock inside transactions that roll back (the session locks
#              and their tokens survive the rollback; nothing commits), 41
#              tokens, more than one WAL record of the sequence covers
#   async      try_lock / try_xact_lock committed with synchronous_commit = off
#   open       try_lock in a transaction still open at the crash
# For comparison it prints (does not assert) whether a plain nextval() of a
# scratch sequence in a rolled-back transaction was handed out again after
# the crash: the gap pg_fence's tokens must not have.
#
# Exit status: 0 all rounds kept the guarantee, 1 a token was reissued (or
# the test could not run).
set -euo pipefail
. "$(dirname "$0")/../lib/clusters.sh"
require_own_cluster crash

# Run twice: in this cluster (pg_fence preloaded: tokens from the shared
# allocator) and in a nested one without the preload (tokens from nextval).
if [ -z "${FENCE_DURABILITY_INNER:-}" ]; then
	nested_run FENCE_DURABILITY_INNER FENCE_PRELOAD= FENCE_SHOW_LOG_ON_FAILURE= ||
		{ echo "FAILED without shared_preload_libraries"; exit 1; }
	echo "(the rounds above ran without shared_preload_libraries; now with it)"
fi
. "$(dirname "$0")/../lib/crash_env.sh"
DB=postgres
scratch=public.scratch_seq
ROUNDS=${FENCE_DURABILITY_ROUNDS:-2}
MODES="committed rollback async open"

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

cleanup() {
	local rc=$?
	trap - EXIT
	crash_env_cleanup
	for db in $(admin -c "SELECT datname FROM pg_database WHERE datname LIKE 'fence\_durability\_%'"); do
		dropdb --if-exists "$db" >/dev/null 2>&1 || true
	done
	exit "$rc"
}
trap cleanup EXIT

# No background WAL writes during a round (see lib/crash_env.sh).
crash_env_setup

max_seen=0
violations=0
reissued_nextval=0

# seen TOKEN...: record tokens a client has received
seen() {
	local t
	for t in "$@"; do
		if ! [[ "$t" =~ ^[0-9]+$ ]]; then
			echo "not a token: '$t'"
			exit 1
		fi
		[ "$t" -gt "$max_seen" ] && max_seen=$t
	done
	return 0
}

# hand_out MODE ROUND: hands out tokens; sets the array "tokens"
hand_out() {
	local mode=$1 r=$2 token
	tokens=()
	case $mode in
	committed)
		tokens+=("$(q -c "SELECT fence.try_lock('committed/$r')")")
		tokens+=("$(q -c BEGIN -c "SELECT fence.try_xact_lock('committed-xact/$r')" -c COMMIT)")
		;;
	rollback)
		tokens+=("$(q -c BEGIN -c "SELECT fence.try_lock('rollback/$r')" -c ROLLBACK)")
		# 40 more: past the 32 values one WAL record of the sequence covers
		mapfile -t -O "${#tokens[@]}" tokens < <(q -c BEGIN \
			-c "SELECT fence.try_lock('rollback/$r/' || i) FROM generate_series(1, 40) i" -c ROLLBACK)
		;;
	async)
		tokens+=("$(q -c 'SET synchronous_commit = off' -c "SELECT fence.try_lock('async/$r')")")
		tokens+=("$(q -c 'SET synchronous_commit = off' -c BEGIN \
			-c "SELECT fence.try_xact_lock('async-xact/$r')" -c COMMIT)")
		;;
	open)
		# A session whose transaction is still open when the server dies.
		coproc OPEN { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" 2>/dev/null; }
		printf '%s\n' 'BEGIN;' "SELECT fence.try_lock('open/$r');" >&"${OPEN[1]}"
		token=
		read -r -t 10 token <&"${OPEN[0]}" || true
		tokens+=("$token")
		# left open on purpose: the crash ends it (see after the restart)
		;;
	esac
}

for r in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		# A new database each round: its token sequence has never logged a
		# value, so nothing already durable covers this round's tokens
		# (nextval() WAL-logs 32 values ahead; a value inside a range logged
		# durably earlier cannot come back whatever pg_fence does).  The
		# scratch sequence is new for the same reason.
		DB=fence_durability_${mode}_$r
		max_seen=0			# tokens count per database
		createdb "$DB"
		q -c 'CREATE EXTENSION pg_fence' -c "CREATE SEQUENCE $scratch"
		hand_out "$mode" "$r"
		seen "${tokens[@]}"
		# A plain sequence value in a transaction that rolls back, last, so
		# that nothing after it flushes the WAL.
		before=$(q -c BEGIN -c "SELECT pg_catalog.nextval('$scratch')" -c ROLLBACK)

		"$FENCE_CLUSTER_CTL" stop-immediate
		if [ "$mode" = open ]; then
			# EOF on its input ends psql
			[ -n "${OPEN[1]:-}" ] && eval "exec ${OPEN[1]}>&-"
			[ -n "${OPEN_PID:-}" ] && { wait "$OPEN_PID" 2>/dev/null || true; }
		fi
		"$FENCE_CLUSTER_CTL" start

		after=$(q -c "SELECT fence.try_lock('check/$mode/$r')")
		if [ -z "$after" ] || [ "$after" -le "$max_seen" ]; then
			echo "VIOLATION round $r $mode: ${#tokens[@]} tokens seen before the crash, highest" \
				"$max_seen; first token after restart: ${after:-NULL}"
			violations=$((violations + 1))
		else
			echo "round $r $mode: ${#tokens[@]} tokens seen, highest $max_seen; after the crash $after: ok"
		fi
		seen "${after:-0}"
		again=$(q -c "SELECT pg_catalog.nextval('$scratch')")
		if [ "$again" -le "$before" ]; then
			reissued_nextval=$((reissued_nextval + 1))
			echo "  plain nextval: $before before the crash (rolled back), $again after: reissued"
		else
			echo "  plain nextval: $before before the crash (rolled back), $again after: not reissued"
		fi
		dropdb "$DB"
	done
done

total=$((ROUNDS * $(wc -w <<<"$MODES")))
echo "NOTE: plain nextval in a rolled-back transaction was reissued after $reissued_nextval of $total crashes; fence tokens: $violations violations"
if [ "$violations" -gt 0 ]; then
	echo "FAILED: $violations rounds reissued a fencing token"
	exit 1
fi
echo "ok: no fencing token reissued in $total crashes"
