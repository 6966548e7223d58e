# test/chaos/patroni.sh - the chaos test's cluster under Patroni (sourced by
# test/chaos/chaos.sh after nemesis.sh when PATRONI=1, not run).
#
# A throwaway etcd member (Debian's etcd-server) and two PostgreSQL nodes,
# each run by its own Patroni (Debian's patroni) with a configuration
# written here: every port a free one on 127.0.0.1, the clients' sockets in
# $CHAOS_TMP, short timings (ttl 10 s, loop_wait 1 s, retry_timeout 3 s)
# so that a failover takes seconds, pg_rewind to bring a former primary
# back.  Faults, recorded like nemesis.sh's:
#   nemesis_failover    SIGKILL the primary's Patroni and postgres: Patroni
#                       on the replica promotes it when the leader key
#                       expires; the killed node's Patroni is started again
#                       and rejoins as a replica
#   nemesis_switchover  patronictl switchover to the replica
# Each event's invoke/complete span is the time no primary took writes (as
# seen by a client polling pg_is_in_recovery()).
#
# Expects what nemesis.sh expects, and ETCD_PID / PATRONI_PIDS (arrays,
# filled here; killed by patroni_stop).

PATRONI_PIDS=()
ETCD_PID=

patroni_conf() {
	local n=$1
	cat >"$CHAOS_TMP/patroni-n$n.yml" <<YML
scope: chaos
name: n$n
log:
  level: ${CHAOS_PATRONI_LOG:-WARNING}
restapi:
  listen: 127.0.0.1:${API_PORTS[$n]}
  connect_address: 127.0.0.1:${API_PORTS[$n]}
etcd3:
  hosts: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 104857600
    postgresql:
      use_pg_rewind: true
      parameters:
        shared_preload_libraries: pg_fence
        wal_level: replica
        wal_log_hints: 'on'
        hot_standby: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 100
        fsync: '$FSYNC'
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  pg_hba:
    - local all all trust
    - local replication all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${PORTS[$n]}
  connect_address: 127.0.0.1:${PORTS[$n]}
  data_dir: $CHAOS_TMP/n$n
  bin_dir: $PGBIN
  pgpass: $CHAOS_TMP/pgpass-n$n
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '$CHAOS_TMP'
    log_line_prefix: '%m [%p] %q%a '
YML
	[ -n "$AS_OWNER" ] && chown "$OWNER" "$CHAOS_TMP/patroni-n$n.yml"
}

patroni_run() {
	local n=$1
	$AS_OWNER patroni "$CHAOS_TMP/patroni-n$n.yml" >>"$CHAOS_TMP/n$n.log" 2>&1 &
	PATRONI_PIDS[$n]=$!
}

# patroni_kill N: SIGKILL node N's Patroni (the child of runuser, when we
# run as root: killing runuser alone would leave Patroni running).
patroni_kill() {
	local pid=${PATRONI_PIDS[$1]:-} child
	[ -n "$pid" ] || return 0
	for child in $(pgrep -P "$pid" 2>/dev/null); do kill -KILL "$child" 2>/dev/null; done
	kill -KILL "$pid" 2>/dev/null
	PATRONI_PIDS[$1]=
	true
}

# is_primary N: node N takes writes now.
is_primary() {
	[ "$(nq "$1" -d postgres -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]
}

# wait_primary N SECONDS
wait_primary() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		is_primary "$1" && return 0
		sleep 0.1
	done
	return 1
}

# wait_replica: the other node's walreceiver streams from the primary
# (pg_basebackup's own walsender does not count) and has replayed what the
# primary had written when it started streaming (60 s at most).  An
# asynchronous replica promoted before that would lose the setup itself.
wait_replica() {
	local other=$((1 - PRIMARY)) lsn= streaming="application_name = 'n$((1 - PRIMARY))' AND state = 'streaming'"
	for _ in $(seq 1 600); do
		if [ -z "$lsn" ]; then
			[ "$(nq "$PRIMARY" -d postgres -c "SELECT count(*) FROM pg_stat_replication WHERE $streaming" 2>/dev/null)" = 1 ] &&
				lsn=$(nq "$PRIMARY" -d postgres -c 'SELECT pg_current_wal_lsn()' 2>/dev/null)
		elif [ "$(nq "$PRIMARY" -d postgres -c "SELECT count(*) FROM pg_stat_replication
				WHERE $streaming AND replay_lsn >= '$lsn'" 2>/dev/null)" = 1 ]; then
			return 0
		fi
		sleep 0.1
	done
	echo "chaos: n$other is not a caught-up replica after 60 s" >&2
	return 1
}

patroni_start() {
	command -v patroni >/dev/null && command -v etcd >/dev/null || {
		echo "chaos: PATRONI=1 needs the Debian packages patroni and etcd-server (make chaos PATRONI=1 installs them)" >&2
		return 1
	}
	API_PORTS=()
	ETCD_PORT=$(free_port)
	PORTS+=("$ETCD_PORT")
	ETCD_PEER=$(free_port)
	PORTS+=("$ETCD_PEER")
	API_PORTS[0]=$(free_port)
	PORTS+=("${API_PORTS[0]}")
	API_PORTS[1]=$(free_port)
	PORTS+=("${API_PORTS[1]}")
	etcd --name chaos --data-dir "$CHAOS_TMP/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
		--initial-cluster "chaos=http://127.0.0.1:$ETCD_PEER" >"$CHAOS_TMP/etcd.log" 2>&1 &
	ETCD_PID=$!
	patroni_conf 0
	patroni_conf 1
	patroni_run 0
	wait_primary 0 90 || { echo "chaos: Patroni did not bootstrap n0 within 90 s" >&2; return 1; }
	PRIMARY=0
	patroni_run 1
	wait_replica
}

patroni_stop() {
	patroni_kill 0
	patroni_kill 1
	[ -n "$ETCD_PID" ] && kill -KILL "$ETCD_PID" 2>/dev/null
	true
}

nemesis_failover() {
	local t0 old=$PRIMARY
	t0=$(now_us)
	patroni_kill "$old"
	node_ctl "$old" -m immediate -w stop >/dev/null 2>&1
	PRIMARY=$((1 - old))
	if ! wait_primary "$PRIMARY" 60; then
		echo "chaos: Patroni promoted no replica within 60 s" >&2
		return 1
	fi
	event failover - "${PORTS[$PRIMARY]}" - "$t0" "$(now_us)"
	patroni_run "$old"
	wait_replica
}

nemesis_switchover() {
	local t0 old=$PRIMARY
	t0=$(now_us)
	$AS_OWNER patronictl -c "$CHAOS_TMP/patroni-n$old.yml" switchover --leader "n$old" \
		--candidate "n$((1 - old))" --force >>"$CHAOS_TMP/patronictl.log" 2>&1 || return 1
	PRIMARY=$((1 - old))
	wait_primary "$PRIMARY" 60 || return 1
	event switchover - "${PORTS[$PRIMARY]}" - "$t0" "$(now_us)"
	wait_replica
}
