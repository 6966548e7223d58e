#!/usr/bin/env bash
# packaging/readme_sqlstates.sh - the documentation lists every SQLSTATE the
# server code raises and every setting it defines.
#
#   - each errcode(ERRCODE_...) in src/server/, and each condition name
#     of a RAISE ... USING ERRCODE in the fragments sql/<version>/, turned
#     into its SQLSTATE with PostgreSQL's utils/errcodes.h (and pg_fence's
#     own MAKE_SQLSTATE definitions), has a row in the table of
#     docs/sqlstates.md (between <!-- section: errors --> and
#     <!-- /section: errors -->);
#   - each fence.* setting defined with DefineCustom*Variable in src/server/
#     has a row of its own in the table of docs/settings.md.
# Needs no server; pg_config (PG_CONFIG) locates the server headers.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source test/shell/lib/check.sh

# The SQLSTATE of each ERRCODE_ name is the same in every version: any
# server headers do (the test cluster's pg_config may be a relocated copy
# without them).
hdr=
for d in "$(${PG_CONFIG:-pg_config} --includedir-server 2>/dev/null)" \
	"$(/usr/bin/pg_config --includedir-server 2>/dev/null)" /usr/include/postgresql/*/server; do
	[ -r "$d/utils/errcodes.h" ] && { hdr=$d/utils/errcodes.h; break; }
done
[ -n "$hdr" ] || { echo "not ok - PostgreSQL's utils/errcodes.h is found (postgresql-server-dev)"; exit 1; }

# NAME SQLSTATE for every MAKE_SQLSTATE definition, PostgreSQL's and ours
codes() {
	cat "$hdr" $(find src/server -name "*.[ch]pp" | sort) |
		sed -nE "s/^#define (ERRCODE_[A-Z0-9_]+)[[:space:]]+MAKE_SQLSTATE\('(.)', *'(.)', *'(.)', *'(.)', *'(.)'\).*/\1 \2\3\4\5\6/p"
}
sqlstates=docs/sqlstates.md
settings_page=docs/settings.md
table=$(sed -n '/<!-- section: errors -->/,/<!-- \/section: errors -->/p' "$sqlstates")
[ -n "$table" ] || { echo "not ok - $sqlstates has a SQLSTATEs section"; exit 1; }

# and each condition name a RAISE of the install scripts' fragments gives
# (RAISE ... USING ERRCODE = 'duplicate_object'), as its ERRCODE_ name
used=$( {
	grep -rohE 'errcode\(ERRCODE_[A-Z0-9_]+\)' src/server | sed -E 's/errcode\((.*)\)/\1/'
	grep -rohE "ERRCODE = '[a-z_]+'" sql | sed -E "s/ERRCODE = '(.*)'/ERRCODE_\1/" | tr 'a-z' 'A-Z'
} | sort -u)
n=0
missing=()
for name in $used; do
	state=$(codes | awk -v n="$name" '$1 == n { print $2; exit }')
	if [ -z "$state" ]; then
		missing+=("$name (no SQLSTATE found)")
		continue
	fi
	n=$((n + 1))
	grep -qE "^\| \`$state\` \|" <<<"$table" || missing+=("$state ($name)")
done
check "the server code raises SQLSTATEs (found $n)" "yes" "$([ "$n" -ge 10 ] && echo yes || echo no)"
check "every SQLSTATE raised in src/server or sql/ is a row of $sqlstates" "" "${missing[*]:-}"

# the name is the first argument: on the call's line or the next one
settings=$(find src/server -name '*.cpp' -exec grep -A1 -hE 'DefineCustom[A-Za-z]+Variable\(' {} + |
	grep -oE '"fence\.[a-z_]+"' | tr -d '"' | sort -u)
m=0
nosetting=()
for g in $settings; do
	m=$((m + 1))
	grep -qE "^\| \`$g\` \|" "$settings_page" || nosetting+=("$g")
done
check "the server code defines settings (found $m)" "yes" "$([ "$m" -ge 3 ] && echo yes || echo no)"
check "every fence.* setting has a row in $settings_page" "" "${nosetting[*]:-}"
exit $fail
