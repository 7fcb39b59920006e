#!/usr/bin/env bash
# analysis/fidelity-plot.sh: the fidelity figures from experiments/fidelity.sh's per-step table.
# Reads OUT/all-steps.csv (or OUT/all-steps.csv.gz); writes OUT/fidelity-steps.png (predicted vs
# measured per step, both back ends) and OUT/fidelity-errors.png (distribution of per-step errors).
#
# Usage: analysis/fidelity-plot.sh OUT
set -euo pipefail
out=${1:?usage: fidelity-plot.sh OUT}
command -v gnuplot >/dev/null || { echo "fidelity-plot.sh: gnuplot not found; no figures" >&2; exit 0; }
steps=$out/all-steps.csv
if [ ! -f "$steps" ] && [ -f "$steps.gz" ]; then
    steps=$(mktemp)
    trap 'rm -f "$steps"' EXIT
    gzip -dc "$out/all-steps.csv.gz" >"$steps"
fi
[ -f "$steps" ] || { echo "fidelity-plot.sh: no $out/all-steps.csv" >&2; exit 1; }
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
data=$(gp_file "$steps")
gnuplot <<GP
set terminal pngcairo size 900,700 font ",11"
set output $(gp_file "$out/fidelity-steps.png")
set datafile separator ','
set key autotitle columnhead
set title 'Per-step time: predicted vs measured (engine replay)'
set xlabel 'measured (ms)'; set ylabel 'predicted (ms)'
set logscale xy; set grid; set key top left
plot $data using (\$7*1e3):(\$9*1e3) with points pt 7 ps 0.3 lc rgb '#c0c0c0' title 'roofline', \
     $data using (\$7*1e3):(\$8*1e3) with points pt 7 ps 0.3 lc rgb '#1f77b4' title 'calibrated', \
     x with lines lc rgb 'black' title 'exact'
set output $(gp_file "$out/fidelity-errors.png")
unset logscale; set title 'Per-step relative error'
set xlabel 'error (%)'; set ylabel 'steps'
set xrange [-100:100]
bin(x) = 2 * floor(x / 2)
plot $data using (bin(100*(\$8-\$7)/\$7)):(1) smooth frequency with boxes fs solid 0.5 title 'calibrated', \
     $data using (bin(100*(\$9-\$7)/\$7)):(1) smooth frequency with boxes fs transparent solid 0.3 title 'roofline'
GP
echo "wrote $out/fidelity-steps.png $out/fidelity-errors.png"
