#!/usr/bin/env bash
# install-deps.sh - install the Debian packages pg_fence needs to build, test
# and run its demo.  Idempotent: installs only what is missing, and does
# nothing (not even apt-get update) when everything is there.
#
# Usage: scripts/install-deps.sh [--print]
#   --print   list the packages that would be installed, install nothing
#
# Needs root (or sudo) when something is missing.  PG_MAJOR selects the
# PostgreSQL major version (default 15, Debian 12's).
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
packages=(
	"postgresql-$PG_MAJOR"                   # server: initdb, postgres, pg_ctl
	"postgresql-server-dev-$PG_MAJOR"        # PGXS, server headers, pg_isolation_regress
	"postgresql-$PG_MAJOR-pgtap"             # pgTAP
	libtap-parser-sourcehandler-pgtap-perl   # pg_prove
	libpq-dev
	libpqxx-dev                              # C++ client library
	catch2                                   # C++ tests
	g++
	make
	util-linux                               # runuser
	procps                                   # ps/pkill used by tests
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

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "pg_fence: installing missing Debian packages: ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "pg_fence: not root and no sudo; install these packages: ${missing[*]}" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
# Debian's postgresql-common creates and starts a "main" cluster on package
# install; we never use it, so ask it not to create one.
if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
	$SUDO mkdir -p /etc/postgresql-common
	echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
echo "pg_fence: packages installed" >&2
