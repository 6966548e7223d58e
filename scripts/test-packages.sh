#!/usr/bin/env bash
# test-packages.sh - build pg_fence's Debian packages and test them on a
# clean Debian 12 system, as a user would install them (make test-packages).
#
# Usage: scripts/test-packages.sh [--build-only] [--dist ZIP]
#
# Steps (each timed; the last line is "N passed, N failed"):
#   build     dpkg-buildpackage -us -uc -b (debian/) in a copy of the
#             checkout (its tracked and untracked, not ignored, files) under
#             $OUT/src, with the tests: debian/rules' override_dh_pgxs_test
#             (the regression and isolation suites against the staged
#             package, in pg_virtualenv's cluster; its time is printed).
#             Then: no tracked file modified by the build (debian/control
#             as committed), every other file it left ignored by .gitignore.
#   dist      with --dist ZIP: the zip holds tracked files only (and the
#             assembled install scripts): no debian/<package>/ tree.
#   lintian   lintian --pedantic -I on the .changes; an error (E:) fails,
#             warnings are listed (debian/README.source justifies them).
#   previous  the previous release's packages (PREV_VERSION, 0.2.0: the
#             tag v0.2.0, else the last commit whose pg_fence.control says
#             0.2.0), built from git with that commit's own debian/ (without
#             its build-time tests), for the upgrade test.  Without the
#             history (a shallow clone) the upgrade is tested from CREATE
#             EXTENSION pg_fence VERSION '0.2.0' instead, and the step says
#             so.  Built once per commit: the packages are kept in
#             ${FENCE_PG_CACHE:-/var/cache/pg_fence}/previous-VERSION-COMMIT.
#   root      a clean Debian 12 (debootstrap --variant=minbase bookworm,
#             bookworm-updates, bookworm-security): made once and kept as a
#             tarball in ${FENCE_PG_CACHE:-/var/cache/pg_fence}, unpacked
#             afresh for every run.  Only the .debs, an export of the source
#             (what autopkgtest runs debian/tests from; nothing built) and
#             examples/ are copied in: no build tree.
#   install   scripts/packages-in-root.sh, in that root (scripts/in-chroot.sh):
#             apt-get install of the previous release's packages, a cluster
#             using them, apt-get install ./*.deb over them (only Debian
#             dependencies pulled; the previous client library stays beside
#             the new one), restart and ALTER EXTENSION pg_fence UPDATE, CREATE EXTENSION
#             in a fresh cluster, the regression and isolation suites against
#             the installed package (debian/tests/installcheck), pg_fence
#             --version and a run, a C++ program built with pkg-config and
#             with CMake find_package(pg_fence), apt-get remove leaving
#             nothing of ours; then, with --dist ZIP (make dist's
#             pg_fence-VERSION.zip), pgxn install ./ZIP (Debian's pgxnclient)
#             and CREATE EXTENSION in a fresh cluster.
#   trixie    the same dpkg-buildpackage in the Debian 13 chroot that
#             scripts/provision-trixie.sh makes (made here if missing):
#             postgresql-17-pg-fence and the others, built and linted with
#             Debian 13's tools (build dependencies installed in it with
#             install-deps.sh --packages).  FENCE_PACKAGES_TRIXIE=0 skips it.
#
# --build-only stops after lintian (make deb).  Output: $OUT (default
# build/packages in the checkout): the .debs, lintian.txt, a log per step.
# FENCE_PACKAGES_KEEP=1 keeps the root ($OUT/root).  Needs root
# (debootstrap, chroot) and the packages of install-deps.sh --packages.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=${FENCE_PACKAGES_OUT:-$TOP/build/packages}
CACHE=${FENCE_PG_CACHE:-/var/cache/pg_fence}
MIRROR=http://deb.debian.org/debian
SECURITY_MIRROR=http://deb.debian.org/debian-security
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# The previous release: the upgrade test starts from its packages.
PREV_VERSION=0.2.0
# Bump when the way the clean root is made changes.
ROOT_VERSION=2

build_only=false
dist=
while [ $# -gt 0 ]; do
	case $1 in
		--build-only) build_only=true; shift ;;
		--dist) [ $# -ge 2 ] || { echo "usage: $0 [--build-only] [--dist ZIP]" >&2; exit 2; }
			dist=$(realpath -e -- "$2"); shift 2 ;;
		*) echo "usage: $0 [--build-only] [--dist ZIP]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "test-packages: needs root (debootstrap, chroot)" >&2; exit 1; }
PATH=$PATH:/usr/sbin:/sbin

passed=0 failed=0
say() { echo "test-packages: $*" >&2; }
# step NAME COMMAND...: runs COMMAND, its output in $OUT/NAME.log; prints
# the time it took and counts it; its exit status goes to STEP_RC (step
# itself returns 0).  Call it as a plain command, never in an if, || or &&
# list: bash ignores errexit in everything such a list runs, subshells that
# set -e again included, so a command failing in the middle of a step would
# not fail it.
STEP_RC=0
step() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	say "$name ..."
	set +e
	# A subshell with errexit of its own: any failing command fails the step.
	(set -e; "$@") >"$OUT/$name.log" 2>&1
	rc=$?
	set -e
	STEP_RC=$rc
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		say "$name: ok ($(($(date +%s) - t0)) s)"
	else
		failed=$((failed + 1))
		say "$name: FAILED (exit $rc, $(($(date +%s) - t0)) s); the log's tail ($OUT/$name.log):"
		tail -n 40 "$OUT/$name.log" >&2
	fi
	return 0
}
finish() {
	echo
	echo "Debian packages:"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

rm -rf "$OUT"
mkdir -p "$OUT/src" "$OUT/debs" "$OUT/previous"
VERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$TOP/pg_fence.control")

# --- build -----------------------------------------------------------------
build() {
	local src=$OUT/src/pg-fence-$VERSION t0 t1
	mkdir -p "$src"
	(cd "$TOP" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
	# The tests run as root here (CI): pg_buildext installcheck sets NONROOT,
	# so pg_virtualenv makes its throwaway cluster in a temporary directory
	# owned by postgres, and the server (running as postgres) loads the
	# staged library from debian/postgresql-NN-pg-fence: readable by all.
	chmod -R a+rX "$OUT/src"
	# The tracked files' checksums before the build (checked after it).
	(cd "$TOP" && git ls-files -z) | (cd "$src" && xargs -0 md5sum 2>/dev/null) >"$OUT/tracked.md5" || true
	# Each output line stamped with the time, to measure dh_pgxs_test.
	(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b) 2>&1 |
		while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done
	cp "$OUT"/src/*.deb "$OUT/debs/"
	rm -f "$OUT"/debs/*-dbgsym_*.deb
	ls -l "$OUT/debs"
	# debian/rules' override_dh_pgxs_test ran (the regression and isolation
	# suites against the staged package), and how long it took: from its
	# start to the next dh command.
	grep -q 'override_dh_pgxs_test' "$OUT/build.log"
	t0=$(awk '/override_dh_pgxs_test/ { print $1; exit }' "$OUT/build.log")
	t1=$(awk -v t0="$t0" 'f && / +dh_[a-z_]+/ { print $1; exit } /override_dh_pgxs_test/ { f = 1 }' "$OUT/build.log")
	echo "dh_pgxs_test (pg_buildext installcheck against the staged package): $((${t1:-$t0} - t0)) s" |
		tee "$OUT/pgxs_test-time.txt"
	# The build in the copy left the tracked files as they were:
	# debian/control is the committed one (made for Debian 12's PostgreSQL
	# 15; PG_UPDATECONTROL only remakes it for other majors, see
	# debian/README.source).
	local changed
	changed=$(cd "$src" && md5sum --quiet -c "$OUT/tracked.md5" 2>&1) ||
		{ echo "the build modified tracked files:"; echo "$changed"; return 1; }
	echo "the build left every tracked file unmodified"
	# Everything else the build left in the copy is ignored by .gitignore,
	# so that neither git nor make dist (tracked files only) picks it up
	# after a dpkg-buildpackage in a checkout.
	local unignored
	unignored=$(comm -23 <(cd "$src" && find . \( -type f -o -type l \) -printf '%P\n' | sort) \
		<(cd "$TOP" && git ls-files -co --exclude-standard | sort) |
		git -C "$TOP" check-ignore --no-index --stdin -v -n | sed -n 's/^::\t//p')
	[ -z "$unignored" ] || { echo "build products .gitignore misses:"; echo "$unignored"; return 1; }
	echo "every build product is ignored by .gitignore"
}
step build build
[ "$STEP_RC" -eq 0 ] || finish
grep -h '^dh_pgxs_test' "$OUT/pgxs_test-time.txt" >&2 || true

lint() {
	lintian --pedantic -I --tag-display-limit 0 "$OUT"/src/*.changes >"$OUT/lintian.txt"
	cat "$OUT/lintian.txt"
	! grep -q '^E:' "$OUT/lintian.txt"
}
step lintian lint
grep -E '^[EW]:' "$OUT/lintian.txt" >&2 || true
$build_only && finish

# --- the PGXN zip: the tracked files, nothing a build left -------------------
dist_check() {
	local entries extra
	entries=$(unzip -Z1 "$dist" | grep -v '/$' | sed 's|^[^/]*/||' | sort)
	echo "$(wc -l <<<"$entries") files in $(basename "$dist")"
	if grep -E '^debian/[^/]+/' <<<"$entries" | grep -Ev '^debian/(source|tests)/'; then
		echo "debian/<package>/ (or other build) entries in the zip"
		return 1
	fi
	# Every file is tracked, but for the install scripts make-dist assembles.
	extra=$(comm -23 <(echo "$entries") <(cd "$TOP" && git ls-files | sort) | grep -Ev '^sql/pg_fence--[0-9.]+(--[0-9.]+)?\.sql$' || true)
	[ -z "$extra" ] || { echo "untracked files in the zip:"; echo "$extra"; return 1; }
}
if [ -n "$dist" ]; then step dist dist_check; fi

# --- the previous release's packages ---------------------------------------
previous() {
	local rev src=$OUT/previous/pg-fence-$PREV_VERSION
	if rev=$(git -C "$TOP" rev-parse -q --verify "v$PREV_VERSION^{commit}"); then
		:
	elif rev=$(git -C "$TOP" log -1 --format=%H -S"default_version = '$PREV_VERSION'" -- pg_fence.control) &&
		[ -n "$rev" ] && git -C "$TOP" rev-parse -q --verify "$rev^" >/dev/null; then
		# The commit that changed it away from PREV_VERSION: its parent.
		rev=$(git -C "$TOP" rev-parse "$rev^")
	else
		echo "no $PREV_VERSION in the git history (shallow clone?): the upgrade is tested from CREATE EXTENSION ... VERSION '$PREV_VERSION'"
		return 0
	fi
	echo "previous release $PREV_VERSION: commit $rev"
	# Its packages never change: built once per commit and kept in $CACHE
	# (a copy of the checkout's history gives the same commit).
	local cached=$CACHE/previous-$PREV_VERSION-$rev
	if ls "$cached"/*_"$PREV_VERSION"-*.deb >/dev/null 2>&1; then
		echo "reusing the packages built before, $cached"
		cp "$cached"/*.deb "$OUT/previous/"
		ls -l "$OUT/previous"
		return 0
	fi
	mkdir -p "$src"
	git -C "$TOP" archive "$rev" | tar -xf - -C "$src"
	grep -q "default_version = '$PREV_VERSION'" "$src/pg_fence.control"
	# Its own debian/ (every release since 0.2.0 has one), its changelog
	# naming that version.
	test "$(cd "$src" && dpkg-parsechangelog -S Version)" = "$PREV_VERSION-1"
	(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" DEB_BUILD_PROFILES=nocheck \
		dpkg-buildpackage -us -uc -b)
	rm -rf "$src" "$OUT"/previous/*-dbgsym_*.deb "$OUT"/previous/*.changes "$OUT"/previous/*.buildinfo
	ls -l "$OUT/previous"
	mkdir -p "$cached.tmp"
	cp "$OUT"/previous/*.deb "$cached.tmp/"
	rm -rf "$cached"
	mv "$cached.tmp" "$cached"
}
step previous previous

# --- the clean Debian 12 root ----------------------------------------------
BASE=$CACHE/bookworm-base.tar
base_stamp() { printf 'pg_fence clean root %s bookworm %s %s\n' "$ROOT_VERSION" "$MIRROR" "$SECURITY_MIRROR"; }
make_base() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/bookworm-base.lock"
	flock 9
	if [ -f "$BASE" ] && [ "$(cat "$BASE.stamp" 2>/dev/null)" = "$(base_stamp)" ]; then
		echo "reusing $BASE"
		return 0
	fi
	local tmp
	tmp=$(mktemp -d "$CACHE/bookworm-base.XXXXXX")
	unshare --mount --propagation private -- \
		debootstrap --variant=minbase --keyring="$KEYRING" bookworm "$tmp" "$MIRROR"
	# No service is ever started (postgresql's postinst would try); no
	# "main" cluster either (the test makes its own).
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	mkdir -p "$tmp/etc/postgresql-common"
	echo "create_main_cluster = false" >"$tmp/etc/postgresql-common/createcluster.conf"
	rm -f "$tmp/etc/apt/sources.list"
	cat >"$tmp/etc/apt/sources.list.d/debian.sources" <<-SRC
		Types: deb
		URIs: $MIRROR
		Suites: bookworm bookworm-updates
		Components: main

		Types: deb
		URIs: $SECURITY_MIRROR
		Suites: bookworm-security
		Components: main
	SRC
	printf '%s\n' 'APT::Install-Recommends "false";' 'Acquire::Languages "none";' \
		>"$tmp/etc/apt/apt.conf.d/90-clean-root"
	rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
	chmod 755 "$tmp"
	tar -C "$tmp" -cf "$BASE.tmp" .
	rm -rf "$tmp"
	mv "$BASE.tmp" "$BASE"
	base_stamp >"$BASE.stamp"
}
step root make_base
[ "$STEP_RC" -eq 0 ] || finish

# --- install test -----------------------------------------------------------
install_test() {
	local root=$OUT/root work=$OUT/work
	rm -rf "$root" "$work"
	mkdir -p "$root" "$work"
	tar -C "$root" -xf "$BASE"
	chmod 755 "$root"
	cp -L --remove-destination /etc/resolv.conf "$root/etc/resolv.conf"
	if ! grep -qw localhost "$root/etc/hosts" 2>/dev/null; then
		printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost\n' >>"$root/etc/hosts"
	fi
	# What the user has: the .debs.  What autopkgtest has: the source's
	# tests.  And a C++ program to build against the -dev package.
	cp -r "$OUT/debs" "$OUT/previous" "$work/"
	# The source, as autopkgtest has it (its tests run there, against the
	# installed package): an export, nothing built.
	mkdir -p "$work/src"
	(cd "$TOP" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work/src"
	cp -r "$work/src/examples" "$work/examples"
	cp "$TOP/scripts/packages-in-root.sh" "$work/"
	[ -z "$dist" ] || cp "$dist" "$work/"
	chmod -R a+rX "$work"
	set +e
	bash "$TOP/scripts/in-chroot.sh" "$root" "$work" bash "$work/packages-in-root.sh" "$PREV_VERSION" "$VERSION"
	local rc=$?
	set -e
	[ -n "${FENCE_PACKAGES_KEEP:-}" ] || rm -rf "$root"
	return $rc
}
step install install_test
grep -E '^(ok|FAILED|not tested)' "$OUT/install.log" >&2 || true

# --- Debian 13: PostgreSQL 17 -------------------------------------------------
trixie() {
	local root=$CACHE/trixie work=$OUT/trixie
	if [ ! -f "$root/.pg_fence-chroot-stamp" ]; then
		root=$(bash "$TOP/scripts/provision-trixie.sh")
	fi
	rm -rf "$work"
	mkdir -p "$work/pg-fence-$VERSION"
	(cd "$TOP" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work/pg-fence-$VERSION"
	bash "$TOP/scripts/in-chroot.sh" "$root" "$work" bash -c "
		set -e
		PG_MAJOR=17 bash pg-fence-$VERSION/scripts/install-deps.sh --packages
		cd pg-fence-$VERSION
		DEB_BUILD_OPTIONS='nocheck parallel=$(nproc)' DEB_BUILD_PROFILES=nocheck dpkg-buildpackage -us -uc -b
		# PG_UPDATECONTROL remade debian/control for PostgreSQL 17 in this
		# copy (debian/README.source); a clone built here would show it
		# modified (git checkout debian/control restores it).
		grep -q '^Package: postgresql-17-pg-fence' debian/control
		cd ..
		lintian --pedantic -I --tag-display-limit 0 *.changes | tee lintian.txt
		ls -l *.deb
		if grep -q '^E:' lintian.txt; then exit 1; fi"
	rm -rf "$work/pg-fence-$VERSION"
}
if [ "${FENCE_PACKAGES_TRIXIE:-1}" != 0 ]; then
	step trixie trixie
	grep -E '^[EW]:' "$OUT/trixie/lintian.txt" >&2 || true
fi
finish
