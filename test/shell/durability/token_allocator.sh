#!/usr/bin/env bash
# durability/token_allocator.sh - the shared-memory token allocator (pg_fence preloaded)
# under concurrency, across many ceiling moves, and across a crash:
#   - 4 sessions draw 12000 tokens between them (about 3 moves of the durable
#     ceiling, 4096 tokens each), each recording (session, step, token);
#   - every token is unique, and each session's tokens increase step by step;
#   - the token sequence's value is never below a token handed out (that is
#     what makes nextval after a crash, a dump/restore or a failover safe);
#   - after an immediate shutdown, the first token is above every one seen.
# Run under scripts/temp-cluster.sh (test/run-all.sh does).  Skipped (77)
# without shared_preload_libraries = 'pg_fence', where tokens come from
# nextval() one by one (covered by durability/token_durability.sh).
set -euo pipefail
. "$(dirname "$0")/../lib/crash_env.sh"
. "$(dirname "$0")/../lib/check.sh"
DB=fence_token_allocator
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

case ",$(admin -c 'SHOW shared_preload_libraries')," in
	*,pg_fence,*) ;;
	*) echo "pg_fence is not preloaded: no shared token allocator"; exit 77 ;;
esac

crash_env_use_db "$DB"
q -c 'CREATE EXTENSION pg_fence' \
  -c 'CREATE TABLE toks (session int, step int, token bigint)'

draw() {
	q -c "DO \$\$
DECLARE t bigint;
BEGIN
	FOR g IN 1..3000 LOOP
		t := fence.try_lock('s$1-' || g);
		INSERT INTO toks VALUES ($1, g, t);
		PERFORM fence.unlock('s$1-' || g, t);
	END LOOP;
END \$\$"
}
for s in 1 2 3 4; do draw "$s" & done
wait

check "12000 tokens drawn" 12000 "$(q -c 'SELECT count(*) FROM toks')"
check "every token unique" 12000 "$(q -c 'SELECT count(DISTINCT token) FROM toks')"
check "each session's tokens increase" 0 "$(q -c '
	SELECT count(*) FROM (SELECT token, lag(token) OVER (PARTITION BY session ORDER BY step) AS prev FROM toks) s
	 WHERE token <= prev')"
max=$(q -c 'SELECT max(token) FROM toks')
check "the sequence is not below any token handed out" t \
	"$(q -c "SELECT last_value >= $max FROM fence.token_seq")"

crash
# No forged tokens (FN004) across the crash.  Before the first token of the
# new life the bound is the sequence's durable value: every token issued
# before the crash is accepted, one above that value is refused.
seqv=$(q -c 'SELECT last_value FROM fence.token_seq')
check "after the crash, before any draw: the highest token seen is accepted" t \
	"$(q -c "SELECT fence.advance('alloc-r', $max)")"
sqlstate() { q -c '\set ON_ERROR_STOP 0' -c '\set VERBOSITY sqlstate' -c "$1" 2>&1 || true; }
check "after the crash, before any draw: a token above the sequence ($seqv) is refused" \
	"ERROR:  FN004" "$(sqlstate "SELECT fence.advance('alloc-r', $seqv + 1)")"
after=$(q -c "SELECT fence.try_lock('after-crash')")
check "first token after the crash is above every one seen ($max)" t \
	"$([ "$after" -gt "$max" ] && echo t || echo f)"
# Once the counter runs, the bound is the last token handed out: one above
# it is refused although the sequence's durable value is higher.
check "with the counter running: the last token handed out is accepted" t \
	"$(q -c "SELECT fence.advance('alloc-r', $after)")"
check "with the counter running: the next one is refused, below the sequence" \
	"ERROR:  FN004|t" \
	"$(sqlstate "SELECT fence.advance('alloc-r', $after + 1)")|$(q -c "SELECT last_value > $after + 1 FROM fence.token_seq")"

[ "$fail" -eq 0 ] && echo "token_allocator: ok"
exit "$fail"
