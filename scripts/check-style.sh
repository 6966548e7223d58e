#!/usr/bin/env bash
# check-style.sh - the rules of the house that a machine can check, so that
# no reviewer has to:
#
#   1. every C++ source and header is formatted as .clang-format says
#      (PostgreSQL's layout, as far as clang-format can express pgindent's:
#      tabs of width 4, braces on their own lines, the return type of a
#      definition on its own line, no include sorting);
#   2. server code (src/server/) names nothing from std::
#      outside src/server/pg/boundary.hpp, the one place where C++ exceptions
#      meet PostgreSQL's errors: a std:: object alive in a frame that a
#      PostgreSQL ERROR longjmps through would never be destroyed
#      (src/server/pg/boundary.hpp; CONTRIBUTING.md, "House rules");
#   3. a wing of the server (src/server/<wing>/) includes only its own
#      headers and those of lower wings (pg < tokens < observability <
#      {locks, leases, writes} < {queue, once} < the top, src/server/*.cpp),
#      never another wing of its level and never a top-level header;
#      scripts/include-graph.sh holds the levels, prints each offending
#      include, and without --check prints the wing-level include graph.
#
# Usage: scripts/check-style.sh [--fix]
#   --fix   reformat the files in place instead of failing on them
# Installs clang-format (Debian's, scripts/install-deps.sh --style) if it
# is missing.  Exit status 0 only when all three rules hold.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=false
case ${1:-} in
	--fix) fix=true ;;
	"") ;;
	*) echo "usage: $0 [--fix]" >&2; exit 2 ;;
esac

command -v clang-format >/dev/null 2>&1 || bash scripts/install-deps.sh --style

mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
	'*.cpp' '*.hpp' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
status=0

if $fix; then
	clang-format -i "${files[@]}"
else
	bad=()
	for f in "${files[@]}"; do
		clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
	done
	if [ ${#bad[@]} -gt 0 ]; then
		echo "check-style: not formatted as .clang-format says (run scripts/check-style.sh --fix):"
		printf '  %s\n' "${bad[@]}"
		status=1
	fi
fi

# Server code: std:: only in the boundary header.
if std_uses=$(grep -rn --include='*.cpp' --include='*.hpp' 'std::' src/server |
	grep -v '^src/server/pg/boundary\.hpp:'); then
	echo "check-style: std:: in server code outside src/server/pg/boundary.hpp:"
	printf '  %s\n' "$std_uses"
	status=1
fi

# Server code: each wing includes only its own and lower wings.
bash scripts/include-graph.sh --check || status=1

[ "$status" -eq 0 ] && echo "check-style: ${#files[@]} files formatted; no std:: in server code outside the boundary; wings include only lower wings"
exit "$status"
