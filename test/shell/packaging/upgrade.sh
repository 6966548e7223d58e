#!/usr/bin/env bash
# packaging/upgrade.sh - every upgrade path gives the same extension as a fresh install
# (CONTRIBUTING.md, "Versions and upgrades"; docs/upgrading.md).
#
# For every version the server has an install script for (pg_available_
# extension_versions: the frozen releases 0.1.0 and 0.2.0, and the version
# under development, the control file's default_version), and every older
# version S: in one database CREATE EXTENSION pg_fence VERSION 'S', take a
# lock (and a lease, where S has leases), ALTER EXTENSION pg_fence UPDATE TO
# the newer version T (through every step between, as PostgreSQL chains the
# upgrade scripts), then call the API; in another, a plain CREATE EXTENSION
# pg_fence VERSION 'T'.  The two schema dumps must be identical.  So the
# version under development is checked from the previous release (0.2.0)
# and from the oldest (0.1.0, through 0.2.0), and the frozen step 0.1.0 ->
# 0.2.0 still gives 0.2.0's fresh install.  FENCE_UPGRADE_FROM=S tests from
# S only.
#
# Where S still has 0.1.0's fence.fenced_update (without expect_fence),
# which 0.2.0 replaces: privileges granted or revoked on the old function
# carry over to the new one, and the old function keeps working with the
# new library until the update.
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
BIN=${FENCE_PGBIN:-$(dirname "$(command -v pg_dump)")}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_upgrade.XXXXXX")
GRANTED=fence_upgraded_grants
dbs=()

q() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
# A database name for a version: fence_fresh_0_3_0, fence_up_0_1_0_to_0_3_0.
dbname() { local n="fence_$*"; echo "${n//[. ]/_}"; }
newdb() { dropdb --if-exists "$1" >/dev/null 2>&1 || true; createdb "$1"; dbs+=("$1"); }

cleanup() {
	local rc=$? db
	trap - EXIT
	for db in ${dbs[@]+"${dbs[@]}"}; do dropdb --if-exists "$db" >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c 'DROP ROLE IF EXISTS upg_writer' -c 'DROP ROLE IF EXISTS upg_other' >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT

default_version=$(q postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_fence'")
[ -n "$default_version" ] || { echo "pg_fence is not installed in this server"; exit 1; }
# Every version with an install script, oldest first.
mapfile -t versions < <(q postgres -c "SELECT version FROM pg_available_extension_versions WHERE name = 'pg_fence'" | sort -V)
echo "versions: ${versions[*]} (default $default_version)"
if [ -n "${FENCE_UPGRADE_FROM:-}" ]; then
	printf '%s\n' "${versions[@]}" | grep -qxF "$FENCE_UPGRADE_FROM" ||
		{ echo "FENCE_UPGRADE_FROM=$FENCE_UPGRADE_FROM: no such version (${versions[*]})"; exit 1; }
fi
if [ "${#versions[@]}" -lt 2 ]; then
	echo "only version ${versions[*]}: no upgrade path to test"
	exit 77
fi
fail=0

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

extversion() { q "$1" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'"; }
has_leases() { [ "$(q "$1" -c "SELECT pg_catalog.to_regclass('fence.leases') IS NOT NULL")" = t ]; }

# fresh T: a fresh install of version T, its dump and member listing.
fresh() {
	local v=$1 db
	db=$(dbname fresh "$v")
	newdb "$db"
	q "$db" -c "CREATE EXTENSION pg_fence VERSION '$v'"
	[ "$(extversion "$db")" = "$v" ] || { echo "FAILED: fresh install of $v gives version $(extversion "$db")"; fail=1; }
	dump "$db" "$WORK/fresh-$v.sql"
	members "$db" >"$WORK/members-fresh-$v"
	# The dump really holds the members: not a comparison of two empty files.
	if ! grep -q 'CREATE FUNCTION fence.try_lock' "$WORK/fresh-$v.sql" ||
		! grep -q 'ALTER EXTENSION pg_fence ADD' "$WORK/fresh-$v.sql"; then
		echo "FAILED: the schema dump of a fresh $v does not list the extension's members"
		fail=1
	fi
}

# upgrade S T: S updated to T works and equals a fresh T.
upgrade() {
	local from=$1 to=$2 db token_old token_new released lease_old renewed lease what
	db=$(dbname up "$from" to "$to")
	what="$from -> $to"
	newdb "$db"
	q "$db" -c "CREATE EXTENSION pg_fence VERSION '$from'"
	token_old=$(q "$db" -c "SELECT fence.try_lock('upgrade/before')")
	lease_old=
	if has_leases "$db"; then
		lease_old=$(q "$db" -c "SELECT fence.lease_acquire('upgrade/held', interval '5 minutes')")
	fi
	# The operator's step (docs/upgrading.md) for the version under
	# development; UPDATE TO for an older target.
	if [ "$to" = "$default_version" ]; then
		q "$db" -c 'ALTER EXTENSION pg_fence UPDATE'
	else
		q "$db" -c "ALTER EXTENSION pg_fence UPDATE TO '$to'"
	fi
	if [ "$(extversion "$db")" != "$to" ]; then
		echo "FAILED: $what: version $(extversion "$db") after the update"
		fail=1
	fi

	# The API works after the upgrade, and tokens keep counting upwards.
	IFS='|' read -r token_new released < <(q "$db" -c \
		"SELECT t, fence.unlock('upgrade/after', t) FROM (SELECT fence.try_lock('upgrade/after') AS t OFFSET 0) s")
	if ! [[ "$token_new" =~ ^[0-9]+$ ]] || [ "$token_new" -le "$token_old" ] || [ "$released" != t ]; then
		echo "FAILED: $what: after the upgrade try_lock returned '$token_new' (before: $token_old), unlock '$released'"
		fail=1
	fi
	# A lease taken before the update is still held (renewed with its
	# token); a new one gets a larger token.
	if [ -n "$lease_old" ]; then
		renewed=$(q "$db" -c "SELECT fence.lease_renew('upgrade/held', $lease_old, interval '1 minute')")
		if [ "$renewed" != t ]; then
			echo "FAILED: $what: the lease taken before the update (token $lease_old) renewed: '$renewed'"
			fail=1
		fi
	fi
	if has_leases "$db"; then
		lease=$(q "$db" -c "SELECT fence.lease_acquire('upgrade/lease', interval '1 minute')")
		if ! [[ "$lease" =~ ^[0-9]+$ ]] || [ "$lease" -le "$token_new" ]; then
			echo "FAILED: $what: after the upgrade lease_acquire returned '$lease' (try_lock: $token_new)"
			fail=1
		fi
	fi
	echo "$what: tokens $token_old before, $token_new${lease:+, lease $lease} after${lease_old:+; the lease held across it renewed}"

	dump "$db" "$WORK/up-$from-$to.sql"
	if ! diff -u "$WORK/fresh-$to.sql" "$WORK/up-$from-$to.sql" >"$WORK/dump.diff"; then
		echo "FAILED: $what: pg_dump -s of the upgraded database differs from a fresh $to (- fresh, + upgraded):"
		cat "$WORK/dump.diff"
		fail=1
	else
		echo "$what: pg_dump -s --binary-upgrade identical to a fresh $to ($(wc -l <"$WORK/fresh-$to.sql") lines)"
	fi
	members "$db" >"$WORK/members-up-$from-$to"
	if ! diff -u "$WORK/members-fresh-$to" "$WORK/members-up-$from-$to"; then
		echo "FAILED: $what: the extension's members differ from a fresh $to (- fresh, + upgraded)"
		fail=1
	else
		echo "$what: extension members identical to a fresh $to ($(wc -l <"$WORK/members-fresh-$to") objects)"
	fi
	dropdb "$db"
}

# 0.2.0 replaced fence.fenced_update (expect_fence is a new argument):
# privileges granted or revoked on the old function carry over to the new
# one, and the old function keeps working with the new library until the
# update.  grants S: from S (which has the old function) to the default.
OLD_FU='fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean)'
NEW_FU='fence.fenced_update(regclass, jsonb, bigint, jsonb, name, boolean, bigint)'
grants() {
	local from=$1 old_call new_call acl
	newdb "$GRANTED"
	q postgres -c 'SET client_min_messages = warning' -c 'DROP ROLE IF EXISTS upg_writer' -c 'DROP ROLE IF EXISTS upg_other' \
		-c 'CREATE ROLE upg_writer' -c 'CREATE ROLE upg_other' >/dev/null
	q "$GRANTED" -c "CREATE EXTENSION pg_fence VERSION '$from'" \
		-c 'CREATE TABLE doc (id int PRIMARY KEY, v text, fence bigint NOT NULL DEFAULT 0)' \
		-c "INSERT INTO doc VALUES (1, 'a', 0)" \
		-c "REVOKE EXECUTE ON FUNCTION $OLD_FU FROM PUBLIC" \
		-c "GRANT EXECUTE ON FUNCTION $OLD_FU TO upg_writer WITH GRANT OPTION"
	old_call=$(q "$GRANTED" -c "SELECT fence.fenced_update('doc', '{\"id\": 1}', fence.try_xact_lock('d'), '{\"v\": \"b\"}')")
	if [ "$old_call" != t ]; then
		echo "FAILED: the $from fenced_update with the new library returned '$old_call'"
		fail=1
	fi
	q "$GRANTED" -c 'ALTER EXTENSION pg_fence UPDATE'
	acl=$(q "$GRANTED" -c "SELECT pg_catalog.has_function_privilege('upg_writer', f, 'EXECUTE'),
	                              pg_catalog.has_function_privilege('upg_writer', f, 'EXECUTE WITH GRANT OPTION'),
	                              pg_catalog.has_function_privilege('upg_other', f, 'EXECUTE')
	                         FROM pg_catalog.to_regprocedure('$NEW_FU') AS f")
	if [ "$acl" != "t|t|f" ]; then
		echo "FAILED: privileges on fenced_update after the update from $from: '$acl' (want t|t|f: granted, grantable, revoked from PUBLIC)"
		fail=1
	else
		echo "$from -> $default_version: fenced_update privileges granted and revoked on $from carried over"
	fi
	new_call=$(q "$GRANTED" -c "SELECT fence.fenced_update('doc', '{\"id\": 1}', fence.try_xact_lock('d'), '{\"v\": \"c\"}', expect_fence => (SELECT fence FROM doc))")
	if [ "$new_call" != t ]; then
		echo "FAILED: fenced_update with expect_fence after the update from $from returned '$new_call'"
		fail=1
	fi
	dropdb "$GRANTED"
}

paths=0
for ((i = 1; i < ${#versions[@]}; i++)); do
	to=${versions[i]}
	fresh "$to"
	for ((j = 0; j < i; j++)); do
		from=${versions[j]}
		[ -z "${FENCE_UPGRADE_FROM:-}" ] || [ "$from" = "$FENCE_UPGRADE_FROM" ] || continue
		upgrade "$from" "$to"
		paths=$((paths + 1))
	done
done
[ "$paths" -gt 0 ] || { echo "no version older than ${FENCE_UPGRADE_FROM:-the default}: no upgrade path to test"; exit 77; }

# The grants, from every version that still has the old fenced_update.
for from in "${versions[@]}"; do
	[ "$from" != "$default_version" ] || continue
	[ -z "${FENCE_UPGRADE_FROM:-}" ] || [ "$from" = "$FENCE_UPGRADE_FROM" ] || continue
	db=$(dbname probe "$from")
	newdb "$db"
	q "$db" -c "CREATE EXTENSION pg_fence VERSION '$from'"
	has_old=$(q "$db" -c "SELECT pg_catalog.to_regprocedure('$OLD_FU') IS NOT NULL")
	dropdb "$db"
	[ "$has_old" != t ] || grants "$from"
done
echo "$paths upgrade paths checked"
exit "$fail"
