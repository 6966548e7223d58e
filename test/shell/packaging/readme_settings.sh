#!/usr/bin/env bash
# packaging/readme_settings.sh - the documentation's commands that change a
# fence.* setting (README.md and docs/*.md; docs/settings.md above all) work
# as written, in a fresh session of a server without
# shared_preload_libraries (the case where no session has loaded pg_fence).
#
#   - every ```sql block of the pages that runs ALTER SYSTEM SET fence.* is
#     run as a whole with psql (ON_ERROR_STOP) in a new session, and a new
#     session then sees the value it set;
#   - every inline command `ALTER SYSTEM|DATABASE|ROLE ... SET fence.x = v`
#     is run on its own the same way (database app exists);
#   - docs/settings.md's claim about why the LOAD is there: a bare ALTER SYSTEM SET
#     fence.notify in a session that has not loaded pg_fence fails with
#     42704 before PostgreSQL 17 and succeeds from 17.
# Starts its own throwaway cluster without the preload (nested, like
# packaging/no_preload.sh).
# Usage: bash test/shell/packaging/readme_settings.sh   (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1

source test/shell/lib/clusters.sh
nested_cluster FENCE_README_SETTINGS_INNER FENCE_PRELOAD=

source test/shell/lib/check.sh
pages=(README.md docs/*.md)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

check "no shared_preload_libraries" "" "$(q -c 'SHOW shared_preload_libraries')"
version=$(q -c 'SHOW server_version_num')
q -c 'CREATE DATABASE app' >/dev/null

# shown NAME [DB]: the setting's value as a new session sees it once pg_fence is loaded
shown() { psql -X -A -t -q -d "${2:-postgres}" -c "LOAD 'pg_fence'" -c "SHOW $1" 2>&1; }
# expect_set SQL: prints "name value" of each "SET fence.x = v" in SQL
expect_set() { sed -nE "s/.*SET (fence\.[a-z_]+) *(=|TO) *'?([^';]*)'?.*/\1 \3/p" <<<"$1"; }
reset_all() {
	psql -X -q -c 'ALTER SYSTEM RESET ALL' -c 'SELECT pg_reload_conf()' >/dev/null
	psql -X -q -c 'ALTER DATABASE app RESET ALL' -c 'ALTER ROLE ALL RESET ALL' >/dev/null
	sleep 0.2 # pg_reload_conf only signals the postmaster
}

# Why the block loads the library first (first, while no configuration file
# has named a fence.* setting: the postmaster keeps a placeholder for one it
# has read, which new sessions inherit and ALTER SYSTEM then accepts).
out=$(psql -X -q -c '\set VERBOSITY sqlstate' -c 'ALTER SYSTEM SET fence.notify = off' 2>&1)
if [ "$version" -ge 170000 ]; then
	check "17+: a bare ALTER SYSTEM SET fence.notify works without pg_fence loaded" "" "$out"
else
	check "15/16: a bare ALTER SYSTEM SET fence.notify fails without pg_fence loaded" "ERROR:  42704" "$out"
fi
reset_all

# The blocks: block_N.sql for each ```sql block that runs ALTER SYSTEM SET fence.
awk -v dir="$T" '
	FNR == 1 { in_block = 0 }
	in_block && /^```[[:space:]]*$/ { in_block = 0; close(file); next }
	in_block { print > file; next }
	/^```[[:space:]]*sql([[:space:]]|$)/ { n++; in_block = 1; file = dir "/block_" n ".sql"; printf "" > file; print n, FILENAME ":" FNR > (dir "/all") }
' "${pages[@]}"
blocks=()
while read -r n line; do
	grep -qiE 'ALTER SYSTEM SET fence\.' "$T/block_$n.sql" && blocks+=("$n:$line")
done <"$T/all"
check "docs show ALTER SYSTEM for a fence.* setting in a sql block" "yes" \
	"$([ "${#blocks[@]}" -gt 0 ] && echo yes || echo no)"
for b in "${blocks[@]}"; do
	n=${b%%:*}
	what=${b#*:}
	sql=$(cat "$T/block_$n.sql")
	out=$(psql -X -q -v ON_ERROR_STOP=1 -f "$T/block_$n.sql" 2>&1 >/dev/null)
	check "$what runs as written in a session without pg_fence loaded" "" "$out"
	sleep 0.2
	while read -r name value; do
		[ -n "$name" ] && check "$what: a new session sees $name = $value" "$value" "$(shown "$name")"
	done <<<"$(expect_set "$sql")"
	reset_all
done

# Inline commands, each on its own.
mapfile -t inline < <(grep -ohE '`ALTER (SYSTEM|DATABASE [a-z_]+|ROLE [a-z_]+) SET fence\.[^`]*`' "${pages[@]}" | tr -d '`' | sort -u)
check "docs show inline ALTER ... SET fence.* commands" "yes" \
	"$([ "${#inline[@]}" -gt 0 ] && echo yes || echo no)"
for sql in "${inline[@]}"; do
	out=$(psql -X -q -v ON_ERROR_STOP=1 -c "$sql" 2>&1 >/dev/null)
	check "\`$sql\` runs as written in a session without pg_fence loaded" "" "$out"
	db=postgres
	[[ $sql =~ ^ALTER\ DATABASE\ ([a-z_]+) ]] && db=${BASH_REMATCH[1]}
	sleep 0.2
	while read -r name value; do
		[ -n "$name" ] && check "\`$sql\`: a new session sees $name = $value" "$value" "$(shown "$name" "$db")"
	done <<<"$(expect_set "$sql")"
	reset_all
done

exit $fail
