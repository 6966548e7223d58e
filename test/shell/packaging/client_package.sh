#!/usr/bin/env bash
# packaging/client_package.sh - the C++ client library as a program outside
# this tree uses it: installed (into a staging directory, never /usr/local),
# found with CMake's find_package and with pkg-config, linked shared and
# static, and the examples/ programs run against this cluster.
#
#   1. layout: make install-client DESTDIR=... puts the real shared library
#      (soname libpg_fence_client.so.0.MINOR), its two links, the static
#      library, the headers under include/pg_fence/, pg_fence.pc and the
#      CMake package where docs/cpp-client.md says; make uninstall-client removes
#      every file again;
#   2. pkg-config: no -std= in the flags; <pg_fence/client.hpp> comes from
#      the installed headers; examples/Makefile builds both examples against
#      the shared library and (STATIC=1) the static one, and they run;
#   3. CMake: examples/CMakeLists.txt (find_package(pg_fence CONFIG)) from
#      the staged, relocated tree: shared build; static build with
#      -DCMAKE_CXX_STANDARD=20, which must stay C++20; and a C++14 project,
#      which pg_fence's cxx_std_17 must raise to C++17;
#   4. each build is run: lease_fenced_update must print its token, apply
#      the second holder's write and reject the old token's as stale (the
#      row then holds the second token), session_lock must find the lock busy
#      from the second session and then get a higher token.
# Runs inside scripts/temp-cluster.sh after the tree is built (make test).
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
ROOT=$PWD
. test/shell/lib/check.sh
. test/shell/lib/client_stage.sh

for tool in cmake pkg-config readelf; do
	command -v "$tool" >/dev/null || { echo "$tool not found (scripts/install-deps.sh installs it)"; exit 1; }
done

T=$(mktemp -d)
DB=client_package_$$
cleanup() {
	dropdb --if-exists "$DB" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
createdb "$DB" || exit 1
export PGDATABASE=$DB
q -c "SET client_min_messages = warning" -c "CREATE EXTENSION pg_fence" >/dev/null || exit 1

client_stage "$T" || exit 1
version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_fence.control)
soversion=$(awk -F. '{ print ($1 == 0 ? "0." $2 : $1) }' <<<"$version")
S=$STAGED_PREFIX
P=$PRIVATE_PREFIX
CXXWARN="-Wall -Wextra -Werror"

# --- 1. layout ---------------------------------------------------------------
check "real shared library file" "regular file" \
	"$(stat -c %F "$S/lib/libpg_fence_client.so.$version" 2>&1 | sed 's/regular empty file/empty/')"
check "soname" "libpg_fence_client.so.$soversion" \
	"$(readelf -d "$S/lib/libpg_fence_client.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
check "soname link" "libpg_fence_client.so.$version" "$(readlink "$S/lib/libpg_fence_client.so.$soversion")"
check "development link" "libpg_fence_client.so.$version" "$(readlink "$S/lib/libpg_fence_client.so")"
check "static library" "yes" "$([ -s "$S/lib/libpg_fence_client.a" ] && echo yes)"
check "headers under include/pg_fence" \
	"$(cd include/pg_fence && ls *.hpp | sort | tr '\n' ' ')" \
	"$(cd "$S/include/pg_fence" && ls | sort | tr '\n' ' ')"
check "nothing else under include" "pg_fence" "$(ls "$S/include")"
check "pkg-config file" "yes" "$([ -f "$S/lib/pkgconfig/pg_fence.pc" ] && echo yes)"
check "CMake package" "pg_fenceConfig.cmake pg_fenceConfigVersion.cmake" \
	"$(cd "$S/lib/cmake/pg_fence" && ls | tr '\n' ' ' | sed 's/ $//')"
check "nothing outside usr/local" "usr/local" "$(cd "$T/stage" && find . -mindepth 2 -maxdepth 2 | sed 's|^\./||')"
# The staged .pc names the final prefix, not the staging directory.
check "staged pg_fence.pc prefix" "prefix=/usr/local" "$(grep '^prefix=' "$S/lib/pkgconfig/pg_fence.pc")"
# The pg_fence command links the static library: it runs wherever the client is.
check "pg_fence command does not need the shared client library" "0" \
	"$(readelf -d src/cli/pg_fence | grep -c 'NEEDED.*libpg_fence_client')"
mkdir -p "$T/un"
cp -a "$T/stage/." "$T/un/"
make -s --no-print-directory uninstall-client CLIENT_PREFIX=/usr/local DESTDIR="$T/un" >"$T/uninstall.log" 2>&1 ||
	{ echo "make uninstall-client failed:"; cat "$T/uninstall.log"; fail=1; }
check "uninstall-client leaves no file" "" "$(cd "$T/un" && find . ! -type d)"

# --- 2. pkg-config -----------------------------------------------------------
cflags=$(pkg-config --cflags pg_fence)
check "pkg-config finds the private prefix" "$P/lib/pkgconfig/pg_fence.pc" \
	"$(pkg-config --path pg_fence 2>&1)"
check "pkg-config version" "$version" "$(pkg-config --modversion pg_fence)"
check "pkg-config Cflags set no -std=" "" "$(grep -o -- '-std=[^ ]*' <<<"$cflags")"
check "pkg-config requires libpqxx" "libpqxx >= 6.4" "$(pkg-config --print-requires pg_fence)"
# Which client.hpp the compiler takes (stale copies elsewhere must not win).
hdr=$(g++ -std=c++17 $cflags -M examples/session_lock.cpp 2>&1 | tr ' \\' '\n\n' | grep 'pg_fence/client\.hpp$')
check "header taken from the installed copy" "$P/include/pg_fence/client.hpp" "$hdr"
# C++20 through pkg-config stays C++20.
printf '#include <pg_fence/client.hpp>\nstatic_assert(__cplusplus >= 202002L, "not C++20");\nint main() { return fence::client_version()[0] ? 0 : 1; }\n' >"$T/cxx20.cpp"
if g++ -std=c++20 $CXXWARN $cflags -o "$T/cxx20" "$T/cxx20.cpp" $(pkg-config --libs pg_fence) >"$T/cxx20.log" 2>&1; then
	check "C++20 program with pkg-config flags runs" "0" "$(LD_LIBRARY_PATH=$P/lib "$T/cxx20"; echo $?)"
else
	echo "not ok - C++20 program with pkg-config flags builds"; cat "$T/cxx20.log"; fail=1
fi

# build_make DIR [STATIC=1]: examples/Makefile into DIR
build_make() {
	local dir=$1
	shift
	mkdir -p "$dir"
	make -s --no-print-directory -C "$dir" -f "$ROOT/examples/Makefile" VPATH="$ROOT/examples" \
		CXXFLAGS="-std=c++17 -O1 $CXXWARN" "$@" >"$dir/build.log" 2>&1
}

# --- 3. CMake ----------------------------------------------------------------
# build_cmake DIR ARGS...: examples/CMakeLists.txt into DIR, found in the staged tree
build_cmake() {
	local dir=$1
	shift
	cmake -S examples -B "$dir" -DCMAKE_PREFIX_PATH="$S" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
		-DCMAKE_CXX_FLAGS="$CXXWARN" "$@" >"$dir.log" 2>&1 &&
		cmake --build "$dir" >>"$dir.log" 2>&1
}

# --- 4. runs -------------------------------------------------------------------
# run_examples LABEL DIR LIBKIND: runs both examples built in DIR and checks
# their output and the library they were linked with (shared/static).
run_examples() {
	local label=$1 dir=$2 kind=$3 out rc t1 t2 s1 s2 needed
	for prog in lease_fenced_update session_lock; do
		needed=$(readelf -d "$dir/$prog" 2>/dev/null | grep -c 'NEEDED.*libpg_fence_client')
		if [ "$kind" = shared ]; then
			check "$label: $prog needs libpg_fence_client.so.$soversion" "1" \
				"$(readelf -d "$dir/$prog" | grep -c "NEEDED.*\[libpg_fence_client\.so\.$soversion\]")"
		else
			check "$label: $prog has the static library in it" "0" "$needed"
		fi
	done

	out=$("$dir/lease_fenced_update" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/    [$label] /"
	check "$label: lease_fenced_update exit status" "0" "$rc"
	check "$label: client version" "pg_fence client $version" "$(sed -n 1p <<<"$out")"
	t1=$(sed -n 's/^lease example-job: token \([0-9]*\)$/\1/p' <<<"$out")
	t2=$(sed -n 's/^lease example-job again: token \([0-9]*\)$/\1/p' <<<"$out")
	check "$label: tokens printed, the second higher" "yes" \
		"$([ -n "$t1" ] && [ -n "$t2" ] && [ "$t2" -gt "$t1" ] && echo yes)"
	check "$label: first holder's write" "write with token $t1: applied" "$(sed -n 3p <<<"$out")"
	check "$label: second holder's write" "write with token $t2: applied" "$(sed -n 5p <<<"$out")"
	check "$label: old token's write rejected" "old holder: write with token $t1: stale" "$(sed -n 6p <<<"$out")"
	check "$label: the row keeps the second holder's write" "$t2|written by the second holder" \
		"$(q -c "SELECT fence, state FROM example_jobs WHERE id = 1")"
	check "$label: no lease left behind" "0" \
		"$(q -c "SELECT count(*) FROM fence.leases WHERE name = 'example-job' AND expires_at > clock_timestamp()")"

	out=$("$dir/session_lock" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/    [$label] /"
	check "$label: session_lock exit status" "0" "$rc"
	s1=$(sed -n 's/^session 1 holds example-lock with token \([0-9]*\)$/\1/p' <<<"$out")
	s2=$(sed -n 's/^session 2 holds example-lock with token \([0-9]*\)$/\1/p' <<<"$out")
	check "$label: session 2 finds it busy" "session 2 try_acquire: busy" "$(sed -n 2p <<<"$out")"
	check "$label: session 2 then gets a higher token" "yes" \
		"$([ -n "$s1" ] && [ -n "$s2" ] && [ "$s2" -gt "$s1" ] && echo yes)"
	check "$label: the session lock's token beats the leases' (one sequence)" "yes" \
		"$([ -n "$t2" ] && [ -n "$s1" ] && [ "$s1" -gt "$t2" ] && echo yes)"
}

# pkg-config, shared library (found at run time through LD_LIBRARY_PATH:
# the private prefix is not in the dynamic linker's cache)
if build_make "$T/make-shared"; then
	LD_LIBRARY_PATH=$P/lib run_examples "pkg-config shared" "$T/make-shared" shared
	check "pkg-config shared: library resolved in the private prefix" "$P/lib/libpg_fence_client.so.$soversion" \
		"$(LD_LIBRARY_PATH=$P/lib ldd "$T/make-shared/session_lock" | awk '/libpg_fence_client/ { print $3 }')"
else
	echo "not ok - examples/Makefile (shared)"; cat "$T/make-shared/build.log"; fail=1
fi

# pkg-config, static library
if build_make "$T/make-static" STATIC=1; then
	run_examples "pkg-config static" "$T/make-static" static
else
	echo "not ok - examples/Makefile STATIC=1"; cat "$T/make-static/build.log"; fail=1
fi

# CMake, shared (pg_fence::client); the build tree's RUNPATH finds the staged library
if build_cmake "$T/cmake-shared"; then
	run_examples "cmake shared" "$T/cmake-shared" shared
	check "cmake shared: library resolved in the staged tree" "$S/lib/libpg_fence_client.so.$soversion" \
		"$(ldd "$T/cmake-shared/session_lock" | awk '/libpg_fence_client/ { print $3 }')"
	check "cmake: include directory from the staged tree" "1" \
		"$(grep -c -- "-isystem $S/include " "$T/cmake-shared/compile_commands.json" | sed 's/^[1-9][0-9]*$/1/')"
else
	echo "not ok - CMake build (shared)"; cat "$T/cmake-shared.log"; fail=1
fi

# How many programs examples/CMakeLists.txt builds (its foreach list).
n_examples=$(sed -n 's/^foreach(example \(.*\))$/\1/p' examples/CMakeLists.txt | wc -w)

# CMake, static (pg_fence::client_static), C++20
if build_cmake "$T/cmake-static20" -DPG_FENCE_EXAMPLES_STATIC=ON -DCMAKE_CXX_STANDARD=20; then
	check "cmake C++20: every compile is C++20" "$n_examples 0" \
		"$(grep -c -E -- '-std=(gnu|c)\+\+20' "$T/cmake-static20/compile_commands.json") $(grep -c -E -- '-std=(gnu|c)\+\+17' "$T/cmake-static20/compile_commands.json")"
	run_examples "cmake static C++20" "$T/cmake-static20" static
else
	echo "not ok - CMake build (static, C++20)"; cat "$T/cmake-static20.log"; fail=1
fi

# A project that asks for C++14 gets C++17: cxx_std_17 is the library's
# minimum (configure only: the compile command is what is checked).
if cmake -S examples -B "$T/cmake-14" -DCMAKE_PREFIX_PATH="$S" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
	-DCMAKE_CXX_STANDARD=14 >"$T/cmake-14.log" 2>&1; then
	check "cmake C++14 project raised to C++17" "$n_examples" \
		"$(grep -c -E -- '-std=(gnu|c)\+\+17' "$T/cmake-14/compile_commands.json")"
else
	echo "not ok - CMake configure (C++14)"; cat "$T/cmake-14.log"; fail=1
fi

# find_package with a version the installation does not satisfy fails.
mkdir -p "$T/ver"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(v CXX)\nfind_package(pg_fence 9.0 CONFIG REQUIRED)\n' \
	>"$T/ver/CMakeLists.txt"
check "find_package(pg_fence 9.0) refused" "fails" \
	"$(cmake -S "$T/ver" -B "$T/ver/b" -DCMAKE_PREFIX_PATH="$S" >/dev/null 2>&1 && echo passes || echo fails)"

exit "$fail"
