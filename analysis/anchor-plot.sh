#!/usr/bin/env bash
# analysis/anchor-plot.sh: `engine_bench --anchor --json`'s steps of the PyTorch anchor's
# shapes as one figure: for every shape (B sequences x T tokens) and step (Refresh with all logits,
# with the masked tail's, Reuse of a 32-token block), tessera's time and PyTorch eager's, each over
# the step's floor (FLOPs over the short-run GEMM ceiling, or bytes over the copy bandwidth; 1 = the
# floor), with the speed-up printed above each pair. Prints the same as a table. Bars past the top
# are cut and carry their value inside.
#
# Usage: analysis/anchor-plot.sh ANCHOR_BENCH.jsonl OUT.png
# (make bench-engine ANCHOR=... draws BENCH_OUT/engine_anchor.png; needs python3 and gnuplot)
set -euo pipefail
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -eq 2 ] || usage
bench=$1 out=$2
[ -f "$bench" ] || { echo "anchor-plot.sh: $bench: no such file" >&2; exit 2; }
for tool in python3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "anchor-plot.sh: $tool not found (apt-get install python3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# one row per step: label, tessera / floor, PyTorch / floor (- where the anchor gave no time),
# speed-up label
python3 - "$bench" "$tmp/table" >"$tmp/steps.dat" <<'PY'
import json, math, sys
bench, table = sys.argv[1], sys.argv[2]
rows = []
with open(bench) as f:
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            sys.exit(f"anchor-plot.sh: {bench}:{n}: not JSON ({e})")
        if "anchor_step" not in r:
            continue  # the rest of engine_bench's output
        for k in ("B", "T", "ms", "floor_ms"):
            if not isinstance(r.get(k), (int, float)) or r[k] <= 0:
                sys.exit(f"anchor-plot.sh: {bench}:{n}: field {k} missing or not a positive number")
        rows.append(r)
if not rows:
    sys.exit(f"anchor-plot.sh: {bench}: no anchor steps (was it written by `engine_bench --anchor --json`?)")
short = {"refresh all": "all", "refresh masked": "masked", "reuse": "reuse"}
logs = []
with open(table, "w") as t:
    t.write("%-14s %-15s %10s %8s %10s %8s %9s\n" % ("B x T", "step", "tessera ms", "x floor", "torch ms",
                                                     "x floor", "speed-up"))
    for r in rows:
        fl, ms, tm = r["floor_ms"], r["ms"], r.get("torch_ms")
        sp = tm / ms if tm else None
        if sp:
            logs.append(math.log(sp))
        print('"%dx%d %s" %.4f %s "%s"' % (r["B"], r["T"], short.get(r["anchor_step"], r["anchor_step"]), ms / fl,
                                          "%.4f" % (tm / fl) if tm else "-", "%.2fx" % sp if sp else ""))
        t.write("%-14s %-15s %10.3f %8.3f %10s %8s %9s\n" % ("%d x %d" % (r["B"], r["T"]), r["anchor_step"], ms,
                ms / fl, "%.3f" % tm if tm else "-", "%.3f" % (tm / fl) if tm else "-", "%.2f x" % sp if sp else "-"))
    if logs:
        t.write("speed-up over PyTorch eager: geometric mean %.2f x over %d steps\n" % (math.exp(sum(logs) / len(logs)),
                                                                                     len(logs)))
PY
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
gnuplot 2>"$tmp/gnuplot.err" <<GP || { cat "$tmp/gnuplot.err" >&2; exit 1; }
set terminal pngcairo size 1400,620 font ",11"
set output $(gp_file "$out")
set title "the PyTorch anchor's shapes: each step over its floor (speed-up of tessera above each pair)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile missing '-'
set ylabel 'time / floor'
top = 5.0
set yrange [0:top + 0.6]
set grid ytics
set key outside top center horizontal
set xtics nomirror scale 0 rotate by -40 font ",10"
set ytics 0.5
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 dt 2 lc rgb 'black'
clip(v) = v > top ? top : v
lab(v) = v > top ? sprintf('%.1f', v) : ''
plot $(gp_file "$tmp/steps.dat") using (clip(\$2)):xtic(1) title 'tessera' lc rgb '#1f77b4', \
     '' using (clip(\$3)) title 'PyTorch eager (anchor)' lc rgb '#d62728', \
     '' using (\$0 + 0.12):(clip(\$3)):(lab(\$3)) with labels offset 0,-0.7 font ',9' tc rgb 'white' notitle, \
     '' using (\$0):(clip(\$3 > \$2 ? \$3 : \$2) + 0.25):4 with labels font ',9' notitle
GP
grep -v -e 'no valid points' -e '^ *$' "$tmp/gnuplot.err" >&2 || true
cat "$tmp/table"
echo "wrote $out"
