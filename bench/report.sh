#!/usr/bin/env bash
# report.sh - turn the raw numbers bench/run.sh left in OUT into
# bench/results.md (tables) and bench/results.svg (throughput against
# clients, one panel per scenario, one line per system).  Plain bash + awk.
#
# Usage: bench/report.sh OUT RESULTS.md RESULTS.svg
# Reads OUT/{groups,rows,throughput,sysnames,sysskip,scale,waiters,memory,
# shmem,settings,skipped}.tsv, OUT/pgversion.txt, OUT/extversion.txt and the
# variables run.sh exports (T CLIENTS ROUNDS ELAPSED LOAD_BEFORE LOAD_AFTER
# REDIS_VERSION MEM_CYCLES WAITERS WAIT_ROUNDS WAIT_HOLD_MS HELD_LOCKS).
set -euo pipefail
OUT=$1 MD=$2 SVG=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
rev=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
mem_growth_limit_kb=1024

{
	echo "# pg_fence benchmark results"
	echo
	echo "Written by \`make bench\` (\`bench/run.sh\`) on $(date -u '+%Y-%m-%d %H:%M UTC'). How the"
	echo "scenarios work and how to read the ratios: [README.md](README.md)."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| machine | $(nproc) CPUs, ${cpu:-unknown CPU}, $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo) |"
	echo "| load average (1/5/15 min) | before: ${LOAD_BEFORE}; after: ${LOAD_AFTER} |"
	echo "| PostgreSQL | $(cat "$OUT/pgversion.txt") |"
	echo "| pg_fence | $(cat "$OUT/extversion.txt") (commit $rev) |"
	echo "| Redis | ${REDIS_VERSION} |"
	echo "| runs | ${T} s each; clients: ${CLIENTS}; best of ${ROUNDS} interleaved rounds per system |"
	echo "| total time | ${ELAPSED} s |"
	echo
	echo "PostgreSQL settings:"
	echo
	echo "| setting | value |"
	echo "|---|---|"
	awk -F'\t' '{printf "| %s | %s |\n", $1, $2}' "$OUT/settings.tsv"
	echo
	echo "## Throughput"
	echo
	echo "ratio = pg_fence ops/s ÷ alternative ops/s, measured in the same run; above 1.0"
	echo "pg_fence is faster. One op is one unit of work as the scenario defines it."
	echo
	echo "| scenario | clients | pg_fence ops/s | alternative | alternative ops/s | ratio | target | met? |"
	echo "|---|---:|---:|---|---:|---:|---|---|"
	awk -F'\t' -v clients="$CLIENTS" '
		FILENAME ~ /sysnames/ { name[$1] = $2; next }
		FILENAME ~ /sysskip/  { skip[$1] = $2; next }
		FILENAME ~ /throughput/ { tp[$1 SUBSEP $2] = $3; next }
		function cell(s, c) {
			if (s == "-") return "—"
			if (s in skip) return "skipped"
			if ((s SUBSEP c) in tp) return tp[s SUBSEP c] == "ERR" ? "error" : sprintf("%.0f", tp[s SUBSEP c])
			return "—"
		}
		function num(s, c) { return (s != "-" && !(s in skip) && ((s SUBSEP c) in tp) && tp[s SUBSEP c] != "ERR") }
		{
			n = split(clients, cl, " ")
			for (i = 1; i <= n; i++) {
				c = cl[i]; f = $2; a = $3
				ratio = "—"; met = "—"
				if (num(f, c) && num(a, c) && tp[a SUBSEP c] > 0) {
					r = tp[f SUBSEP c] / tp[a SUBSEP c]
					ratio = sprintf("%.2f", r)
					if ($4 != "-") met = (r >= $4) ? "yes" : "**no**"
				}
				printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, c, cell(f, c),
					name[a], cell(a, c), ratio, $5, met
			}
		}' "$OUT/sysnames.tsv" "$OUT/sysskip.tsv" "$OUT/throughput.tsv" "$OUT/rows.tsv"
	echo
	echo "![throughput against clients]($(basename "$SVG"))"
	echo
	echo "## Scale"
	echo
	echo "Latency of one client, µs per unit of work (1 / throughput; best of ${ROUNDS})."
	echo
	if [ -s "$OUT/scale.tsv" ]; then
		echo "| case | condition | latency µs | × base | target | met? |"
		echo "|---|---|---:|---:|---|---|"
		awk -F'\t' '{
			g = ($3 != "ERR" && $4 != "ERR" && $4 > 0) ? $3 / $4 : -1
			met = "—"
			if ($5 != "-" && g >= 0) met = (g <= $5) ? "yes" : "**no**"
			printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, (g >= 0 ? sprintf("%.2f", g) : "—"), $6, met
		}' "$OUT/scale.tsv"
	else
		echo "No scale case ran (see Skipped)."
	fi
	echo
	echo "## One name, ${WAITERS} waiters"
	echo
	echo "${WAITERS} sessions each take the same lock ${WAIT_ROUNDS} times (wait, hold ${WAIT_HOLD_MS} ms,"
	echo "release). Wait = time from the request to the grant, measured in the session"
	echo "with \`clock_timestamp()\`. Fairness = max wait ÷ median wait (1.0 is perfectly"
	echo "even). Token order: grants ordered by grant time whose token is not above the"
	echo "previous grant's (must be 0)."
	echo
	if [ -s "$OUT/waiters.tsv" ]; then
		echo "| system | grants | grants/s | median wait ms | max wait ms | max ÷ median | token order violations |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5,
			($4 > 0 ? sprintf("%.2f", $5 / $4) : "—"), $6}' "$OUT/waiters.tsv"
	else
		echo "Did not run (see Skipped)."
	fi
	echo
	echo "## Memory"
	echo
	if [ -s "$OUT/memory.tsv" ]; then
		echo "One backend runs fence.try_lock + fence.unlock on distinct names, committing"
		echo "every 1000 cycles; its memory is read from /proc/<pid>/status. RssAnon is the"
		echo "backend's private memory (shared buffers it touches count in VmRSS only)."
		echo
		echo "| after cycles | VmRSS kB | RssAnon kB |"
		echo "|---:|---:|---:|"
		awk -F'\t' '{ v[$1 SUBSEP $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
			END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i],
				v[order[i] SUBSEP "VmRSS:"], v[order[i] SUBSEP "RssAnon:"] }' "$OUT/memory.tsv"
		echo
		awk -F'\t' -v lim="$mem_growth_limit_kb" '$2 == "RssAnon:" { a[++n] = $3; c[n] = $1 }
			END { if (n >= 2) { g = a[n] - a[1]
				printf "RssAnon growth from %s to %s cycles: **%d kB** (target: no growth, < %d kB): %s.\n",
					c[1], c[n], g, lim, (g < lim ? "met" : "**not met**") } }' "$OUT/memory.tsv"
	else
		echo "The per-backend memory check did not run (see Skipped)."
	fi
	echo
	if [ -s "$OUT/shmem.tsv" ]; then
		echo "Shared memory taken by the extension (pg_shmem_allocations):"
		echo
		echo "| allocation | bytes |"
		echo "|---|---:|"
		awk -F'\t' '{printf "| %s | %s |\n", $1, $2}' "$OUT/shmem.tsv"
	else
		echo "Shared memory: no allocation named like 'fence' in pg_shmem_allocations."
	fi
	echo
	echo "## Skipped"
	echo
	if [ -s "$OUT/skipped.tsv" ]; then
		awk -F'\t' '{printf "- %s: skipped (%s)\n", $1, $2}' "$OUT/skipped.tsv"
	else
		echo "Nothing."
	fi
} >"$MD"

# ---------------------------------------------------------------------------
# SVG: one panel per group, x = client counts (evenly spaced), y = ops/s.
awk -F'\t' -v clients="$CLIENTS" '
	function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); return s }
	function human(v,   t) {
		if (v < 1000) return sprintf("%g", v)
		t = sprintf(v >= 100000 ? "%.0f" : "%.1f", v / 1000); sub(/\.0$/, "", t); return t "k"
	}
	FILENAME ~ /sysnames/ { name[$1] = $2; next }
	FILENAME ~ /throughput/ { if ($3 != "ERR") tp[$1 SUBSEP $2] = $3; next }
	FILENAME ~ /groups/ { g[++ng] = $1; title[ng] = $2; sys[ng] = $3; next }
	END {
		color["pg_fence"] = "#1f77b4"; color["pg_fence guard"] = "#1f77b4"
		color["plain SQL"] = "#ff7f0e"; color["unguarded"] = "#ff7f0e"
		color["Redis path"] = "#d62728"; color["SELECT 1"] = "#7f7f7f"
		nc = split(clients, cl, " ")
		pw = 380; ph = 250; cols = 3
		ml = 58; mr = 14; mt = 46; mb = 40
		# only groups with at least one number
		np = 0
		for (i = 1; i <= ng; i++) {
			ns = split(sys[i], ss, " "); any = 0
			for (j = 1; j <= ns; j++) for (k = 1; k <= nc; k++) if ((ss[j] SUBSEP cl[k]) in tp) any = 1
			if (any) p[++np] = i
		}
		rows = int((np + cols - 1) / cols); if (rows < 1) rows = 1
		W = cols * pw; H = rows * ph + 40
		printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H, W, H
		printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		printf "<text x=\"%d\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">pg_fence bench: throughput (ops/s) against clients</text>\n", W / 2
		if (np == 0) printf "<text x=\"%d\" y=\"80\" text-anchor=\"middle\">no results</text>\n", W / 2
		for (q = 1; q <= np; q++) {
			i = p[q]
			ox = ((q - 1) % cols) * pw; oy = 40 + int((q - 1) / cols) * ph
			x0 = ox + ml; x1 = ox + pw - mr; y0 = oy + ph - mb; y1 = oy + mt
			ns = split(sys[i], ss, " ")
			max = 0
			for (j = 1; j <= ns; j++) for (k = 1; k <= nc; k++)
				if ((ss[j] SUBSEP cl[k]) in tp && tp[ss[j] SUBSEP cl[k]] + 0 > max) max = tp[ss[j] SUBSEP cl[k]] + 0
			if (max <= 0) max = 1
			# a round upper bound: 1, 2 or 5 times a power of ten
			e = 1; while (e * 10 <= max) e *= 10
			top = (max <= e) ? e : (max <= 2 * e) ? 2 * e : (max <= 5 * e) ? 5 * e : 10 * e
			printf "<g>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\" text-anchor=\"middle\">%s</text>\n", (x0 + x1) / 2, oy + 18, esc(title[i])
			printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", x0, y1, x1 - x0, y0 - y1
			nt = (top == 5 * e) ? 5 : 4
			for (t = 0; t <= nt; t++) {
				yy = y0 - (y0 - y1) * t / nt
				printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x0, yy, x1, yy
				printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", x0 - 4, yy + 4, human(top * t / nt)
			}
			for (k = 1; k <= nc; k++) {
				xx[k] = (nc == 1) ? (x0 + x1) / 2 : x0 + 20 + (x1 - x0 - 40) * (k - 1) / (nc - 1)
				printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", xx[k], y0 + 14, cl[k]
			}
			printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">clients</text>\n", (x0 + x1) / 2, y0 + 28
			lx = x0
			for (j = 1; j <= ns; j++) {
				s = ss[j]; col = (name[s] in color) ? color[name[s]] : "#2ca02c"
				pts = ""; dots = ""; have = 0
				for (k = 1; k <= nc; k++) if ((s SUBSEP cl[k]) in tp) {
					yy = y0 - (y0 - y1) * tp[s SUBSEP cl[k]] / top
					pts = pts sprintf("%.1f,%.1f ", xx[k], yy)
					dots = dots sprintf("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", xx[k], yy, col)
					have = 1
				}
				if (!have) continue
				printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n%s", pts, col, dots
				# legend: one row under the panel title
				printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n", lx, oy + 30, lx + 16, oy + 30, col
				printf "<text x=\"%d\" y=\"%d\">%s</text>\n", lx + 20, oy + 34, esc(name[s])
				lx += 30 + 7 * length(name[s])
			}
			printf "</g>\n"
		}
		printf "</svg>\n"
	}' "$OUT/sysnames.tsv" "$OUT/throughput.tsv" "$OUT/groups.tsv" >"$SVG"
