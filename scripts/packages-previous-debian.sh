#!/usr/bin/env bash
# packages-previous-debian.sh - write a minimal debian/ into an export of a
# pg_fence release that had none (0.1.0), so that scripts/test-packages.sh
# can build its postgresql-NN-pg-fence package for the upgrade test.  Only
# the extension (0.1.0 had no client library and no CLI), built the way
# debian/rules builds it (pg_buildext, dh's pgxs_loop).
#
# Usage: scripts/packages-previous-debian.sh SRCDIR VERSION
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 SRCDIR VERSION" >&2; exit 2; }
src=$1 version=$2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$src/debian/source"
echo "3.0 (quilt)" >"$src/debian/source/format"
cp "$here/debian/pgversions" "$here/debian/copyright" "$src/debian/"
cat >"$src/debian/changelog" <<CHANGELOG
pg-fence ($version-1) unstable; urgency=medium

  * The extension of pg_fence $version, packaged for the upgrade test.

 -- The pg_fence Developers <maintainers@users.noreply.a-seed-51aa9950.example>  $(date -R)
CHANGELOG
# The source paragraph and the extension package of the current control.in.
awk 'BEGIN { RS = ""; ORS = "\n\n" } NR == 1 || /^Package: postgresql-PGVERSION-pg-fence/' \
	"$here/debian/control.in" | sed -e '/^Suggests:/,/^ pg-fence,$/d' -e '/^Testsuite:/d' >"$src/debian/control.in"
printf '#!/usr/bin/make -f\nexport PG_UPDATECONTROL = yes\n%%:\n\tdh $@ --with pgxs_loop\n' >"$src/debian/rules"
chmod +x "$src/debian/rules"
(cd "$src" && pg_buildext updatecontrol)
