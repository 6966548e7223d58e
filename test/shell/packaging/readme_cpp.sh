#!/usr/bin/env bash
# packaging/readme_cpp.sh - every C++ block of the documentation (README.md
# and docs/*.md; today those of docs/cpp-client.md) compiles as pasted.
#
# A block is a fenced code block whose info string is cpp, c++ or cxx
# (```cpp).  Each one is a complete program: it is compiled (C++17, -Wall
# -Wextra -Werror) and linked against the client as installed
# (test/shell/lib/client_stage.sh, found with pkg-config), exactly as
# docs/cpp-client.md, "Building against it", says.  A block that is
# deliberately not a whole program is marked by the line <!-- cpp-fragment -->
# right before its opening fence: it must still be a complete translation
# unit (its own #includes and declarations) and is compiled without linking
# (no main() needed).  The test fails if docs/cpp-client.md has no C++ block.
#
# Each ```cmake block that builds report_job (docs/cpp-client.md, "Building
# against it") is configured and built too, with the first complete C++
# program of the same page as report_job.cpp and the client found with
# find_package in a staged install.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
. test/shell/lib/check.sh
. test/shell/lib/client_stage.sh

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
client_stage "$T" || exit 1

pages=(README.md docs/*.md)

# Writes block_N.cpp (and block_N.fragment for marked ones) into $T, and
# cmake_M.txt with cmake_M.page (the page it is on); prints "N PAGE:LINE"
# for each C++ block (LINE: where it starts on PAGE).
awk -v dir="$T" '
	FNR == 1 { in_block = 0; prev = "" }
	in_block && /^```[[:space:]]*$/ { in_block = 0; close(file); next }
	in_block { print > file; next }
	/^```[[:space:]]*cmake([[:space:]]|$)/ {
		m++
		in_block = 1
		file = dir "/cmake_" m ".txt"
		printf "" > file
		print FILENAME > (dir "/cmake_" m ".page"); close(dir "/cmake_" m ".page")
		next
	}
	/^```[[:space:]]*(cpp|c\+\+|cxx)([[:space:]]|$)/ {
		n++
		in_block = 1
		file = dir "/block_" n ".cpp"
		printf "" > file
		if (prev == "<!-- cpp-fragment -->") { printf "" > (dir "/block_" n ".fragment") }
		prev = ""
		print n, FILENAME ":" FNR
		next
	}
	NF { prev = $0 }
' "${pages[@]}" >"$T/blocks"

check "docs/cpp-client.md has C++ blocks" "yes" \
	"$(grep -q ' docs/cpp-client\.md:' "$T/blocks" && echo yes)"

cflags=$(pkg-config --cflags pg_fence)
libs=$(pkg-config --libs pg_fence)
while read -r n line; do
	src=$T/block_$n.cpp
	if [ -e "$T/block_$n.fragment" ]; then
		what="$line (fragment) compiles"
		g++ -std=c++17 -Wall -Wextra -Werror $cflags -c -o "$T/block_$n.o" "$src" >"$T/block_$n.log" 2>&1
	else
		what="$line compiles and links as a program"
		g++ -std=c++17 -Wall -Wextra -Werror $cflags -o "$T/block_$n" "$src" $libs >"$T/block_$n.log" 2>&1
	fi
	rc=$?
	check "$what" "0" "$rc"
	if [ "$rc" -ne 0 ]; then
		head -n 30 "$T/block_$n.log"
	fi
done <"$T/blocks"

# the first complete program on PAGE: block_N.cpp
first_program() {
	local n line
	while read -r n line; do
		[ "${line%:*}" = "$1" ] && [ ! -e "$T/block_$n.fragment" ] && { echo "$T/block_$n.cpp"; return; }
	done <"$T/blocks"
}
for cm in "$T"/cmake_*.txt; do
	[ -e "$cm" ] || continue
	grep -q 'report_job\.cpp' "$cm" || continue
	d=${cm%.txt}
	page=$(cat "$d.page")
	first=$(first_program "$page")
	[ -n "$first" ] || { echo "not ok - $page has a complete C++ program for its CMake project"; fail=1; continue; }
	mkdir -p "$d"
	cp "$cm" "$d/CMakeLists.txt"
	cp "$first" "$d/report_job.cpp"
	if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$STAGED_PREFIX" \
		-DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >"$d.log" 2>&1 &&
		cmake --build "$d/build" >>"$d.log" 2>&1; then
		check "$page's CMake project $(basename "$cm") builds report_job" "yes" \
			"$([ -x "$d/build/report_job" ] && echo yes)"
	else
		echo "not ok - $page's CMake project $(basename "$cm") builds report_job"
		tail -n 30 "$d.log"
		fail=1
	fi
done

exit "$fail"
