#!/usr/bin/env bash
# once/once_pg_cron.sh - fence.once_purge() scheduled with pg_cron, as a
# user would (docs/once.md, "Retention and purge"): in a throwaway cluster
# of its own with shared_preload_libraries = 'pg_fence,pg_cron', an
# operator role (a member of fence_admin, not a superuser) schedules
# SELECT fence.once_purge() with cron.schedule; the job runs, succeeds,
# and removes a finished key older than fence.once_retention (set for the
# database with ALTER DATABASE ... SET, as the sessions pg_cron starts
# read it) while an unfinished key whose lease is live stays.
#
# Schedule: pg_cron 1.5 and later accept '1 seconds'; older ones (Debian
# 12 ships 1.4) only cron syntax, whose finest step is one minute: the
# test tries '1 seconds' and falls back to '* * * * *', waiting up to 150 s
# for the first run.
#
# Skipped (77) when pg_cron is not installed for the server (Debian:
# postgresql-NN-cron, which scripts/install-deps.sh installs).
# Usage: bash test/shell/once/once_pg_cron.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../../.."

source test/shell/lib/clusters.sh
if [ -z "${FENCE_ONCE_CRON_INNER:-}" ]; then
	have=$(psql -X -A -t -q -c "SELECT count(*) FROM pg_catalog.pg_available_extensions WHERE name = 'pg_cron'")
	if [ "$have" != 1 ]; then
		echo "pg_cron is not installed for this server (Debian: postgresql-NN-cron; scripts/install-deps.sh)"
		exit 77
	fi
fi
nested_cluster FENCE_ONCE_CRON_INNER FENCE_PRELOAD=pg_fence,pg_cron \
	FENCE_PG_CONF="cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16"

source test/shell/lib/check.sh

q -c 'CREATE EXTENSION pg_fence' -c 'CREATE EXTENSION pg_cron' >/dev/null
q -c "CREATE ROLE fence_ops LOGIN" -c "GRANT fence_admin TO fence_ops" \
	-c "GRANT USAGE ON SCHEMA cron TO fence_ops" \
	-c "ALTER DATABASE postgres SET fence.once_retention = '1s'" >/dev/null
check "pg_cron is loaded" "t" \
	"$(q -c "SELECT 'pg_cron' = ANY (string_to_array(current_setting('shared_preload_libraries'), ','))")"

# A key finished now (older than the 1 s retention by the time the job
# runs) and one in progress under a live 10-minute lease.
token=$(q -c "SELECT token FROM fence.once_begin('cron/digest:2026-12-01', '1 min')")
check "the old key is finished" "t" \
	"$(q -c "SELECT fence.once_finish('cron/digest:2026-12-01', $token, '{\"sent\": 3}')")"
check "the live key is begun" "new" \
	"$(q -c "SELECT status FROM fence.once_begin('cron/digest:2026-12-02', '10 min')")"
check "retention as a new session sees it" "1s" "$(q -c 'SHOW fence.once_retention')"
sleep 1.2

# Schedule it as the operator, the finest way this pg_cron allows.
schedule="1 seconds"
if ! job=$(q -U fence_ops -c "SELECT cron.schedule('fence-once-purge', '1 seconds', 'SELECT fence.once_purge()')" 2>/dev/null); then
	schedule="* * * * *"
	job=$(q -U fence_ops -c "SELECT cron.schedule('fence-once-purge', '* * * * *', 'SELECT fence.once_purge()')")
fi
echo "# pg_cron $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'"): schedule '$schedule', job $job"
check "the job is the operator's" "fence_ops|SELECT fence.once_purge()" \
	"$(q -c "SELECT username || '|' || command FROM cron.job WHERE jobid = $job")"

# Wait for a run that finished (pg_cron logs each in cron.job_run_details).
status=
for _ in $(seq 1 300); do
	status=$(q -c "SELECT status FROM cron.job_run_details WHERE jobid = $job AND status IN ('succeeded', 'failed')
	                ORDER BY runid LIMIT 1")
	[ -n "$status" ] && break
	sleep 0.5
done
check "pg_cron ran fence.once_purge() and it succeeded" "succeeded" "$status"
if [ "$status" = failed ]; then
	q -c "SELECT return_message FROM cron.job_run_details WHERE jobid = $job" | sed 's/^/# /'
fi
check "the run's reply" "SELECT 1" \
	"$(q -c "SELECT return_message FROM cron.job_run_details WHERE jobid = $job AND status = 'succeeded'
	          ORDER BY runid LIMIT 1")"
check "the finished key older than the retention is gone; the live one stays" "cron/digest:2026-12-02 in_progress" \
	"$(q -c "SELECT string_agg(key || ' ' || state, ', ' ORDER BY key) FROM fence.once_keys")"
check "the purged key is new again" "new" \
	"$(q -c "SELECT status FROM fence.once_begin('cron/digest:2026-12-01', '1 min')")"
q -c "SELECT cron.unschedule($job)" >/dev/null

exit $fail
