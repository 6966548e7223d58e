#!/usr/bin/env bash
# durability/token_seq_altered.sh - what an administrator can change about
# fence.token_seq either keeps tokens correct or makes issuance fail loudly
# (docs/guarantees.md guarantees 2 and 3; docs/tokens.md, "The token sequences"):
#   1. INCREMENT 2, INCREMENT -1, CYCLE, CACHE 10, AS integer: after a restart
#      (the counter starts anew) a grant raises 55000 and hands out nothing;
#      put back, grants continue above every token seen;
#   2. setval lower (and ALTER SEQUENCE RESTART): the session that lowered it
#      draws until refused with 55000 (with the shared allocator at its next
#      ceiling move, within 4096 tokens), and every token it got is above
#      every token seen before; the value the hint names makes grants work;
#   2b. setval lower (and RESTART), then an immediate stop and a start (the
#      shared allocator's memory is gone; fence.token_mark remembers): the
#      first grant raises 55000 and nothing new is held; FN004 still knows
#      the earlier tokens; the value the hint names makes grants continue
#      above every earlier token;
#   2c. the same in a copy of the database (its fence.token_lineage names
#      another system, as after a restore): lifted to the mark, and grants
#      continue in a new epoch;
#   3. another owner: grants continue (the ceiling is moved as the owner);
#   4. the top of the epoch: 2200H after its last token.
# Run under scripts/temp-cluster.sh (test/run-all.sh does).
set -euo pipefail
. "$(dirname "$0")/../lib/clusters.sh"
require_own_cluster "restart and crash"
. "$(dirname "$0")/../lib/check.sh"
DB=fence_token_seq_altered
qp() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
outcome() { psql -X -q -At -d "$DB" -v VERBOSITY=sqlstate "$@" 2>&1 | tail -n 1 | sed 's/^ERROR:  /error /' || true; }
cleanup() {
	local rc=$?
	trap - EXIT
	dropdb --if-exists "$DB" >/dev/null 2>&1 || true
	psql -X -q -c 'DROP ROLE IF EXISTS fence_test_seq_owner' >/dev/null 2>&1 || true
	exit "$rc"
}
trap cleanup EXIT
dropdb --if-exists "$DB"
createdb "$DB"
qp -c 'CREATE EXTENSION pg_fence'
max=$(qp -c "SELECT fence.try_lock('seq/first')")
above() { # TOKEN: is it a token above every one seen? (then: max=TOKEN)
	if [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -gt "$max" ]; then echo t; else echo f; fi
}
seen() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -gt "$max" ] && max=$1 || true; }

# 1. Settings tokens rely on.
for change in 'INCREMENT 2' 'INCREMENT -1' 'CYCLE' 'CACHE 10' 'AS integer'; do
	qp -c "ALTER SEQUENCE fence.token_seq $change"
	"$FENCE_CLUSTER_CTL" restart
	check "ALTER SEQUENCE fence.token_seq $change: a grant raises 55000" "error 55000" \
		"$(outcome -c "SELECT fence.try_lock('seq/altered')")"
	check "  and holds nothing" 0 "$(qp -c "SELECT count(*) FROM fence.locks WHERE name = 'seq/altered'")"
	qp -c 'ALTER SEQUENCE fence.token_seq AS bigint INCREMENT 1 NO CYCLE CACHE 1 MAXVALUE 9223372036854775807'
	got=$(qp -c "SELECT fence.try_lock('seq/restored')")
	check "  put back: grants continue above every token seen ($got > $max)" t "$(above "$got")"
	seen "$got"
	qp -c "SELECT fence.unlock_all()" >/dev/null
done

# 2. Moved backwards, in the session that moves it.
for lower in "PERFORM pg_catalog.setval('fence.token_seq', 1)" "ALTER SEQUENCE fence.token_seq RESTART"; do
	before=$max
	out=$(outcome -c "DO \$\$
DECLARE t bigint; lo bigint := NULL; n int := 0;
BEGIN
	PERFORM fence.unlock('seq/lower', fence.try_lock('seq/lower'));
	$lower;
	BEGIN
		FOR i IN 1..5000 LOOP
			t := fence.try_lock('seq/lower');
			PERFORM fence.unlock('seq/lower', t);
			lo := least(coalesce(lo, t), t);
			n := n + 1;
		END LOOP;
	EXCEPTION WHEN object_not_in_prerequisite_state THEN
		RAISE NOTICE 'refused after % tokens, the lowest %', n, lo;
		PERFORM pg_catalog.set_config('fence_test.lowest', coalesce(lo, 0)::text, false);
		PERFORM pg_catalog.set_config('fence_test.refused', 'yes', false);
	END;
END \$\$" -c "SELECT pg_catalog.current_setting('fence_test.refused', true) || ' ' ||
	pg_catalog.current_setting('fence_test.lowest', true)")
	refused=${out%% *}
	lowest=${out#* }
	check "$lower: grants are refused with 55000 within 5000 draws" yes "$refused"
	check "  every token it handed out before that ($lowest: lowest, 0 = none) is above every earlier one ($before)" t \
		"$([ "$lowest" = 0 ] || [ "$lowest" -gt "$before" ] && echo t || echo f)"
	hint=$(psql -X -q -At -d "$DB" -c "SELECT fence.try_lock('seq/hint')" 2>&1 |
		sed -n "s/.*setval('fence.token_seq', \([0-9]*\)).*/\1/p" | head -n 1 || true)
	if [ -n "$hint" ]; then
		qp -c "SELECT pg_catalog.setval('fence.token_seq', $hint)" >/dev/null
	else
		# this session's refusal was its own (no shared allocator): the sequence
		# is still below; set it where the refusal said
		qp -c "SELECT pg_catalog.setval('fence.token_seq', $max + 10000)" >/dev/null
	fi
	[ "$lowest" != 0 ] && [ "$lowest" -gt "$max" ] && max=$lowest
	got=$(qp -c "SELECT fence.try_lock('seq/after-fix')")
	check "  set back as the hint says ($hint): grants continue above every token seen ($got > $max)" t \
		"$(above "$got")"
	seen "$got"
	qp -c "SELECT fence.unlock_all()" >/dev/null
done

# 2b. Moved backwards, then a crash: only fence.token_mark remembers.
for lower in "SELECT pg_catalog.setval('fence.token_seq', 5)" "ALTER SEQUENCE fence.token_seq RESTART"; do
	live=$(qp -c "SELECT fence.lease_acquire('seq/live', '1 hour')")
	seen "$live"
	held=$(qp -c "SELECT count(*) FROM fence.locks")
	# CHECKPOINT: the lowering itself must survive the immediate stop
	qp -c "$lower" -c CHECKPOINT >/dev/null
	"$FENCE_CLUSTER_CTL" stop-immediate
	"$FENCE_CLUSTER_CTL" start
	check "$lower, then a crash: a grant raises 55000" "error 55000" \
		"$(outcome -c "SELECT fence.try_lock('seq/crash')")"
	check "  a lease too" "error 55000" "$(outcome -c "SELECT fence.lease_acquire('seq/crash-lease', '5 s')")"
	check "  and nothing new is held" "$held" "$(qp -c "SELECT count(*) FROM fence.locks")"
	check "  a token handed out before is still known as issued (advance, no FN004)" t \
		"$(outcome -c "SELECT fence.advance('seq/resource-$live', $live)")"
	hint=$(psql -X -q -At -d "$DB" -c "SELECT fence.try_lock('seq/hint')" 2>&1 |
		sed -n "s/.*setval('fence.token_seq', \([0-9]*\)).*/\1/p" | head -n 1 || true)
	check "  the refusal names the value to set back" t "$([ -n "$hint" ] && [ "$hint" -ge "$max" ] && echo t || echo f)"
	qp -c "SELECT pg_catalog.setval('fence.token_seq', ${hint:-$((max + 10000))})" >/dev/null
	got=$(qp -c "SELECT fence.try_lock('seq/after-crash')")
	check "  set back as the hint says ($hint): grants continue above every token seen ($got > $max)" t \
		"$(above "$got")"
	seen "$got"
	qp -c "SELECT fence.unlock_all()" -c "SELECT fence.lease_release('seq/live', $live)" >/dev/null
done

# 2c. A copy from another cluster (token_lineage names another system), with
# token_seq below the mark (pg_dump reads each sequence on its own, so a dump
# taken while tokens were issued may hold that): grants continue above the
# mark, in the next epoch (durability/restore_epoch.sh has real copies).
epoch_before=$(qp -c "SELECT last_value >> 32 FROM fence.token_epoch")
qp -c "SELECT pg_catalog.setval('fence.token_lineage', 42)" \
	-c "SELECT pg_catalog.setval('fence.token_seq', 5)" -c CHECKPOINT >/dev/null
"$FENCE_CLUSTER_CTL" restart
got=$(qp -c "SELECT fence.try_lock('seq/restored-elsewhere')")
check "token_seq below the mark in a copy from another cluster: grants continue above every token seen ($got > $max)" t \
	"$(above "$got")"
check "  in the epoch above the source's ($epoch_before)" $((epoch_before + 1)) $((got >> 40))
seen "$got"
qp -c "SELECT fence.unlock_all()" >/dev/null

# 3. Another owner.
psql -X -q -c 'DROP ROLE IF EXISTS fence_test_seq_owner' -c 'CREATE ROLE fence_test_seq_owner'
qp -c 'ALTER SEQUENCE fence.token_seq OWNER TO fence_test_seq_owner'
"$FENCE_CLUSTER_CTL" restart
got=$(qp -c "SELECT fence.try_lock('seq/owner')")
check "another owner of fence.token_seq: grants continue above every token seen ($got > $max)" t "$(above "$got")"
qp -c 'ALTER SEQUENCE fence.token_seq OWNER TO postgres' -c "SELECT fence.unlock_all()" >/dev/null

# 4. The top of this timeline's epoch (2^40 tokens; the copy of 2c is in
# epoch 1): the last tokens below its cap, then 2200H, and the sequence stays
# below the cap.
cap=$(qp -c "SELECT ((last_value >> 32) + 1) << 40 FROM fence.token_epoch")
qp -c "SELECT pg_catalog.setval('fence.token_seq', $cap - 4)" >/dev/null
"$FENCE_CLUSTER_CTL" restart
out=$(outcome -c "DO \$\$
DECLARE t bigint; hi bigint := 0;
BEGIN
	BEGIN
		FOR i IN 1..10 LOOP
			t := fence.try_lock('seq/top');
			PERFORM fence.unlock('seq/top', t);
			hi := greatest(hi, t);
		END LOOP;
	EXCEPTION WHEN sequence_generator_limit_exceeded THEN
		PERFORM pg_catalog.set_config('fence_test.top', hi::text, false);
	END;
END \$\$" -c "SELECT pg_catalog.current_setting('fence_test.top', true)")
check "the last tokens of the epoch end at its cap - 1 ($((cap - 1))), then 2200H" $((cap - 1)) "$out"
check "  and the sequence stays below the cap" t \
	"$(qp -c "SELECT last_value < $cap FROM fence.token_seq")"
check "  a new session is refused too" "error 2200H" "$(outcome -c "SELECT fence.try_lock('seq/top')")"
exit "$fail"
