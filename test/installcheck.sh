#!/usr/bin/env bash
# installcheck.sh - the test suite against a running server of one's own:
# what `make installcheck` (every layer) and `make check-regress`,
# check-isolation, check-pgtap, check-cpp, check-shell (one layer) run.
#
# Usage: bash test/installcheck.sh [LAYER...]   (default: every layer)
#   LAYER: regress isolation pgtap catch2 shell (test/run-all.sh's names)
#
# The server is the one libpq's PGHOST, PGPORT and PGUSER name (PGPASSWORD,
# ~/.pgpass... as usual); PG_CONFIG is the build (PGXS, pg_regress).  No
# root and nothing installed: pg_fence must already be installed in that
# server (make install, with DESTDIR for a relocated copy of the server).
# First a preflight says everything the server lacks and stops, rather
# than let the suite fail in many confusing ways:
#   - it answers, and PGUSER is a superuser (the suite creates databases,
#     roles and extensions);
#   - pg_fence is installed there, of this checkout's version, and in
#     shared_preload_libraries (with pgTAP for the pgtap layer);
#   - what scripts/temp-cluster.sh's throwaway cluster sets and the suite
#     relies on: max_connections >= 120, UTF8 databases, English messages.
# Then test/run-all.sh, against that server, in database postgres.  The
# suite creates and drops databases (contrib_regression,
# isolation_regression, fence_*) and roles there.  The shell tests that
# restart, crash or replicate the server skip (77, saying so): they run on
# make test's throwaway cluster only.  Shell tests that need a cluster of
# their own (no preload...) make one from the server's installation (its
# bin directory, from the pg_config view, or FENCE_SERVER_BIN).
#
# Copyright (c) 2026, The pg_fence Developers
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

LAYERS=${*:-regress isolation pgtap catch2 shell}
PG_CONFIG=${PG_CONFIG:-pg_config}
export PG_CONFIG
want() { [[ " $LAYERS " == *" $1 "* ]]; }

# The suite's tests expect the maintenance database (as under temp-cluster.sh).
export PGDATABASE=postgres
# And PGUSER set, as under temp-cluster.sh (libpq's default, the login name).
export PGUSER=${PGUSER:-$(id -un)}

# Variables of a throwaway cluster (scripts/temp-cluster.sh) that is not the
# server named: a test must not restart that cluster believing it is this one.
if [ -z "${FENCE_CLUSTER_CTL:-}" ] || [ "${PGHOST:-}" != "${FENCE_CLUSTER_DIR:-}" ]; then
	unset FENCE_CLUSTER_CTL FENCE_CLUSTER_DIR FENCE_PGLOG FENCE_AS_OWNER FENCE_PGBIN PGDATA
fi

where="host=${PGHOST:-(default)} port=${PGPORT:-(default)} user=${PGUSER:-$(id -un)}"
problems=()
lacks() { problems+=("$*"); }
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d postgres "$@" 2>&1; }

stop() {
	echo "installcheck: the server at $where cannot run the suite:" >&2
	local p
	for p in "${problems[@]}"; do printf '  - %s\n' "$p" >&2; done
	echo "(make test runs the suite on a throwaway cluster of its own instead, as root.)" >&2
	echo "0 passed, 1 failed"
	exit 1
}

if ! out=$(q -c 'SELECT 1'); then
	lacks "it does not answer: $out"
	lacks "start it, or set PGHOST, PGPORT and PGUSER to a server of your own"
	stop
fi

# PGUSER must be a superuser.
if [ "$(q -c 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user')" != t ]; then
	lacks "$(q -c 'SELECT current_user') is not a superuser: set PGUSER to one (the suite creates databases, roles and extensions)"
	stop
fi

# pg_fence installed, of this checkout's version.
want_version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_fence.control)
have_version=$(q -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_fence'")
server_bin=$(q -c "SELECT setting FROM pg_config WHERE name = 'BINDIR'")
sharedir=$(q -c "SELECT setting FROM pg_config WHERE name = 'SHAREDIR'")
if [ -z "$have_version" ]; then
	lacks "pg_fence is not installed in this server (no ${sharedir:-SHAREDIR}/extension/pg_fence.control):" \
		"run make install (make install DESTDIR=... for a relocated copy of the server)"
elif [ "$have_version" != "$want_version" ]; then
	lacks "pg_fence $have_version is installed in this server, this checkout is $want_version: run make install"
fi

# Preloaded.
preload=$(q -c 'SHOW shared_preload_libraries')
case ",${preload// /}," in
*,pg_fence,*) ;;
*)
	lacks "shared_preload_libraries = '$preload' lacks pg_fence: add it in postgresql.conf" \
		"(shared_preload_libraries = 'pg_fence') and restart the server"
	;;
esac

# What the throwaway cluster sets (scripts/temp-cluster.sh) and the suite needs.
max_conn=$(q -c 'SHOW max_connections')
if [ "$max_conn" -lt 120 ] 2>/dev/null; then
	lacks "max_connections = $max_conn: the suite opens many sessions at once; set max_connections = 120" \
		"(as the throwaway cluster does) and restart the server"
fi
enc=$(q -c "SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = 'template1'")
if [ "$enc" != UTF8 ]; then
	lacks "template1's encoding is $enc: the expected outputs are UTF8; initdb with --encoding=UTF8" \
		"(the throwaway cluster uses --encoding=UTF8 --locale=C.UTF-8)"
fi
lc=$(q -c 'SHOW lc_messages')
case $lc in
'' | C | POSIX | C.* | en_* | en) ;;
*) lacks "lc_messages = '$lc': the expected outputs are in English; set lc_messages = 'C'" ;;
esac

# pgTAP for the pgtap layer.
if want pgtap; then
	if [ -z "$(q -c "SELECT 1 FROM pg_available_extensions WHERE name = 'pgtap'")" ]; then
		lacks "pgTAP is not installed in this server (Debian package postgresql-$(q -c 'SHOW server_version_num' |
			cut -c1-2)-pgtap, or pgTAP built with this server's PGXS): needed by the pgtap layer"
	fi
	command -v pg_prove >/dev/null ||
		lacks "pg_prove is not on PATH (Debian package libtap-parser-sourcehandler-pgtap): needed by the pgtap layer"
fi

[ "${#problems[@]}" -eq 0 ] || stop

# The library in the server is this checkout's build?  Only a warning: one
# may test an installed package with the tests of its source.
pkglibdir=$(q -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")
if [ -f pg_fence.so ] && [ -f "$pkglibdir/pg_fence.so" ] && ! cmp -s pg_fence.so "$pkglibdir/pg_fence.so"; then
	echo "installcheck: warning: $pkglibdir/pg_fence.so is not this checkout's pg_fence.so (run make install to test this build)" >&2
fi

# Programs of the server's own version first (psql, pg_dump...), and the
# installation the tests that make a cluster of their own start it from.
if [ -n "$server_bin" ] && [ -x "$server_bin/postgres" ]; then
	export PATH="$server_bin:$PATH"
	export FENCE_SERVER_BIN=${FENCE_SERVER_BIN:-$server_bin}
fi

echo "installcheck: $where, PostgreSQL $(q -c 'SHOW server_version'), pg_fence $have_version preloaded; layers: $LAYERS"
FENCE_TEST_LAYERS=$LAYERS exec bash test/run-all.sh
