#!/usr/bin/env bash
# packaging/admin_role.sh - CREATE EXTENSION / ALTER EXTENSION UPDATE refuse
# a role fence_admin that someone else could control (docs/security.md).
#
# Roles are cluster-wide, so this runs in a throwaway cluster of its own
# (nested_cluster; it works inside another test cluster):
#   (a) fence_admin created first by a CREATEROLE non-superuser (16+: it
#       holds ADMIN OPTION on it implicitly), or created by a superuser and
#       granted WITH ADMIN OPTION to a non-superuser: CREATE EXTENSION fails
#       with 42710 and leaves nothing (no schema fence, no extension);
#   (b) the role pg_fence created is used again: CREATE EXTENSION in a
#       second database, DROP EXTENSION then CREATE EXTENSION, a plain
#       membership (no admin option) granted to a trusted role, the upgrade
#       from 0.1.0 (through 0.2.0, whose script creates fence_admin) to the
#       current version in another database;
#   (c) fence_admin WITH LOGIN: refused by CREATE EXTENSION and by ALTER
#       EXTENSION UPDATE from 0.1.0 (which stays at 0.1.0).
# Usage: bash test/shell/packaging/admin_role.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/clusters.sh
nested_cluster FENCE_ADMIN_ROLE_INNER

source test/shell/lib/check.sh

version=$(q -c 'SHOW server_version_num')
for db in ar1 ar2 ar3 ar4; do
	q -c "CREATE DATABASE $db" >/dev/null
done
q -c 'CREATE ROLE attacker LOGIN CREATEROLE' -c 'CREATE ROLE alice LOGIN' >/dev/null

# SQLSTATE of a statement run in database $1 (empty: it succeeded)
state() {
	q -d "$1" -v VERBOSITY=sqlstate -c "$2" 2>&1 >/dev/null | sed -nE 's/^ERROR:  ([0-9A-Z]{5})$/\1/p'
}
# what database $1 holds of pg_fence: its version and whether schema fence exists
left() {
	q -d "$1" -c "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'pg_fence'), 'none')
	                     || '|' || (SELECT count(*) FROM pg_namespace WHERE nspname = 'fence')"
}

# (a) created first by a CREATEROLE non-superuser
q -U attacker -c 'CREATE ROLE fence_admin NOLOGIN' >/dev/null
if [ "$version" -ge 160000 ]; then
	check "16+: the CREATEROLE creator holds ADMIN OPTION implicitly" "t" \
		"$(q -c "SELECT admin_option FROM pg_auth_members
		          WHERE roleid = 'fence_admin'::regrole AND member = 'attacker'::regrole")"
	check "16+: CREATE EXTENSION refuses a fence_admin a non-superuser created (42710)" "42710" \
		"$(state ar1 'CREATE EXTENSION pg_fence')"
	check "16+: and changes nothing" "none|0" "$(left ar1)"
fi
q -c 'DROP ROLE fence_admin' >/dev/null

# (a) created by a superuser, ADMIN OPTION granted to a non-superuser
q -c 'CREATE ROLE fence_admin NOLOGIN' -c 'GRANT fence_admin TO attacker WITH ADMIN OPTION' >/dev/null
out=$(q -d ar1 -c 'CREATE EXTENSION pg_fence' 2>&1 >/dev/null || true)
check "ADMIN OPTION held by a non-superuser: message, detail, hint" \
	'ERROR:  role "fence_admin" already exists and is not safe for pg_fence to use|DETAIL:  pg_fence did not create role "fence_admin" as it is now. Roles that are not superusers hold ADMIN OPTION on it (attacker): they could grant it, and what pg_fence grants it, to anyone.|HINT:  Drop the role (DROP ROLE fence_admin), or make it NOLOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS and revoke the admin option (REVOKE ADMIN OPTION FOR fence_admin FROM ... CASCADE), then run the command again.' \
	"$(grep -E '^(ERROR|DETAIL|HINT):' <<<"$out" | paste -sd'|')"
check "ADMIN OPTION held by a non-superuser: 42710" "42710" "$(state ar1 'CREATE EXTENSION pg_fence')"
check "ADMIN OPTION held by a non-superuser: nothing changed" "none|0" "$(left ar1)"
q -c 'DROP ROLE fence_admin' >/dev/null

# (c) fence_admin WITH LOGIN
q -c 'CREATE ROLE fence_admin LOGIN' >/dev/null
check "LOGIN: CREATE EXTENSION refused (42710)" "42710" "$(state ar1 'CREATE EXTENSION pg_fence')"
check "LOGIN: nothing changed" "none|0" "$(left ar1)"
q -d ar4 -c "CREATE EXTENSION pg_fence VERSION '0.1.0'" >/dev/null 2>&1
check "LOGIN: ALTER EXTENSION UPDATE from 0.1.0 refused (42710)" "42710" \
	"$(state ar4 'ALTER EXTENSION pg_fence UPDATE')"
check "LOGIN: the extension stays at 0.1.0" "0.1.0|1" "$(left ar4)"
q -d ar4 -c 'DROP EXTENSION pg_fence' >/dev/null
q -c 'DROP ROLE fence_admin' >/dev/null

# (b) the role pg_fence created is used again
check "CREATE EXTENSION creates fence_admin" "" "$(state ar1 'CREATE EXTENSION pg_fence')"
check "fence_admin as pg_fence creates it" "f|f|f|f|f|f|0" \
	"$(q -c "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
	               (SELECT count(*) FROM pg_auth_members WHERE roleid = r.oid)
	          FROM pg_roles r WHERE rolname = 'fence_admin'")"
check "CREATE EXTENSION in a second database" "" "$(state ar2 'CREATE EXTENSION pg_fence')"
check "DROP EXTENSION, then CREATE EXTENSION again" "" \
	"$(state ar2 'DROP EXTENSION pg_fence')$(state ar2 'CREATE EXTENSION pg_fence')"
q -c 'GRANT fence_admin TO alice' >/dev/null
check "a plain membership granted to a trusted role: CREATE EXTENSION in a third database" "" \
	"$(state ar3 'CREATE EXTENSION pg_fence')"
check "and the membership is kept" "1" \
	"$(q -c "SELECT count(*) FROM pg_auth_members WHERE roleid = 'fence_admin'::regrole AND member = 'alice'::regrole")"
q -d ar4 -c "CREATE EXTENSION pg_fence VERSION '0.1.0'" >/dev/null 2>&1
current=$(q -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_fence'")
check "0.1.0 -> $current upgrade with the role pg_fence created" "" "$(state ar4 'ALTER EXTENSION pg_fence UPDATE')"
check "upgraded" "$current|1" "$(left ar4)"
check "alice may purge (member of fence_admin)" "0" \
	"$(q -d ar3 -U alice -c 'SELECT fence.lease_purge()')"
check "attacker may not (42501)" "42501" \
	"$(q -d ar3 -U attacker -v VERBOSITY=sqlstate -c 'SELECT fence.lease_purge()' 2>&1 >/dev/null |
		sed -nE 's/^ERROR:  ([0-9A-Z]{5})$/\1/p')"

exit $fail
