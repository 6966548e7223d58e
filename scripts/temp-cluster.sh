#!/usr/bin/env bash
# temp-cluster.sh - run a command against a throwaway PostgreSQL cluster.
#
# Usage: scripts/temp-cluster.sh COMMAND [ARGS...]
#
# Creates a cluster with initdb in a new temporary directory, starts it on a
# free port with its Unix socket in that directory (no TCP listener, trust
# authentication on the socket only), runs COMMAND with the libpq variables
# pointing at it, then stops it and removes the directory: on success, on
# failure and on Ctrl-C alike.  Never touches a system cluster or port 5432.
#
# Environment: FENCE_SERVER_BIN (server bin dir, default from pg_config),
# FENCE_PRELOAD (shared_preload_libraries, default pg_fence), FENCE_FSYNC
# (default off), FENCE_PG_CONF (extra postgresql.conf lines).
#
# COMMAND sees:
#   PGHOST PGPORT PGUSER PGDATABASE   libpq connection to the cluster
#   PATH                              the server's bin directory first, so
#                                     psql, pg_dump... are of its version
#   PGDATA                            its data directory
#   FENCE_PGBIN                       the server's bin directory
#   FENCE_AS_OWNER                    command prefix that runs a program as
#                                     the cluster's OS user (empty if that is us),
#                                     in FENCE_CLUSTER_DIR: pass absolute paths
#   FENCE_PGLOG                       the server log file
#   FENCE_CLUSTER_DIR                 the cluster's temporary directory
# and can restart the server with scripts/temp-cluster.sh's helpers:
#   "$FENCE_CLUSTER_CTL" stop-immediate | start | restart
#
# Extra postgresql.conf lines may be passed in FENCE_PG_CONF (newline
# separated).  Root cannot run postgres: as root the cluster runs as the
# "postgres" OS user (created by Debian's postgresql-common).
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARGS...]" >&2
	exit 2
fi

# shellcheck source=scripts/lib/cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
PGBIN=$(cluster_server_bin)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_cluster.XXXXXX")
chmod 755 "$TMP"
cluster_owner "$TMP"
AS_OWNER=$CLUSTER_AS_OWNER
DATA="$TMP/data"
LOG="$TMP/server.log"
PORT=$(cluster_free_port "$TMP") || { echo "temp-cluster: no free port found" >&2; exit 1; }

ctl() {
	$AS_OWNER "$PGBIN/pg_ctl" -D "$DATA" "$@"
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -f "$DATA/postmaster.pid" ]; then
		ctl -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ "$rc" -ne 0 ] && [ -f "$LOG" ] && [ -n "${FENCE_SHOW_LOG_ON_FAILURE:-1}" ]; then
		echo "temp-cluster: command failed (exit $rc); last server log lines:" >&2
		tail -n 30 "$LOG" >&2 || true
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cluster_initdb "$PGBIN" "$DATA" "$TMP/initdb.log" || exit 1
cluster_conf "$DATA" <<CONF
# pg_fence throwaway cluster
listen_addresses = ''
port = $PORT
unix_socket_directories = '$TMP'
unix_socket_permissions = 0777
max_connections = 120
max_prepared_transactions = 10
shared_preload_libraries = '${FENCE_PRELOAD-pg_fence}'
log_line_prefix = '%m [%p] %q%a '
log_min_messages = log
fsync = ${FENCE_FSYNC:-off}
CONF
if [ -n "${FENCE_PG_CONF:-}" ]; then
	printf '%s\n' "$FENCE_PG_CONF" | cluster_conf "$DATA"
fi
# Trust on the Unix socket only; nothing else is accepted.
echo 'local all all trust' | $AS_OWNER tee "$DATA/pg_hba.conf" >/dev/null

cluster_start "$PGBIN" "$DATA" "$LOG" || { cat "$LOG" >&2; exit 1; }

# A small control helper for tests that restart or crash the server.
cat >"$TMP/cluster-ctl" <<CTL
#!/usr/bin/env bash
set -e
case "\${1:-}" in
	stop-immediate) $AS_OWNER "$PGBIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null ;;
	stop)           $AS_OWNER "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null ;;
	start)          $AS_OWNER "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null ;;
	restart)        $AS_OWNER "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -m fast -w -t 60 restart >/dev/null ;;
	*) echo "usage: cluster-ctl stop-immediate|stop|start|restart" >&2; exit 2 ;;
esac
CTL
chmod 755 "$TMP/cluster-ctl"

export PGHOST="$TMP" PGPORT="$PORT" PGUSER=postgres PGDATABASE=postgres
# The client tools (psql, pg_dump, pg_prove's psql...) of the server's own version.
export PATH="$PGBIN:$PATH"
export PGDATA="$DATA" FENCE_PGBIN="$PGBIN" FENCE_AS_OWNER="$AS_OWNER" FENCE_PGLOG="$LOG"
export FENCE_CLUSTER_CTL="$TMP/cluster-ctl" FENCE_CLUSTER_DIR="$TMP"
unset PGSERVICE PGPASSWORD PGHOSTADDR PGOPTIONS

set +e
"$@"
rc=$?
set -e
exit "$rc"
