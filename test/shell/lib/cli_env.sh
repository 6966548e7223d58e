# cli_env.sh - shared set-up of the pg_fence CLI tests (sourced, not run).
#
# cli_env_setup NAME: checks that src/cli/pg_fence is built (PGF), creates a
# database of the test's own (exported as PGDATABASE) with pg_fence in it and
# a scratch directory T, and on exit stops every background job (continuing
# stopped ones first, so that SIGKILL reaches them), drops the database and
# removes T.  Sets LEASES to t when the server has the lease functions.
# Runs inside scripts/temp-cluster.sh, from the repository root.
#
# The CLI tests' assertions (FAILS counts the failed ones; a test ends with
# [ "$FAILS" -eq 0 ]):
#   ok TEXT / bad TEXT          "ok - TEXT" / "not ok - TEXT" (counted)
#   is TEXT ACTUAL EXPECTED     ok when equal, else bad with both values
#   has TEXT OUTPUT PATTERN     ok when grep finds PATTERN in OUTPUT
#   waitfile FILE [TRIES]       until FILE is not empty, TRIES x 50 ms
#                               (default 200: 10 s); fails after that

FAILS=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; FAILS=$((FAILS + 1)); }
is() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$3', got '$2'"; fi; }
has() { if grep -q -- "$3" <<<"$2"; then ok "$1"; else bad "$1: '$3' not in: $2"; fi; }
waitfile() { for _ in $(seq 1 "${2:-200}"); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

cli_env_setup() {
	CLI_ENV_NAME=$1
	cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
	PGF=$PWD/src/cli/pg_fence
	[ -x "$PGF" ] || { echo "$CLI_ENV_NAME: $PGF is not built (run make)" >&2; exit 1; }
	DB=${CLI_ENV_NAME}_$$
	T=$(mktemp -d)
	trap cli_env_cleanup EXIT
	createdb "$DB" || exit 1
	export PGDATABASE=$DB
	psql -X -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_fence" || exit 1
	LEASES=$(psql -X -At -c "SELECT to_regprocedure('fence.lease_acquire(text,interval,text,interval)') IS NOT NULL")
}

cli_env_cleanup() {
	jobs -p | xargs -r kill -CONT 2>/dev/null
	jobs -p | xargs -r kill -9 2>/dev/null
	wait 2>/dev/null
	dropdb --if-exists --force "$DB" 2>/dev/null
	rm -rf "$T"
}

# exit 77 (skipped) unless the server has the lease functions
cli_env_require_leases() {
	if [ "$LEASES" != t ]; then
		echo "$CLI_ENV_NAME: skipped, no lease functions"
		exit 77
	fi
}
