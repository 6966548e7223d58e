#!/usr/bin/env bash
# packaging/meta_version.sh - the version is written once (pg_fence.control's
# default_version); META.json, its "provides" entry and CHANGELOG.md must
# agree with it (CONTRIBUTING.md, "Versions and upgrades"), and every install/upgrade script the
# Makefile builds or ships for it must exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."

control=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_fence.control)
meta=$(sed -n 's/^   "version": "\(.*\)",$/\1/p' META.json)
provides=$(sed -n 's/^         "version": "\(.*\)"$/\1/p' META.json)
fail=0
[ -n "$control" ] || { echo "no default_version in pg_fence.control"; exit 1; }
[ "$meta" = "$control" ] || { echo "META.json version '$meta' != control '$control'"; fail=1; }
[ "$provides" = "$control" ] || { echo "META.json provides version '$provides' != control '$control'"; fail=1; }
grep -q "^## $control " CHANGELOG.md || { echo "CHANGELOG.md has no '## $control' entry"; fail=1; }
[ -f "sql/pg_fence--$control.sql" ] || [ -d "sql/$control" ] ||
	{ echo "no install script or fragments for $control"; fail=1; }
[ "$fail" -eq 0 ] && echo "meta_version: $control everywhere"
exit "$fail"
