#!/usr/bin/env bash
# dev-sandbox.sh - a private copy of the PostgreSQL server installation, so
# that several checkouts can install and test pg_fence at once without
# overwriting each other's files in the system directories.
#
# Usage: scripts/dev-sandbox.sh DIR
#   Copies the server (bin, lib, share, headers) under DIR once, then prints the
#   variables to use:
#     make install DESTDIR=DIR
#     FENCE_SERVER_BIN=DIR/usr/lib/postgresql/15/bin scripts/temp-cluster.sh CMD
# The copied server finds its lib and share directories relative to its own
# location, so it loads the pg_fence installed under DIR.
set -euo pipefail
DIR=${1:?usage: $0 DIR}
PG_CONFIG=${PG_CONFIG:-pg_config}
PKGLIB=$("$PG_CONFIG" --pkglibdir)          # /usr/lib/postgresql/15/lib
SHARE=$("$PG_CONFIG" --sharedir)            # /usr/share/postgresql/15
SERVER=$(dirname "$PKGLIB")                 # /usr/lib/postgresql/15
if [ ! -x "$DIR$SERVER/bin/postgres" ]; then
	mkdir -p "$DIR$(dirname "$SERVER")" "$DIR$(dirname "$SHARE")"
	cp -a "$SERVER" "$DIR$(dirname "$SERVER")/"
	cp -a "$SHARE" "$DIR$(dirname "$SHARE")/"
	chmod -R a+rX "$DIR"
fi
# The headers too (server and libpq): the copied pg_config reports them
# under DIR, so that a build with it (PG_CONFIG=DIR/.../pg_config) and the
# Catch2 tests' (libpq-fe.h) find them there.
INCLUDE=$("$PG_CONFIG" --includedir)        # /usr/include/postgresql
if [ ! -d "$DIR$INCLUDE" ]; then
	mkdir -p "$DIR$(dirname "$INCLUDE")"
	cp -a "$INCLUDE" "$DIR$(dirname "$INCLUDE")/"
	chmod -R a+rX "$DIR$INCLUDE"
fi
echo "DESTDIR=$DIR"
echo "FENCE_SERVER_BIN=$DIR$SERVER/bin"
