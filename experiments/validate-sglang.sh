#!/usr/bin/env bash
# validate-sglang.sh: SGLang's own dLLM serving run on an H200 beside tessera's prediction of it, run for
# run: `tessera sim --system sglang` (SGLang's dLLM path as its code runs it, priced by the tessera
# engine's H200 calibration of LLaDA2.0-mini) over the very traces SGLang served.
#
# The record experiments/records/sglang-h200 holds SGLang 0.5.17 (the newest release built for the GPU
# machines' PyTorch 2.11) serving LLaDA2.0-mini (experiments/validate/sglang_driver.py: its offline
# engine, drawn weights, LowConfidence at 0.95, every step committing one token) first done first out
# with --max-running-requests 8, over two traces of 32 requests (256 prompt tokens, 128 generated) at 2
# and then 1 request a second, one engine for both: each request's arrival and finish, and every
# scheduler round (its time, its requests, the host gap before the next one). The second trace's
# prompts are the first one's (the driver's --prompt-seed), so SGLang's radix cache held each of them
# whole and ran no prefill forwards for it; tessera, given no prompt hashes, prefills them.
#
# Writes OUT/sglang.csv (a row a trace: throughput, mean and p99 latency measured and predicted, the
# prediction's 90% interval, forwards a request, the load and its regime: below, near or above
# saturation), OUT/rounds.csv (a row a batch size: SGLang's round and host gap against tessera's step,
# medians), OUT/sglang.md (the tables) and, where gnuplot is found, OUT/rounds.png; then the goals, each
# a line saying met or missed (they do not fail the run).
#
# MEASURE=1 with BUNDLE=DIR runs SGLang again first (experiments/validate/sglang.sh, on a GPU machine
# with PyTorch 2.11, SGLang's packages unpacked from DIR, the folder experiments/validate/sglang_bundle.sh
# writes) into OUT/record/fdfo, and compares that run instead.
#
# Usage: tessera exp run validate-sglang OUT [--force]   (or experiments/validate-sglang.sh OUT with TESSERA=path)
# Needs: GPU with MEASURE
set -euo pipefail
out=${1:?usage: validate-sglang.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/experiments/lib/record.sh"
source "$root/analysis/lib_gnuplot.sh"
bin=${TESSERA:-$root/build/tessera}
[ -x "$bin" ] || { echo "validate-sglang.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
cmp=$root/experiments/validate/sglang_compare.py
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$(record_path validate-sglang.sh sglang-h200 "$tmp" "SGLang's dLLM serving run on an H200" \
    "MEASURE=1 BUNDLE=DIR tessera exp run validate-sglang OUT") || exit 2
runs=$tmp/runs
mkdir -p "$runs"
if [ "${MEASURE:-0}" = 1 ]; then
    "$root/experiments/validate/sglang.sh" "${BUNDLE:?MEASURE=1 needs BUNDLE, the folder sglang_bundle.sh writes}" \
        "$rec/traces" "$out/record"
    cp -r "$out/record/fdfo" "$runs/"
else
    tar -xzf "$rec/fdfo.tgz" -C "$runs"
fi

pred=$tmp/pred
mkdir -p "$pred"
for t in "$rec"/traces/*.csv; do
    s=$(basename "$t" .csv)
    "$bin" sim --system sglang --fdfo 1 --max-running-requests 8 --decode fixed:1 --gpu h200 --trace "$t" \
        --interval 90 --seed 1 --json --quiet --no-progress --db "$pred/$s.db" >"$pred/$s.json"
done
python3 "$cmp" report "$runs/fdfo" "$pred" "$out" >"$out/sglang.md"
cat "$out/sglang.md"

if command -v gnuplot >/dev/null; then
    awk -F, 'NR > 1 { print $1, $3, $5, $7 }' "$out/rounds.csv" >"$tmp/rounds.dat"
    gnuplot <<EOF
set terminal pngcairo size 900,560 font ',11'
set output $(gp_file "$out/rounds.png")
set title "SGLang 0.5.17 serving LLaDA2.0-mini on an H200 (first done, first out): a round against tessera's step"
set xlabel 'requests in the round (32 query tokens each)'; set ylabel 'time (ms)'; set grid
set key top left opaque box; set xrange [0.5:*]; set yrange [0:*]; set xtics 1
plot $(gp_file "$tmp/rounds.dat") using 1:2 with linespoints lw 2 pt 7 lc rgb '#0072B2' title "SGLang's round (forward and step)", \
     '' using 1:3 with linespoints lw 2 pt 5 lc rgb '#56B4E9' title '... with the host gap to the next round', \
     '' using 1:4 with linespoints lw 2 pt 9 lc rgb '#D55E00' title "tessera's step (the engine's calibration)"
EOF
fi
python3 "$cmp" check "$out"
