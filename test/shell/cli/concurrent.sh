#!/usr/bin/env bash
# cli/concurrent.sh - three concurrent "pg_fence run --lease 5s daily-report"
# runs: exactly one runs the command, the other two exit 75 (busy).
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without leases.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_concurrent
cli_env_require_leases

for round in 1 2 3; do
	rm -f "$T"/ran.* "$T"/rc.* "$T/go"
	for i in 1 2 3; do
		( while [ ! -e "$T/go" ]; do sleep 0.01; done
		  "$PGF" run --lease 5s daily-report -- sh -c 'echo "$FENCE_TOKEN" > "$1/ran.$2"; sleep 1' sh "$T" "$i" 2>/dev/null
		  echo $? > "$T/rc.$i" ) &
	done
	touch "$T/go"
	wait
	is "round $round: exactly one ran the command" "$(ls "$T"/ran.* 2>/dev/null | wc -l)" 1
	is "round $round: exit codes" "$(cat "$T"/rc.* | sort | tr '\n' ' ')" "0 75 75 "
	is "round $round: the lease is free again" \
		"$(psql -X -At -c "SELECT count(*) FROM fence.leases WHERE name = 'daily-report' AND expires_at > clock_timestamp()")" 0
done
echo "cli_concurrent: $FAILS failed"
[ "$FAILS" -eq 0 ]
