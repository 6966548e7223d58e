#!/usr/bin/env bash
# peers.sh - the zombie-worker test through other PostgreSQL queues, beside
# pg_fence's: graphile-worker 0.17.3 and pg-boss 10.4.2 (from npm, on Node
# 20), a hand-written SKIP LOCKED queue without a fence, and pg_fence's
# fenced queue.  Every job's first attempt is paused past the job's expiry,
# another attempt runs it meanwhile, then the paused one wakes up and writes
# its effect (test/chaos/peers/zombie.js says how each queue expires a job).
# Prints a table: per queue, the jobs, the effects written, the jobs whose
# effect was applied twice or more, and the late writes committed or refused.
#
# Usage: test/chaos/peers.sh        (make chaos-peers runs it after install)
#
# Environment:
#   PEER_JOBS      jobs per queue (default 150)
#   PEER_EXPIRY_MS the jobs' expiry (default 2000)
#   PEER_PAUSE_MS  how long each first attempt is paused (default 4000)
#   PEERS          the queues to run (default "graphile-worker pg-boss
#                  skip-locked pg_fence")
#   PEERS_CACHE    where the npm packages are installed (default
#                  ~/.cache/pg_fence/peers: outside the checkout, never
#                  committed; installed there on first use with npm)
#   FENCE_SERVER_BIN / PG_CONFIG  the server (as scripts/temp-cluster.sh)
#
# Runs on a throwaway cluster of its own (scripts/temp-cluster.sh), one new
# database per queue.  Exit 0 when every queue's run settled (every job
# done) and pg_fence's showed no duplicate effect; the peers' duplicates
# are what this measures, not a failure.
#
# Copyright (c) 2026, The pg_fence Developers
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${FENCE_CLUSTER_DIR:-}" ]; then
	exec bash scripts/temp-cluster.sh bash "$0" "$@"
fi

JOBS=${PEER_JOBS:-150}
EXPIRY_MS=${PEER_EXPIRY_MS:-2000}
PAUSE_MS=${PEER_PAUSE_MS:-4000}
PEERS=(${PEERS:-graphile-worker pg-boss skip-locked pg_fence})
CACHE=${PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pg_fence/peers}
GRAPHILE_VERSION=0.17.3
PGBOSS_VERSION=10.4.2

command -v node >/dev/null && command -v npm >/dev/null || {
	echo "peers: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
	exit 2
}
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "peers: Node 20 or later is needed (have $(node --version))" >&2; exit 2; }

# The packages, pinned, in a cache outside the checkout.
have() { node -p "require('$CACHE/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(have graphile-worker)" != "$GRAPHILE_VERSION" ] || [ "$(have pg-boss)" != "$PGBOSS_VERSION" ]; then
	mkdir -p "$CACHE"
	[ -f "$CACHE/package.json" ] || echo '{"private": true}' >"$CACHE/package.json"
	echo "peers: installing graphile-worker@$GRAPHILE_VERSION pg-boss@$PGBOSS_VERSION into $CACHE" >&2
	(cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
		"graphile-worker@$GRAPHILE_VERSION" "pg-boss@$PGBOSS_VERSION" pg >&2)
fi
export NODE_PATH=$CACHE/node_modules

OUT=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_peers.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
echo "peers: $JOBS jobs per queue, expiry $EXPIRY_MS ms, each first attempt paused $PAUSE_MS ms" \
	"(PostgreSQL $(psql -X -At -c 'SHOW server_version' postgres | cut -d' ' -f1), Node $(node --version))"
rc=0
for p in "${PEERS[@]}"; do
	db=peers_${p//[-_]/}
	psql -X -q -c "CREATE DATABASE $db" postgres
	[ "$p" = pg_fence ] && psql -X -q -c 'CREATE EXTENSION pg_fence' "$db"
	if ! PGDATABASE=$db timeout 180 node test/chaos/peers/zombie.js "$p" --jobs "$JOBS" \
		--expiry-ms "$EXPIRY_MS" --pause-ms "$PAUSE_MS" >"$OUT/$p.json" 2>"$OUT/$p.err"; then
		echo "peers: $p failed:" >&2
		sed 's/^/    /' "$OUT/$p.err" | head -20 >&2
		echo '{}' >"$OUT/$p.json"
		rc=1
	fi
done

node - "$OUT" "${PEERS[@]}" <<'JS' || rc=1
const [dir, ...peers] = process.argv.slice(2);
const fs = require('fs');
const head = ['queue', 'jobs', 'with an effect', 'effects', 'applied twice+', 'late writes committed',
	'late writes refused', 'settled', 's'];
const rows = [head];
let bad = false;
for (const p of peers) {
	const s = JSON.parse(fs.readFileSync(`${dir}/${p}.json`, 'utf8'));
	if (s.peer === undefined) { rows.push([p, 'failed']); bad = true; continue; }
	rows.push([p, s.jobs, s.with_effect, s.effects, s.duplicated, s.late_written, s.late_refused,
		s.settled ? 'yes' : 'no', s.seconds].map(String));
	if (!s.settled || (p === 'pg_fence' && s.duplicated !== 0)) bad = true;
}
const w = head.map((_, i) => Math.max(...rows.map((r) => (r[i] || '').length)));
const line = (r) => '| ' + w.map((n, i) => (r[i] || '').padEnd(n)).join(' | ') + ' |';
console.log(line(rows[0]));
console.log('|' + w.map((n) => '-'.repeat(n + 2)).join('|') + '|');
rows.slice(1).forEach((r) => console.log(line(r)));
process.exit(bad ? 1 : 0);
JS
exit "$rc"
