#!/usr/bin/env bash
# provision-pg18.sh - build PostgreSQL 18 (with assertions) and pgTAP from
# Debian's source packages into a private prefix, for testing pg_fence against
# a newer server than Debian 12's PostgreSQL 15.
#
# Usage: scripts/provision-pg18.sh [--prefix DIR]
#   --prefix DIR   where to install (default ${FENCE_PG_CACHE:-/var/cache/pg_fence}/pg18)
#
# On success prints exactly one line on stdout, the installed pg_config, e.g.
#   /var/cache/pg_fence/pg18/bin/pg_config
# so that callers can do: PG_CONFIG=$(scripts/provision-pg18.sh) make ...
# Progress goes to stderr; the build output goes to log files, whose tail is
# shown when a step fails (the logs are then kept and their path printed).
#
# Idempotent: a finished installation holds a stamp file
# (PREFIX/.pg_fence-provision) recording the source versions and configure
# flags; when it is there and the flags match, the script does nothing but
# print the path (no network, no apt).  The stamp is written last, after a
# smoke test, so an interrupted run is never taken for a finished one: the
# next run removes the unstamped prefix and starts again.  The server is built
# and installed (DESTDIR) in temporary directories and renamed into place.
# Concurrent runs for the same prefix serialise on a lock file beside it.
# To force a rebuild (e.g. for a newer 18.x), remove the prefix.
#
# What it does:
#  1. installs the missing build dependencies with the host's own apt
#     (Debian 12 packages: compiler, bison, flex, readline, zlib, ICU, ...);
#  2. with a private apt configuration in a temporary directory (its own
#     sources.list, lists, cache and an empty dpkg status; the host's sources
#     and apt state are neither used nor changed, only its apt.conf.d settings
#     such as a proxy apply) fetches the source index of Debian sid, which is
#     the suite that has postgresql-18 and a pgTAP that supports 18;
#  3. downloads the *upstream* tarballs (the .orig.tar.* of the Debian source
#     packages postgresql-18 and pgtap) and checks their SHA256 against that
#     index, whose InRelease is verified with debian-archive-keyring.  Debian's
#     own patches are deliberately not applied: they move the install layout
#     to Debian's per-version directories, which we do not want in a private
#     prefix.  (Fetching the .orig alone also means a mirror missing a .dsc or
#     .debian.tar does not matter: the mirror this was written against lacks
#     pgtap's.);
#  4. configures PostgreSQL with --enable-cassert --enable-debug (so that
#     pg_fence's tests run against a server that checks its own invariants),
#     builds it and installs it, including pg_regress and
#     pg_isolation_regress/isolationtester under PGXS's
#     $(pkglibdir)/pgxs/src/test/{regress,isolation}/, where pgxs.mk looks
#     for them (make installcheck with REGRESS= and ISOLATION=);  contrib is
#     not built;
#  5. builds pgTAP from its source with this installation's PGXS and installs
#     it.  Only if that fails, it falls back to copying the SQL-only pgTAP
#     extension files of the host's postgresql-15-pgtap (pgTAP has no shared
#     library, so its files are not tied to a server major version; the stamp
#     and a warning say so);
#  6. smoke-tests the result on a throwaway cluster as the cluster owner
#     ("postgres" when run as root, as scripts/temp-cluster.sh does):
#     debug_assertions must be on and CREATE EXTENSION pgtap must work.
#
# Why sid: Debian 12 has no PostgreSQL 18 package, and binary packages from
# sid would drag in a newer libc; building its source uses only bookworm's
# libraries.  The mirror's sid Release file may be past its Valid-Until date
# (a frozen snapshot), so the private apt configuration disables that check;
# the signature is still verified.
#
# Any failure (including a source that cannot be fetched) exits non-zero with
# a message: nothing is ever skipped silently.
#
# Environment: FENCE_PG_CACHE (default /var/cache/pg_fence),
# FENCE_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# FENCE_DEBIAN_SUITE (default sid), JOBS (make -j, default nproc).
set -euo pipefail

umask 022
ME=provision-pg18
PREFIX=${FENCE_PG_CACHE:-/var/cache/pg_fence}/pg18
MIRROR=${FENCE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${FENCE_DEBIAN_SUITE:-sid}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
PG_SOURCE=postgresql-18
PGTAP_SOURCE=pgtap
PGTAP_FALLBACK_DIR=/usr/share/postgresql/15/extension   # postgresql-15-pgtap

usage() {
	echo "usage: $0 [--prefix DIR]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
		--prefix) [ $# -ge 2 ] || usage; PREFIX=$2; shift 2 ;;
		--prefix=*) PREFIX=${1#--prefix=}; shift ;;
		-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
		*) usage ;;
	esac
done
case $PREFIX in
	/*) ;;
	*) PREFIX=$(pwd)/$PREFIX ;;
esac
PREFIX=${PREFIX%/}

# Everything that identifies a build.  Changing any of it rebuilds.
STAMP_FORMAT=1
CONFIGURE_FLAGS=(--prefix="$PREFIX" --enable-cassert --enable-debug --without-llvm --with-icu --with-readline)
BUILD_CFLAGS="-O2 -g"
STAMP=$PREFIX/.pg_fence-provision
PG_CONFIG_PATH=$PREFIX/bin/pg_config

say() { echo "$ME: $*" >&2; }
die() { echo "$ME: error: $*" >&2; exit 1; }

stamp_ok() {
	[ -f "$STAMP" ] && [ -x "$PG_CONFIG_PATH" ] &&
		grep -qxF "stamp_format=$STAMP_FORMAT" "$STAMP" &&
		grep -qxF "configure=${CONFIGURE_FLAGS[*]}" "$STAMP" &&
		grep -qxF "cflags=$BUILD_CFLAGS" "$STAMP"
}

# Fast path: already provisioned.
if stamp_ok; then
	echo "$PG_CONFIG_PATH"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	SUDO=
fi

# --- 1. build dependencies (host apt, Debian 12) ---------------------------
deps=(
	gcc make libc6-dev        # compiler toolchain
	bison flex perl           # tarballs no longer ship generated parsers (PG 17+)
	pkg-config                # configure finds ICU with it
	libreadline-dev           # psql line editing
	zlib1g-dev
	libicu-dev                # --with-icu
	bzip2 gzip tar            # the .orig tarballs
	apt gpgv debian-archive-keyring  # fetching and verifying the sources
	util-linux                # flock, runuser
)
missing=()
for p in "${deps[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing missing build dependencies: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
		die "not root and no sudo; install these packages: ${missing[*]}"
	fi
	deplog=$(mktemp "${TMPDIR:-/tmp}/$ME-apt.XXXXXX")
	# An unreachable third-party source makes "update" fail while Debian's
	# indexes are fine: only the install's outcome decides.
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$deplog" 2>&1 ||
		say "warning: apt-get update reported errors (see $deplog); trying the install anyway"
	if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-o Dpkg::Options::=--force-confold "${missing[@]}" >>"$deplog" 2>&1; then
		tail -n 30 "$deplog" >&2
		die "could not install the build dependencies (full log: $deplog)"
	fi
	rm -f "$deplog"
fi

# --- lock, then check again (another run may just have finished) ----------
PARENT=$(dirname "$PREFIX")
mkdir -p "$PARENT" || die "cannot create $PARENT"
LOCK=$PARENT/.$(basename "$PREFIX").lock
exec 9>"$LOCK" || die "cannot open lock file $LOCK"
if ! flock -n 9; then
	say "waiting for another provisioning run of $PREFIX"
	flock 9
fi
if stamp_ok; then
	echo "$PG_CONFIG_PATH"
	exit 0
fi
if [ -e "$PREFIX" ]; then
	if [ -f "$STAMP" ]; then
		say "$PREFIX was built with other settings; rebuilding it"
	else
		say "$PREFIX is an incomplete installation (no stamp); rebuilding it"
	fi
fi

# Cluster owner for the smoke test: root cannot run postgres.
if [ "$(id -u)" -eq 0 ]; then
	OWNER=postgres
	id "$OWNER" >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash "$OWNER"
	AS_OWNER=(runuser -u "$OWNER" --)
else
	OWNER=$(id -un)
	AS_OWNER=()
fi

# --- work directories and cleanup -------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/$ME.XXXXXX")
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/$ME-logs.XXXXXX")
# Leftovers of runs that were killed outright (the lock is ours now).
rm -rf "$PARENT/.$(basename "$PREFIX").stage."*
# Staging area beside the prefix, so that the final rename stays on one filesystem.
STAGE=$(mktemp -d "$PARENT/.$(basename "$PREFIX").stage.XXXXXX")
chmod 755 "$WORK"   # _apt (apt's download sandbox) and the cluster owner traverse it
SMOKE_DATA=
keep_logs=false

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$SMOKE_DATA" ] && [ -f "$SMOKE_DATA/postmaster.pid" ]; then
		"${AS_OWNER[@]}" "$PREFIX/bin/pg_ctl" -D "$SMOKE_DATA" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK" "$STAGE"
	if [ "$rc" -ne 0 ] || $keep_logs; then
		say "logs kept in $LOGDIR"
	else
		rm -rf "$LOGDIR"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run STEP LOG COMMAND...: run COMMAND with its output appended to LOG;
# on failure show the log's tail and exit.
run() {
	local step=$1 log=$LOGDIR/$2
	shift 2
	say "$step"
	if ! "$@" >>"$log" 2>&1; then
		echo "$ME: --- last lines of $log ---" >&2
		tail -n 40 "$log" >&2
		die "$step failed (full log: $log)"
	fi
}

# --- 2. private apt configuration and the source index ----------------------
APTDIR=$WORK/apt
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/preferences.d" "$APTDIR/sources.list.d"
: >"$APTDIR/status"
echo "deb-src [signed-by=$KEYRING] $MIRROR $SUITE main" >"$APTDIR/sources.list"
APT_OPTS=(
	-o Dir::Etc::sourcelist="$APTDIR/sources.list"
	-o Dir::Etc::sourceparts="$APTDIR/sources.list.d"
	-o Dir::Etc::preferences="$APTDIR/preferences"
	-o Dir::Etc::preferencesparts="$APTDIR/preferences.d"
	-o Dir::State::Lists="$APTDIR/lists"
	-o Dir::State::status="$APTDIR/status"
	-o Dir::Cache="$APTDIR/cache"
	-o Debug::NoLocking=1
	-o Acquire::Check-Valid-Until=false
	-o APT::Get::Only-Source=true
)
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
	chown -R _apt "$APTDIR/lists/partial"
fi

run "fetching the Debian $SUITE source index from $MIRROR" apt.log \
	apt-get "${APT_OPTS[@]}" update
compgen -G "$APTDIR/lists/*_source_Sources*" >/dev/null ||
	{ tail -n 20 "$LOGDIR/apt.log" >&2; die "no source index fetched for $SUITE from $MIRROR (see $LOGDIR/apt.log)"; }

# fetch_orig SOURCE DESTDIR: download the upstream tarball of Debian source
# package SOURCE, verified against the signed index; sets ORIG_FILE,
# ORIG_SHA256 and SRC_VERSION.
fetch_orig() {
	local src=$1 dest=$2 uris quri name _size h uri='' hash='' dsc
	uris=$(apt-get "${APT_OPTS[@]}" source --print-uris "$src" 2>>"$LOGDIR/apt.log") ||
		{ tail -n 20 "$LOGDIR/apt.log" >&2; die "source package $src not found in Debian $SUITE"; }
	ORIG_FILE='' ORIG_SHA256='' SRC_VERSION=''
	# Lines of the form: 'URI' FILENAME SIZE SHA256:HASH
	while read -r quri name _size h; do
		case $quri in "'"*) ;; *) continue ;; esac
		case $name in
			*.dsc) dsc=${name%.dsc}; SRC_VERSION=${dsc#"${src}_"} ;;
			*.orig.tar.*.asc) ;;
			*.orig.tar.*) uri=${quri//\'/}; ORIG_FILE=$name; hash=$h; ORIG_SHA256=${h#SHA256:} ;;
		esac
	done <<<"$uris"
	if [ -z "$uri" ] || [ -z "$SRC_VERSION" ]; then
		die "no upstream tarball listed for $src in Debian $SUITE"
	fi
	case $hash in SHA256:*) ;; *) die "no SHA256 listed for $ORIG_FILE" ;; esac
	mkdir -p "$dest"
	if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
		chown _apt "$dest"
	fi
	run "downloading $ORIG_FILE ($src $SRC_VERSION)" apt.log \
		/usr/lib/apt/apt-helper "${APT_OPTS[@]}" download-file "$uri" "$dest/$ORIG_FILE" "$hash"
}

fetch_orig "$PG_SOURCE" "$WORK/dl"
PG_VERSION_DEB=$SRC_VERSION PG_ORIG=$ORIG_FILE PG_ORIG_SHA256=$ORIG_SHA256
mkdir -p "$WORK/postgresql"
run "unpacking $PG_ORIG" build.log \
	tar -xf "$WORK/dl/$PG_ORIG" -C "$WORK/postgresql" --strip-components=1 --no-same-owner

# --- 4. PostgreSQL ------------------------------------------------------------
start=$(date +%s)
run "configuring PostgreSQL ($PG_SOURCE $PG_VERSION_DEB): ${CONFIGURE_FLAGS[*]}" configure.log \
	env -C "$WORK/postgresql" CFLAGS="$BUILD_CFLAGS" ./configure "${CONFIGURE_FLAGS[@]}"
# When this script runs under another make (make test-versions), MAKELEVEL
# and MAKEFLAGS come from there: PostgreSQL's makefiles build their generated
# headers (utils/errcodes.h...) only at MAKELEVEL 0, so a nested parallel
# build fails without them.  Build as a top-level make.
unset MAKELEVEL MAKEFLAGS MFLAGS
run "building PostgreSQL (make -j$JOBS, a few minutes)" build.log \
	make -C "$WORK/postgresql" -j"$JOBS"
run "building the regression and isolation test drivers" build.log \
	make -C "$WORK/postgresql/src/test/isolation" -j"$JOBS"
run "installing into a staging directory" install.log \
	make -C "$WORK/postgresql" install DESTDIR="$STAGE"
# Already part of "make install" since PostgreSQL 16, kept explicit: PGXS's
# installcheck runs $(pkglibdir)/pgxs/src/test/regress/pg_regress and
# .../pgxs/src/test/isolation/pg_isolation_regress (which finds
# isolationtester beside itself).
run "installing pg_regress and the isolation tester" install.log \
	sh -c 'make -C "$1/src/test/regress" install DESTDIR="$2" && make -C "$1/src/test/isolation" install DESTDIR="$2"' \
	sh "$WORK/postgresql" "$STAGE"
[ -x "$STAGE$PREFIX/bin/postgres" ] || die "staged install has no $PREFIX/bin/postgres"
chmod -R a+rX "$STAGE$PREFIX"

# Into place: any old (incomplete or differently built) prefix goes first.
rm -rf "$PREFIX"
mv "$STAGE$PREFIX" "$PREFIX"
chmod a+rx "$PARENT"
PKGLIBDIR=$("$PG_CONFIG_PATH" --pkglibdir)
for f in pgxs/src/test/regress/pg_regress pgxs/src/test/isolation/pg_isolation_regress \
	pgxs/src/test/isolation/isolationtester pgxs/src/makefiles/pgxs.mk; do
	[ -e "$PKGLIBDIR/$f" ] || die "missing after install: $PKGLIBDIR/$f"
done

# --- 5. pgTAP -------------------------------------------------------------------
PGTAP_DESC=
build_pgtap() {
	fetch_orig "$PGTAP_SOURCE" "$WORK/dl" || return 1
	mkdir -p "$WORK/pgtap"
	tar -xf "$WORK/dl/$ORIG_FILE" -C "$WORK/pgtap" --strip-components=1 --no-same-owner >>"$LOGDIR/pgtap.log" 2>&1 &&
		make -C "$WORK/pgtap" PG_CONFIG="$PG_CONFIG_PATH" >>"$LOGDIR/pgtap.log" 2>&1 &&
		make -C "$WORK/pgtap" PG_CONFIG="$PG_CONFIG_PATH" install >>"$LOGDIR/pgtap.log" 2>&1 || return 1
	PGTAP_DESC="$PGTAP_SOURCE $SRC_VERSION (Debian $SUITE source, upstream tarball sha256 $ORIG_SHA256, built with PGXS)"
}
say "building pgTAP from Debian's $PGTAP_SOURCE source package"
# A subshell, so that a die() inside only ends the attempt; its result comes
# back in a file.
if (build_pgtap && echo "$PGTAP_DESC" >"$WORK/pgtap.desc"); then
	PGTAP_DESC=$(cat "$WORK/pgtap.desc")
else
	[ -f "$LOGDIR/pgtap.log" ] && tail -n 20 "$LOGDIR/pgtap.log" >&2
	keep_logs=true
	say "WARNING: building pgTAP from source failed; falling back to copying postgresql-15-pgtap's extension files"
	compgen -G "$PGTAP_FALLBACK_DIR/pgtap*" >/dev/null ||
		die "pgTAP: no source build and no $PGTAP_FALLBACK_DIR/pgtap* to copy (install postgresql-15-pgtap)"
	sharedir=$("$PG_CONFIG_PATH" --sharedir)
	cp "$PGTAP_FALLBACK_DIR"/pgtap* "$sharedir/extension/" || die "pgTAP: copying the fallback files failed"
	chmod a+r "$sharedir"/extension/pgtap*
	PGTAP_DESC="copied from $(dpkg-query -W -f='${Package} ${Version}' postgresql-15-pgtap 2>/dev/null || echo "$PGTAP_FALLBACK_DIR") (fallback: source build failed)"
fi

# --- 6. smoke test on a throwaway cluster -----------------------------------
SMOKE=$WORK/smoke
mkdir -p "$SMOKE"
chmod 755 "$SMOKE"
[ ${#AS_OWNER[@]} -gt 0 ] && chown "$OWNER" "$SMOKE"
SMOKE_DATA=$SMOKE/data
run "smoke test: initdb" smoke.log \
	"${AS_OWNER[@]}" "$PREFIX/bin/initdb" -D "$SMOKE_DATA" -U postgres --auth=trust --no-instructions \
	--encoding=UTF8 --locale=C.UTF-8
cat >>"$SMOKE_DATA/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$SMOKE'
port = 5432
fsync = off
CONF
asserts=$("${AS_OWNER[@]}" "$PREFIX/bin/postgres" -C debug_assertions -D "$SMOKE_DATA" 2>>"$LOGDIR/smoke.log") || true
[ "$asserts" = on ] || die "debug_assertions is '$asserts', expected 'on' (built without --enable-cassert?)"
run "smoke test: starting the server" smoke.log \
	"${AS_OWNER[@]}" "$PREFIX/bin/pg_ctl" -D "$SMOKE_DATA" -l "$SMOKE/server.log" -w -t 60 start
run "smoke test: SHOW debug_assertions, CREATE EXTENSION pgtap" smoke.log \
	"$PREFIX/bin/psql" -X -v ON_ERROR_STOP=1 -h "$SMOKE" -p 5432 -U postgres -d postgres \
	-c 'SELECT version()' -c 'SHOW debug_assertions' -c 'CREATE EXTENSION pgtap' \
	-c "SELECT * FROM no_plan()" -c "SELECT ok(current_setting('debug_assertions')::bool, 'assertions on')"
grep -q '^ ok 1 - assertions on' "$LOGDIR/smoke.log" || { tail -n 20 "$LOGDIR/smoke.log" >&2; die "smoke test: pgTAP did not answer as expected"; }
run "smoke test: stopping the server" smoke.log \
	"${AS_OWNER[@]}" "$PREFIX/bin/pg_ctl" -D "$SMOKE_DATA" -m fast -w stop
SMOKE_DATA=
end=$(date +%s)

# --- stamp: written last, atomically ------------------------------------------
cat >"$STAMP.tmp" <<STAMP
# Written by pg_fence scripts/provision-pg18.sh when this installation was
# complete and had passed its smoke test.  Remove the directory to rebuild.
stamp_format=$STAMP_FORMAT
source=$PG_SOURCE $PG_VERSION_DEB (Debian $SUITE, $MIRROR)
upstream_tarball=$PG_ORIG sha256 $PG_ORIG_SHA256
version=$("$PG_CONFIG_PATH" --version)
configure=${CONFIGURE_FLAGS[*]}
cflags=$BUILD_CFLAGS
pgtap=$PGTAP_DESC
built=$(date -u +%Y-%m-%dT%H:%M:%SZ) in $((end - start))s on $(uname -m)
STAMP
chmod 644 "$STAMP.tmp"
mv "$STAMP.tmp" "$STAMP"
say "$("$PG_CONFIG_PATH" --version) installed in $PREFIX ($((end - start))s); pgTAP: $PGTAP_DESC"
echo "$PG_CONFIG_PATH"
