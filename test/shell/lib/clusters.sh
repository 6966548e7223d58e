# clusters.sh - which server a shell test may use (sourced, not run).
#
#   require_own_cluster WHAT   exits 77 (skipped), saying why, unless the
#                              server is the throwaway cluster of
#                              scripts/temp-cluster.sh (FENCE_CLUSTER_CTL):
#                              for the tests that WHAT ("restart it", "crash
#                              it"...), which make installcheck must not do
#                              to a server the user runs
#   nested_cluster VAR [NAME=VALUE...]
#                              unless VAR is set (the nested run), runs this
#                              script again, with VAR=1 and the given
#                              environment (e.g. FENCE_PRELOAD= for no
#                              preload), in a throwaway cluster of its own
#                              made from the same server installation
#                              (scripts/temp-cluster.sh; it works inside
#                              another test cluster or beside a user's
#                              server), and exits with its status
#   nested_run VAR [NAME=VALUE...]
#                              the same, but returns its status (the script
#                              goes on: it runs in both clusters)
#   skip_before_17 REASON      exits 77 with REASON on a server before
#                              PostgreSQL 17 (the one PGHOST/PGPORT names)
#   no_preload_17 VAR REASON   for the tests of PostgreSQL 17+ without
#                              shared_preload_libraries: nested_cluster VAR
#                              FENCE_PRELOAD=, skipping (REASON) before 17,
#                              before the nested cluster is made when the
#                              caller's server is of the same installation
# Run from anywhere; the scripts are found from this file's place.

CLUSTERS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)

require_own_cluster() {
	if [ -z "${FENCE_CLUSTER_CTL:-}" ] || [ ! -x "$FENCE_CLUSTER_CTL" ]; then
		echo "needs a server it may $1: runs only on scripts/temp-cluster.sh's throwaway cluster (make test)"
		exit 77
	fi
}

nested_run() {
	local var=$1
	shift
	# The same installation as the server of the caller: the test cluster's
	# (FENCE_PGBIN), else the one make installcheck found (FENCE_SERVER_BIN).
	env FENCE_SERVER_BIN="${FENCE_PGBIN:-${FENCE_SERVER_BIN:-}}" "$@" "$var=1" \
		bash "$CLUSTERS_REPO/scripts/temp-cluster.sh" bash "$0"
}

nested_cluster() {
	[ -n "${!1:-}" ] && return 0
	nested_run "$@"
	exit $?
}

skip_before_17() {
	if [ "$(psql -X -A -t -q -c 'SHOW server_version_num')" -lt 170000 ]; then
		echo "$1"
		exit 77
	fi
}

no_preload_17() {
	# The caller's server is of the installation the nested cluster is made
	# from inside a test cluster (FENCE_CLUSTER_DIR) and under make
	# installcheck (FENCE_SERVER_BIN, the server's own).
	if [ -n "${!1:-}" ] || [ -n "${FENCE_CLUSTER_DIR:-}${FENCE_SERVER_BIN:-}" ]; then
		skip_before_17 "$2"
	fi
	nested_cluster "$1" FENCE_PRELOAD=
}
