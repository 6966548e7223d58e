#!/usr/bin/env bash
# install-bench-deps.sh - install the Debian packages that only the benchmarks
# need (on top of scripts/install-deps.sh): a Redis server for the "Redis
# lock, PostgreSQL write" comparison and hiredis to drive it from C++.
# Idempotent: installs only what is missing, and does nothing (not even
# apt-get update) when everything is there.
#
# Usage: bench/install-bench-deps.sh [--print]
#   --print   list the packages that would be installed, install nothing
set -euo pipefail

packages=(
	redis-server        # the alternative lock service the bench compares against
	libhiredis-dev      # C client for it, used by bench/redis_path.cpp
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ "${1:-}" = "--print" ]; then
	printf '%s\n' "${missing[@]}"
	exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "pg_fence bench: installing missing Debian packages: ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "pg_fence bench: not root and no sudo; install these packages: ${missing[*]}" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Debian's redis-server package
# starts a system redis on port 6379; the bench never uses it (it starts its
# own on a free loopback port), so stop and disable it again if we installed it.
$SUDO apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
if printf '%s\n' "${missing[@]}" | grep -qx redis-server; then
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/redis-server ]; then
		$SUDO /etc/init.d/redis-server stop >/dev/null 2>&1 || true
	fi
fi
echo "pg_fence bench: packages installed" >&2
