#!/usr/bin/env bash
# analysis/bench-plot.sh: `engine_bench --json`'s steps as one figure, every time over the
# step's floor (FLOPs over the short-run GEMM ceiling, or bytes over the copy bandwidth; 1 = the
# floor): the step as measured, its fastest FFN variant, the step's linear layers and LM head alone
# and all but them (each replayed as a graph), the floor at the GEMM rate the card holds for 2 s
# (the power limit), the step's speed goal and, given the anchor's output of the same call, PyTorch
# eager (the goal and PyTorch only for the bench's default four steps, not those of --step). Bars
# past the top are cut and carry their value.
#
# Usage: analysis/bench-plot.sh BENCH.jsonl OUT.png [ANCHOR.jsonl]
# (make bench-engine draws BENCH_OUT/engine_bench.png; needs python3 and gnuplot)
set -euo pipefail
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
{ [ $# -ge 2 ] && [ $# -le 3 ]; } || usage
bench=$1 out=$2 anchor=${3:-}
for f in "$bench" ${anchor:+"$anchor"}; do
    [ -f "$f" ] || { echo "bench-plot.sh: $f: no such file" >&2; exit 2; }
done
for tool in python3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "bench-plot.sh: $tool not found (apt-get install python3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# one row per step: label, goal, measured, best FFN, linear layers alone, all but them, held
# floor, PyTorch (all over the floor; - where missing)
python3 - "$bench" "$anchor" "$tmp/summary" >"$tmp/steps.dat" <<'PY'
import json, sys
bench, anchor, summary = sys.argv[1], sys.argv[2], sys.argv[3]

def rows(path):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or not line.startswith("{"):
                continue  # the sdpa/anchor scripts' progress lines
            try:
                yield n, json.loads(line)
            except ValueError as e:
                sys.exit(f"bench-plot.sh: {path}:{n}: not JSON ({e})")

cases = {}
order = []
for n, r in rows(bench):
    name = r.get("case")
    if not name:
        continue
    if name not in cases:
        cases[name] = {}
        order.append(name)
    cases[name].update(r)
    cases[name].setdefault("_line", n)
if not order:
    sys.exit(f"bench-plot.sh: {bench}: no step cases (was it written by `engine_bench --json`?)")

# the anchor's cases: (B, T, field) -> ms; the bench's steps map onto them by their shapes
torch = {}
if anchor:
    for n, r in rows(anchor):
        if "B" in r and "T" in r:
            for k in ("refresh_all_logits_ms", "refresh_masked_logits_ms", "reuse_block32_ms"):
                if k in r:
                    torch[(r["B"], r["T"], k)] = r[k]

# the bench's default four steps have a goal and an anchor; steps of `engine_bench --step` neither
DEFAULT_STEPS = ("refresh 16x512, all logits", "refresh 16x512, 256 masked logits",
                 "reuse 1 x 32 over 480 cached", "reuse 16 x 32 over 480 cached")

def anchor_ms(name):
    if name not in DEFAULT_STEPS:
        return None
    seqs = 16 if name.startswith(("refresh 16", "reuse 16")) else 1
    if name.startswith("refresh"):
        key = "refresh_masked_logits_ms" if "masked" in name else "refresh_all_logits_ms"
    else:
        key = "reuse_block32_ms"
    return torch.get((seqs, 512, key))

for name in order:
    c = cases[name]
    for k in ("ms", "floor_ms"):
        if not isinstance(c.get(k), (int, float)) or c[k] <= 0:
            sys.exit(f"bench-plot.sh: {bench}:{c['_line']}: case \"{name}\": field {k} missing or not a positive number")
    fl = c["floor_ms"]
    goal = None if name not in DEFAULT_STEPS else 1.15 if name.startswith("refresh") else 1.3
    ffn = [c[k] for k in ("split_ffn_ms", "fused_ffn_ms", "auto_ffn_ms") if isinstance(c.get(k), (int, float))]
    vals = [c["ms"], min(ffn) if ffn else None, c.get("gemm_only_ms"), c.get("non_gemm_ms"),
            c.get("held_floor_ms"), anchor_ms(name)]
    label = (name.replace("refresh 16x512", "Refresh 16x512").replace("reuse", "Reuse")
             .replace(" over 480 cached", " / 480").replace(", all logits", "").replace(", 256 masked logits", " masked")
             .replace(" cached,", ","))
    print('"%s" %s %s' % (label, "-" if goal is None else "%.3f" % goal,
                          " ".join("-" if v is None else "%.4f" % (v / fl) for v in vals)))
    with open(summary, "a") as f:
        f.write("%-40s %.3f x its floor (%s)\n" % (name, c["ms"] / fl, "no goal" if goal is None else "goal %.2f" % goal))
PY
# (a bench without some of the columns, e.g. an older one, leaves those bars out)
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
gnuplot 2>"$tmp/gnuplot.err" <<GP || { cat "$tmp/gnuplot.err" >&2; exit 1; }
set terminal pngcairo size 1000,640 font ",11"
set output $(gp_file "$out")
set title "engine_bench: each step over its floor"
set style data histograms
set style histogram clustered gap 1.4
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile missing '-'
set ylabel 'time / floor (FLOPs at the short-run GEMM ceiling, or bytes at copy bandwidth)'
set yrange [0:2.2]
set grid ytics
set key outside bottom center horizontal maxcols 4 width -2
set xtics nomirror scale 0
set ytics 0.2
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 dt 2 lc rgb 'black'
top = 2.2
clip(v) = v > top ? top : v
lab(v) = v > top ? sprintf('%.1f', v) : ''
n = 6.0
w = 1.0 / (n + 1.4)
xo(i, j) = i + (j - (n - 1) / 2.0) * w
plot $(gp_file "$tmp/steps.dat") using (clip(\$3)):xtic(1) title 'tessera (default)' lc rgb '#1f77b4', \
     '' using (clip(\$4)) title 'fastest FFN (split/fused/auto)' lc rgb '#6baed6', \
     '' using (clip(\$5)) title 'linear layers + LM head alone' lc rgb '#ff7f0e', \
     '' using (clip(\$6)) title 'all but them' lc rgb '#fdae6b', \
     '' using (clip(\$7)) title 'floor at the held GEMM rate' lc rgb '#969696', \
     '' using (clip(\$8)) title 'PyTorch eager (anchor)' lc rgb '#d62728', \
     '' using (\$0):2:(0.45) with xerrorbars pt 0 lw 3 lc rgb '#2ca02c' title 'goal', \
     '' using (xo(\$0, 5)):(clip(\$8)):(lab(\$8)) with labels offset 0,0.6 notitle, \
     '' using (xo(\$0, 0)):(clip(\$3)):(sprintf('%.2f', \$3)) with labels offset 0,0.6 font ',9' notitle
GP
grep -v -e 'no valid points' -e '^ *$' "$tmp/gnuplot.err" >&2 || true
cat "$tmp/summary"
echo "wrote $out"
