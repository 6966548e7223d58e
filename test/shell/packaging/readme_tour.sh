#!/usr/bin/env bash
# packaging/readme_tour.sh - README.md's quick tour runs as pasted into psql
# and shows what its comments say: the lock's and the lease's tokens, the
# renewal, fenced_update's true then false (the older token is stale), the
# guarded UPDATE with the lease's token written, and the one with the older
# token refused with FN001 (the only error); a job enqueued, claimed and
# completed with its effect; an idempotency key finished and replayed.  Runs the ```sql block under
# "## A quick tour" in a new database of the suite's cluster.
# Usage: bash test/shell/packaging/readme_tour.sh   (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
source test/shell/lib/check.sh

db=fence_readme_tour
T=$(mktemp -d)
trap 'rm -rf "$T"; dropdb --if-exists "$db" >/dev/null 2>&1' EXIT

sed -n '/^## A quick tour/,/^## /p' README.md | sed -n '/^```sql$/,/^```$/p' | sed '1d;$d' >"$T/tour.sql"
check "README.md has the quick tour's sql block" "yes" "$([ -s "$T/tour.sql" ] && echo yes || echo no)"

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db" || exit 1
# As pasted: psql's defaults (no ON_ERROR_STOP), SQLSTATEs shown.
out=$(psql -X -A -t -d "$db" -v VERBOSITY=verbose -f "$T/tour.sql" 2>&1)
echo "$out" | sed 's/^/  | /'

results=$(grep -vE '^(CREATE|INSERT|BEGIN|SET|COMMIT|ROLLBACK|UPDATE [0-9]+|psql:|LOCATION:|DETAIL:|HINT:|CONTEXT:|$)' <<<"$out" | tr '\n' ' ')
# unlock, lease_renew, fenced_update twice, then guard (void: an empty line, dropped)
check "unlock, renew, fenced_update (new token), fenced_update (older token), complete, once_finish, once_begin replays" \
	't t t f t t done|{"sent": 3} ' "$results"
check "the guarded UPDATE with the lease's token writes" "1" "$(grep -c '^UPDATE 1$' <<<"$out")"
check "one error, and it is FN001" "1 1" "$(grep -c 'ERROR' <<<"$out") $(grep -c 'ERROR:  FN001' <<<"$out")"
check "the row keeps the current holder's write" "again" "$(q -d "$db" -c 'SELECT state FROM jobs WHERE id = 7')"
check "the job's effect is written once and the job is completed" "1|completed" \
	"$(q -d "$db" -c "SELECT (SELECT count(*) FROM sent), (SELECT state FROM fence.jobs WHERE queue = 'emails')")"
exit $fail
