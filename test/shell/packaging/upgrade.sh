#!/usr/bin/env bash
# packaging/upgrade.sh - the upgrade path gives the same extension as a fresh install
# (CONTRIBUTING.md, "Versions and upgrades").
#
# In one database: CREATE EXTENSION pg_fence VERSION '<oldest>' (0.1.0), then
# ALTER EXTENSION pg_fence UPDATE, then call the API.  In another: a plain
# CREATE EXTENSION pg_fence (the control file's default_version).  The two
# schema dumps must be identical apart from comment lines.
#
# pg_dump leaves out the members of an extension (it dumps only CREATE
# EXTENSION), so a plain "pg_dump -s" would compare two nearly empty files.
# The comparison uses "pg_dump -s --binary-upgrade", which writes every member
# object (functions, tables, sequences, views, triggers, grants, comments) as
# pg_upgrade would recreate it; the OID-preserving calls are removed before
# comparing.  A catalog listing of the members (pg_describe_object, with
# their ACLs and comments) is compared too.
#
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail

: "${PGHOST:?run this under scripts/temp-cluster.sh}"
OLD_VERSION=${FENCE_UPGRADE_FROM:-0.1.0}
UPGRADED=fence_upgraded
FRESH=fence_fresh
GRANTED=fence_upgraded_grants
BIN=${FENCE_PGBIN:-$(dirname "$(command -v pg_dump)")}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_upgrade.XXXXXX")

q() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

cleanup() {
	local rc=$?
	trap - EXIT
	dropdb --if-exists "$UPGRADED" >/dev/null 2>&1 || true
	dropdb --if-exists "$FRESH" >/dev/null 2>&1 || true
	dropdb --if-exists "$GRANTED" >/dev/null 2>&1 || true
	psql -X -q -d postgres -c 'DROP ROLE IF EXISTS upg_writer' -c 'DROP ROLE IF EXISTS upg_other' >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT

dropdb --if-exists "$UPGRADED"
dropdb --if-exists "$FRESH"
createdb "$UPGRADED"
createdb "$FRESH"

default_version=$(q postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_fence'")
[ -n "$default_version" ] || { echo "pg_fence is not installed in this server"; exit 1; }
if [ "$default_version" = "$OLD_VERSION" ]; then
	echo "default version is $OLD_VERSION: no upgrade path to test"
	exit 77
fi

q "$UPGRADED" -c "CREATE EXTENSION pg_fence VERSION '$OLD_VERSION'"
token_old=$(q "$UPGRADED" -c "SELECT fence.try_lock('upgrade/before')")
q "$UPGRADED" -c 'ALTER EXTENSION pg_fence UPDATE'
q "$FRESH" -c 'CREATE EXTENSION pg_fence'

v_up=$(q "$UPGRADED" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")
v_fresh=$(q "$FRESH" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'")
echo "upgraded $OLD_VERSION -> $v_up; fresh install $v_fresh"
fail=0
if [ "$v_up" != "$default_version" ] || [ "$v_fresh" != "$default_version" ]; then
	echo "FAILED: expected version $default_version in both databases"
	fail=1
fi

# The API works after the upgrade, and tokens keep counting upwards.
IFS='|' read -r token_new released < <(q "$UPGRADED" -c \
	"SELECT t, fence.unlock('upgrade/after', t) FROM (SELECT fence.try_lock('upgrade/after') AS t OFFSET 0) s")
if ! [[ "$token_new" =~ ^[0-9]+$ ]] || [ "$token_new" -le "$token_old" ] || [ "$released" != t ]; then
	echo "FAILED: after the upgrade try_lock returned '$token_new' (before: $token_old), unlock '$released'"
	fail=1
fi
if [ "$(q "$UPGRADED" -c "SELECT pg_catalog.to_regclass('fence.leases') IS NOT NULL")" = t ]; then
	lease=$(q "$UPGRADED" -c "SELECT fence.lease_acquire('upgrade/lease', interval '1 minute')")
	if ! [[ "$lease" =~ ^[0-9]+$ ]] || [ "$lease" -le "$token_new" ]; then
		echo "FAILED: after the upgrade lease_acquire returned '$lease'"
		fail=1
	fi
fi

# 0.2.0 replaces fence.fenced_update (expect_fence is a new argument):
# privileges granted or revoked on the 0.1.0 function carry over, and the
# 0.1.0 function keeps working with the new library until the update.
dropdb --if-exists "$GRANTED"
createdb "$GRANTED"
q postgres -c 'SET client_min_messages = warning' -c 'DROP ROLE IF EXISTS upg_writer' -c 'DROP ROLE IF EXISTS upg_other' \
	-c 'CREATE ROLE upg_writer' -c 'CREATE ROLE upg_other' >/dev/null
q "$GRANTED" -c "CREATE EXTENSION pg_fence VERSION '$OLD_VERSION'" \
	-c 'CREATE TABLE doc (id int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0)' \
	-c "INSERT INTO doc VALUES (1, 'a', 0)" \
	-c 'REVOKE EXECUTE ON FUNCTION fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean) FROM PUBLIC' \
	-c 'GRANT EXECUTE ON FUNCTION fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean) TO upg_writer WITH GRANT OPTION'
old_call=$(q "$GRANTED" -c "SELECT fence.fenced_update('doc', '{\"id\": 1}', fence.try_xact_lock('d'), '{\"v\": \"b\"}')")
if [ "$old_call" != t ]; then
	echo "FAILED: the $OLD_VERSION fenced_update with the new library returned '$old_call'"
	fail=1
fi
q "$GRANTED" -c 'ALTER EXTENSION pg_fence UPDATE'
acl=$(q "$GRANTED" -c "SELECT pg_catalog.has_function_privilege('upg_writer', f, 'EXECUTE'),
                              pg_catalog.has_function_privilege('upg_writer', f, 'EXECUTE WITH GRANT OPTION'),
                              pg_catalog.has_function_privilege('upg_other', f, 'EXECUTE')
                         FROM pg_catalog.to_regprocedure('fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean, bigint)') AS f")
if [ "$acl" != "t|t|f" ]; then
	echo "FAILED: privileges on fenced_update after the update: '$acl' (want t|t|f: granted, grantable, revoked from PUBLIC)"
	fail=1
else
	echo "fenced_update: privileges granted and revoked on $OLD_VERSION carried over"
fi
new_call=$(q "$GRANTED" -c "SELECT fence.fenced_update('doc', '{\"id\": 1}', fence.try_xact_lock('d'), '{\"v\": \"c\"}', expect_fence => (SELECT fence FROM doc))")
if [ "$new_call" != t ]; then
	echo "FAILED: fenced_update with expect_fence after the update returned '$new_call'"
	fail=1
fi

# Schema dumps, normalised: without comment and blank lines, psql's
# \restrict keys (random), the OID-preserving calls of binary-upgrade mode,
# the OIDs of the configuration tables, the tables' frozen transaction ids
# and the OIDs binary-upgrade mode refers to them by, and the sequences'
# current values (data, and the upgraded database has handed out tokens).
dump() {
	"$BIN/pg_dump" -s --binary-upgrade -d "$1" |
		grep -v -E '^--|^$|^\\(un)?restrict |binary_upgrade_set_next_|^SELECT pg_catalog\.setval\(' |
		sed -E -e "s/(binary_upgrade_create_empty_extension\(.*)'\{[0-9,]*\}'/\1'{config OIDs}'/" \
			-e "s/^SET relfrozenxid = '[0-9]+', relminmxid = '[0-9]+'$/SET relfrozenxid = (xid), relminmxid = (mxid)/" \
			-e "s/^WHERE oid = '[0-9]+';$/WHERE oid = (oid);/" >"$2"
}
dump "$UPGRADED" "$WORK/upgraded.sql"
dump "$FRESH" "$WORK/fresh.sql"

# The dump really holds the members: not a comparison of two empty files.
if ! grep -q 'CREATE FUNCTION fence.try_lock' "$WORK/fresh.sql" ||
	! grep -q 'ALTER EXTENSION pg_fence ADD' "$WORK/fresh.sql"; then
	echo "FAILED: the schema dump of $FRESH does not list the extension's members"
	fail=1
fi
if ! diff -u "$WORK/fresh.sql" "$WORK/upgraded.sql" >"$WORK/dump.diff"; then
	echo "FAILED: pg_dump -s of the upgraded database differs from a fresh install (- fresh, + upgraded):"
	cat "$WORK/dump.diff"
	fail=1
else
	echo "pg_dump -s --binary-upgrade: identical ($(wc -l <"$WORK/fresh.sql") lines)"
fi

# The same from the catalogs: every member, its ACL and its comment.
members() {
	q "$1" <<'SQL'
SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
       || coalesce(' acl=' || (SELECT c.relacl::text FROM pg_catalog.pg_class c
                               WHERE d.classid = 'pg_catalog.pg_class'::regclass AND c.oid = d.objid), '')
       || coalesce(' acl=' || (SELECT p.proacl::text FROM pg_catalog.pg_proc p
                               WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND p.oid = d.objid), '')
       || coalesce(' comment=' || pg_catalog.obj_description(d.objid, c.relname), '')
  FROM pg_catalog.pg_depend d
  JOIN pg_catalog.pg_class c ON c.oid = d.classid
 WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'pg_fence')
   AND d.deptype = 'e'
 ORDER BY 1;
SQL
}
members "$UPGRADED" >"$WORK/members-upgraded"
members "$FRESH" >"$WORK/members-fresh"
if ! diff -u "$WORK/members-fresh" "$WORK/members-upgraded"; then
	echo "FAILED: the extension's members differ (- fresh, + upgraded)"
	fail=1
else
	echo "extension members: identical ($(wc -l <"$WORK/members-fresh") objects)"
fi
exit "$fail"
