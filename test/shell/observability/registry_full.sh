#!/usr/bin/env bash
# observability/registry_full.sh - a full lock registry (fence.max_locks) never blocks a
# grant: the extra locks are granted and listed in fence.locks without
# their names, and one LOG line says so.
# Usage: bash test/shell/observability/registry_full.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/clusters.sh
nested_cluster FENCE_REGISTRY_FULL_INNER FENCE_PRELOAD=pg_fence 'FENCE_PG_CONF=fence.max_locks = 16'

source test/shell/lib/check.sh

check "fence.max_locks" "16" "$(q -c 'SHOW fence.max_locks')"
q -c 'CREATE EXTENSION pg_fence'
out=$(q -c "SELECT count(fence.try_lock('full-' || i)) FROM generate_series(1, 40) i" \
	-c "SELECT count(*), count(name), count(*) FILTER (WHERE pid = pg_backend_pid())
	      FROM fence.locks WHERE kind IS DISTINCT FROM 'lease'" \
	-c "SELECT fence.unlock_all()" \
	-c "SELECT count(*) FROM fence.locks WHERE kind IS DISTINCT FROM 'lease'" \
	-c "SELECT count(*) FROM fence.held_locks()" \
	-c "SELECT count(fence.try_lock('again-' || i)) FROM generate_series(1, 16) i" \
	-c "SELECT count(name) FROM fence.locks WHERE kind IS DISTINCT FROM 'lease'")
check "40 grants with 16 registry entries; all freed; registry reusable" \
	"40
40|16|40
40
0
0
16
16" "$out"
check "one LOG line about the full registry" "1" \
	"$(grep -c 'pg_fence: lock registry full (fence.max_locks = 16)' "$FENCE_PGLOG" || true)"
exit $fail
