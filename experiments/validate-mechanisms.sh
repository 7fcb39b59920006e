#!/usr/bin/env bash
# validate-mechanisms.sh: tessera's predictions of the newer mechanisms against their own public code running on the GPU.
#
# The record experiments/records/validate-mechanisms-h100 holds, each in its own folder with the
# machine's host line (LLaDA's reference loop over the held-out grid, native.tgz):
#   dpad/  DPad's three generate loops (Crys-Chen/DPad llada/generate_dropout.py at 461b36e: no cache,
#          Fast-dLLM's prefix cache, its dual cache), its GSM8K setting (blocks of 32, window 256, k 4,
#          scale 2, one position a step); profile/: the held-out grid of all four loops on a second
#          H100, which gives each DPad loop's issue time (the torch-dpad and torch-dpad-cache
#          implementations)
#   d2f/   D2F's pipelined blocks (zhijie-group/Discrete-Diffusion-Forcing D2F-eval/eval_llada.py at
#          771f745, its paper's thresholds); its held-out grid (in d2f.tgz) gives its issue time
#          (torch-d2f). With random weights no confidence passes D2F's threshold, so each fully
#          activated block decodes one position a step and a semi-activated one none: tessera predicts
#          it with --decode fixed:1 --d2f-semi 0
# each over one burst (SYSTEM-burst.csv: 6 requests arriving together, prompts of 128, 512 and 1,024
# tokens, 256 positions each), run one request at a time by experiments/validate/driver.py (random
# weights in LLaDA-8B-Instruct's shape): every request's times, every forward's rows and time.
#
# tessera predicts every burst with the loop's preset (dpad, dpad-prefix, dpad-dual, d2f), the H100's
# torch-eager calibration and the machine's host line, and compares:
#   OUT/validate.csv   system,rate,metric,predicted,measured,error_pct: throughput, mean and p99
#                      latency, forwards, per-forward means and MAPE (compare.py run)
#   OUT/rows.csv       every forward's rows against its step's: how many equal, the mean difference
#   OUT/kept.csv       DPad: the suffix positions each block keeps past it, predicted (the expected
#                      count) against DPad's draws (mean, least and most over the requests)
#   OUT/validate.md    the tables; OUT/host.txt the host lines and the loops' issue times
#   OUT/mechanisms.png where gnuplot is found: DPad's kept suffix a block, and latency a request
# and checks, each a PASS or FAIL line: every run's forward count is predicted exactly; every
# forward's rows are for D2F, and for DPad's dual cache all but a block's first (DPad's random draw);
# every block's predicted kept suffix lies within DPad's draws; DPad's cached loops' throughput is
# within 10%.
#
# MEASURE=1 measures the runs again first, on this machine's GPU (experiments/validate/measure.sh with
# the checkouts in CODE, default baselines/, as experiments/validate/README.md makes them), into
# OUT/record, and compares those instead.
#
# Usage: tessera exp run validate-mechanisms OUT [--force]   (or experiments/validate-mechanisms.sh OUT with TESSERA=path)
# Needs: GPU with MEASURE
set -euo pipefail
out=${1:?usage: validate-mechanisms.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TESSERA:-$root/build/tessera}
[ -x "$bin" ] || { echo "validate-mechanisms.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
cmp=$root/experiments/validate/compare.py
groups="dpad d2f"
members() { case $1 in dpad) echo "dpad dpad-prefix dpad-dual" ;; d2f) echo d2f ;; esac; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$out/record
if [ "${MEASURE:-0}" = 1 ]; then
    for g in $groups; do
        mkdir -p "$rec/$g/traces"
        TESSERA=$bin "$root/experiments/validate/traces.sh" "$tmp/traces"
        cp "$tmp/traces/profile.csv" "$rec/$g/traces/"
        for s in $(members "$g"); do
            cp "$tmp/traces/$s-burst.csv" "$rec/$g/traces/"
            TRACES=$rec/$g/traces "$root/experiments/validate/measure.sh" "$s" "$rec/$g"
        done
        PROFILE_ONLY=1 TRACES=$rec/$g/traces "$root/experiments/validate/measure.sh" native "$rec/$g"
    done
else
    src=${TESSERA_RECORDS:-}
    if [ -z "$src" ] || [ ! -d "$src/validate-mechanisms-h100" ]; then
        src=$tmp/records
        bash "$root/analysis/records.sh" unpack "$src" validate-mechanisms-h100 >/dev/null 2>&1 || {
            echo "validate-mechanisms.sh: needs the record experiments/records/validate-mechanisms-h100 (the" \
                 "mechanisms' own loops on an H100); make it on a GPU machine with MEASURE=1 tessera exp run" \
                 "validate-mechanisms OUT" >&2
            exit 2
        }
    fi
    rec=$src/validate-mechanisms-h100
fi

echo "system,rate,metric,predicted,measured,error_pct" >"$tmp/validate.csv"
echo "system,rate,id,predicted_s,measured_s" >"$tmp/latency.csv"
echo "system,block,predicted,measured_mean,measured_min,measured_max,requests" >"$tmp/kept.csv"
echo "system,forwards,rows_equal,mean_abs_diff" >"$tmp/rows.csv"
: >"$out/host.txt"
for g in $groups; do
    runs=$tmp/$g/runs grid=$tmp/$g/grid
    mkdir -p "$runs" "$grid"
    for s in $(members "$g") native; do
        [ -f "$rec/$g/$s.tgz" ] || { echo "validate-mechanisms.sh: $rec/$g/$s.tgz missing: measure it (MEASURE=1)" >&2; exit 2; }
        tar -xzf "$rec/$g/$s.tgz" -C "$runs"
    done
    [ -d "$rec/$g/profile" ] || grid=$runs # the loops' issue times: a second machine's grid where there is one
    [ "$grid" = "$runs" ] || for s in $(members "$g") native; do tar -xzf "$rec/$g/profile/$s.tgz" -C "$grid"; done
    {
        echo "$g:"
        python3 "$cmp" host "$runs" "$tmp/$g/host.csv" | sed -n 1p
        echo "the loops' issue times on the held-out grid$([ "$grid" = "$runs" ] || echo " (a second H100)"):"
        python3 "$cmp" host "$grid" "$tmp/$g/grid-host.csv" | sed -n '3,$p'
    } | tee -a "$out/host.txt"
    for s in $(members "$g"); do
        opts=()
        [ "$s" = d2f ] && opts=(--decode fixed:1 --d2f-semi 0) # random weights: no confidence passes
        "$bin" sim --system "$s" "${opts[@]}" --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" \
            --host "$tmp/$g/host.csv" --gpu h100 --cost calibrated --extrapolate --trace "$rec/$g/traces/$s-burst.csv" \
            --block 32 --seed 1 --db "$tmp/$s.db" --quiet --no-progress >/dev/null
        python3 "$cmp" run "$s" burst "$runs" "$tmp/$s.db" >>"$tmp/validate.csv" 2>>"$tmp/latency.csv"
        python3 "$cmp" rows "$s" "$runs" "$tmp/$s.db" | tail -n +2 >>"$tmp/rows.csv"
        [ "$g" = dpad ] && python3 "$cmp" kept "$s" "$runs" "$tmp/$s.db" | tail -n +2 >>"$tmp/kept.csv"
    done
done
mv "$tmp/validate.csv" "$tmp/latency.csv" "$tmp/kept.csv" "$tmp/rows.csv" "$out/"

{
    echo "# tessera against the mechanisms' own code (H100)"
    echo
    echo "Each loop served 6 requests arriving together, one at a time (prompts of 128, 512 and 1,024 tokens, 256"
    echo "positions each, blocks of 32); predicted with its preset from the same trace."
    echo
    echo "| loop | throughput tok/s (pred / meas / err) | mean latency s | p99 latency s | forwards | rows equal | per-forward MAPE |"
    echo "|---|---|---|---|---|---|---|"
    awk -F, 'FNR == 1 { f++; next }
        f == 1 { rows[$1] = $3 " of " $2 }
        f == 2 { v[$1 "," $3] = $4 " / " $5 " / " $6 "%"; m[$1 "," $3] = $4; if (!seen[$1]++) order[++n] = $1 }
        END { for (i = 1; i <= n; i++) { s = order[i]
              printf "| %s | %s | %s | %s | %s | %s | %s%% |\n", s, v[s ",throughput_tok_s"], v[s ",lat_mean_s"],
                  v[s ",lat_p99_s"], v[s ",forwards"], rows[s], m[s ",forward_mape_all"] } }' \
        "$out/rows.csv" "$out/validate.csv"
    echo
    echo "DPad's suffix positions kept past each block (its three loops draw the same sets: one seed):"
    echo
    echo "| block | predicted (expected count) | measured mean | least | most |"
    echo "|---|---|---|---|---|"
    awk -F, '$1 == "dpad" { printf "| %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6 }' "$out/kept.csv"
} >"$out/validate.md"
cat "$out/validate.md"

echo
fails=0
check() { # NAME TEXT RESULT(0 pass)
    if [ "$3" = 0 ]; then echo "PASS  $1: $2"; else echo "FAIL  $1: $2"; fails=$((fails + 1)); fi
}
r=$(awk -F, '$3 == "forwards" && $4 != $5 { bad = 1 } END { print bad + 0 }' "$out/validate.csv")
check forwards "every run's forward count predicted exactly" "$r"
# (DPad's dual cache: all but each block's first forward, which runs the suffix DPad draws at random:
# 6 requests of 8 blocks)
r=$(awk -F, '($1 == "d2f" && $3 != $2) || ($1 == "dpad-dual" && $3 < $2 - 48) { bad = 1 } END { print bad + 0 }' \
    "$out/rows.csv")
check rows "every forward's rows predicted exactly for D2F, and for DPad's dual cache but a block's first" "$r"
r=$(awk -F, 'NR > 1 && ($3 < $5 || $3 > $6) { bad = 1 } END { print bad + 0 }' "$out/kept.csv")
check kept "every block's predicted kept suffix within DPad's draws for it" "$r"
r=$(awk -F, '($1 == "dpad-prefix" || $1 == "dpad-dual") && $3 == "throughput_tok_s" && ($6 > 10 || $6 < -10) { bad = 1 }
             END { print bad + 0 }' "$out/validate.csv")
check cached-throughput "DPad's prefix and dual loops' throughput within 10%" "$r"

if command -v gnuplot >/dev/null; then
    awk -F, '$1 == "dpad" { print $2, $3, $4, $5, $6 }' "$out/kept.csv" >"$tmp/kept.dat"
    for s in dpad dpad-prefix dpad-dual d2f; do awk -F, -v s="$s" '$1 == s { print $5, $4 }' "$out/latency.csv" >"$tmp/$s.dat"; done
    top=$(awk -F, 'NR > 1 { m = $4 > m ? $4 : m; m = $5 > m ? $5 : m } END { print m * 1.05 }' "$out/latency.csv")
    gnuplot <<EOF
set terminal pngcairo size 1300,520 font ',11'
set output '$out/mechanisms.png'
set multiplot layout 1,2 title "The mechanisms' own code on an H100 (DPad 461b36e, D2F 771f745) against tessera's prediction"
set title "DPad: suffix positions kept past each block (window 256, k 4, scale 2)"
set xlabel 'block'; set ylabel 'suffix positions kept'; set grid; set key bottom left opaque box
set xrange [-0.5:7.5]; set yrange [0:*]
plot '$tmp/kept.dat' using 1:3:4:5 with yerrorbars pt 7 lc rgb '#D55E00' title 'DPad: mean, least and most of 6 draws', \
     '' using 1:2 with linespoints pt 5 lc rgb '#0072B2' title 'tessera: the expected count'
set title 'Latency a request (6 arriving together, served one at a time)'
set xlabel 'measured (s)'; set ylabel 'predicted (s)'; set size square; set key top left opaque box
set xrange [0:$top]; set yrange [0:$top]
plot x with lines dt 2 lc rgb '#7F7F7F' title 'predicted = measured', \
     '$tmp/dpad.dat' with points pt 7 ps 1.2 lc rgb '#0072B2' title 'DPad, no cache', \
     '$tmp/dpad-prefix.dat' with points pt 5 ps 1.2 lc rgb '#D55E00' title 'DPad, prefix cache', \
     '$tmp/dpad-dual.dat' with points pt 9 ps 1.5 lc rgb '#009E73' title 'DPad, dual cache', \
     '$tmp/d2f.dat' with points pt 11 ps 1.5 lc rgb '#CC79A7' title 'D2F, pipelined blocks'
unset multiplot
EOF
fi
[ "$fails" = 0 ] || { echo "validate-mechanisms.sh: $fails check(s) failed" >&2; exit 1; }
