# durability.sh - what the durability tests share (sourced, not run).  They
# restart, crash or replicate the server, so they run only on the throwaway
# cluster of scripts/temp-cluster.sh: elsewhere (make installcheck against a
# server the user runs) sourcing this file skips the test (77).
#
#   server_up                    the throwaway cluster answers
#   num VALUE                    exits 1 unless VALUE is a token (digits)
#   draw DB N NAME               draws N tokens in DB (lock and unlock NAME
#                                N times, in one statement); prints the
#                                highest
#   require_streaming            exits 77 when wal_level = minimal (no
#                                standby, no archive)
#   fresh_db DB                  a new database DB with pg_fence in it,
#                                dropped on exit
#   durability_cleanup           the EXIT trap, set here (a test may set its
#                                own instead): with the test's exit status
#                                kept, it
#                                  resumes the processes in CLEANUP_CONT
#                                  (stopped with SIGSTOP),
#                                  stops the servers whose data directories
#                                  are in CLEANUP_SERVERS (immediate) and, if
#                                  the test failed, prints the last lines of
#                                  each one's DIR.log,
#                                  removes the paths in CLEANUP_REMOVE,
#                                  starts the throwaway cluster if it is down,
#                                  resets the settings in CLEANUP_RESET
#                                  (ALTER SYSTEM) and restarts it, if any,
#                                  drops the databases in CLEANUP_DBS
# The arrays may be filled while the test runs (what is not there yet is
# not cleaned up).

# shellcheck source=test/shell/lib/clusters.sh
. "$(dirname "${BASH_SOURCE[0]}")/clusters.sh"
require_own_cluster "restart, crash or replicate"

CLEANUP_CONT=()
CLEANUP_SERVERS=()
CLEANUP_REMOVE=()
CLEANUP_RESET=()
CLEANUP_DBS=()

server_up() { psql -X -q -d postgres -c 'SELECT 1' >/dev/null 2>&1; }

require_streaming() {
	[ "$(psql -X -At -d postgres -c 'SHOW wal_level')" != minimal ] ||
		{ echo "wal_level = minimal: no streaming replication, no archiving"; exit 77; }
}

fresh_db() {
	CLEANUP_DBS+=("$1")
	dropdb --if-exists "$1"
	createdb "$1"
	psql -X -q -v ON_ERROR_STOP=1 -d "$1" -c 'CREATE EXTENSION pg_fence'
}

num() { [[ "$1" =~ ^[0-9]+$ ]] || { echo "not a token: '$1'"; exit 1; }; }

draw() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "DO \$\$
DECLARE t bigint; m bigint := 0;
BEGIN
	FOR i IN 1..$2 LOOP
		t := fence.try_lock('$3');
		PERFORM fence.unlock('$3', t);
		m := greatest(m, t);
	END LOOP;
	PERFORM pg_catalog.set_config('fence_test.max', m::text, false);
END \$\$" -c "SELECT pg_catalog.current_setting('fence_test.max')"
}

durability_cleanup() {
	local rc=$? pid dir setting db
	trap - EXIT
	set +e # every step, whatever the one before did
	for pid in "${CLEANUP_CONT[@]}"; do
		[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null
	done
	for dir in "${CLEANUP_SERVERS[@]}"; do
		if [ -f "$dir/postmaster.pid" ]; then
			${FENCE_AS_OWNER:-} "$FENCE_PGBIN/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null 2>&1 || true
		fi
		if [ "$rc" -ne 0 ] && [ -f "$dir.log" ]; then
			echo "$dir.log (last lines):"
			tail -n 20 "$dir.log" || true
		fi
	done
	for dir in "${CLEANUP_REMOVE[@]}"; do rm -rf "$dir"; done
	server_up || "$FENCE_CLUSTER_CTL" start || true
	if [ "${#CLEANUP_RESET[@]}" -gt 0 ]; then
		for setting in "${CLEANUP_RESET[@]}"; do
			psql -X -q -d postgres -c "ALTER SYSTEM RESET $setting" || true
		done
		"$FENCE_CLUSTER_CTL" restart || true
	fi
	for db in "${CLEANUP_DBS[@]}"; do dropdb --if-exists "$db" >/dev/null 2>&1 || true; done
	exit "$rc"
}
trap durability_cleanup EXIT
