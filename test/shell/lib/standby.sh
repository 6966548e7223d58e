# standby.sh - streaming standbys of the throwaway cluster, for the failover
# tests (sourced, not run).
#
#   standby_free_port                 a free TCP port (not 5432, not PGPORT)
#   standby_make DIR PORT NAME [PRIMARY_PORT [PRIMARY_HOST]]
#                                     pg_basebackup of the primary (default:
#                                     the throwaway cluster) into DIR, started
#                                     on PORT as a streaming standby whose
#                                     cluster_name (so application_name) is NAME
#   standby_stop DIR                  stop it (immediate) if it runs
#   standby_walreceiver_pid PORT      pid of the standby's WAL receiver, once
#                                     it streams (waits up to 60 s)
#   standby_walsender_pid PORT NAME   pid of the walsender serving NAME on the
#                                     primary at PORT, once it streams
#   standby_wait_replay PORT LSN      wait (60 s) until the standby at PORT
#                                     replayed LSN
#   standby_promote DIR PORT          promote it, wait until it is a primary
#   fresh_cluster DIR PORT            a new cluster (initdb) in DIR, with the
#                                     throwaway cluster's preload, started on
#                                     PORT (socket in PGHOST; log DIR.log)
# Run under scripts/temp-cluster.sh.  Replication over the Unix socket is
# trusted like the other connections (a line is added to pg_hba.conf).

: "${FENCE_PGBIN:?run this under scripts/temp-cluster.sh}"
STANDBY_AS_OWNER=${FENCE_AS_OWNER:-}
# shellcheck source=scripts/lib/cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/cluster.sh"
CLUSTER_AS_OWNER=$STANDBY_AS_OWNER

standby_free_port() { cluster_free_port "$PGHOST" "$PGPORT"; }

standby_allow_replication() {
	local data=$1 port=$2
	if ! grep -q '^local[[:space:]]\+replication[[:space:]]' "$data/pg_hba.conf"; then
		echo 'local replication all trust' | $STANDBY_AS_OWNER tee -a "$data/pg_hba.conf" >/dev/null
		psql -X -q -p "$port" -d postgres -c 'SELECT pg_catalog.pg_reload_conf()' >/dev/null
	fi
}

standby_make() {
	local dir=$1 port=$2 name=$3 pport=${4:-$PGPORT} pdata=${5:-$PGDATA}
	standby_allow_replication "$pdata" "$pport"
	rm -rf "$dir" "$dir.log"
	$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_basebackup" -D "$dir" -h "$PGHOST" -p "$pport" -U postgres \
		--write-recovery-conf --wal-method=stream --checkpoint=fast --no-sync
	cluster_conf "$dir" <<CONF
# standby $name of the pg_fence throwaway cluster
port = $port
hot_standby = on
cluster_name = '$name'
CONF
	cluster_start "$FENCE_PGBIN" "$dir" "$dir.log"
}

standby_stop() {
	if [ -f "$1/postmaster.pid" ]; then
		$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$1" -m immediate -w stop >/dev/null 2>&1 || true
	fi
}

standby_poll() { # TRIES SQL PORT: prints the first non-empty result
	local out
	for _ in $(seq 1 "$1"); do
		out=$(psql -X -q -At -p "$3" -d postgres -c "$2" 2>/dev/null || true)
		[ -n "$out" ] && { echo "$out"; return 0; }
		sleep 0.1
	done
	return 1
}

standby_walreceiver_pid() {
	standby_poll 600 "SELECT pid FROM pg_catalog.pg_stat_wal_receiver WHERE status = 'streaming'" "$1"
}

standby_walsender_pid() {
	standby_poll 600 "SELECT pid FROM pg_catalog.pg_stat_replication
		WHERE application_name = '$2' AND state = 'streaming'" "$1"
}

standby_wait_replay() {
	standby_poll 600 "SELECT 1 WHERE pg_catalog.pg_last_wal_replay_lsn() >= '$2'::pg_lsn" "$1" >/dev/null
}

standby_promote() {
	$STANDBY_AS_OWNER "$FENCE_PGBIN/pg_ctl" -D "$1" -w -t 60 promote >/dev/null
	standby_poll 600 "SELECT 1 WHERE NOT pg_catalog.pg_is_in_recovery()" "$2" >/dev/null
}

fresh_cluster() {
	local dir=$1 port=$2 preload
	preload=$(psql -X -At -d postgres -c 'SHOW shared_preload_libraries')
	cluster_initdb "$FENCE_PGBIN" "$dir" "$dir.initdb.log"
	cluster_conf "$dir" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$PGHOST'
shared_preload_libraries = '$preload'
fsync = off
CONF
	cluster_start "$FENCE_PGBIN" "$dir" "$dir.log"
}
