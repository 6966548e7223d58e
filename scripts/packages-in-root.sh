#!/usr/bin/env bash
# packages-in-root.sh - the install test of pg_fence's Debian packages, run
# by scripts/test-packages.sh inside a clean Debian 12 root (as root, in the
# work directory it prepared: debs/, previous/, src/ with the tests,
# examples/).  Each check prints "ok: ..." or "FAILED: ..."; the exit status
# is the number of failures (0: all passed).
#
# Usage: packages-in-root.sh PREV_VERSION VERSION
set -uo pipefail
PREV=$1 VERSION=$2
WORK=$(pwd)
export DEBIAN_FRONTEND=noninteractive
failures=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
die() { bad "$*"; exit "$failures"; }
apt_install() { apt-get install -y -q -o Dpkg::Options::=--force-confold "$@"; }
as_pg() { runuser -u postgres -- "$@"; }
# psql_in CLUSTER SQL: one value, no alignment, as the postgres superuser.
psql_in() { as_pg psql -X -At -v ON_ERROR_STOP=1 --cluster "$PGV/$1" -d postgres -c "$2"; }

clusters=()
cleanup() {
	local c
	for c in ${clusters[@]+"${clusters[@]}"}; do
		pg_ctlcluster "$PGV" "$c" stop -m immediate >/dev/null 2>&1 || true
	done
}
trap cleanup EXIT

# new_cluster NAME PRELOAD: a cluster on the Unix socket only.
new_cluster() {
	local name=$1 preload=$2
	pg_createcluster "$PGV" "$name" -- --auth-local=peer >/dev/null || return 1
	clusters+=("$name")
	{
		echo "listen_addresses = ''"
		echo "max_prepared_transactions = 10"
		[ -z "$preload" ] || echo "shared_preload_libraries = '$preload'"
	} >>"/etc/postgresql/$PGV/$name/postgresql.conf" || return 1
	pg_ctlcluster "$PGV" "$name" start
}

mapfile -t debs < <(ls debs/*.deb)
[ ${#debs[@]} -gt 0 ] || die "no .deb in $WORK/debs"
mapfile -t ours < <(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done)
ext_pkg=$(printf '%s\n' "${ours[@]}" | grep -E '^postgresql-[0-9]+-pg-fence$' | head -n 1)
[ -n "$ext_pkg" ] || die "no postgresql-NN-pg-fence among ${ours[*]}"
PGV=${ext_pkg#postgresql-}
PGV=${PGV%-pg-fence}
echo "packages: ${ours[*]} (PostgreSQL $PGV)"

apt-get update -q >/dev/null || die "apt-get update"
dpkg-query -W -f '${Package}\n' | sort >"$WORK/before.txt"

# --- the previous release, in use ------------------------------------------
# All its packages, as a user of it has them: the extension, the command,
# the client library and its -dev package.
mapfile -t prev_debs < <(ls previous/*_"$PREV"-*.deb 2>/dev/null)
prev_deb=$(ls previous/"$ext_pkg"_"$PREV"-*.deb 2>/dev/null | head -n 1)
prev_pkgs=()
if [ -n "$prev_deb" ]; then
	mapfile -t prev_pkgs < <(for d in "${prev_debs[@]}"; do dpkg-deb -f "$d" Package; done)
	apt_install "${prev_debs[@]/#/./}" >"$WORK/apt-previous.log" 2>&1 ||
		{ cat "$WORK/apt-previous.log"; die "apt-get install ${prev_debs[*]/#/./}"; }
	ok "apt-get install ${prev_debs[*]/#/./}"
	new_cluster up pg_fence || die "a cluster with the previous release"
	psql_in up "CREATE EXTENSION pg_fence" >/dev/null
	check "CREATE EXTENSION pg_fence with the previous package ($PREV)" \
		test "$(psql_in up "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")" = "$PREV"
	check "a session lock with the previous package" \
		test "$(psql_in up "SELECT fence.lock('upgrade-test') > 0")" = t
	prev_lease=$(psql_in up "SELECT fence.lease_acquire('upgrade-held', interval '10 minutes')")
	check "a lease with the previous package (token $prev_lease)" grep -Eq '^[0-9]+$' <<<"$prev_lease"
	check "pg_fence --version of the previous package says $PREV" \
		test "$(pg_fence --version 2>&1)" = "pg_fence $PREV"
else
	echo "not tested: no $PREV package (scripts/test-packages.sh's previous step): the upgrade starts from CREATE EXTENSION pg_fence VERSION '$PREV'"
fi

# --- install ---------------------------------------------------------------
if apt_install "${debs[@]/#/./}" >"$WORK/apt-install.log" 2>&1; then
	ok "apt-get install ${debs[*]/#/./}"
else
	cat "$WORK/apt-install.log"
	die "apt-get install of the packages"
fi
dpkg-query -W -f '${Package}\n' | sort >"$WORK/after.txt"
# Every package that came with ours is Debian's: apt knows it from
# deb.debian.org (the root's only sources).
foreign=()
while read -r p; do
	printf '%s\n' "${ours[@]}" ${prev_pkgs[@]+"${prev_pkgs[@]}"} | grep -qx "$p" && continue
	# (The whole output first: grep -q closing the pipe early would fail
	# apt-cache with SIGPIPE under pipefail.)
	policy=$(apt-cache policy "$p")
	grep -q 'deb\.debian\.org' <<<"$policy" || foreign+=("$p")
done < <(comm -13 "$WORK/before.txt" "$WORK/after.txt")
check "only Debian packages pulled in besides ours ($(comm -13 "$WORK/before.txt" "$WORK/after.txt" | wc -l) new; not from Debian: ${foreign[*]:-none})" \
	test ${#foreign[@]} -eq 0
for p in "${ours[@]}"; do
	check "$p $(dpkg-query -W -f '${Version}' "$p") installed" \
		test "$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null)" = installed
done
# The previous release's packages that are not ours any more (its client
# library, named after its soname) stay installed beside the new ones, so
# programs linked against them keep running (debian/README.source).
old_only=()
for p in ${prev_pkgs[@]+"${prev_pkgs[@]}"}; do
	printf '%s\n' "${ours[@]}" | grep -qx "$p" || old_only+=("$p")
done
for p in ${old_only[@]+"${old_only[@]}"}; do
	check "$p $(dpkg-query -W -f '${Version}' "$p") (the previous release's) still installed beside the new packages" \
		test "$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null)" = installed
	# Its soname link (libX.so.0.2; not the file libX.so.0.2.0 it names).
	for f in $(dpkg -L "$p" | grep -E '/lib[^/]*\.so\.[0-9]+(\.[0-9]+)?$'); do
		check "$(basename "$f") (of $p) still in the dynamic linker's cache" \
			sh -c "/sbin/ldconfig -p | grep -qF '$(basename "$f") '"
	done
done

# --- the documentation --------------------------------------------------------
for p in "${ours[@]}"; do
	[ "$p" = "${p#libpg-fence-client0}" ] || continue # the runtime library: README.md only
	check "$p ships the reference: /usr/share/doc/$p/docs/cli.md, README.md" \
		test -f "/usr/share/doc/$p/docs/cli.md" -a -f "/usr/share/doc/$p/README.md"
done
# Every file pg_fence(1) names (SEE ALSO) is there.
man_refs=$(zcat /usr/share/man/man1/pg_fence.1.gz 2>/dev/null | grep -o '/usr/share/doc/[^ ,]*')
missing=()
for f in $man_refs; do [ -f "$f" ] || missing+=("$f"); done
check "pg_fence(1)'s SEE ALSO files exist (${man_refs//$'\n'/ }; missing: ${missing[*]:-none})" \
	test -n "$man_refs" -a ${#missing[@]} -eq 0

# --- upgrade -----------------------------------------------------------------
if [ -n "$prev_deb" ]; then
	# The operator's steps (docs/install.md): restart (the preloaded
	# library is the new one from now on), then ALTER EXTENSION in each
	# database.
	pg_ctlcluster "$PGV" up restart
	check "ALTER EXTENSION pg_fence UPDATE ($PREV to $VERSION)" \
		psql_in up "ALTER EXTENSION pg_fence UPDATE"
	check "the lease taken with the previous package renews after the update" \
		test "$(psql_in up "SELECT fence.lease_renew('upgrade-held', $prev_lease, interval '1 minute')")" = t
else
	new_cluster up pg_fence || die "a cluster for the upgrade"
	psql_in up "CREATE EXTENSION pg_fence VERSION '$PREV'" >/dev/null
	check "ALTER EXTENSION pg_fence UPDATE (from CREATE EXTENSION VERSION '$PREV')" \
		psql_in up "ALTER EXTENSION pg_fence UPDATE"
fi
check "extversion $VERSION after the update" \
	test "$(psql_in up "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")" = "$VERSION"
check "a lease after the update" \
	test "$(psql_in up "SELECT fence.lease_acquire('upgrade-lease', interval '30 s') > 0")" = t

# --- a fresh cluster, without the preload ---------------------------------------
if new_cluster fresh ""; then
	check "CREATE EXTENSION pg_fence in a fresh cluster (no preload)" psql_in fresh "CREATE EXTENSION pg_fence"
	check "extversion $VERSION in the fresh cluster" \
		test "$(psql_in fresh "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")" = "$VERSION"
	# What docs/install.md's "Remove" says stays: the cluster-wide role
	# fence_admin, and how it goes.
	psql_in fresh "DROP EXTENSION pg_fence" >/dev/null
	check "fence_admin stays after DROP EXTENSION (docs/install.md, Remove)" \
		test "$(psql_in fresh "SELECT count(*) FROM pg_roles WHERE rolname = 'fence_admin'")" = 1
	check "DROP ROLE fence_admin after DROP EXTENSION" psql_in fresh "DROP ROLE fence_admin"
else
	bad "a fresh cluster"
fi

# --- the command -------------------------------------------------------------
check "pg_fence --version says $VERSION ($(pg_fence --version 2>&1))" \
	test "$(pg_fence --version 2>&1)" = "pg_fence $VERSION"
port=$(pg_conftool -s "$PGV" up show port)
out=$(as_pg pg_fence run --session -d "port=$port dbname=postgres" cli-test -- sh -c 'echo "token=$FENCE_TOKEN"' 2>&1)
check "pg_fence run --session ... prints a token ($out)" grep -Eq '^token=[0-9]+$' <<<"$out"

# --- the regression suites against the installed package ----------------------
# What debian/tests/control needs, then debian/tests/installcheck, as
# autopkgtest runs it: in the source tree, against the installed package.
apt_install make "postgresql-server-dev-$PGV" >"$WORK/apt-test-deps.log" 2>&1 || bad "apt-get install make postgresql-server-dev-$PGV"
# pg_virtualenv makes its cluster on the default port, whose socket in
# /var/run/postgresql the test clusters would hold: they stop meanwhile.
chown -R postgres: "$WORK/src"
for c in "${clusters[@]}"; do pg_ctlcluster "$PGV" "$c" stop; done
if (cd "$WORK/src" && debian/tests/installcheck) >"$WORK/installcheck.log" 2>&1; then
	ok "debian/tests/installcheck: $(grep -Ec '^(ok|test) .*(ok|\.\.\. ok)' "$WORK/installcheck.log" || true) tests, $(grep -E 'All [0-9]+ tests passed' "$WORK/installcheck.log" | tr '\n' ' ')"
else
	tail -n 60 "$WORK/installcheck.log"
	bad "debian/tests/installcheck (regression and isolation suites)"
fi
for c in "${clusters[@]}"; do pg_ctlcluster "$PGV" "$c" start; done

# --- a C++ program against the -dev package --------------------------------------
apt_install g++ cmake >"$WORK/apt-cxx.log" 2>&1 || bad "apt-get install g++ cmake"
chown -R postgres: "$WORK/examples"
check "pkg-config pg_fence: $(pkg-config --modversion pg_fence 2>&1)" \
	test "$(pkg-config --modversion pg_fence 2>&1)" = "$VERSION"
check "examples built with pkg-config (examples/Makefile)" \
	as_pg make -C "$WORK/examples" -s
check "examples/session_lock (pkg-config build) against the cluster" \
	as_pg "$WORK/examples/session_lock" "port=$port dbname=postgres"
check "examples built with CMake find_package(pg_fence)" \
	as_pg sh -c "cmake -S '$WORK/examples' -B '$WORK/examples/build' >/dev/null && cmake --build '$WORK/examples/build' >/dev/null"
check "examples/build/lease_fenced_update (CMake build) against the cluster" \
	as_pg "$WORK/examples/build/lease_fenced_update" "port=$port dbname=postgres"
check "the CMake build links libpg_fence_client.so (not the static library)" \
	sh -c "ldd '$WORK/examples/build/session_lock' | grep -q 'libpg_fence_client\.so'"

# --- remove ------------------------------------------------------------------
cleanup
clusters=()
# Ours, and what is left of the previous release (its client library).
remove=("${ours[@]}" ${old_only[@]+"${old_only[@]}"})
for p in "${remove[@]}"; do dpkg -L "$p"; done | sort -u >"$WORK/files.txt"
if apt-get remove -y -q "${remove[@]}" >"$WORK/apt-remove.log" 2>&1; then
	ok "apt-get remove ${remove[*]}"
else
	cat "$WORK/apt-remove.log"
	bad "apt-get remove"
fi
left=()
for p in "${remove[@]}"; do
	s=$(dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null)
	[ -z "$s" ] || [ "$s" = "un " ] || left+=("package $p ($s)")
done
while read -r f; do
	[ -n "$f" ] && [ ! -d "$f" ] && { [ -e "$f" ] || [ -L "$f" ]; } && left+=("$f")
done <"$WORK/files.txt"
# And no file named after us anywhere outside the clusters' data (the
# user's, kept by design) and this work directory.
while read -r f; do left+=("$f"); done < <(find / -xdev \( -path "$WORK" -o -path /var/lib/postgresql -o -path /proc \) -prune \
	-o \( -name '*pg_fence*' -o -name '*pg-fence*' \) -print 2>/dev/null)
check "nothing of ours left after apt-get remove (${left[*]:-nothing})" test ${#left[@]} -eq 0

# --- PGXN: the distribution zip, installed by pgxnclient ----------------------
zip=$(ls "$WORK"/pg_fence-*.zip 2>/dev/null | head -n 1)
if [ -n "$zip" ]; then
	# What building from source needs (docs/install.md), from Debian.
	apt_install pgxnclient make g++ libpqxx-dev libpq-dev "postgresql-server-dev-$PGV" \
		>"$WORK/apt-pgxn.log" 2>&1 || bad "apt-get install pgxnclient and the build dependencies"
	if (cd "$WORK" && pgxn install --make make --unstable --pg_config "/usr/lib/postgresql/$PGV/bin/pg_config" \
		"./$(basename "$zip")") >"$WORK/pgxn.log" 2>&1; then
		ok "pgxn install ./$(basename "$zip")"
	else
		tail -n 40 "$WORK/pgxn.log"
		bad "pgxn install ./$(basename "$zip")"
	fi
	if new_cluster pgxn pg_fence; then
		check "CREATE EXTENSION pg_fence after pgxn install (preloaded)" psql_in pgxn "CREATE EXTENSION pg_fence"
		check "extversion $VERSION after pgxn install" \
			test "$(psql_in pgxn "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")" = "$VERSION"
	else
		bad "a cluster for the PGXN install"
	fi
	check "pg_fence --version after pgxn install (the /usr/local/bin link)" \
		test "$(/usr/local/bin/pg_fence --version 2>&1)" = "pg_fence $VERSION"
	cleanup
else
	echo "not tested: PGXN (no --dist zip)"
fi

echo "$failures failure(s)"
exit "$failures"
