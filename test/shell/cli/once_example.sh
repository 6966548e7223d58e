#!/usr/bin/env bash
# cli/once_example.sh - examples/once_http.cpp, built against this tree's
# client library (src/client/libpg_fence_client.a), calls a stub HTTP API
# (examples/once_http_stub.py, which appends every request it gets to a
# file) at most once per idempotency key:
#   - three copies at once on one key: the stub gets exactly one request;
#     one copy prints "called: RESPONSE", the others "in progress" (75) or
#     "replayed: RESPONSE" (0);
#   - a later run replays the stored response without calling;
#   - the same key with another body: "mismatch" (65), no call;
#   - the API down: "failed" (1), the key released, and the next run calls.
# Inside scripts/temp-cluster.sh, from the repo root; exit 77 without
# idempotency keys (fence.once_begin) or python3.
set -u
. "$(dirname "$0")/../lib/cli_env.sh"
cli_env_setup cli_once_example
if [ "$(psql -X -At -c "SELECT to_regprocedure('fence.once_begin(text,interval,text)') IS NOT NULL")" != t ]; then
	echo "cli_once_example: skipped, no idempotency keys (fence.once_begin)"
	exit 77
fi
command -v python3 >/dev/null || { echo "cli_once_example: skipped, no python3"; exit 77; }
[ -f src/client/libpg_fence_client.a ] || { echo "cli_once_example: src/client/libpg_fence_client.a is not built (run make)" >&2; exit 1; }

if ! ${CXX:-g++} -std=c++17 -O1 -Wall -Wextra -Werror -Iinclude -o "$T/once_http" examples/once_http.cpp \
	src/client/libpg_fence_client.a -lpqxx -lpq -lpthread 2>"$T/build.log"; then
	bad "examples/once_http.cpp builds"; cat "$T/build.log"; exit 1
fi
ok "examples/once_http.cpp builds with -Wall -Wextra -Werror"

python3 examples/once_http_stub.py "$T/requests" "$T/port" 0.5 &
waitfile "$T/port" || { bad "the stub API started"; exit 1; }
port=$(cat "$T/port")

# --- three at once -------------------------------------------------------------
rm -f "$T/go"
for i in 1 2 3; do
	( while [ ! -e "$T/go" ]; do sleep 0.01; done
	  "$T/once_http" 127.0.0.1 "$port" digest-2026-12-02 >"$T/out.$i" 2>"$T/err.$i"
	  echo $? >"$T/rc.$i" ) &
done
touch "$T/go"
for i in 1 2 3; do
	for _ in $(seq 1 400); do [ -s "$T/rc.$i" ] && break; sleep 0.05; done
done
is "three copies at once: the API got exactly one request" "$(wc -l <"$T/requests")" 1
has "... with the Idempotency-Key header" "$(cat "$T/requests")" "^1 digest-2026-12-02 "
is "... one copy made the call" "$(grep -l '^called: ' "$T"/out.* | wc -l)" 1
response=$(sed -n 's/^called: //p' "$T"/out.*)
is "... and stored the API's response" "$response" '{"id": 1, "status": "sent"}'
others=$(grep -hv '^called: ' "$T"/out.* | sed 's/^replayed: .*/replayed/' | sort | tr '\n' ',')
case "$others" in
	"in progress,in progress," | "in progress,replayed," | "replayed,replayed,") ok "... the others: $others" ;;
	*) bad "... the others: '$others'"; cat "$T"/out.* "$T"/err.* ;;
esac
codes=$(cat "$T"/rc.* | sort | tr '\n' ' ')
case "$codes" in
	"0 0 0 " | "0 0 75 " | "0 75 75 ") ok "... exit codes $codes" ;;
	*) bad "... exit codes '$codes'" ;;
esac

# --- replay, mismatch ------------------------------------------------------------
out=$("$T/once_http" 127.0.0.1 "$port" digest-2026-12-02)
is "a later run exits 0" "$?" 0
is "... replaying the stored response" "$out" "replayed: $response"
out=$("$T/once_http" 127.0.0.1 "$port" digest-2026-12-02 '{"to": "someone-else@example.com"}')
is "the same key with another body exits 65" "$?" 65
is "... mismatch" "$out" "mismatch"
is "... and the API got no more requests" "$(wc -l <"$T/requests")" 1

# --- the API down: released, retried ------------------------------------------------
out=$("$T/once_http" 127.0.0.1 1 digest-2026-12-03)
is "the API unreachable: exit 1" "$?" 1
has "... failed" "$out" "^failed: "
out=$("$T/once_http" 127.0.0.1 "$port" digest-2026-12-03 2>"$T/err")
is "the next run exits 0" "$?" 0
is "... and makes the call (the key was released)" "$out" 'called: {"id": 2, "status": "sent"}'
has "... taking over at the step the failed run reached" "$(cat "$T/err")" 'reached step "calling"'

echo "cli_once_example: $FAILS failed"
[ "$FAILS" -eq 0 ]
