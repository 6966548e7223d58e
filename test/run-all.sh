#!/usr/bin/env bash
# run-all.sh - run every pg_fence test layer against a running cluster.
#
# Usage (what `make test` does, after building and installing):
#   bash scripts/temp-cluster.sh bash test/run-all.sh
#
# Runs inside the throwaway cluster's environment (PGHOST, PGPORT, PGUSER,
# PGDATA, FENCE_CLUSTER_CTL... from scripts/temp-cluster.sh) and expects
# pg_fence to be installed in that server already: it installs nothing.
#
# Against a server of one's own instead (make installcheck, make
# check-regress...: test/installcheck.sh checks that server first), the
# shell tests that restart or crash the server skip (77).
#
# Layers, in this order (the shell tests last: they restart and crash the
# server):
#   regress    test/sql/*.sql via `make pgxs-installcheck` (pg_regress)
#   isolation  test/specs/*.spec via `make pgxs-installcheck`
#              (pg_isolation_regress)
#   pgtap      test/pgtap/*.sql via pg_prove, in database fence_tap
#   catch2     test/cpp/{client,server}/*.cpp, built by `make cpptest-build`
#              (test/cpp/cpp.mk)
#   shell      test/shell/GROUP/*.sh (cli, durability, leases, observability,
#              packaging, pooling; test/shell/lib holds what they share), each run
#              with bash: exit 0 passes, 77 skips
#
# Every pg_regress test, isolation spec, pgTAP assertion, Catch2 test case and
# shell script counts as one test.  A layer that cannot run at all, or that
# stops before running all of its tests, counts as failed.  One line per
# layer (with its wall time), then the details of what failed, then the
# total wall time and exactly one summary line "N passed, N failed" as the
# last line.  Exit status 0 only when nothing failed.
#
# Environment: FENCE_TEST_LAYERS (space separated subset of the layer names
# above, default all), FENCE_TEST_TIMEOUT (seconds per shell test, default
# 300), FENCE_TEST_REGRESS and FENCE_TEST_ISOLATION (the pg_regress tests and
# isolation specs to run, by name, default all: make check-regress
# REGRESS="a b" passes them).
#
# Copyright (c) 2026, The pg_fence Developers
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

LAYERS=${FENCE_TEST_LAYERS:-regress isolation pgtap catch2 shell}
SHELL_TIMEOUT=${FENCE_TEST_TIMEOUT:-300}
MAKE=${MAKE:-make}
MAKE_QUIET=(-s --no-print-directory)

LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_fence_tests.XXXXXX") || exit 2
chmod 755 "$LOGDIR"
trap 'rm -rf "$LOGDIR"' EXIT

total_pass=0
total_fail=0
details=()			# files to print after the layer lines: "title|file"

want() { [[ " $LAYERS " == *" $1 "* ]]; }

# Wall time in milliseconds (bash's own clock), and as seconds for people.
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
seconds() { printf '%d.%d s' $(($1 / 1000)) $(($1 % 1000 / 100)); }
run_start=$(now_ms)
layer_start=$run_start

# report LAYER PASSED FAILED [NOTE]: the layer's line, with the time since
# it started
report() {
	printf '%-10s %4d passed, %4d failed %9s%s\n' "$1:" "$2" "$3" \
		"$(seconds $(($(now_ms) - layer_start)))" "${4:+   ($4)}"
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
}

# note LAYER MESSAGE: a layer-level problem, printed now and counted by the caller
note() { printf '%-10s %s\n' "$1:" "$2"; }

add_detail() { details+=("$1|$2"); }

# parse_regress LOG: prints "PASSED FAILED NAMES..." from pg_regress or
# pg_isolation_regress output: PG15 "test name ... ok|FAILED" (and
# "     name ... ok" in parallel groups), PG16+ "ok N - name" / "not ok N - name".
parse_regress() {
	awk '
		/^(test |     )[[:space:]]*[^[:space:]]+[[:space:]]+\.\.\. / {
			line = $0; sub(/^(test |     )[[:space:]]*/, "", line)
			split(line, w, /[[:space:]]+/)
			if ($0 ~ /\.\.\. ok/ || $0 ~ /\.\.\. failed \(ignored\)/) p++
			else { f++; names = names " " w[1] }
			next
		}
		/^not ok [0-9]+[[:space:]]+[-+][[:space:]]/ {
			line = $0; sub(/^not ok [0-9]+[[:space:]]+[-+][[:space:]]+/, "", line)
			split(line, w, /[[:space:]]+/)
			if ($0 ~ /# TODO/) p++; else { f++; names = names " " w[1] }
			next
		}
		/^ok [0-9]+[[:space:]]+[-+][[:space:]]/ { p++ }
		END { printf "%d %d%s\n", p, f, names }
	' "$1"
}

# run_pg_regress LAYER EXPECTED DIFFS MAKEARGS...
run_pg_regress() {
	local layer=$1 expected=$2 diffs=$3
	shift 3
	local log="$LOGDIR/$layer.log" rc p f names missing
	rm -f "$diffs"
	"$MAKE" "${MAKE_QUIET[@]}" pgxs-installcheck "$@" >"$log" 2>&1
	rc=$?
	read -r p f names < <(parse_regress "$log")
	missing=$((expected - p - f))
	if [ "$missing" -gt 0 ]; then
		note "$layer" "$missing of $expected tests did not run (make pgxs-installcheck exit $rc)"
		f=$((f + missing))
		add_detail "$layer: make pgxs-installcheck output (last lines)" "$log"
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		note "$layer" "make pgxs-installcheck failed (exit $rc) although every test passed"
		f=1
		add_detail "$layer: make pgxs-installcheck output (last lines)" "$log"
	fi
	[ -n "$names" ] && note "$layer" "FAILED:$names"
	if [ -s "$diffs" ]; then
		add_detail "$layer: $diffs" "$diffs"
	elif [ "$f" -gt 0 ] && [ "$missing" -le 0 ]; then
		add_detail "$layer: make pgxs-installcheck output (last lines)" "$log"
	fi
	report "$layer" "$p" "$f"
}

# tests DIR EXT [NAMES]: the names given (FENCE_TEST_REGRESS...), else every
# DIR/*.EXT
tests() {
	local f
	if [ -n "${3:-}" ]; then
		echo "$3"
		return
	fi
	for f in "$1"/*."$2"; do [ -e "$f" ] && basename "$f" ".$2"; done | paste -sd' ' -
}

layer_regress() {
	local names
	names=$(tests test/sql sql "${FENCE_TEST_REGRESS:-}")
	if [ -z "$names" ]; then report regress 0 0 "no tests in test/sql"; return; fi
	run_pg_regress regress "$(wc -w <<<"$names")" regression.diffs REGRESS="$names" ISOLATION=
}

layer_isolation() {
	local names
	names=$(tests test/specs spec "${FENCE_TEST_ISOLATION:-}")
	if [ -z "$names" ]; then report isolation 0 0 "no specs in test/specs"; return; fi
	run_pg_regress isolation "$(wc -w <<<"$names")" output_iso/regression.diffs REGRESS= ISOLATION="$names"
}

# parse_tap LOG: prints "PASSED FAILED SKIPPED PLANNED" from a TAP stream
# (as echoed by pg_prove -v).  A failing TODO test counts as passed.
parse_tap() {
	awk '
		/^[[:space:]]*1\.\.[0-9]+/ { line = $0; sub(/^[[:space:]]*1\.\./, "", line); plan = line + 0; next }
		/^[[:space:]]*not ok [0-9]+/ { if ($0 ~ /# *TODO/) p++; else f++; next }
		/^[[:space:]]*ok [0-9]+/ { if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) s++; else p++; next }
		END { printf "%d %d %d %d\n", p, f, s, plan }
	' "$1"
}

layer_pgtap() {
	local files=(test/pgtap/*.sql) db=fence_tap log p f s plan rc
	local pass=0 fail=0 skip=0
	if [ ! -e "${files[0]}" ]; then report pgtap 0 0 "no files in test/pgtap"; return; fi
	if ! command -v pg_prove >/dev/null; then
		note pgtap "pg_prove not found (Debian package libtap-parser-sourcehandler-pgtap)"
		report pgtap 0 1
		return
	fi
	log="$LOGDIR/pgtap-setup.log"
	if ! { dropdb --if-exists "$db" && createdb "$db" &&
		psql -X -q -v ON_ERROR_STOP=1 -d "$db" \
			-c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION pg_fence'; } >"$log" 2>&1; then
		note pgtap "cannot prepare database $db (pgTAP 1.2.0: Debian package postgresql-15-pgtap)"
		add_detail "pgtap: setup" "$log"
		report pgtap 0 1
		return
	fi
	for file in "${files[@]}"; do
		log="$LOGDIR/pgtap-$(basename "$file" .sql).log"
		pg_prove -v -d "$db" "$file" >"$log" 2>&1
		rc=$?
		read -r p f s plan < <(parse_tap "$log")
		if [ "$plan" -gt $((p + f + s)) ]; then
			note pgtap "$file: planned $plan, ran $((p + f + s))"
			f=$((f + plan - p - f - s))
		elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			note pgtap "$file: pg_prove failed (exit $rc)"
			f=1
		fi
		if [ "$f" -gt 0 ]; then
			note pgtap "$file: $f failed"
			# the failures and diagnostics, without the passing assertions
			grep -v -E '^[[:space:]]*ok [0-9]+' "$log" >"$log.failures"
			add_detail "pgtap: $file" "$log.failures"
		fi
		pass=$((pass + p))
		fail=$((fail + f))
		skip=$((skip + s))
	done
	report pgtap "$pass" "$fail" "$([ "$skip" -gt 0 ] && echo "$skip skipped")"
	dropdb --if-exists "$db" >/dev/null 2>&1
}

layer_catch2() {
	local log="$LOGDIR/catch2.log" bin=test/cpp/catch_tests rc line total p f
	if [ ! -f test/cpp/cpp.mk ]; then report catch2 0 0 "no test/cpp/cpp.mk"; return; fi
	if ! "$MAKE" "${MAKE_QUIET[@]}" cpptest-build >"$log" 2>&1; then
		note catch2 "make cpptest-build failed"
		add_detail "catch2: build" "$log"
		report catch2 0 1
		return
	fi
	"$bin" >"$log" 2>&1
	rc=$?
	if line=$(grep -E '^All tests passed \(' "$log" | tail -n 1) && [ -n "$line" ]; then
		total=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<<"$line")
		p=$total
		f=0
	elif line=$(grep -E '^test cases: *[0-9]+' "$log" | tail -n 1) && [ -n "$line" ]; then
		total=$(sed -E 's/^test cases: *([0-9]+).*/\1/' <<<"$line")
		p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || echo 0)
		f=$((total - p))
	else
		note catch2 "$bin produced no summary (exit $rc)"
		p=0
		f=1
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		note catch2 "$bin exited with $rc"
		f=1
	fi
	[ "$f" -gt 0 ] && add_detail "catch2: $bin output" "$log"
	report catch2 "$p" "$f"
}

layer_shell() {
	local files=() log rc name pass=0 fail=0 skip=0 f
	for f in test/shell/*/*.sh; do
		[[ $f == test/shell/lib/* ]] || files+=("$f")
	done
	if [ ${#files[@]} -eq 0 ]; then report shell 0 0 "no scripts in test/shell"; return; fi
	for file in "${files[@]}"; do
		name=${file#test/shell/}
		name=${name%.sh}
		log="$LOGDIR/shell-${name//\//-}.log"
		timeout -k 10 "$SHELL_TIMEOUT" bash "$file" >"$log" 2>&1
		rc=$?
		case $rc in
		0) pass=$((pass + 1)) ;;
		77) skip=$((skip + 1)); note shell "$name: skipped: $(tail -n 1 "$log")" ;;
		124) fail=$((fail + 1)); note shell "$name: FAILED (timed out after ${SHELL_TIMEOUT}s)"
			add_detail "shell: $file (last lines)" "$log" ;;
		*) fail=$((fail + 1)); note shell "$name: FAILED (exit $rc)"
			add_detail "shell: $file (last lines)" "$log" ;;
		esac
		# Observations a test reports without asserting them.
		grep -E '^NOTE: ' "$log" | sed "s|^NOTE: |           $name: |"
		# A test that stopped the server must not take the next ones with it.
		if ! psql -X -q -c 'SELECT 1' >/dev/null 2>&1; then
			if [ -n "${FENCE_CLUSTER_CTL:-}" ]; then
				note shell "$name left the server down; restarting it"
				"$FENCE_CLUSTER_CTL" start >/dev/null 2>&1 || true
			else
				note shell "$name: the server does not answer any more"
			fi
		fi
	done
	report shell "$pass" "$fail" "$([ "$skip" -gt 0 ] && echo "$skip skipped")"
}

if ! psql -X -q -c 'SELECT 1' >/dev/null 2>&1; then
	echo "run-all: cannot connect to the server (PGHOST=${PGHOST:-} PGPORT=${PGPORT:-});" \
		"run it as: bash scripts/temp-cluster.sh bash test/run-all.sh, or make installcheck" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

for layer in regress isolation pgtap catch2 shell; do
	layer_start=$(now_ms)
	want "$layer" && "layer_$layer"
done

for d in "${details[@]}"; do
	title=${d%%|*}
	file=${d#*|}
	echo
	echo "=== $title"
	if [[ "$title" == *"(last lines)"* ]]; then
		tail -n 60 "$file"
	elif [ "$(wc -l <"$file")" -gt 400 ]; then
		head -n 400 "$file"
		echo "... ($(wc -l <"$file") lines in all)"
	else
		cat "$file"
	fi
done
[ "${#details[@]}" -gt 0 ] && echo

printf '%-10s %s\n' "total:" "$(seconds $(($(now_ms) - run_start))) wall time"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
