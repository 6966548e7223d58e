# act3_cron.sh - demo act 3: the same cron line on three machines.
#
# Sourced by the demo driver inside the throwaway cluster (PG* set), from
# the repository root; defines act3, which returns non-zero if the rule
# "exactly one report per night" is broken.

act3() {
	local pgf=${PG_FENCE_BIN:-$PWD/src/cli/pg_fence}
	local dir rc=0 i
	echo
	echo "=== Act 3: one cron line, three machines, one report ==="
	if [ ! -x "$pgf" ]; then
		echo "act 3: $pgf is not built" >&2
		return 1
	fi
	psql -X -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_fence" || return 1
	if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.lease_acquire(text,interval,text,interval)') IS NULL")" = t ]; then
		echo "act 3: this pg_fence has no leases (fence.lease_acquire); cannot run" >&2
		return 1
	fi
	psql -X -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS act3_reports" \
		-c "CREATE TABLE act3_reports (night date PRIMARY KEY, machine text, body text, fence bigint NOT NULL DEFAULT 0)" \
		-c "INSERT INTO act3_reports (night) VALUES (current_date)" || return 1
	dir=$(mktemp -d)
	echo "Three machines (here: three processes) run at 02:00 the crontab line"
	echo "  pg_fence run --lease 10s nightly-report -- sh -c '...write the report...'"
	echo
	for i in 1 2 3; do
		(
			while [ ! -e "$dir/go" ]; do sleep 0.01; done
			MACHINE="machine-$i" "$pgf" run --lease 10s --holder "machine-$i" nightly-report -- sh -c '
				sleep 1   # the report takes a while to compute
				psql -X -At -c "SELECT fence.fenced_update(\$\$act3_reports\$\$, pg_catalog.jsonb_build_object(\$\$night\$\$, current_date),
					$FENCE_TOKEN, pg_catalog.jsonb_build_object(\$\$machine\$\$, \$\$$MACHINE\$\$,
					\$\$body\$\$, \$\$sales: 42 orders, written by $MACHINE with token $FENCE_TOKEN\$\$))" >/dev/null
				echo "$MACHINE" >> "$0/wrote"' "$dir" 2>"$dir/err.$i"
			echo $? >"$dir/rc.$i"
		) &
	done
	touch "$dir/go"
	wait
	for i in 1 2 3; do
		case $(cat "$dir/rc.$i") in
			0) echo "  machine-$i: got the lease and wrote the report" ;;
			75) echo "  machine-$i: lease busy (exit 75): another machine is on it, nothing done" ;;
			*) echo "  machine-$i: unexpected exit $(cat "$dir/rc.$i"): $(cat "$dir/err.$i")"; rc=1 ;;
		esac
	done
	local writers runs
	writers=$(sort -u "$dir/wrote" 2>/dev/null | wc -l)
	runs=$(grep -c . "$dir/wrote" 2>/dev/null || echo 0)
	echo
	echo "The report in the database:"
	psql -X -At -F ' | ' -c "SELECT night, machine, body FROM act3_reports" | sed 's/^/  /'
	if [ "$runs" -eq 1 ] && [ "$writers" -eq 1 ] &&
		[ "$(psql -X -At -c "SELECT machine IS NOT NULL FROM act3_reports")" = t ]; then
		echo "Exactly one machine wrote tonight's report; the other two saw the lease busy and did nothing."
	else
		echo "VIOLATION: the report job ran $runs times (expected exactly 1)."
		rc=1
	fi
	rm -rf "$dir"
	psql -X -q -c "DROP TABLE act3_reports"
	return $rc
}
