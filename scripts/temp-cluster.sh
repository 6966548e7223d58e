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

PG_CONFIG=${PG_CONFIG:-pg_config}
# FENCE_SERVER_BIN may name another server installation's bin directory (a
# relocated copy: the server finds its lib and share dirs relative to itself).
PGBIN=${FENCE_SERVER_BIN:-$("$PG_CONFIG" --bindir)}
if [ ! -x "$PGBIN/initdb" ]; then
	# Debian's /usr/bin/pg_config is libpq's; the server lives beside PGXS.
	PGBIN=$(dirname "$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")")/../bin
	PGBIN=$(cd "$PGBIN" && pwd)
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_cluster.XXXXXX")
chmod 755 "$TMP"
if [ "$(id -u)" -eq 0 ]; then
	OWNER=postgres
	id "$OWNER" >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash "$OWNER"
	chown "$OWNER" "$TMP"
	# In the cluster's directory: the caller's working directory (a clone in
	# a 0700 home) may be one the owner cannot enter, and initdb, pg_ctl and
	# psql then print 'could not change directory to "...": Permission denied'.
	AS_OWNER="runuser -u $OWNER -- env -C $TMP"
else
	OWNER=$(id -un)
	AS_OWNER=""
fi
DATA="$TMP/data"
LOG="$TMP/server.log"

# A free port: not 5432, and neither a TCP port in use nor a socket file here.
port_in_use() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
PORT=
for _ in $(seq 1 100); do
	candidate=$((20000 + RANDOM % 40000))
	[ "$candidate" -eq 5432 ] && continue
	port_in_use "$candidate" && continue
	PORT=$candidate
	break
done
[ -n "$PORT" ] || { echo "temp-cluster: no free port found" >&2; exit 1; }

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

$AS_OWNER "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust --no-instructions \
	--encoding=UTF8 --locale=C.UTF-8 >"$TMP/initdb.log" 2>&1 || {
	cat "$TMP/initdb.log" >&2
	exit 1
}
cat >>"$DATA/postgresql.conf" <<CONF
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
	printf '%s\n' "$FENCE_PG_CONF" >>"$DATA/postgresql.conf"
fi
# Trust on the Unix socket only; nothing else is accepted.
cat >"$DATA/pg_hba.conf" <<HBA
local all all trust
HBA

ctl -l "$LOG" -w -t 60 start >/dev/null || { cat "$LOG" >&2; exit 1; }

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
