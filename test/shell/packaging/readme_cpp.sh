#!/usr/bin/env bash
# packaging/readme_cpp.sh - every C++ block of README.md compiles as pasted.
#
# A block is a fenced code block whose info string is cpp, c++ or cxx
# (```cpp).  Each one is a complete program: it is compiled (C++17, -Wall
# -Wextra -Werror) and linked against the client as installed
# (test/shell/lib/client_stage.sh, found with pkg-config), exactly as the
# README's "Building against it" says.  A block that is deliberately not a
# whole program is marked by the line <!-- cpp-fragment --> right before its
# opening fence: it must still be a complete translation unit (its own
# #includes and declarations) and is compiled without linking (no main()
# needed).  The test fails if README.md has no C++ block at all.
#
# Each ```cmake block that builds report_job (README, "Building against
# it") is configured and built too, with the README's first complete C++
# program as report_job.cpp and the client found with find_package in a
# staged install.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
. test/shell/lib/check.sh
. test/shell/lib/client_stage.sh

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
client_stage "$T" || exit 1

# Writes block_N.cpp (and block_N.fragment for marked ones) into $T; prints
# "N LINE" for each block (LINE: where it starts in README.md).
awk -v dir="$T" '
	in_block && /^```[[:space:]]*$/ { in_block = 0; close(file); next }
	in_block { print > file; next }
	/^```[[:space:]]*cmake([[:space:]]|$)/ {
		m++
		in_block = 1
		file = dir "/cmake_" m ".txt"
		printf "" > file
		next
	}
	/^```[[:space:]]*(cpp|c\+\+|cxx)([[:space:]]|$)/ {
		n++
		in_block = 1
		file = dir "/block_" n ".cpp"
		printf "" > file
		if (prev == "<!-- cpp-fragment -->") { printf "" > (dir "/block_" n ".fragment") }
		prev = ""
		print n, NR
		next
	}
	NF { prev = $0 }
' README.md >"$T/blocks"

nblocks=$(wc -l <"$T/blocks")
check "README.md has C++ blocks" "yes" "$([ "$nblocks" -gt 0 ] && echo yes)"

cflags=$(pkg-config --cflags pg_fence)
libs=$(pkg-config --libs pg_fence)
while read -r n line; do
	src=$T/block_$n.cpp
	if [ -e "$T/block_$n.fragment" ]; then
		what="README.md:$line (fragment) compiles"
		g++ -std=c++17 -Wall -Wextra -Werror $cflags -c -o "$T/block_$n.o" "$src" >"$T/block_$n.log" 2>&1
	else
		what="README.md:$line compiles and links as a program"
		g++ -std=c++17 -Wall -Wextra -Werror $cflags -o "$T/block_$n" "$src" $libs >"$T/block_$n.log" 2>&1
	fi
	rc=$?
	check "$what" "0" "$rc"
	if [ "$rc" -ne 0 ]; then
		head -n 30 "$T/block_$n.log"
	fi
done <"$T/blocks"

first=$(for b in "$T"/block_*.cpp; do [ -e "${b%.cpp}.fragment" ] || { echo "$b"; break; }; done)
for cm in "$T"/cmake_*.txt; do
	[ -e "$cm" ] || continue
	grep -q 'report_job\.cpp' "$cm" || continue
	d=${cm%.txt}
	mkdir -p "$d"
	cp "$cm" "$d/CMakeLists.txt"
	cp "$first" "$d/report_job.cpp"
	if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$STAGED_PREFIX" \
		-DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >"$d.log" 2>&1 &&
		cmake --build "$d/build" >>"$d.log" 2>&1; then
		check "README.md's CMake project $(basename "$cm") builds report_job" "yes" \
			"$([ -x "$d/build/report_job" ] && echo yes)"
	else
		echo "not ok - README.md's CMake project $(basename "$cm") builds report_job"
		tail -n 30 "$d.log"
		fail=1
	fi
done

exit "$fail"
