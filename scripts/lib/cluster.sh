# cluster.sh - starting a throwaway PostgreSQL cluster, written once for
# scripts/temp-cluster.sh, the chaos test's nodes (test/chaos/nemesis.sh) and
# the tests that make a second cluster (test/shell/lib/standby.sh).
# Sourced, not run.
#
#   cluster_server_bin              the server's bin directory: FENCE_SERVER_BIN,
#                                   else PG_CONFIG's (Debian's /usr/bin/pg_config
#                                   is libpq's: then the one beside PGXS)
#   cluster_owner DIR               sets CLUSTER_OWNER and CLUSTER_AS_OWNER: as
#                                   root the cluster runs as the "postgres" OS
#                                   user (created if missing; DIR is given to
#                                   it) and CLUSTER_AS_OWNER runs a program as
#                                   that user in DIR; otherwise the caller, and
#                                   CLUSTER_AS_OWNER is empty
#   cluster_free_port SOCKDIR [PORT...]
#                                   a port that is not 5432, not one of PORT,
#                                   not a TCP port in use and not a socket file
#                                   in SOCKDIR
#   cluster_initdb PGBIN DATA LOG   initdb (trust, UTF8, C.UTF-8) as the owner;
#                                   prints LOG and fails if initdb fails
#   cluster_conf DATA               appends its standard input to
#                                   DATA/postgresql.conf (as the owner)
#   cluster_start PGBIN DATA LOG    pg_ctl start (waits, 60 s at most)
# The last three run their programs with CLUSTER_AS_OWNER (set it first, with
# cluster_owner, or to the prefix of the cluster they work on).

CLUSTER_AS_OWNER=${CLUSTER_AS_OWNER:-}

cluster_server_bin() {
	local pg_config=${PG_CONFIG:-pg_config} bin
	# FENCE_SERVER_BIN may name another server installation's bin directory
	# (a relocated copy: the server finds its lib and share dirs relative to itself).
	bin=${FENCE_SERVER_BIN:-$("$pg_config" --bindir)}
	if [ ! -x "$bin/initdb" ]; then
		bin=$(dirname "$(dirname "$(dirname "$("$pg_config" --pgxs)")")")/../bin
		bin=$(cd "$bin" && pwd)
	fi
	echo "$bin"
}

cluster_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		CLUSTER_OWNER=postgres
		id "$CLUSTER_OWNER" >/dev/null 2>&1 ||
			useradd --system --home-dir /var/lib/postgresql --shell /bin/bash "$CLUSTER_OWNER"
		chown "$CLUSTER_OWNER" "$1"
		# In the cluster's directory: the caller's working directory (a clone
		# in a 0700 home) may be one the owner cannot enter, and initdb, pg_ctl
		# and psql then print 'could not change directory to "...": Permission denied'.
		CLUSTER_AS_OWNER="runuser -u $CLUSTER_OWNER -- env -C $1"
	else
		CLUSTER_OWNER=$(id -un)
		CLUSTER_AS_OWNER=""
	fi
}

cluster_free_port() {
	local sockdir=$1 p hex
	shift
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		[ "$p" -eq 5432 ] && continue
		[[ " $* " == *" $p "* ]] && continue
		hex=$(printf ':%04X ' "$p")
		grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null && continue
		[ -e "$sockdir/.s.PGSQL.$p" ] && continue
		echo "$p"
		return 0
	done
	return 1
}

cluster_initdb() {
	$CLUSTER_AS_OWNER "$1/initdb" -D "$2" -U postgres --auth=trust --no-instructions \
		--encoding=UTF8 --locale=C.UTF-8 >"$3" 2>&1 || {
		cat "$3" >&2
		return 1
	}
}

cluster_conf() {
	$CLUSTER_AS_OWNER tee -a "$1/postgresql.conf" >/dev/null
}

cluster_start() {
	$CLUSTER_AS_OWNER "$1/pg_ctl" -D "$2" -l "$3" -w -t 60 start >/dev/null
}
