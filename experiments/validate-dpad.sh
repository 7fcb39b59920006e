#!/usr/bin/env bash
# validate-dpad.sh: tessera's predictions of DPad against DPad's own public code running on the GPU.
#
# The record experiments/records/validate-dpad-h100 holds DPad's three generate loops (Crys-Chen/DPad
# llada/generate_dropout.py at 461b36e: no cache, Fast-dLLM's prefix cache, its dual cache) run on an
# H100 by experiments/validate/driver.py (random weights in LLaDA-8B-Instruct's shape, one request at a
# time) over one burst (dpad-burst.csv: 6 requests arriving together, prompts of 128, 512 and 1,024
# tokens, 256 positions each; its GSM8K setting: blocks of 32, window 256, k 4, scale 2, one position a
# step): every request's times and every forward's rows and time. Beside them, LLaDA's reference loop
# over the held-out grid on the same machine gives the host line (experiments/validate/compare.py
# host), and on a second H100 the held-out grid of all four loops gives each DPad loop's issue time
# over LLaDA's (profile/: the multiples of the torch-dpad and torch-dpad-cache implementations).
#
# tessera predicts every run from its trace with the loop's preset (dpad, dpad-prefix, dpad-dual), the
# H100's torch-eager calibration and that host line, and compares:
#   OUT/validate.csv   system,rate,metric,predicted,measured,error_pct: throughput, mean and p99
#                      latency, forwards, per-forward means and MAPE (compare.py run)
#   OUT/kept.csv       the suffix positions each block keeps past it, predicted (the expected count)
#                      against DPad's draws (mean, least and most over the requests)
#   OUT/validate.md    both as tables; OUT/host.txt the host line and the loops' issue times
#   OUT/dpad.png       where gnuplot is found: the kept suffix a block, and latency a request
# and checks, each a PASS or FAIL line: every run's forward count is predicted exactly; every block's
# predicted kept suffix lies within DPad's draws; the cached loops' throughput within 10%.
#
# MEASURE=1 measures the runs again first, on this machine's GPU (experiments/validate/measure.sh with
# the checkouts in CODE, default baselines/, as experiments/validate/README.md makes them), into
# OUT/record, and compares those instead.
#
# Usage: tessera exp run validate-dpad OUT [--force]   (or experiments/validate-dpad.sh OUT with TESSERA=path)
# Needs: GPU with MEASURE
set -euo pipefail
out=${1:?usage: validate-dpad.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TESSERA:-$root/build/tessera}
[ -x "$bin" ] || { echo "validate-dpad.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
cmp=$root/experiments/validate/compare.py
systems="dpad dpad-prefix dpad-dual"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$out/record
if [ "${MEASURE:-0}" = 1 ]; then
    mkdir -p "$rec/traces"
    TESSERA=$bin "$root/experiments/validate/traces.sh" "$rec/traces"
    for s in $systems; do TRACES=$rec/traces "$root/experiments/validate/measure.sh" "$s" "$rec"; done
    PROFILE_ONLY=1 TRACES=$rec/traces "$root/experiments/validate/measure.sh" native "$rec"
else
    src=${TESSERA_RECORDS:-}
    if [ -z "$src" ] || [ ! -d "$src/validate-dpad-h100" ]; then
        src=$tmp/records
        bash "$root/analysis/records.sh" unpack "$src" validate-dpad-h100 >/dev/null 2>&1 || {
            echo "validate-dpad.sh: needs the record experiments/records/validate-dpad-h100 (DPad's loops on an" \
                 "H100); make it on a GPU machine with MEASURE=1 tessera exp run validate-dpad OUT" >&2
            exit 2
        }
    fi
    rec=$src/validate-dpad-h100
fi
runs=$tmp/runs
mkdir -p "$runs" "$tmp/grid"
for s in $systems native; do
    [ -f "$rec/$s.tgz" ] || { echo "validate-dpad.sh: $rec/$s.tgz missing: measure it (MEASURE=1)" >&2; exit 2; }
    tar -xzf "$rec/$s.tgz" -C "$runs"
done
grid=$runs # the loops' issue times: from the second machine's grid where the record has one
if [ -d "$rec/profile" ]; then
    for s in $systems native; do tar -xzf "$rec/profile/$s.tgz" -C "$tmp/grid"; done
    grid=$tmp/grid
fi
{
    python3 "$cmp" host "$runs" "$out/host.csv"
    echo "the loops' issue times on the held-out grid$([ "$grid" = "$runs" ] || echo " (a second H100)"):"
    python3 "$cmp" host "$grid" "$tmp/grid-host.csv" | sed -n '3,$p'
} | tee "$out/host.txt"

echo "system,rate,metric,predicted,measured,error_pct" >"$tmp/validate.csv"
echo "system,rate,id,predicted_s,measured_s" >"$tmp/latency.csv"
echo "system,block,predicted,measured_mean,measured_min,measured_max,requests" >"$tmp/kept.csv"
for s in $systems; do
    "$bin" sim --system "$s" --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" --host "$out/host.csv" \
        --gpu h100 --cost calibrated --extrapolate --trace "$rec/traces/$s-burst.csv" --block 32 --seed 1 \
        --db "$tmp/$s.db" --quiet --no-progress >/dev/null
    python3 "$cmp" run "$s" burst "$runs" "$tmp/$s.db" >>"$tmp/validate.csv" 2>>"$tmp/latency.csv"
    python3 "$cmp" kept "$s" "$runs" "$tmp/$s.db" | tail -n +2 >>"$tmp/kept.csv"
done
mv "$tmp/validate.csv" "$tmp/latency.csv" "$tmp/kept.csv" "$out/"

{
    echo "# tessera against DPad's own code (H100)"
    echo
    echo "Each of DPad's three loops served 6 requests arriving together, one at a time (prompts of 128, 512 and"
    echo "1,024 tokens, 256 positions each, blocks of 32); predicted with its preset from the same trace."
    echo
    echo "| loop | throughput tok/s (pred / meas / err) | mean latency s | p99 latency s | forwards | per-forward MAPE |"
    echo "|---|---|---|---|---|---|"
    awk -F, 'NR > 1 { v[$1 "," $3] = $4 " / " $5 " / " $6 "%"; m[$1 "," $3] = $4; if (!seen[$1]++) order[++n] = $1 }
        END { for (i = 1; i <= n; i++) { s = order[i]
              printf "| %s | %s | %s | %s | %s | %s%% |\n", s, v[s ",throughput_tok_s"], v[s ",lat_mean_s"],
                  v[s ",lat_p99_s"], v[s ",forwards"], m[s ",forward_mape_all"] } }' "$out/validate.csv"
    echo
    echo "Suffix positions kept past each block (the three loops draw the same sets: one seed):"
    echo
    echo "| block | predicted (expected count) | measured mean | least | most |"
    echo "|---|---|---|---|---|"
    awk -F, '$1 == "dpad" { printf "| %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6 }' "$out/kept.csv"
} >"$out/validate.md"
cat "$out/validate.md"

echo
fails=0
check() { # NAME CONDITION-TEXT RESULT(0 pass)
    if [ "$3" = 0 ]; then echo "PASS  $1: $2"; else echo "FAIL  $1: $2"; fails=$((fails + 1)); fi
}
r=$(awk -F, '$3 == "forwards" && $4 != $5 { bad = 1 } END { print bad + 0 }' "$out/validate.csv")
check forwards "every run's forward count predicted exactly" "$r"
r=$(awk -F, 'NR > 1 && ($3 < $5 || $3 > $6) { bad = 1 } END { print bad + 0 }' "$out/kept.csv")
check kept "every block's predicted kept suffix within DPad's draws for it" "$r"
r=$(awk -F, '$1 != "dpad" && $3 == "throughput_tok_s" && ($6 > 10 || $6 < -10) { bad = 1 } END { print bad + 0 }' \
    "$out/validate.csv")
check cached-throughput "the prefix and dual loops' throughput within 10%" "$r"

if command -v gnuplot >/dev/null; then
    awk -F, '$1 == "dpad" { print $2, $3, $4, $5, $6 }' "$out/kept.csv" >"$tmp/kept.dat"
    for s in $systems; do awk -F, -v s="$s" '$1 == s { print $5, $4 }' "$out/latency.csv" >"$tmp/$s.dat"; done
    top=$(awk -F, 'NR > 1 { m = $4 > m ? $4 : m; m = $5 > m ? $5 : m } END { print m * 1.05 }' "$out/latency.csv")
    gnuplot <<EOF
set terminal pngcairo size 1300,520 font ',11'
set output '$out/dpad.png'
set multiplot layout 1,2 title "DPad's own code (Crys-Chen/DPad 461b36e) on an H100 against tessera's prediction"
set title 'Suffix positions kept past each block (256 positions, window 256, k 4, scale 2)'
set xlabel 'block'; set ylabel 'suffix positions kept'; set grid; set key bottom left opaque box
set xrange [-0.5:7.5]; set yrange [0:*]
plot '$tmp/kept.dat' using 1:3:4:5 with yerrorbars pt 7 lc rgb '#D55E00' title 'DPad: mean, least and most of 6 draws', \
     '' using 1:2 with linespoints pt 5 lc rgb '#0072B2' title 'tessera: the expected count'
set title 'Latency a request (6 arriving together, served one at a time)'
set xlabel 'measured (s)'; set ylabel 'predicted (s)'; set size square; set key top left opaque box
set xrange [0:$top]; set yrange [0:$top]
plot x with lines dt 2 lc rgb '#7F7F7F' title 'predicted = measured', \
     '$tmp/dpad.dat' with points pt 7 ps 1.2 lc rgb '#0072B2' title 'no cache', \
     '$tmp/dpad-prefix.dat' with points pt 5 ps 1.2 lc rgb '#D55E00' title 'prefix cache', \
     '$tmp/dpad-dual.dat' with points pt 9 ps 1.5 lc rgb '#009E73' title 'dual cache'
unset multiplot
EOF
fi
[ "$fails" = 0 ] || { echo "validate-dpad.sh: $fails check(s) failed" >&2; exit 1; }
