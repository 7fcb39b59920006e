#!/usr/bin/env bash
# experiments/lmax.sh: the longest context that fits, by planner, simulated and measured live.
#
# For each memory limit (GB, 10^9 bytes) and each configuration below, `tessera mem lmax` predicts
# L_max (the op-graph plan next to the weights and a 1 GiB reserve) and, with LIVE=1 on a GPU
# machine, measures it: the engine holds LLaDA-8B's weights under a hard limit (a ballast holds the
# rest of the device), maps each length's planned activations in CUDA virtual memory, and runs the
# step at L_max over LAYERS layers [1]. Configurations (planner, logits, chunking, softmax copy):
#   caching     every row   none  fp32 copy   PyTorch eager with its caching allocator (the baseline)
#   caching     masked 50%  lazy  none        Mosaic's logits and chunking, PyTorch's allocator
#   first-fit   every row   none  none        Mosaic's planner alone
#   greedy-size masked 50%  lazy  none        TFLite's planner with Mosaic's logits and chunking
#   first-fit   masked 50%  lazy  none        Mosaic's full stack
#   ilp         masked 50%  lazy  none        (forward graphs exceed the ILP: its heuristic fallback)
# The profiled planner reserves for a fixed step, not a length: it has no L_max of its own.
# Writes OUT/lmax.jsonl (one JSON object per run), OUT/lmax.md (the table) and, with gnuplot,
# OUT/lmax.png (L_max by configuration, simulated beside live). TABLE_ONLY=1 redraws the table and
# the figure from an existing OUT/lmax.jsonl (runs from several calls concatenated).
#
# Usage: tessera exp run lmax OUT [--force]   (LIMITS="24 40"; LIVE=1; MODEL=llada-8b; LAYERS=1;
#                                            or experiments/lmax.sh OUT with TESSERA=path)
# Needs: GPU with LIVE
set -uo pipefail
out=${1:?usage: tessera exp run lmax OUT [--force]}
bin=${TESSERA:-build/tessera}
model=${MODEL:-llada-8b}
[ -x "$bin" ] || { echo "lmax.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
# shellcheck source=../analysis/lib_gnuplot.sh
source "$(dirname "$0")/../analysis/lib_gnuplot.sh"
mkdir -p "$out" || exit 2
[ -z "${TABLE_ONLY:-}" ] && : >"$out/lmax.jsonl"
configs=("caching all none 4" "caching 0.5 lazy 0" "first-fit all none 0" "greedy-size 0.5 lazy 0"
         "first-fit 0.5 lazy 0" "ilp 0.5 lazy 0")
for limit in $([ -z "${TABLE_ONLY:-}" ] && echo "${LIMITS:-24 40}"); do
    for c in "${configs[@]}"; do
        read -r planner mask chunking copy <<<"$c"
        args=(--model "$model" --mem-limit "$limit" --planner "$planner" --chunking "$chunking"
              --softmax-copy "$copy" --json)
        [ "$mask" != all ] && args+=(--mask-ratio "$mask")
        if [ -n "${LIVE:-}" ]; then
            args+=(--live --layers "${LAYERS:-1}")
        fi
        echo "== $limit GB: $planner, logits $mask, chunking $chunking, softmax copy $copy" >&2
        line=$("$bin" mem lmax "${args[@]}") || { echo "   failed" >&2; continue; }
        echo "$line" | python3 -c '
import json, sys
o = json.loads(sys.stdin.read()); o["limit_gb"] = float(sys.argv[1]); o["softmax_copy"] = int(sys.argv[2])
print(json.dumps(o))' "$limit" "$copy" >>"$out/lmax.jsonl"
        echo "   $line" >&2
    done
done
python3 - "$out/lmax.jsonl" "$out/lmax.dat" >"$out/lmax.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def series(r):  # a configuration as the figure's legend names it
    parts = [r["planner"] + " planner"]
    if r["mask_ratio"] >= 0:
        parts.append("masked logits")
    if r["chunking"] != "none":
        parts.append(r["chunking"] + " chunking")
    if r.get("softmax_copy"):
        parts.append("fp32 softmax copy")
    return ", ".join(parts)
# for the figure: a row a memory limit, then a column a configuration (simulated L_max), then the
# same columns measured live (0: not measured)
names = list(dict.fromkeys(series(r) for r in rows))
limits = list(dict.fromkeys(r["limit_gb"] for r in rows))
with open(sys.argv[2], "w") as dat:
    dat.write("limit " + " ".join('"%s"' % n for n in names) + " " + " ".join('"%s, live"' % n for n in names) + "\n")
    for g in limits:
        at = {series(r): r for r in rows if r["limit_gb"] == g}
        sim = [at[n].get("lmax_simulated", at[n].get("lmax", 0)) if n in at else 0 for n in names]
        lv = [at[n].get("lmax_live", 0) if n in at else 0 for n in names]
        dat.write('"%g GB" %s %s\n' % (g, " ".join("%d" % v for v in sim), " ".join("%d" % v for v in lv)))
live = any("lmax_live" in r for r in rows)
G = 2**30
def logits(r):
    return "every row" if r["mask_ratio"] < 0 else "masked %g%%" % (100 * r["mask_ratio"])
base = {}
for r in rows:
    if r["planner"] == "caching" and r["mask_ratio"] < 0:
        base[r["limit_gb"]] = r["lmax_live"] if live else r["lmax"]
if live:
    print("| limit | planner | logits | chunking | fp32 softmax copy | L_max simulated | L_max live | live / sim | x caching (live) | plan GiB | mapped GiB | in use GiB | layers run | step ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = base.get(r["limit_gb"])
        print("| %g GB | %s | %s | %s | %s | %d | %d | %.3f | %s | %.2f | %.2f | %.2f | %d of %d | %.0f |" % (
            r["limit_gb"], r["planner"], logits(r), r["chunking"], "yes" if r["softmax_copy"] else "no",
            r["lmax_simulated"], r["lmax_live"], r["lmax_live"] / max(1, r["lmax_simulated"]),
            "%.1fx" % (r["lmax_live"] / b) if b else "-", r["planned_bytes"] / G, r["mapped_bytes"] / G,
            r["used_bytes"] / G, r["layers_run"], r["layers"], r["step_ms"]))
else:
    print("| limit | planner | logits | chunking | fp32 softmax copy | L_max simulated | x caching |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        b = base.get(r["limit_gb"])
        print("| %g GB | %s | %s | %s | %s | %d | %s |" % (r["limit_gb"], r["planner"], logits(r), r["chunking"],
              "yes" if r["softmax_copy"] else "no", r["lmax"], "%.1fx" % (r["lmax"] / b) if b else "-"))
PY
cat "$out/lmax.md"
# the figure: a group of bars a memory limit, a bar (its own colour) a configuration; a second panel of
# the same bars measured on the GPU where a run measured them (one legend, under the first)
n=$(head -1 "$out/lmax.dat" | grep -o '"[^"]*"' | wc -l)
n=$((n / 2))
live=0
grep -q '"lmax_live"' "$out/lmax.jsonl" && live=1
if command -v gnuplot >/dev/null; then
    gnuplot <<GP 2>"$out/gnuplot.log" || { rm -f "$out/lmax.png"; echo "lmax.sh: no figure: gnuplot: $(head -2 "$out/gnuplot.log")" >&2; }
set terminal pngcairo size $((live ? 1200 : 760)),640 font ",10"
set output $(gp_file "$out/lmax.png")
colours = "#0072B2 #D55E00 #009E73 #CC79A7 #E69F00 #56B4E9 #000000 #8C564B"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set format y "%.0s%c"
set yrange [1000:*]
set ylabel "Longest context L_max (tokens)"
set xlabel "Memory limit (GB)" offset 0,0.3
set xrange [-0.6:1.6]
set grid ytics lc rgb "#dddddd"
set key outside below center horizontal maxcols 2 noenhanced width -4
set termoption noenhanced
set bmargin 11
set multiplot layout 1,$((live ? 2 : 1)) title $(gp_str "L_max of $model by memory planner, logits and chunking") font ",12"
set title "Simulated (tessera mem lmax)"
plot for [i=2:$((n + 1))] $(gp_file "$out/lmax.dat") using i:xtic(1) title columnheader(i) lc rgb word(colours, i - 1)
if ($live) {
    set title "Measured on the GPU (a hard memory limit)"
    unset key
    plot for [i=$((n + 2)):$((2 * n + 1))] $(gp_file "$out/lmax.dat") using (column(i) > 0 ? column(i) : 1/0):xtic(1) \
        title columnheader(i) lc rgb word(colours, i - $((n + 1)))
}
unset multiplot
GP
    rm -f "$out/gnuplot.log"
fi
