# cli_env.sh - shared set-up of the pg_fence CLI tests (sourced, not run).
#
# cli_env_setup NAME: checks that src/cli/pg_fence is built (PGF), creates a
# database of the test's own (exported as PGDATABASE) with pg_fence in it and
# a scratch directory T, and on exit stops every background job (continuing
# stopped ones first, so that SIGKILL reaches them), drops the database and
# removes T.  Sets LEASES to t when the server has the lease functions.
# Runs inside scripts/temp-cluster.sh, from the repository root.

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
