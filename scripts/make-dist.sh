#!/usr/bin/env bash
# make-dist.sh - the PGXN distribution: pg_fence-VERSION.zip in the top
# directory (make dist).
#
# The zip holds the checkout's tracked files (git ls-files: what a release
# tag's clone holds; never an untracked file, so nothing a build left in the
# checkout, e.g. dpkg-buildpackage's debian/<package>/ trees) as they are in
# the working tree, under pg_fence-VERSION/, plus
# the install scripts of VERSION assembled from sql/VERSION/*.sql
# (sql/assemble.mk), so that META.json's "file" names a file in the zip.
# Before zipping, META.json is checked against PGXN's META spec 1.0.0
# (scripts/pgxn-meta-check.py) and against this tree (name, version).
# pgxnclient installs it: pgxn install ./pg_fence-VERSION.zip (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_fence.control)
name=pg_fence
dist=$name-$version
python3 scripts/pgxn-meta-check.py META.json --name "$name" --version "$version"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/$dist"
# Tracked files only; one deleted in the working tree (not yet committed) is
# left out rather than failing tar.
git ls-files -z | while IFS= read -r -d '' f; do
	if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
done | tar --null --no-recursion -T - -cf - | tar -xf - -C "$tmp/$dist"
make -s -f sql/assemble.mk -C "$tmp/$dist" EXTENSION="$name" EXTVERSION="$version" \
	"sql/$name--$version.sql" "sql/$name--$(sed -n 's/^PREV_VERSION *= *//p' sql/assemble.mk)--$version.sql"
file=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["provides"]["pg_fence"]["file"])' META.json)
[ -f "$tmp/$dist/$file" ] || { echo "make-dist: META.json's provides file $file is not in the distribution" >&2; exit 1; }
rm -f "$dist.zip"
(cd "$tmp" && zip -qr -X "$OLDPWD/$dist.zip" "$dist")
echo "$dist.zip: $(unzip -Z1 "$dist.zip" | wc -l) entries"
