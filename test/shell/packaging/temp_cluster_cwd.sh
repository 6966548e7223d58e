#!/usr/bin/env bash
# packaging/temp_cluster_cwd.sh - scripts/temp-cluster.sh (what make demo and
# make test run) started by root from a directory the cluster's OS user
# cannot enter (a clone in a 0700 home) prints nothing about it: initdb,
# pg_ctl (start, restart) and programs run with FENCE_AS_OWNER do not run in
# the caller's working directory.
# Only as root (otherwise the cluster runs as the caller): skips (77) else.
# Usage: bash test/shell/packaging/temp_cluster_cwd.sh   (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
REPO=$PWD
source test/shell/lib/check.sh

if [ "$(id -u)" -ne 0 ]; then
	echo "ok - skipped: not root, the cluster runs as the caller"
	exit 77
fi

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/private"
chmod 700 "$T/private"

# Nested inside the test cluster: its own throwaway cluster of the same server.
out=$(cd "$T/private" && FENCE_SERVER_BIN=${FENCE_PGBIN:-${FENCE_SERVER_BIN:-}} \
	bash "$REPO/scripts/temp-cluster.sh" bash -c '
		psql -X -A -t -c "SELECT 1" &&
		"$FENCE_CLUSTER_CTL" restart &&
		$FENCE_AS_OWNER psql -X -A -t -c "SELECT 2"' 2>&1)
rc=$?
check "the cluster runs the command from a 0700 directory" "0" "$rc"
check "no 'could not change directory' from initdb, pg_ctl or psql as the owner" "1
2" "$out"
exit $fail
