# test/chaos/nemesis.sh - the chaos test's two-node cluster and the faults it
# injects (sourced by test/chaos/chaos.sh, not run).
#
# Nodes: two data directories under $CHAOS_TMP (n0, n1), Unix sockets only
# (in $CHAOS_TMP), one primary and one streaming standby made with
# pg_basebackup; they swap roles at every failover.  Faults, each recorded
# as one event line in $CHAOS_OUT/nemesis.tsv (test/chaos/history.hpp):
#   nemesis_pause      SIGSTOP a worker holding a lease, leadership or
#                      permit (else any) for 2.5 TTLs, then SIGCONT: its
#                      holding expires while it sleeps, and on waking it
#                      writes with its old token
#   nemesis_kill       pg_terminate_backend of a random worker backend: its
#                      session locks and open transaction end
#   nemesis_crash      kill -9 of a worker process holding a lease or a
#                      job's claim (else any), then started again: its
#                      sessions end with it, its claims are rescued at once
#   nemesis_restart    pg_ctl stop -m immediate of the primary, then start
#   nemesis_failover   stop the primary immediately, promote the standby,
#                      make the old primary a standby of the new one
#
# Expects: scripts/lib/cluster.sh (sourced, after cluster_owner), PGBIN,
# AS_OWNER (command prefix running as the cluster's OS user, or empty),
# CHAOS_TMP, CHAOS_OUT, PORTS (array of the two ports), PRIMARY (index 0/1
# of the primary), REPLICATION (sync|async), TTL_MS, LAG_MS and BURST (async
# failovers), WORKER_PIDS (array; the current pid of worker I is in
# $CHAOS_TMP/pid.wI, see worker_pid), start_worker (chaos.sh), FSYNC.

now_us() { date +%s%6N; }

# event TYPE KIND NAME WORKER INVOKE COMPLETE: one history line.
event() {
	printf '%s\t%s\t%s\t-1\t%s\t%s\t%s\t-1\t-1\t-\t-\n' "$1" "$2" "$3" "$4" "$5" "$6" \
		>>"$CHAOS_OUT/nemesis.tsv"
}

node_dir() { echo "$CHAOS_TMP/n$1"; }
# rwq ARGS...: psql on whichever node takes writes now (database chaos).
rwq() {
	psql -X -q -At -v ON_ERROR_STOP=1 "host=$CHAOS_TMP,$CHAOS_TMP port=${PORTS[0]},${PORTS[1]} user=postgres
		dbname=chaos target_session_attrs=read-write connect_timeout=5" "$@"
}
node_ctl() {
	local n=$1
	shift
	$AS_OWNER "$PGBIN/pg_ctl" -D "$(node_dir "$n")" "$@"
}
nq() {
	local n=$1
	shift
	psql -X -q -At -v ON_ERROR_STOP=1 -h "$CHAOS_TMP" -p "${PORTS[$n]}" -U postgres "$@"
}

# free_port: a port nobody listens on and no socket here uses (not 5432,
# not one of the nodes').
free_port() { cluster_free_port "$CHAOS_TMP" "${PORTS[@]}"; }

# node_conf N [SYNC]: the node's settings; SYNC (default $REPLICATION) sync
# names every standby synchronous (ignored until the node is a primary).
node_conf() {
	local n=$1 sync=${2:-$REPLICATION}
	cluster_conf "$(node_dir "$n")" <<CONF
# pg_fence chaos node n$n
listen_addresses = ''
port = ${PORTS[$n]}
unix_socket_directories = '$CHAOS_TMP'
shared_preload_libraries = 'pg_fence'
max_connections = 100
wal_level = replica
max_wal_senders = 10
hot_standby = on
wal_retrieve_retry_interval = '200ms'
synchronous_standby_names = '$([ "$sync" = sync ] && echo '*')'
fsync = $FSYNC
log_line_prefix = '%m [%p] %q%a '
CONF
}

# init_primary N: a new cluster in node N, started; asynchronous until
# sync_primary (a commit would wait for a standby that does not exist yet).
init_primary() {
	local n=$1 d
	d=$(node_dir "$n")
	cluster_initdb "$PGBIN" "$d" "$CHAOS_TMP/initdb.log" || return 1
	node_conf "$n" async
	printf 'local all all trust\nlocal replication all trust\n' | $AS_OWNER tee "$d/pg_hba.conf" >/dev/null
	node_ctl "$n" -l "$CHAOS_TMP/n$n.log" -w -t 60 start >/dev/null
}

# sync_primary: the primary's commits wait for its standby from now on.
sync_primary() {
	[ "$REPLICATION" = sync ] || return 0
	echo "synchronous_standby_names = '*'" | cluster_conf "$(node_dir "$PRIMARY")"
	nq "$PRIMARY" -d postgres -c 'SELECT pg_reload_conf()' >/dev/null
	wait_streaming
}

# make_standby N: node N becomes a fresh streaming standby of the primary.
make_standby() {
	local n=$1 d
	d=$(node_dir "$n")
	[ -f "$d/postmaster.pid" ] && node_ctl "$n" -m immediate -w stop >/dev/null 2>&1
	rm -rf "$d"
	$AS_OWNER "$PGBIN/pg_basebackup" -D "$d" -h "$CHAOS_TMP" -p "${PORTS[$PRIMARY]}" -U postgres \
		--write-recovery-conf --wal-method=stream --checkpoint=fast --no-sync >/dev/null || return 1
	node_conf "$n"
	node_ctl "$n" -l "$CHAOS_TMP/n$n.log" -w -t 60 start >/dev/null || return 1
	wait_streaming
}

# wait_streaming: until the primary sees its standby streaming (30 s at most).
wait_streaming() {
	local want="state = 'streaming' AND (sync_state = 'sync' OR
		current_setting('synchronous_standby_names') = '')"
	for _ in $(seq 1 300); do
		[ "$(nq "$PRIMARY" -d postgres -c "SELECT count(*) FROM pg_stat_replication WHERE $want" 2>/dev/null)" = 1 ] &&
			return 0
		sleep 0.1
	done
	echo "chaos: the standby is not streaming after 30 s" >&2
	return 1
}

random_worker() { echo $((RANDOM % ${#WORKER_PIDS[@]})); }
# worker_pid I: worker I's process now (a crashed worker is started again).
worker_pid() { cat "$CHAOS_TMP/pid.w$1" 2>/dev/null; }
worker_pids() { cat "$CHAOS_TMP"/pid.w* 2>/dev/null; }

# A worker holding a lease, a leadership, a semaphore permit or a job's
# claim now, if any (its holder name is wN), else any.  Three times in four
# a lease or leadership holder or a job's claimant comes first (their
# writes and completions go stale), else any holder (a permit that expires
# is taken over); half the time a job's claimant before the others.
pause_target() {
	local w first=true jobs=false
	[ $((RANDOM % 4)) -eq 0 ] && first=false
	[ $((RANDOM % 2)) -eq 0 ] && jobs=true
	# the pauser runs in a subshell: it finds the primary by itself
	w=$(rwq -c "SELECT substr(holder, 2) FROM (
			SELECT holder, permits IS NOT NULL AS permit, false AS job FROM fence.leases
			 WHERE expires_at > clock_timestamp()
			UNION ALL
			SELECT holder, false, true FROM fence.jobs
			 WHERE state = 'running' AND claimed_until > clock_timestamp()) h
		ORDER BY $first AND permit, $jobs AND NOT job, random() LIMIT 1" 2>/dev/null || true)
	if [[ $w =~ ^[0-9]+$ ]] && [ "$w" -lt "${#WORKER_PIDS[@]}" ]; then echo "$w"; else random_worker; fi
}

nemesis_pause() {
	local i t0 ms pid
	i=$(pause_target)
	ms=$((TTL_MS * 5 / 2))
	t0=$(now_us)
	pid=$(worker_pid "$i")
	kill -STOP "$pid" 2>/dev/null || return 0
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -CONT "$pid" 2>/dev/null
	event pause - - "w$i" "$t0" "$(now_us)"
}

# kill -9 of a worker (one holding something, as pause_target picks), then
# the same worker started again.
nemesis_crash() {
	local i t0 pid
	i=$(pause_target)
	pid=$(worker_pid "$i")
	t0=$(now_us)
	kill -KILL "$pid" 2>/dev/null || return 0
	wait "$pid" 2>/dev/null
	event crash - "$pid" "w$i" "$t0" "$(now_us)"
	start_worker "$i"
}

nemesis_kill() {
	local t0 row
	t0=$(now_us)
	row=$(rwq -F ' ' -c "SELECT pid, substr(application_name, 7) FROM pg_stat_activity
		WHERE application_name LIKE 'chaos-w%' ORDER BY random() LIMIT 1" 2>/dev/null) || return 0
	[ -n "$row" ] || return 0
	rwq -c "SELECT pg_terminate_backend(${row% *})" >/dev/null 2>&1 || return 0
	event kill - "${row% *}" "${row#* }" "$t0" "$(now_us)"
}

nemesis_restart() {
	local t0
	t0=$(now_us)
	node_ctl "$PRIMARY" -m immediate -w stop >/dev/null
	node_ctl "$PRIMARY" -l "$CHAOS_TMP/n$PRIMARY.log" -w -t 60 start >/dev/null
	event restart - "${PORTS[$PRIMARY]}" - "$t0" "$(now_us)"
	wait_streaming
}

# With asynchronous replication the standby lags first: its WAL receiver
# is stopped for LAG_MS while the primary goes on granting, then killed
# (what it had not received is lost, with whatever sat in its socket)
# when the primary is stopped.  Meanwhile one client takes BURST xact
# locks at once (chaos_worker --burst): more tokens than the allocator
# reserves at a time, so the primary moves its durable ceiling while the
# standby does not hear of it.  The promoted standby has not seen the
# primary's last grants and writes: exactly what a lagging async standby
# is after a real failover.
nemesis_failover() {
	local t0 old=$PRIMARY receiver=
	t0=$(now_us)
	if [ "$REPLICATION" = async ]; then
		receiver=$(nq $((1 - old)) -d postgres -c 'SELECT pid FROM pg_stat_wal_receiver' 2>/dev/null || true)
		[ -n "$receiver" ] && kill -STOP "$receiver" 2>/dev/null
		# more tokens than a chunk of the allocator while the standby lags
		test/chaos/chaos_worker --burst "$BURST" --out "$CHAOS_OUT/wburst.tsv" \
			--conninfo "host=$CHAOS_TMP port=${PORTS[$old]} dbname=chaos user=postgres" ||
			echo "chaos: the token burst failed" >&2
		sleep "$(printf '%d.%03d' $((LAG_MS / 1000)) $((LAG_MS % 1000)))"
	fi
	node_ctl "$old" -m immediate -w stop >/dev/null
	PRIMARY=$((1 - old))
	if [ -n "$receiver" ]; then
		kill -KILL "$receiver" 2>/dev/null
		kill -CONT "$receiver" 2>/dev/null
		# the standby's postmaster reinitializes after a child's crash
		for _ in $(seq 1 300); do
			nq "$PRIMARY" -d postgres -c 'SELECT 1' >/dev/null 2>&1 && break
			sleep 0.1
		done
	fi
	node_ctl "$PRIMARY" -w -t 60 promote >/dev/null
	event failover - "${PORTS[$PRIMARY]}" - "$t0" "$(now_us)"
	make_standby "$old"
}
