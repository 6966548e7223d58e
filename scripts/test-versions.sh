#!/usr/bin/env bash
# test-versions.sh - the whole suite (make test) on every supported
# PostgreSQL major that this machine can get from Debian's archive.
#
# Usage: scripts/test-versions.sh [MAJOR...]     (what `make test-versions` runs)
#   MAJOR: 15, 17 or 18; default FENCE_PG_VERSIONS, else "15 17 18".
#
# Where each server comes from (measured on Debian 12; docs/compatibility.md):
#   15  Debian 12's own packages, on this machine (scripts/install-deps.sh)
#   17  Debian trixie's binary packages, in a debootstrap chroot
#       (scripts/provision-trixie.sh; run with scripts/in-chroot.sh), built
#       and tested there with that system's compiler, libpqxx and Catch2
#   18  built from Debian sid's source package with --enable-cassert
#       --enable-debug into a private prefix (scripts/provision-pg18.sh)
#   16  no package or source is reachable: asking for it is a failure
#
# Each version is built in a build tree of its own (a copy of this checkout
# without build products), installed into that server only, and tested on a
# throwaway cluster of that server with its own client tools (psql, pg_dump,
# pg_regress, pg_isolation_regress come from the server's bin and PGXS
# directories).  Servers and the chroot are cached under FENCE_PG_CACHE
# (default /var/cache/pg_fence), so a second run skips their set-up.
#
# A version that cannot be provisioned or built counts as one failed test;
# nothing is skipped silently.  Output: one line per version, the details of
# what failed, then exactly one line "N passed, N failed" summing every
# version.  Exit status 0 only when nothing failed.
#
# Environment: WERROR (passed to make, as in .ci/run), FENCE_PG_CACHE.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
SRC=$PWD

read -r -a versions <<<"${*:-${FENCE_PG_VERSIONS:-15 17 18}}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_versions.XXXXXX") || exit 2
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

total_pass=0
total_fail=0
details=()

# copy_tree DEST: this checkout's files (tracked and untracked, not ignored),
# without build products.
copy_tree() {
	mkdir -p "$1"
	if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$SRC" ls-files -z --cached --others --exclude-standard |
			tar -C "$SRC" --null --ignore-failed-read -T - -cf - 2>/dev/null |
			tar -C "$1" -xf -
	else
		cp -a "$SRC/." "$1" && make -s -C "$1" clean >/dev/null 2>&1
	fi
}

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

for v in "${versions[@]}"; do
	start=$SECONDS
	log="$WORK/pg$v.log"
	tree="$WORK/pg$v"
	runner=()
	pg_config=
	deps_major=15		# Debian packages of make test's deps step (pg_prove, libpqxx...)
	case $v in
	15)
		pg_config=/usr/lib/postgresql/15/bin/pg_config
		PG_MAJOR=15 bash scripts/install-deps.sh >"$log" 2>&1 || pg_config=
		;;
	17)
		if root=$(bash scripts/provision-trixie.sh 2>"$log"); then
			pg_config=/usr/lib/postgresql/17/bin/pg_config
			runner=(bash "$SRC/scripts/in-chroot.sh" "$root" "$WORK")
			deps_major=17
		fi
		;;
	18)
		pg_config=$(bash scripts/provision-pg18.sh 2>"$log") || pg_config=
		;;
	*)
		echo "no way to get PostgreSQL $v on this machine (supported here: 15, 17, 18)" >"$log"
		;;
	esac
	if [ -z "$pg_config" ]; then
		printf '%-16s could not be provisioned (%s)\n' "PostgreSQL $v:" "$(elapsed $((SECONDS - start)))"
		details+=("PostgreSQL $v: provisioning (last lines)|$log")
		total_fail=$((total_fail + 1))
		continue
	fi

	copy_tree "$tree"
	"${runner[@]}" env -C "$tree" PG_MAJOR="$deps_major" make -s test PG_CONFIG="$pg_config" \
		WERROR="${WERROR:-}" PG_FENCE_LINK_DIR= >>"$log" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	server=$("${runner[@]}" "$pg_config" --version 2>/dev/null | sed 's/^PostgreSQL //')
	if [ -n "$line" ]; then
		p=${line%% passed*}
		f=${line#*, }
		f=${f%% failed*}
	else
		p=0
		f=1
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	printf '%-16s %4d passed, %4d failed   (server %s, %s)\n' "PostgreSQL $v:" "$p" "$f" \
		"${server:-unknown}" "$(elapsed $((SECONDS - start)))"
	grep -E '^(regress|isolation|pgtap|catch2|shell): ' "$log" | sed 's/^/    /'
	[ "$f" -gt 0 ] && details+=("PostgreSQL $v: make test (last lines)|$log")
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
done

for d in "${details[@]}"; do
	echo
	echo "=== ${d%%|*}"
	tail -n 80 "${d#*|}"
done
[ "${#details[@]}" -gt 0 ] && echo

echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
