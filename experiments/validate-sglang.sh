#!/usr/bin/env bash
# validate-sglang.sh: SGLang's own dLLM serving run on an H200 beside tessera's prediction of it, run for
# run, first done first out and sync: `tessera sim --system sglang` (SGLang's dLLM path as its code runs
# it) over the very traces SGLang served, its steps priced two ways: by SGLang's own rounds (--impl
# sglang, the preset's: sim/data/rounds/h200-llada2.0-mini-sglang.csv, fitted on the record's bursts,
# which the traces are not) and by the tessera engine's H200 calibration of LLaDA2.0-mini (--impl
# tessera: the engine's forwards, no host work between rounds).
#
# The record experiments/records/sglang-h200 holds SGLang 0.5.17 (the newest release built for the GPU
# machines' PyTorch 2.11) serving LLaDA2.0-mini (experiments/validate/sglang_driver.py: its offline
# engine, drawn weights, LowConfidence at 0.95, every step committing one token) with
# --max-running-requests 8 over five traces of 32 requests (traces/: 256 prompt tokens and 128
# generated at 1, 2, 3 and 4 requests a second, and lognormal lengths at 1), each request's prompt its
# own, one engine a mode (fdfo.tgz, sync.tgz); and the profile (profile.tgz): bursts of 1 to 32
# requests of 64, 512 and 2,048 prompt tokens arriving at once, --max-running-requests 32, each mode.
#
# Writes, for each mode (fdfo, sync) and pricing (sglang, tessera), OUT/MODE-IMPL/sglang.csv (a row a
# trace: throughput, mean and p99 latency measured and predicted, the 90% interval, forwards a request,
# the load and its regime: below, near or above saturation) and OUT/MODE-IMPL/rounds.csv (a row a
# batch size: SGLang's round and host gap against tessera's step, medians); OUT/rounds-fit.csv (the
# profile's rows as experiments/validate/sglang_rounds.py makes them from the record, which must be
# the shipped file); OUT/sglang.md (the tables) and, where gnuplot is found, OUT/rounds.png; then the
# goals, each a line saying met or missed (they do not fail the run).
#
# MEASURE=1 with BUNDLE=DIR runs SGLang again first (experiments/validate/sglang.sh, on a GPU machine
# with PyTorch 2.11, SGLang's packages unpacked from DIR, the folder experiments/validate/sglang_bundle.sh
# writes) into OUT/record: both modes over the traces, then the profile's bursts; and compares that.
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
val=$root/experiments/validate
cmp=$val/sglang_compare.py
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$(record_path validate-sglang.sh sglang-h200 "$tmp" "SGLang's dLLM serving run on an H200" \
    "MEASURE=1 BUNDLE=DIR tessera exp run validate-sglang OUT") || exit 2
runs=$tmp/runs
mkdir -p "$runs"
if [ "${MEASURE:-0}" = 1 ]; then
    bundle=${BUNDLE:?MEASURE=1 needs BUNDLE, the folder sglang_bundle.sh writes}
    names=$(for t in "$rec"/traces/*.csv; do basename "$t" .csv; done | tr '\n' ' ')
    MODES="fdfo sync" TRACE_NAMES="$names" DRIVER_OPTS=--fresh-prompts "$val/sglang.sh" "$bundle" "$rec/traces" "$out/record"
    mkdir -p "$tmp/profile" && tar -xzf "$rec/profile.tgz" -C "$tmp/profile"
    bursts=$(for t in "$tmp"/profile/profile/traces/burst-*.csv; do basename "$t" .csv; done |
        sort -t- -k2.2n -k3.2n | tr '\n' ' ')
    MODES="fdfo sync" MRR=32 TRACE_NAMES="$bursts" DRIVER_OPTS=--fresh-prompts "$val/sglang.sh" - \
        "$tmp/profile/profile/traces" "$out/record/profile"
    cp -r "$out/record/fdfo" "$out/record/sync" "$runs/"
    mkdir -p "$runs/profile" && cp -r "$out/record/profile/fdfo" "$out/record/profile/sync" "$runs/profile/"
else
    for m in fdfo sync profile; do
        if [ -f "$rec/$m.tgz" ]; then tar -xzf "$rec/$m.tgz" -C "$runs"; fi
    done
fi

for mode in fdfo sync; do
    [ -d "$runs/$mode" ] || continue
    f=$([ $mode = fdfo ] && echo 1 || echo 0)
    for impl in sglang tessera; do
        pred=$tmp/pred-$mode-$impl
        mkdir -p "$pred" "$out/$mode-$impl"
        for t in "$rec"/traces/*.csv; do
            s=$(basename "$t" .csv)
            "$bin" sim --system sglang --impl "$impl" --fdfo "$f" --max-running-requests 8 --decode fixed:1 --gpu h200 \
                --trace "$t" --interval 90 --seed 1 --json --quiet --no-progress --db "$pred/$s.db" >"$pred/$s.json"
        done
        python3 "$cmp" report "$runs/$mode" "$pred" "$out/$mode-$impl" >"$tmp/$mode-$impl.md"
    done
done
fit=()
if [ -d "$runs/profile" ]; then
    python3 "$val/sglang_rounds.py" h200 llada2.0-mini fdfo="$runs/profile/fdfo" sync="$runs/profile/sync" \
        >"$out/rounds-fit.csv"
    fit=("$root/sim/data/rounds/h200-llada2.0-mini-sglang.csv")
fi
python3 "$cmp" summary "$out" "$tmp" "${fit[@]}" >"$out/sglang.md"
cat "$out/sglang.md"

if command -v gnuplot >/dev/null && [ -f "$out/fdfo-sglang/rounds.csv" ]; then
    join -t, <(tail -n +2 "$out/fdfo-sglang/rounds.csv" | sort -t, -k1,1) \
        <(tail -n +2 "$out/fdfo-tessera/rounds.csv" | cut -d, -f1,7 | sort -t, -k1,1) | sort -t, -k1,1n |
        awk -F, '{ print $1, $3, $5, $7, $9 }' >"$tmp/rounds.dat"
    gnuplot <<EOF
set terminal pngcairo size 900,560 font ',11'
set output $(gp_file "$out/rounds.png")
set title "SGLang 0.5.17 serving LLaDA2.0-mini on an H200 (first done, first out): a round against tessera's step"
set xlabel 'requests in the round (32 query tokens each)'; set ylabel 'time (ms)'; set grid
set key bottom right opaque box; set xrange [0.5:*]; set yrange [0:*]; set xtics 1
plot $(gp_file "$tmp/rounds.dat") using 1:2 with linespoints lw 2 pt 7 lc rgb '#0072B2' title "SGLang's round (forward and step)", \
     '' using 1:3 with linespoints lw 2 pt 5 lc rgb '#56B4E9' title '... with the host gap to the next round', \
     '' using 1:4 with linespoints lw 2 pt 9 lc rgb '#009E73' title "tessera's step priced by SGLang's rounds (--impl sglang)", \
     '' using 1:5 with linespoints lw 2 pt 11 dt 2 lc rgb '#D55E00' title "tessera's step priced by the engine (--impl tessera)"
EOF
fi
python3 "$cmp" check "$out"
