#!/usr/bin/env bash
# packaging/dump_restore.sh - fencing tokens keep counting upwards after pg_dump and a
# restore into a new database (docs/guarantees.md guarantee 3; docs/security.md, "Dump and
# restore": the token sequence is marked with pg_extension_config_dump, so its value is dumped).
#
# Issues a few tokens (session lock, transaction lock, one in a rolled-back
# transaction, a lease when fence.leases exists, a leadership when
# fence.campaign exists), dumps the database in custom format (restored with
# pg_restore) and in plain format (restored with psql), and checks in each
# restored database that the next token is greater than every token seen
# before the dump, and that the leader survives: same candidate and term, a
# rival still refused, and after its resignation the next term is larger.
#
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail

: "${PGHOST:?run this under scripts/temp-cluster.sh}"
SRC=fence_dump_src
BIN=${FENCE_PGBIN:-$(dirname "$(command -v pg_dump)")}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_dump.XXXXXX")

q() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

cleanup() {
	local rc=$?
	trap - EXIT
	for db in "$SRC" fence_dump_custom fence_dump_plain; do
		dropdb --if-exists "$db" >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT

for db in "$SRC" fence_dump_custom fence_dump_plain; do dropdb --if-exists "$db"; done
createdb "$SRC"
q "$SRC" -c 'CREATE EXTENSION pg_fence'

tokens=()
tokens+=("$(q "$SRC" -c "SELECT fence.try_lock('dump/session')")")
tokens+=("$(q "$SRC" -c BEGIN -c "SELECT fence.try_xact_lock('dump/xact')" -c COMMIT)")
tokens+=("$(q "$SRC" -c BEGIN -c "SELECT fence.try_lock('dump/rolled-back')" -c ROLLBACK)")
has_leases=$(q "$SRC" -c "SELECT pg_catalog.to_regclass('fence.leases') IS NOT NULL")
if [ "$has_leases" = t ]; then
	tokens+=("$(q "$SRC" -c "SELECT fence.lease_acquire('dump/lease', interval '1 hour', 'packaging/dump_restore.sh')")")
fi
has_elections=$(q "$SRC" -c "SELECT pg_catalog.to_regproc('fence.campaign') IS NOT NULL")
if [ "$has_elections" = t ]; then
	term=$(q "$SRC" -c "SELECT fence.campaign('dump/leader', 'node-d', interval '1 hour')")
	tokens+=("$term")
fi
# A table guarded with resource columns: its guard (trigger arguments), the
# registration of its guard number (fence.insert_guards, whose rel pg_dump
# writes by name, so that it names the restored table) and its marks must
# come back, so a stale INSERT stays rejected after restore; likewise for a
# partitioned table, whose partitions' cloned triggers run its guard.
has_marks=$(q "$SRC" -c "SELECT pg_catalog.to_regclass('fence.insert_marks') IS NOT NULL")
if [ "$has_marks" = t ]; then
	# (FN004: the tokens presented below must have been issued)
	q "$SRC" -c "SELECT count(fence.unlock('dump/tokens', fence.try_lock('dump/tokens'))) FROM generate_series(1, 10)" >/dev/null
	q "$SRC" -c "CREATE TABLE dump_log (stream text, body text, fence bigint NOT NULL DEFAULT 0)" \
		-c "SELECT fence.guard('dump_log', 'fence', ARRAY['stream'])" \
		-c "INSERT INTO dump_log VALUES ('s', 'first', 7)" >/dev/null
	q "$SRC" -c "CREATE TABLE dump_part (stream text, k int, fence bigint NOT NULL DEFAULT 0) PARTITION BY LIST (k)" \
		-c "CREATE TABLE dump_part_1 PARTITION OF dump_part FOR VALUES IN (1)" \
		-c "SELECT fence.guard('dump_part', 'fence', ARRAY['stream'])" \
		-c "INSERT INTO dump_part VALUES ('s', 1, 7)" >/dev/null
fi
max=0
for t in "${tokens[@]}"; do
	[[ "$t" =~ ^[0-9]+$ ]] || { echo "not a token: '$t'"; exit 1; }
	[ "$t" -gt "$max" ] && max=$t
done
echo "tokens before the dump: ${tokens[*]} (leases: $has_leases)"

"$BIN/pg_dump" -Fc -d "$SRC" -f "$WORK/db.dump"
"$BIN/pg_dump" -Fp -d "$SRC" -f "$WORK/db.sql"

createdb fence_dump_custom
"$BIN/pg_restore" --exit-on-error -d fence_dump_custom "$WORK/db.dump"
createdb fence_dump_plain
q fence_dump_plain -f "$WORK/db.sql" >/dev/null

fail=0
for db in fence_dump_custom fence_dump_plain; do
	next=$(q "$db" -c "SELECT fence.try_lock('dump/after-restore')")
	if [[ "$next" =~ ^[0-9]+$ ]] && [ "$next" -gt "$max" ]; then
		echo "$db: next token $next > $max: ok"
	else
		echo "FAILED: $db: next token '${next:-NULL}' is not greater than $max (a token seen before the dump)"
		fail=1
	fi
	if [ "$has_leases" = t ]; then
		lease_token=$(q "$db" -c "SELECT fence.lease_acquire('dump/lease-after', interval '1 hour')")
		if [[ "$lease_token" =~ ^[0-9]+$ ]] && [ "$lease_token" -gt "$next" ]; then
			echo "$db: next lease token $lease_token: ok"
		else
			echo "FAILED: $db: lease token '${lease_token:-NULL}' after restore is not greater than $next"
			fail=1
		fi
		rows=$(q "$db" -c "SELECT count(*) FROM fence.leases WHERE name = 'dump/lease'")
		echo "NOTE: lease held at dump time restored in $db: $([ "$rows" = 1 ] && echo yes || echo no)"
	fi
	if [ "$has_elections" = t ]; then
		leader=$(q "$db" -c "SELECT candidate || ' ' || term FROM fence.leader('dump/leader')")
		rival=$(q "$db" -c "SELECT coalesce(fence.campaign('dump/leader', 'node-r', interval '1 hour')::text, 'NULL')")
		resigned=$(q "$db" -c "SELECT fence.resign('dump/leader', $term)")
		again=$(q "$db" -c "SELECT fence.campaign('dump/leader', 'node-r', interval '1 hour')")
		if [ "$leader" = "node-d $term" ] && [ "$rival" = NULL ] && [ "$resigned" = t ] &&
			[[ "$again" =~ ^[0-9]+$ ]] && [ "$again" -gt "$term" ]; then
			echo "$db: leader node-d (term $term) restored, rival refused, resigned, next term $again: ok"
		else
			echo "FAILED: $db: leader after restore '$leader' (want 'node-d $term'), rival '$rival' (want NULL), resign '$resigned' (want t), next term '$again' (want > $term)"
			fail=1
		fi
	fi
	if [ "$has_marks" = t ]; then
		state=$(psql -X -q -At -d "$db" -c "INSERT INTO dump_log VALUES ('s', 'stale', 6)" 2>&1 | grep -o 'FN001\|fencing token 6 is older than the fence 7' | head -n 1 || true)
		ok=$(q "$db" -c "INSERT INTO dump_log VALUES ('s', 'fresh', 8) RETURNING fence")
		if [ "$state" = "fencing token 6 is older than the fence 7" ] && [ "$ok" = 8 ]; then
			echo "$db: guarded INSERT after restore: stale token 6 rejected, token 8 accepted: ok"
		else
			echo "FAILED: $db: guarded INSERT after restore: stale insert gave '${state:-accepted}', fresh insert '${ok:-rejected}'"
			fail=1
		fi
		if [ "$(q "$db" -c "SELECT pg_catalog.to_regclass('fence.insert_guards') IS NOT NULL")" = t ]; then
			# each guard number registered to its restored table (new OIDs), whose
			# trigger carries that number
			bound=$(q "$db" -c "SELECT string_agg(g.rel::text, ' ' ORDER BY g.rel::text) FROM fence.insert_guards g
				JOIN pg_catalog.pg_trigger t ON t.tgrelid = g.rel AND t.tgname = 'fence_guard'
				 AND pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), '\000', 2) = g.guard_id::text")
			pstate=$(psql -X -q -At -d "$db" -c "INSERT INTO dump_part VALUES ('s', 1, 6)" 2>&1 | grep -o 'fencing token 6 is older than the fence 7' | head -n 1 || true)
			pok=$(q "$db" -c "INSERT INTO dump_part VALUES ('s', 1, 8) RETURNING fence")
			# a table whose trigger copies a restored guard number runs no guard
			copied=$(psql -X -q -At -d "$db" -v VERBOSITY=sqlstate \
				-c "CREATE TABLE dump_copy (stream text, fence bigint NOT NULL DEFAULT 0)" \
				-c "DO \$\$ BEGIN EXECUTE format('CREATE TRIGGER fence_guard BEFORE INSERT ON dump_copy FOR EACH ROW EXECUTE FUNCTION fence.guard_trigger(%L, %L, %L)', 'fence', (SELECT guard_id FROM fence.insert_guards WHERE rel = 'dump_log'::regclass), 'stream'); END \$\$" \
				-c "INSERT INTO dump_copy VALUES ('s', 9)" 2>&1 | grep -o '39P01' | head -n 1 || true)
			if [ "$bound" = "dump_log dump_part" ] && [ "$pstate" = "fencing token 6 is older than the fence 7" ] &&
				[ "$pok" = 8 ] && [ "$copied" = 39P01 ]; then
				echo "$db: guard numbers registered to the restored tables, partition guarded, a copied number refused: ok"
			else
				echo "FAILED: $db: registered '$bound' (want 'dump_log dump_part'), partition stale insert '${pstate:-accepted}', fresh '${pok:-rejected}', copied number '${copied:-accepted}' (want 39P01)"
				fail=1
			fi
		fi
	fi
done

# A restore that left fence.insert_guards out (here: emptied by hand): the
# guard refuses to run (39P01) until the owner guards the table again.
if [ "$has_marks" = t ] && [ "$(q fence_dump_plain -c "SELECT pg_catalog.to_regclass('fence.insert_guards') IS NOT NULL")" = t ]; then
	q fence_dump_plain -c "DELETE FROM fence.insert_guards"
	lost=$(psql -X -q -At -d fence_dump_plain -v VERBOSITY=sqlstate -c "INSERT INTO dump_log VALUES ('s', 'lost', 9)" 2>&1 | grep -o '39P01' | head -n 1 || true)
	q fence_dump_plain -c "SELECT fence.unguard('dump_log')" -c "SELECT fence.guard('dump_log', 'fence', ARRAY['stream'])" >/dev/null
	again=$(q fence_dump_plain -c "INSERT INTO dump_log VALUES ('s', 'guarded again', 9) RETURNING fence")
	if [ "$lost" = 39P01 ] && [ "$again" = 9 ]; then
		echo "fence_dump_plain: unregistered guard refused (39P01), guarded again: ok"
	else
		echo "FAILED: fence_dump_plain: unregistered guard gave '${lost:-accepted}' (want 39P01), after guarding again '${again:-rejected}'"
		fail=1
	fi
fi
exit "$fail"
