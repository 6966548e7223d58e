#!/usr/bin/env bash
# install-deps.sh - install the Debian packages pg_fence needs to build, test
# and run its demo.  Idempotent: installs only what is missing, and does
# nothing (not even apt-get update) when everything is there.
#
# Usage: scripts/install-deps.sh [--bench] [--packages] [--patroni] [--style] [--print | --list]
#   --bench   also the packages only the benchmarks need (make bench):
#             redis-server (the alternative lock service compared against)
#             and libhiredis-dev (its C client, for bench/redis_path.cpp);
#             etcd-server and etcd-client (etcd's lock, the hand-off
#             latency comparison of bench/handoff.sh) and libcurl4-openssl-dev
#             (bench/handoff.cpp speaks to etcd's JSON gateway with libcurl);
#             valgrind (bench/instructions.sh counts instructions)
#   --packages also what building and testing the Debian packages and the
#             PGXN release needs (make deb, make dist, make test-packages;
#             debian/README.source): build-essential, debhelper, dpkg-dev, fakeroot,
#             postgresql-server-dev-all (pg_buildext), postgresql-all (the
#             build-time tests' servers), lintian, debootstrap (the clean
#             Debian 12 root of the install test), pgxnclient, zip, unzip
#   --patroni also patroni and etcd-server (make chaos PATRONI=1: the chaos
#             test against a Patroni-managed pair with a throwaway etcd)
#   --style   also clang-format (scripts/check-style.sh)
#   --print   list the packages that would be installed, install nothing
#   --list    list every package needed, installed or not (used by
#             scripts/provision-trixie.sh for the PostgreSQL 17 chroot)
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
	cmake                                    # examples/, client package tests
	pkgconf                                  # pkg-config: examples/, tests
	g++
	make
	util-linux                               # runuser
	procps                                   # ps/pkill used by tests
	prometheus-postgres-exporter             # test/shell/observability: the shipped exporter config, for real
	curl                                     # ... to scrape it
	python3-yaml                             # ... and to compare the two exporter configs
	pgbouncer                                # test/shell/pooling: transaction pooling, for real
	"postgresql-$PG_MAJOR-cron"              # test/shell/once: fence.once_purge scheduled with pg_cron
)

print_only=false
list_all=false
bench=false
debs=false
patroni=false
style=false
for arg in "$@"; do
	case $arg in
		--print) print_only=true ;;
		--list) list_all=true ;;
		--bench) bench=true ;;
		--packages) debs=true ;;
		--patroni) patroni=true ;;
		--style) style=true ;;
		*) echo "usage: $0 [--bench] [--packages] [--patroni] [--style] [--print | --list]" >&2; exit 2 ;;
	esac
done
if $bench; then
	packages+=(redis-server libhiredis-dev etcd-server etcd-client libcurl4-openssl-dev valgrind)
fi
if $debs; then
	packages+=(build-essential debhelper dpkg-dev fakeroot postgresql-server-dev-all postgresql-all lintian debootstrap
		pgxnclient zip unzip)
fi
if $patroni; then
	packages+=(patroni etcd-server)
fi
if $style; then
	packages+=(clang-format)
fi
if $list_all; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if $print_only; then
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
# Debian's redis-server package starts a system redis on port 6379; the bench
# never uses it (it starts its own on a free loopback port), so stop and
# disable it again if we installed it.
if printf '%s\n' "${missing[@]}" | grep -qx redis-server; then
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/redis-server ]; then
		$SUDO /etc/init.d/redis-server stop >/dev/null 2>&1 || true
	fi
fi
# Likewise prometheus-postgres-exporter's package enables a system exporter
# on port 9187; the tests start their own on a free loopback port.
if printf '%s\n' "${missing[@]}" | grep -qx prometheus-postgres-exporter; then
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now prometheus-postgres-exporter >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/prometheus-postgres-exporter ]; then
		$SUDO /etc/init.d/prometheus-postgres-exporter stop >/dev/null 2>&1 || true
	fi
fi
# pgbouncer's package enables a system pooler on port 6432; the pooling test
# starts its own on a free loopback port.
if printf '%s\n' "${missing[@]}" | grep -qx pgbouncer; then
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now pgbouncer >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/pgbouncer ]; then
		$SUDO /etc/init.d/pgbouncer stop >/dev/null 2>&1 || true
	fi
fi
# And etcd-server's starts a system etcd on port 2379; bench/handoff.sh and
# test/chaos/patroni.sh run their own member on free loopback ports with a
# data dir in a temp dir.
if printf '%s\n' "${missing[@]}" | grep -qx etcd-server; then
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
	elif [ -x /etc/init.d/etcd ]; then
		$SUDO /etc/init.d/etcd stop >/dev/null 2>&1 || true
	fi
fi
echo "pg_fence: packages installed" >&2
