#!/usr/bin/env bash
# pooling/pgbouncer.sh - pg_fence behind a real PgBouncer in transaction
# pooling mode (Debian's pgbouncer, a process of this test's own on a free
# loopback port, never a packaged service), in front of this cluster.
#
# Two pools point at the same database, each with ONE server connection
# (default_pool_size = 1): every client of a pool lands on that pool's one
# server connection, and the two pools are two different ones.  Through
# them:
#   - leases: acquired through one server connection, renewed and released
#     through the other;
#   - transaction locks: held for the transaction, excluding the other pool;
#   - fenced_update with a lease's token, and a stale token refused;
#   - SET LOCAL fence.token in a transaction: a guarded UPDATE counts it;
#   - a session-level SET fence.token left on the shared server connection
#     by one client never counts for another client's transaction (FN003),
#     though SHOW still displays it there;
#   - a session lock taken through the pooler belongs to the server
#     connection: it outlives its client, and the next client of the pool
#     "holds" it too (what docs/poolers.md warns about).
# Usage: bash scripts/temp-cluster.sh bash test/shell/pooling/pgbouncer.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source test/shell/lib/check.sh

PGBOUNCER=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null || true)
if [ -z "$PGBOUNCER" ]; then
	# scripts/install-deps.sh installs it: missing means a broken setup
	echo "not ok - pgbouncer is installed (scripts/install-deps.sh)"
	exit 1
fi

DB=pgb_$$
T=$(mktemp -d)
chmod 755 "$T"
mkdir "$T/pgb"
[ -n "${FENCE_AS_OWNER:-}" ] && chown postgres "$T/pgb"
PGB_UP=
cleanup() {
	if [ -n "$PGB_UP" ] && [ -s "$T/pgb/pgbouncer.pid" ]; then
		${FENCE_AS_OWNER:-} kill "$(cat "$T/pgb/pgbouncer.pid")" 2>/dev/null
		for _ in $(seq 1 100); do [ -e "$T/pgb/pgbouncer.pid" ] || break; sleep 0.05; done
	fi
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	dropdb --if-exists --force "$DB" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

createdb "$DB" || exit 1
export PGDATABASE=$DB
q -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION pg_fence' || exit 1
LEASES=$(q -c "SELECT to_regprocedure('fence.lease_acquire(text,interval,text,interval)') IS NOT NULL")

port_in_use() { grep -q "$(printf ':%04X ' "$1")" /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
PORT=
for _ in $(seq 1 100); do
	c=$((20000 + RANDOM % 40000))
	[ "$c" -eq 6432 ] || [ "$c" -eq 5432 ] || port_in_use "$c" || { PORT=$c; break; }
done
[ -n "$PORT" ] || { echo "not ok - a free loopback port"; exit 1; }

# Clients are trusted on the loopback port (the names must be in auth_file);
# the pooler reaches the cluster on its Unix socket, as the cluster allows.
printf '"%s" ""\n' "$PGUSER" >"$T/pgb/users.txt"
cat >"$T/pgb/pgbouncer.ini" <<INI
[databases]
pool_a = host=$PGHOST port=$PGPORT dbname=$DB
pool_b = host=$PGHOST port=$PGPORT dbname=$DB

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $T/pgb/users.txt
pool_mode = transaction
default_pool_size = 1
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 50
server_reset_query = DISCARD ALL
logfile = $T/pgb/pgbouncer.log
pidfile = $T/pgb/pgbouncer.pid
INI
[ -n "${FENCE_AS_OWNER:-}" ] && chown postgres "$T/pgb"/*
${FENCE_AS_OWNER:-} "$PGBOUNCER" -d -q "$T/pgb/pgbouncer.ini" || { echo "not ok - pgbouncer starts"; cat "$T/pgb/pgbouncer.log"; exit 1; }
PGB_UP=1

# via POOL ARGS...: psql through the pooler
via() { local pool=$1; shift; psql -X -A -t -q -h 127.0.0.1 -p "$PORT" -d "$pool" "$@"; }
up=
for _ in $(seq 1 200); do
	[ "$(via pool_a -c 'SELECT 1' 2>/dev/null)" = 1 ] && { up=ok; break; }
	sleep 0.05
done
check "pgbouncer answers on 127.0.0.1:$PORT" "ok" "$up"
[ "$up" = ok ] || { cat "$T/pgb/pgbouncer.log"; exit 1; }

pid_a=$(via pool_a -c 'SELECT pg_backend_pid()')
pid_b=$(via pool_b -c 'SELECT pg_backend_pid()')
check "pool_a's clients share one server connection" "$pid_a" "$(via pool_a -c 'SELECT pg_backend_pid()')"
check "pool_a and pool_b are different server connections" "yes" \
	"$([ -n "$pid_a" ] && [ "$pid_a" != "$pid_b" ] && echo yes || echo "no ($pid_a, $pid_b)")"

# --- leases: rows, not connections ---------------------------------------------
if [ "$LEASES" = t ]; then
	tok=$(via pool_a -c "SELECT fence.lease_acquire('job', '1 minute', 'pgb-test')")
	check "lease_acquire through the pooler returns a token" "yes" "$([ "${tok:-0}" -gt 0 ] && echo yes || echo "no ($tok)")"
	check "busy for the other server connection" "" "$(via pool_b -c "SELECT fence.lease_acquire('job', '1 minute')")"
	check "lease_renew through the other server connection" "t" "$(via pool_b -c "SELECT fence.lease_renew('job', $tok, '1 minute')")"
	check "lease_release through the first again" "t" "$(via pool_a -c "SELECT fence.lease_release('job', $tok)")"
	check "the name is free afterwards" "yes" \
		"$([ "$(via pool_b -c "SELECT fence.lease_acquire('job', '1 minute')")" -gt "$tok" ] && echo yes || echo no)"
else
	echo "ok - # SKIP leases: no lease functions"
fi

# --- transaction locks: held for the transaction, by whoever ran it ----------------
via pool_a -c "BEGIN" -c "SELECT fence.xact_lock('x', '5s')" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 & HOLD=$!
for _ in $(seq 1 200); do
	[ "$(q -c "SELECT count(*) FROM fence.locks WHERE name = 'x'")" = 1 ] && break
	sleep 0.05
done
check "xact_lock is held inside the pooled transaction" "1" "$(q -c "SELECT count(*) FROM fence.locks WHERE name = 'x' AND kind = 'xact'")"
check "the other server connection cannot take it" "" "$(via pool_b -c "BEGIN" -c "SELECT fence.try_xact_lock('x')" -c "COMMIT" | head -n 1)"
q -c "SELECT pg_cancel_backend($pid_a)" >/dev/null
wait "$HOLD" 2>/dev/null
# (its client left in an aborted transaction: PgBouncer closed that server connection)
pid_a=$(via pool_a -c 'SELECT pg_backend_pid()')
check "it ends with the transaction" "t" "$(via pool_b -c "BEGIN" -c "SELECT fence.try_xact_lock('x') IS NOT NULL" -c "COMMIT" | head -n 1)"

# --- fenced writes -----------------------------------------------------------------
q -c "CREATE TABLE acct (id int PRIMARY KEY, v int, fence bigint NOT NULL DEFAULT 0)" \
	-c "INSERT INTO acct VALUES (1, 0, 0), (2, 0, 0)" -c "SELECT fence.guard('acct')" >/dev/null || exit 1
t1=$(via pool_a -c "SELECT fence.try_xact_lock('w') FROM pg_catalog.pg_sleep(0)")
t2=$(via pool_b -c "SELECT fence.try_xact_lock('w')")
check "fenced_update with the newer token" "t" \
	"$(via pool_b -c "SELECT fence.fenced_update('acct', '{\"id\": 1}', $t2, '{\"v\": 2}')")"
check "fenced_update with the older token afterwards: refused" "f" \
	"$(via pool_a -c "SELECT fence.fenced_update('acct', '{\"id\": 1}', $t1, '{\"v\": 1}')")"
check "SET LOCAL fence.token in a pooled transaction counts for its UPDATE" "3" \
	"$(via pool_a -v ON_ERROR_STOP=1 -c "BEGIN" -c "SET LOCAL fence.token = $t2" \
		-c "UPDATE acct SET v = 3 WHERE id = 2" -c "COMMIT" -c "SELECT v FROM acct WHERE id = 2" 2>&1)"
check "...and is gone after it" "" "$(via pool_a -c "SHOW fence.token")"

# --- a session-level SET left on the shared server connection -------------------------
via pool_a -c "SET fence.token = $t2" >/dev/null
check "the value stays on pool_a's server connection (SHOW in another client)" "$t2" "$(via pool_a -c "SHOW fence.token")"
check "same server connection for that client" "$pid_a" "$(via pool_a -c 'SELECT pg_backend_pid()')"
out=$(via pool_a -v VERBOSITY=sqlstate -c "UPDATE acct SET v = 4 WHERE id = 2" 2>&1)
check "another client's UPDATE does not count it: FN003" "ERROR:  FN003" "$out"
out=$(via pool_a -v VERBOSITY=sqlstate -c "BEGIN" -c "UPDATE acct SET v = 4 WHERE id = 2" -c "COMMIT" 2>&1 | head -n 1)
check "...not in an explicit transaction either: FN003" "ERROR:  FN003" "$out"
check "the row is unchanged" "3" "$(q -c "SELECT v FROM acct WHERE id = 2")"
via pool_a -c "RESET fence.token" >/dev/null

# --- session locks behind transaction pooling: they stay with the server connection --------
st=$(via pool_a -c "SELECT fence.try_lock('sess')")
check "try_lock through the pooler grants" "yes" "$([ "${st:-0}" -gt 0 ] && echo yes || echo "no ($st)")"
check "the lock outlives its client: held by pool_a's server connection" "$pid_a" \
	"$(q -c "SELECT pid FROM fence.locks WHERE name = 'sess'")"
check "another client of the same pool gets it re-entrantly (same token)" "$st" \
	"$(via pool_a -c "SELECT fence.try_lock('sess')")"
check "and can unlock it (once per grant)" "t t" \
	"$(via pool_a -c "SELECT fence.unlock('sess', $st)") $(via pool_a -c "SELECT fence.unlock('sess', $st)")"
check "then it is free" "0" "$(q -c "SELECT count(*) FROM fence.locks WHERE name = 'sess'")"

exit $fail
