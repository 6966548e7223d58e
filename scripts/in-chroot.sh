#!/usr/bin/env bash
# in-chroot.sh - run a command inside a Debian chroot (the trixie one that
# scripts/provision-trixie.sh builds, for PostgreSQL 17), with a host
# directory visible at the same path inside and outside.
#
# Usage: scripts/in-chroot.sh ROOT WORKDIR COMMAND [ARGS...]
#   ROOT      the chroot's root directory
#   WORKDIR   a host directory, bind-mounted at the same path inside the
#             chroot (so paths in build output, logs and errors are the same
#             on both sides); COMMAND starts there.  "-" mounts nothing and
#             starts COMMAND in /root (provision-trixie.sh uses that).
#
# Why: the only PostgreSQL 17 this project can reach is Debian trixie's
# binary packages, and trixie packages must never be installed on the
# bookworm host itself.  So the test suite runs against PG 17 in a chroot.
#
# How: the script re-executes itself in a private mount namespace
# (unshare -m --propagation private) and mounts there: /proc, the host's /dev
# (recursive bind, for /dev/null, /dev/pts, ...), a fresh tmpfs on /dev/shm
# (PostgreSQL's POSIX shared memory; not shared with the host's), /sys
# read-only, and WORKDIR.  None of these mounts is ever visible on the host,
# and the kernel drops them all when the last process in the namespace exits:
# there is nothing to unmount, on success, on failure, on Ctrl-C or on
# SIGKILL alike, and no half-unmounted chroot can be left behind (so removing
# ROOT can never reach through a stale bind mount into WORKDIR).  A daemon
# that COMMAND leaves running keeps the namespace alive until it exits.
#
# COMMAND runs as root with a clean environment: PATH, HOME=/root,
# LANG=C.UTF-8, TMPDIR=/tmp (the chroot's own /tmp), USER/LOGNAME, SHELL,
# and TERM and CI passed through from the host; nothing else (in particular
# no host PG* or FENCE_* variable: set those in COMMAND, e.g. with env or
# bash -c).  Its exit status is this script's.  Needs root.
set -euo pipefail

usage() {
	echo "usage: $0 ROOT WORKDIR|- COMMAND [ARGS...]" >&2
	exit 2
}
die() {
	echo "in-chroot: $*" >&2
	exit 1
}

[ $# -ge 3 ] || usage
[ "$(id -u)" -eq 0 ] || die "needs root (chroot and mount)"

ROOT=$(realpath -e -- "$1" 2>/dev/null) || die "no such chroot: $1"
WORKDIR=$2

[ "$ROOT" != / ] || die "ROOT must not be /"
if [ ! -x "$ROOT/usr/bin/env" ] || [ ! -x "$ROOT/bin/bash" ]; then
	die "$ROOT does not look like a Debian root (no usr/bin/env or bin/bash)"
fi

if [ "$WORKDIR" != - ]; then
	WORKDIR=$(realpath -e -- "$2" 2>/dev/null) || die "no such directory: $2"
	[ -d "$WORKDIR" ] || die "not a directory: $WORKDIR"
	# Mounting over one of the chroot's system directories would hide its
	# own files (and / would hide all of them).
	case $WORKDIR in
		/ | /usr | /usr/* | /etc | /etc/* | /bin | /bin/* | /sbin | /sbin/* | \
		/lib | /lib/* | /lib32 | /lib32/* | /lib64 | /lib64/* | /libx32 | /libx32/* | \
		/proc | /proc/* | /sys | /sys/* | /dev | /dev/* | /run | /run/* | \
		/boot | /boot/* | /root | /tmp | /var | /var/lib | /var/lib/dpkg* | /var/lib/apt* | \
		/var/lib/postgresql | /var/lib/postgresql/*)
			die "WORKDIR $WORKDIR would hide part of the chroot's own system"
			;;
	esac
	case $WORKDIR/ in
		"$ROOT"/*) die "WORKDIR $WORKDIR is inside the chroot $ROOT" ;;
	esac
fi
shift 2

if [ "${_IN_CHROOT_NAMESPACE:-}" != "$$" ]; then
	# Not yet in our own mount namespace: re-execute this script in one.
	# unshare without --fork execs in place, so $$ stays the same.
	export _IN_CHROOT_NAMESPACE=$$
	exec unshare --mount --propagation private -- \
		"$BASH" "$(realpath -e -- "$0")" "$ROOT" "$WORKDIR" "$@"
fi

# From here on every mount is private to this namespace.

# Refuses a mount point in ROOT reached through a symlink: an absolute link
# inside the chroot would resolve against the host's tree.
mountpoint_in_root() {
	local rel=$1 path=$ROOT part
	local -a parts
	IFS=/ read -r -a parts <<<"${rel#/}"
	for part in "${parts[@]}"; do
		[ -n "$part" ] || continue
		path=$path/$part
		[ ! -L "$path" ] || die "$path is a symlink inside the chroot; cannot mount there"
	done
	mkdir -p -- "$ROOT$rel"
}

mountpoint_in_root /proc
mount -t proc -o nosuid,nodev,noexec proc "$ROOT/proc"
mountpoint_in_root /dev
mount --rbind /dev "$ROOT/dev"
mountpoint_in_root /dev/shm
mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$ROOT/dev/shm"
mountpoint_in_root /sys
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$ROOT/sys"
if [ "$WORKDIR" != - ]; then
	mountpoint_in_root "$WORKDIR"
	mount --bind "$WORKDIR" "$ROOT$WORKDIR"
	startdir=$WORKDIR
else
	startdir=/root
fi

passed=()
[ -z "${TERM:-}" ] || passed+=("TERM=$TERM")
[ -z "${CI:-}" ] || passed+=("CI=$CI")
# shellcheck disable=SC2016 # $1 and $@ are the inner bash's
exec chroot "$ROOT" /usr/bin/env -i \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root USER=root LOGNAME=root SHELL=/bin/bash \
	LANG=C.UTF-8 TMPDIR=/tmp \
	${passed[@]+"${passed[@]}"} \
	/bin/bash -c 'cd -- "$1" && shift && exec "$@"' in-chroot "$startdir" "$@"
