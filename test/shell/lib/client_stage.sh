# client_stage.sh - installs the C++ client outside the system for the tests
# that build programs against it (sourced, not run).
#
# client_stage DIR: from this (built) checkout, installs the client twice,
# leaving /usr/local and the dynamic linker's cache alone:
#   DIR/stage     make install-client DESTDIR=DIR/stage: root's default
#                 layout (CLIENT_PREFIX=/usr/local, given: another user's
#                 default is the server's prefix) staged, as a package build
#                 would; STAGED_PREFIX=DIR/stage/usr/local.  The CMake
#                 package is relocatable, so CMAKE_PREFIX_PATH finds it there.
#   DIR/prefix    make install-client CLIENT_PREFIX=DIR/prefix: a private
#                 prefix, whose pg_fence.pc names its own paths;
#                 PRIVATE_PREFIX=DIR/prefix, and PKG_CONFIG_PATH is exported
#                 with its lib/pkgconfig first.
# Returns non-zero (after printing make's output) if either install fails.
# Uses PG_CONFIG from the environment when set (make test-versions).
# Runs from the repository root.

client_stage() {
	local dir=$1 log
	log=$dir/client_stage.log
	mkdir -p "$dir"
	STAGED_PREFIX=$dir/stage/usr/local
	PRIVATE_PREFIX=$dir/prefix
	# The private prefix first: the tree's generated files name the install
	# directories, and the staged (/usr/local) install leaves them as make test's.
	if ! make -s --no-print-directory install-client ${PG_CONFIG:+PG_CONFIG="$PG_CONFIG"} \
		CLIENT_PREFIX="$PRIVATE_PREFIX" LDCONFIG=true >"$log" 2>&1 ||
		! make -s --no-print-directory install-client ${PG_CONFIG:+PG_CONFIG="$PG_CONFIG"} \
			CLIENT_PREFIX=/usr/local DESTDIR="$dir/stage" >>"$log" 2>&1; then
		echo "client_stage: make install-client failed:"
		cat "$log"
		return 1
	fi
	export PKG_CONFIG_PATH=$PRIVATE_PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
}
