#!/usr/bin/env bash
# provision-trixie.sh - build (once) a Debian trixie chroot with Debian's
# PostgreSQL 17 and everything pg_fence needs to build and test against it.
#
# Usage: scripts/provision-trixie.sh [--root DIR]
#   --root DIR   where the chroot goes (default
#                ${FENCE_PG_CACHE:-/var/cache/pg_fence}/trixie)
#
# Prints exactly one line on standard output: the chroot's root directory,
# for scripts/in-chroot.sh.  Progress goes to standard error, the commands'
# output to DIR.provision.log beside the chroot; on failure the log's tail is
# printed and the exit status is non-zero.
#
# Why: the project must be tested against PostgreSQL 17, and the only PG 17
# reachable from here is Debian trixie's binary packages.  Trixie packages
# must never be installed on the bookworm host itself, so they go into a
# debootstrap'ed chroot (`debootstrap --variant=minbase trixie`, verified
# with the host's Debian archive keyring).  The trixie suite's Release file
# has no Valid-Until (only trixie-updates and trixie-security have one, and
# the live mirror keeps it a week ahead), so no date workaround is needed.
#
# Idempotent: a finished chroot holds a stamp file naming the suite, mirror
# and package list; when it matches, nothing is done (not even apt-get
# update).  The chroot is built in a temporary directory beside DIR and
# renamed to DIR only once complete, so an interrupted run is never taken for
# a finished one (its leftovers are removed by the next run).  When only the
# package list changed and the chroot lacks some packages of it, they are
# installed in place (apt-get update, install, clean) and listed in a second
# stamp file, the original stamp left as it is: so two checkouts whose lists
# differ (one adds a package) share one chroot instead of rebuilding it in
# turn.  A chroot whose stamp differs otherwise (suite, mirror, build
# version) is rebuilt from scratch and then replaced.  Concurrent runs wait
# for each other (flock).
#
# Inside the chroot: services are never started (policy-rc.d exits 101),
# Debian's postgresql-common creates no "main" cluster (createcluster.conf),
# docs, man pages and translations are not installed, and the apt caches and
# lists are removed afterwards (run apt-get update inside before using apt).
#
# Needs root.  Installs debootstrap on the host (bookworm's own) if missing.
set -euo pipefail

SUITE=trixie
MIRROR=http://deb.debian.org/debian
SECURITY_MIRROR=http://deb.debian.org/debian-security
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
PG_MAJOR=17
# The packages are install-deps.sh's for this major, so that it is a no-op
# inside (make test runs it there).
mapfile -t packages < <(PG_MAJOR=$PG_MAJOR bash "$(dirname "$0")/install-deps.sh" --list)
[ ${#packages[@]} -gt 0 ] || { echo "provision-trixie: no package list from install-deps.sh" >&2; exit 1; }
# Bump when the way the chroot is built changes, to rebuild existing ones.
BUILD_VERSION=1

ROOT=
while [ $# -gt 0 ]; do
	case $1 in
		--root) [ $# -ge 2 ] || { echo "usage: $0 [--root DIR]" >&2; exit 2; }; ROOT=$2; shift 2 ;;
		--root=*) ROOT=${1#--root=}; shift ;;
		*) echo "usage: $0 [--root DIR]" >&2; exit 2 ;;
	esac
done
ROOT=${ROOT:-${FENCE_PG_CACHE:-/var/cache/pg_fence}/trixie}
ROOT=$(realpath -m -- "$ROOT")
[ "$ROOT" != / ] || { echo "provision-trixie: --root must not be /" >&2; exit 2; }
PARENT=$(dirname "$ROOT")
NAME=$(basename "$ROOT")
STAMP=.pg_fence-chroot-stamp
LOG=$PARENT/$NAME.provision.log
HERE=$(cd "$(dirname "$0")" && pwd)

say() { echo "provision-trixie: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount)"

stamp_text() {
	printf 'pg_fence chroot build %s\nsuite %s\nmirror %s\nsecurity %s\npackages %s\n' \
		"$BUILD_VERSION" "$SUITE" "$MIRROR" "$SECURITY_MIRROR" "${packages[*]}"
}

mkdir -p -- "$PARENT"
exec 9>"$PARENT/$NAME.lock"
if ! flock -n 9; then
	say "waiting for another provision of $ROOT to finish"
	flock 9
fi

# remove_tree DIR: rm -rf, but never through a mount (a bind mount of a work
# tree left by a plain chroot) and never while a process runs chrooted in it.
remove_tree() {
	local dir=$1 p root
	[ -e "$dir" ] || return 0
	if awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { found = 1 } END { exit !found }' \
		/proc/self/mountinfo; then
		die "something is mounted under $dir; unmount it, then run again"
	fi
	for p in /proc/[0-9]*; do
		root=$(readlink "$p/root" 2>/dev/null) || continue
		case $root in
			"$dir" | "$dir"/* | "$dir (deleted)")
				die "process ${p#/proc/} runs inside $dir; stop it, then run again" ;;
		esac
	done
	rm -rf --one-file-system -- "$dir"
}

# Leftovers of interrupted runs, and old chroots that were still in use when
# they were replaced.  One that cannot be removed yet is only reported.
for old in "$PARENT/$NAME".tmp.*; do
	[ -e "$old" ] || continue
	say "removing the leftover $old"
	(remove_tree "$old") || true
done

if [ -f "$ROOT/$STAMP" ] && [ "$(cat "$ROOT/$STAMP")" = "$(stamp_text)" ]; then
	echo "$ROOT"
	exit 0
fi

# The same recipe with another package list: add what is missing in place.
# (The stamp's last line is the package list.)
if [ -f "$ROOT/$STAMP" ] && [ "$(sed '$d' "$ROOT/$STAMP")" = "$(stamp_text | sed '$d')" ]; then
	missing=()
	for p in "${packages[@]}"; do
		dpkg-query --admindir="$ROOT/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "$ROOT"
		exit 0
	fi
	say "adding ${missing[*]} to $ROOT"
	printf '\n=== %s: adding %s\n' "$(date -u +%FT%TZ)" "${missing[*]}" >>"$LOG"
	if bash "$HERE/in-chroot.sh" "$ROOT" - sh -c '
			export DEBIAN_FRONTEND=noninteractive
			apt-get update && apt-get install -y --no-install-recommends \
				-o Dpkg::Options::=--force-confold "$@"
			rc=$?
			apt-get clean && rm -rf /var/lib/apt/lists/* && mkdir -p /var/lib/apt/lists/partial
			exit $rc' sh "${missing[@]}" >>"$LOG" 2>&1 </dev/null; then
		printf '%s\n' "${missing[@]}" >>"$ROOT/$STAMP.added"
		echo "$ROOT"
		exit 0
	fi
	say "could not add them (see $LOG); rebuilding the chroot"
fi

if [ -e "$ROOT" ] && [ ! -f "$ROOT/$STAMP" ] && [ -n "$(ls -A -- "$ROOT")" ]; then
	die "$ROOT exists but was not made by this script; remove it or pick another --root"
fi

start=$(date +%s)
: >"$LOG"
TMPROOT=$(mktemp -d "$PARENT/$NAME.tmp.XXXXXX")
chmod 755 "$TMPROOT"	# it is the chroot's /: users other than root need it
done_ok=false
on_exit() {
	local rc=$?
	if ! $done_ok; then
		[ "$rc" -ne 0 ] || rc=1
		say "failed (exit $rc); last lines of $LOG:"
		tail -n 40 "$LOG" >&2 || true
		# Removal is refused if something is still mounted or running there.
		(remove_tree "$TMPROOT") || true
	fi
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# step DESCRIPTION COMMAND [ARGS...]: COMMAND's output goes to the log.
step() {
	local desc=$1
	shift
	say "$desc"
	printf '\n=== %s: %s\n' "$(date -u +%FT%TZ)" "$desc" >>"$LOG"
	"$@" >>"$LOG" 2>&1 </dev/null
}

export DEBIAN_FRONTEND=noninteractive
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
	step "installing debootstrap on the host" \
		sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap'
fi
[ -r "$KEYRING" ] || step "installing debian-archive-keyring on the host" \
	sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends debian-archive-keyring'
PATH=$PATH:/usr/sbin:/sbin

# debootstrap mounts /proc and /sys in the target while it works: in a
# private mount namespace those mounts can never outlive it.
step "debootstrap $SUITE (minbase) into $TMPROOT, a few minutes" \
	unshare --mount --propagation private -- \
	debootstrap --variant=minbase --keyring="$KEYRING" "$SUITE" "$TMPROOT" "$MIRROR"

say "configuring the chroot"
# No service is ever started inside (postgresql's postinst would try).
printf '#!/bin/sh\n# pg_fence chroot: never start services\nexit 101\n' >"$TMPROOT/usr/sbin/policy-rc.d"
chmod 755 "$TMPROOT/usr/sbin/policy-rc.d"
# Must exist before postgresql-17 is installed: no "main" cluster.
mkdir -p "$TMPROOT/etc/postgresql-common"
echo "create_main_cluster = false" >"$TMPROOT/etc/postgresql-common/createcluster.conf"
# Leave out docs, man pages and translations (copyright files are kept).
cat >"$TMPROOT/etc/dpkg/dpkg.cfg.d/01-pg-fence-nodoc" <<'CFG'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
CFG
rm -f "$TMPROOT/etc/apt/sources.list"
cat >"$TMPROOT/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
SRC
printf '%s\n' 'APT::Install-Recommends "false";' 'APT::Install-Suggests "false";' \
	'Acquire::Languages "none";' \
	>"$TMPROOT/etc/apt/apt.conf.d/90-pg-fence"
# Name resolution for apt (debootstrap copied it too, but it may be a symlink).
cp -L --remove-destination /etc/resolv.conf "$TMPROOT/etc/resolv.conf"
if ! grep -qw localhost "$TMPROOT/etc/hosts" 2>/dev/null; then
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >>"$TMPROOT/etc/hosts"
fi

in_chroot() {
	bash "$HERE/in-chroot.sh" "$TMPROOT" - "$@"
}
step "apt-get update (in the chroot)" \
	in_chroot env DEBIAN_FRONTEND=noninteractive apt-get update
step "installing ${packages[*]} (in the chroot), a few minutes" \
	in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	-o Dpkg::Options::=--force-confold "${packages[@]}"
step "cleaning apt caches (in the chroot)" \
	in_chroot sh -c 'apt-get clean && rm -rf /var/lib/apt/lists/* && mkdir -p /var/lib/apt/lists/partial'

# The things the test suite relies on, checked once here rather than found
# missing in the middle of a test run.
step "checking the chroot" in_chroot bash -euxc "
	id postgres
	runuser -u postgres -- true
	test -x /usr/lib/postgresql/$PG_MAJOR/bin/initdb
	test -x /usr/lib/postgresql/$PG_MAJOR/bin/pg_config
	test -f \"\$(/usr/lib/postgresql/$PG_MAJOR/bin/pg_config --pgxs)\"
	pg_prove --version
	g++ --version
	make --version
	test -f /etc/postgresql-common/createcluster.conf
	test -z \"\$(ls -A /etc/postgresql/$PG_MAJOR 2>/dev/null)\"
	dpkg-query -W ${packages[*]}
"

stamp_text >"$TMPROOT/$STAMP"
sync -f "$TMPROOT/$STAMP" 2>/dev/null || sync

# Put it in place.  An existing (out of date) chroot is moved aside first and
# removed after; if that removal is refused it is left as NAME.tmp.old.*.
if [ -e "$ROOT" ]; then
	aside=$PARENT/$NAME.tmp.old.$$
	mv -T -- "$ROOT" "$aside"
	mv -T -- "$TMPROOT" "$ROOT"
	done_ok=true
	(remove_tree "$aside") || say "could not remove the old chroot $aside; the next run retries"
else
	mv -T -- "$TMPROOT" "$ROOT"
	done_ok=true
fi
say "done in $(( $(date +%s) - start ))s: $(du -sh --one-file-system "$ROOT" | cut -f1) in $ROOT"
echo "$ROOT"
