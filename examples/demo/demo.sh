#!/usr/bin/env bash
# demo.sh - the pg_fence demo that `make demo` runs.
#
# Run it inside a throwaway cluster (it uses PGHOST/PGPORT/PGUSER/PGDATABASE):
#     bash scripts/temp-cluster.sh bash examples/demo/demo.sh
# Bash and psql only.  Exits 0 when every act kept its invariants, 1 otherwise.
#
# Acts.  Each act lives in its own file examples/demo/actN_topic.sh, which defines
# one function named actN (the part of the file name before the first "_").
# demo.sh sources every examples/demo/act*.sh present, in file-name order, and
# calls the functions one after another; a missing file is simply no act.
# An act function:
#   - prints its heading as  "=== Act N: what it shows ==="  and then its
#     story in plain words, lines indented by two spaces;
#   - returns 0 when its invariants held, non-zero otherwise (the demo goes on
#     with the next act and exits 1 at the end);
#   - stops every process it started before returning (demo.sh also kills the
#     processes registered with demo_track on exit, as a safety net).
# Shared state and helpers an act may use (all defined below):
#   DEMO_TMP              scratch directory, removed on exit
#   demo_ms               milliseconds since the demo started
#   demo_sql SQL          one-shot psql; prints the unaligned result
#   demo_session_open N   a long-lived psql session N (its own backend), so
#   demo_q N SQL          that session locks are really held between
#   demo_session_close N  statements; see demo_q for results and errors
#   demo_track PID        kill PID (if still running) when the demo exits
#   demo_check OK TEXT    print "[ok] TEXT" or "[FAILED] TEXT", count failures
set -u -o pipefail

DEMO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEMO_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_demo.XXXXXX")
DEMO_FAILED_CHECKS=0
DEMO_T0=${EPOCHREALTIME//[!0-9]/}
declare -a DEMO_PIDS=()

# Quiet server chatter (NOTICEs such as "extension already exists, skipping").
export PGOPTIONS="-c client_min_messages=warning"

demo_cleanup() {
	local pid
	for pid in "${DEMO_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	rm -rf "$DEMO_TMP"
}
trap demo_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

demo_track() {
	DEMO_PIDS+=("$1")
}

# Milliseconds since the demo started (bash's own clock: no process forked).
demo_ms() {
	local now=${EPOCHREALTIME//[!0-9]/}
	echo $(((now - DEMO_T0) / 1000))
}

# One-shot query; prints the result unaligned, without headers.
demo_sql() {
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"
}

# demo_check OK TEXT: OK is 0 (held) or anything else (broken).
demo_check() {
	if [ "$1" -eq 0 ]; then
		printf '    [ok]     %s\n' "$2"
	else
		printf '    [FAILED] %s\n' "$2"
		DEMO_FAILED_CHECKS=$((DEMO_FAILED_CHECKS + 1))
	fi
}

# Long-lived psql sessions, driven through two FIFOs.  One psql process per
# session, so everything the session holds (session locks) stays held between
# statements, and pg_terminate_backend on its backend is a real lost
# connection.  The session's application_name is "fence-demo-N".
declare -A DEMO_S_TO=() DEMO_S_FROM=() DEMO_S_PID=()

demo_session_open() {
	local name=$1 in="$DEMO_TMP/session-$1.in" out="$DEMO_TMP/session-$1.out"
	local to from
	rm -f "$in" "$out"
	mkfifo "$in" "$out" || return 1
	PGAPPNAME="fence-demo-$name" psql -X -q -A -t -v ON_ERROR_STOP=0 \
		<"$in" >"$out" 2>>"$DEMO_TMP/session-$name.stderr" &
	DEMO_S_PID[$name]=$!
	# Opening the FIFOs in the order psql opens them cannot deadlock.
	exec {to}>"$in" {from}<"$out"
	DEMO_S_TO[$name]=$to
	DEMO_S_FROM[$name]=$from
}

demo_session_close() {
	local name=$1 to from
	to=${DEMO_S_TO[$name]:-}
	from=${DEMO_S_FROM[$name]:-}
	[ -n "$to" ] && exec {to}>&-
	[ -n "$from" ] && exec {from}<&-
	[ -n "${DEMO_S_PID[$name]:-}" ] && wait "${DEMO_S_PID[$name]}" 2>/dev/null
	unset "DEMO_S_TO[$name]" "DEMO_S_FROM[$name]" "DEMO_S_PID[$name]"
	rm -f "$DEMO_TMP/session-$name.in" "$DEMO_TMP/session-$name.out"
}

# demo_q N SQL: runs one statement in session N and waits for it.
# Sets DEMO_OUT (result lines, an array), DEMO_STATE (SQLSTATE, 00000 on
# success) and DEMO_ERR (error message).  Returns 0 on success, 1 on an SQL
# error, 2 when the connection is gone (psql exits on a lost connection).
demo_q() {
	local name=$1 sql=$2 line to from
	local mark="__fence_demo_end__"
	to=${DEMO_S_TO[$name]:-}
	from=${DEMO_S_FROM[$name]:-}
	DEMO_OUT=()
	DEMO_STATE=08006
	DEMO_ERR="no session $name"
	[ -n "$to" ] || return 2
	sql=${sql%"${sql##*[![:space:]]}"}
	[ "${sql: -1}" = ";" ] || sql="$sql;"
	# A write to a psql that has exited must fail, not kill us with SIGPIPE.
	trap '' PIPE
	if ! printf '%s\n\\echo %s :SQLSTATE :LAST_ERROR_MESSAGE\n' "$sql" "$mark" 2>/dev/null 1>&"$to"; then
		DEMO_ERR="connection lost"
		return 2
	fi
	while IFS= read -r -t 30 -u "$from" line; do
		if [ "${line%% *}" = "$mark" ]; then
			line=${line#"$mark "}
			DEMO_STATE=${line%% *}
			DEMO_ERR=
			if [ "$DEMO_STATE" != 00000 ]; then
				DEMO_ERR=${line#"$DEMO_STATE"}
				DEMO_ERR=${DEMO_ERR# }
				return 1
			fi
			return 0
		fi
		DEMO_OUT+=("$line")
	done
	DEMO_ERR="connection lost"
	return 2
}

# --- main ---------------------------------------------------------------------

if ! command -v psql >/dev/null; then
	echo "demo: psql not found" >&2
	exit 1
fi
if ! server=$(demo_sql "SHOW server_version") ||
	! demo_sql "CREATE EXTENSION IF NOT EXISTS pg_fence; CREATE SCHEMA IF NOT EXISTS demo" >/dev/null; then
	echo "demo: cannot set up the demo database (is pg_fence installed?)" >&2
	exit 1
fi

echo "pg_fence demo"
echo "============="
echo "PostgreSQL $server, database \"${PGDATABASE:-}\", pg_fence $(demo_sql "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")."
echo "Every worker below is a real OS process with its own database session."

acts=()
failed=()
for file in "$DEMO_DIR"/act*.sh; do
	[ -e "$file" ] || continue
	# shellcheck source=/dev/null
	source "$file"
	fn=$(basename "$file" .sh)
	fn=${fn%%_*}
	if ! declare -F "$fn" >/dev/null; then
		echo "demo: $file does not define a function $fn" >&2
		failed+=("$fn")
		continue
	fi
	acts+=("$fn")
done

for fn in "${acts[@]}"; do
	if ! "$fn"; then
		failed+=("$fn")
	fi
done

echo
if [ "${#failed[@]}" -gt 0 ] || [ "$DEMO_FAILED_CHECKS" -gt 0 ]; then
	echo "Demo FAILED: ${failed[*]:-a check} broke an invariant (see above)."
	exit 1
fi
echo "Demo finished in $(($(demo_ms) / 1000)) s: every invariant held."
exit 0
