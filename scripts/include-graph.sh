#!/usr/bin/env bash
# include-graph.sh - the wings of src/server/ and who includes whom.
#
# The server is split into wings (src/server/<wing>/), each at a level:
#
#   0  pg                     PostgreSQL-facing helpers, version shims
#   1  tokens                 fencing tokens
#   2  observability          fence.stats(), fence.locks
#   3  locks, leases, writes  the three kinds of things pg_fence does
#   4  queue, once            (room for wings built on those)
#   5  top                    src/server/*.{cpp,hpp}: module.cpp, shmem.cpp
#
# Rule (check-style.sh rule 3): a wing includes only its own headers and
# those of lower levels; two wings of one level never include each other;
# no wing includes a top-level header (src/server/*.hpp); the top includes
# anything.  A new wing needs a level here first.
#
# Usage: scripts/include-graph.sh [--check]
#   (none)    print the wing-level include graph: for each wing, the wings
#             it includes and how many #include lines do so
#   --check   print every include that breaks the rule; exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A level=([pg]=0 [tokens]=1 [observability]=2 [locks]=3 [leases]=3 [writes]=3
	[queue]=4 [once]=4 [top]=5)
order=(pg tokens observability locks leases writes queue once top)

check=false
case ${1:-} in
	--check) check=true ;;
	"") ;;
	*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# The wing of a file under src/server/ ("top" for the files right in it).
wing_of() {
	local rel=${1#src/server/}
	case $rel in
		*/*) echo "${rel%%/*}" ;;
		*) echo top ;;
	esac
}

declare -A edges=()
bad=()
for d in src/server/*/; do
	w=$(basename "$d")
	[ -n "${level[$w]+x}" ] || bad+=("src/server/$w/: a wing without a level (add it to scripts/include-graph.sh)")
done

while IFS= read -r f; do
	from=$(wing_of "$f")
	while IFS=: read -r lineno inc; do
		inc=${inc#*\"}
		inc=${inc%%\"*}
		case $inc in
			*/*)
				to=${inc%%/*}
				# a PostgreSQL header ("utils/guc.h"), not one of ours
				[ -n "${level[$to]+x}" ] || [ -d "src/server/$to" ] || continue
				;;
			*)
				# a top-level header, a wing's header named without its
				# wing, or a PostgreSQL header ("miscadmin.h")
				if [ -f "src/server/$inc" ]; then
					to=top
				elif [ "$from" != top ] && [ -f "src/server/$from/$inc" ]; then
					bad+=("$f:$lineno: #include \"$inc\": name the wing (\"$from/$inc\")")
					continue
				else
					continue
				fi
				;;
		esac
		if [ -z "${level[$to]+x}" ]; then
			bad+=("$f:$lineno: #include \"$inc\": wing $to has no level")
			continue
		fi
		[ "$from" = "$to" ] && continue
		edges[$from $to]=$((${edges[$from $to]:-0} + 1))
		if [ "$from" != top ]; then
			if [ "$to" = top ]; then
				bad+=("$f:$lineno: #include \"$inc\": a wing ($from) includes a top-level header")
			elif [ "${level[$to]}" -ge "${level[$from]}" ]; then
				bad+=("$f:$lineno: #include \"$inc\": $from (level ${level[$from]}) includes $to (level ${level[$to]})")
			fi
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done < <(find src/server -name '*.cpp' -o -name '*.hpp' | sort)

if $check; then
	if [ ${#bad[@]} -gt 0 ]; then
		echo "include-graph: includes that run against the wing levels (scripts/include-graph.sh):"
		printf '  %s\n' "${bad[@]}"
		exit 1
	fi
	exit 0
fi

echo "Wing-level include graph of src/server/ (level: wing -> included wings, #include lines):"
for w in "${order[@]}"; do
	[ "$w" = top ] || [ -d "src/server/$w" ] || continue
	line=""
	for t in "${order[@]}"; do
		n=${edges[$w $t]:-0}
		[ "$n" -gt 0 ] && line+=" $t($n)"
	done
	printf '  %d: %-14s ->%s\n' "${level[$w]}" "$w" "${line:- (nothing)}"
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "Against the rule:"
	printf '  %s\n' "${bad[@]}"
fi
