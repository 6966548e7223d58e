#!/usr/bin/env bash
# observability/monitoring_configs.sh - the two shipped exporter
# configurations say the same thing: monitoring/sql_exporter/
# pg_fence.collector.yml has exactly the metrics of monitoring/
# postgres_exporter/queries.yaml (names, types, help texts, labels) with the
# same queries, and each of its queries runs here and returns the columns
# its metrics read.  (prometheus_exporter.sh runs the postgres_exporter file
# in the real exporter; sql_exporter itself is not packaged in Debian.)
# Usage: bash scripts/temp-cluster.sh bash test/shell/observability/monitoring_configs.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source test/shell/lib/check.sh

PY=/usr/bin/python3
if ! "$PY" -c 'import yaml' 2>/dev/null; then
	echo "not ok - python3-yaml is installed (scripts/install-deps.sh)"
	exit 1
fi

DB=monconf_$$
T=$(mktemp -d)
trap 'dropdb --if-exists --force "$DB" 2>/dev/null; rm -rf "$T"' EXIT
createdb "$DB" || exit 1
export PGDATABASE=$DB
q -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION pg_fence' || exit 1

# Writes T/pe.txt and T/se.txt (one line per metric: name type labels help,
# sorted), T/queries.txt (per sql_exporter metric: identical query or not),
# and T/q_NAME.sql + T/q_NAME.cols for each sql_exporter query.
"$PY" - "$T" <<'PY' || { echo "not ok - both files parse"; exit 1; }
import sys, yaml
out = sys.argv[1]
norm = lambda s: " ".join(s.split())
pe = yaml.safe_load(open("monitoring/postgres_exporter/queries.yaml"))
se = yaml.safe_load(open("monitoring/sql_exporter/pg_fence.collector.yml"))
pe_metrics, pe_query = {}, {}
for ns, spec in pe.items():
    cols = [(list(m)[0], list(m.values())[0]) for m in spec["metrics"]]
    labels = ",".join(c for c, d in cols if d["usage"] == "LABEL")
    for c, d in cols:
        if d["usage"] in ("COUNTER", "GAUGE"):
            name = ns + "_" + c
            pe_metrics[name] = (d["usage"].lower(), labels, d["description"])
            pe_query[name] = (norm(spec["query"]), c)
se_queries = {q["query_name"]: q["query"] for q in se["queries"]}
se_metrics, same = {}, []
for m in se["metrics"]:
    name = m["metric_name"]
    se_metrics[name] = (m["type"], ",".join(m.get("key_labels", [])), m["help"])
    want = pe_query.get(name)
    got = (norm(se_queries[m["query_ref"]]), m["values"][0])
    same.append("%s %s" % (name, "same" if want == got and len(m["values"]) == 1 else "differs"))
    with open("%s/q_%s.cols" % (out, m["query_ref"]), "a") as f:
        f.write("\n".join(m.get("key_labels", []) + m["values"]) + "\n")
for n, text in se_queries.items():
    open("%s/q_%s.sql" % (out, n), "w").write(text)
for fn, ms in (("pe", pe_metrics), ("se", se_metrics)):
    with open("%s/%s.txt" % (out, fn), "w") as f:
        for n in sorted(ms):
            f.write("%s %s [%s] %s\n" % ((n,) + ms[n]))
open(out + "/queries.txt", "w").write("\n".join(sorted(same)) + "\n")
PY

check "postgres_exporter's file defines 24 metrics" 24 "$(wc -l <"$T/pe.txt")"
check "sql_exporter's collector: the same names, types, labels and help texts" \
	"$(cat "$T/pe.txt")" "$(cat "$T/se.txt")"
check "sql_exporter's collector: the same query and column for every metric" \
	"$(awk '{ print $1, "same" }' "$T/queries.txt")" "$(cat "$T/queries.txt")"

# each query runs (as an unprivileged role, like an exporter's) and returns
# every column its metrics read
q -c 'CREATE ROLE monconf_reader LOGIN' >/dev/null
trap 'dropdb --if-exists --force "$DB" 2>/dev/null; psql -X -q -d postgres -c "DROP ROLE IF EXISTS monconf_reader" 2>/dev/null; rm -rf "$T"' EXIT
for f in "$T"/q_*.sql; do
	n=$(basename "$f" .sql)
	header=$(psql -X -A -q -v ON_ERROR_STOP=1 -U monconf_reader -f "$f" 2>&1 | head -1)
	missing=$(sort -u "$T/$n.cols" | while read -r c; do
		[[ "|$header|" == *"|$c|"* ]] || echo "$c"
	done)
	check "query ${n#q_} runs and returns its metrics' columns" "" "$missing"
done
exit $fail
