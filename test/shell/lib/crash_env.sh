# crash_env.sh - shared set-up of the shell tests that crash the server
# (sourced, not run: test/run-all.sh runs only test/shell/*.sh).
#
# The server is stopped with "pg_ctl stop -m immediate", which loses every
# WAL record still in the server's WAL buffers (the OS keeps what was
# written, so fsync = off in the throwaway cluster does not matter).
# crash_env_setup sets wal_writer_delay = 10s, so the WAL writer does not
# write those buffers on its own between a transaction and the crash, and
# turns autovacuum (which commits, flushing WAL) off.  crash_env_cleanup
# undoes it; call it from the test's EXIT trap.

# server_up, and the skip (77) on a server that is not the throwaway cluster
# shellcheck source=test/shell/lib/durability.sh
. "$(dirname "${BASH_SOURCE[0]}")/durability.sh"

admin() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

crash_env_setup() {
	admin -c "ALTER SYSTEM SET wal_writer_delay = '10s'" -c 'ALTER SYSTEM SET autovacuum = off'
	"$FENCE_CLUSTER_CTL" restart
	[ "$(admin -c 'SHOW wal_writer_delay')" = "10s" ] || { echo "wal_writer_delay not set"; exit 1; }
}

crash_env_cleanup() {
	server_up || "$FENCE_CLUSTER_CTL" start || true
	admin -c 'ALTER SYSTEM RESET wal_writer_delay' -c 'ALTER SYSTEM RESET autovacuum' || true
	"$FENCE_CLUSTER_CTL" restart || true
}

# crash the server at once and start it again
crash() {
	"$FENCE_CLUSTER_CTL" stop-immediate
	"$FENCE_CLUSTER_CTL" start
}

# crash_env_use_db DB: set up as crash_env_setup does and create a fresh
# database DB; on exit (any status) undo the set-up and drop DB.
crash_env_use_db() {
	CRASH_ENV_DB=$1
	trap 'crash_env_rc=$?; trap - EXIT; crash_env_cleanup;
		dropdb --if-exists "$CRASH_ENV_DB" >/dev/null 2>&1 || true; exit $crash_env_rc' EXIT
	crash_env_setup
	dropdb --if-exists "$CRASH_ENV_DB" >/dev/null 2>&1 || true
	createdb "$CRASH_ENV_DB"
}
