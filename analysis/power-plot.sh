#!/usr/bin/env bash
# analysis/power-plot.sh: experiments/power.sh's runs drawn: each workload's power trace (nvidia-smi's
# samples) over the seconds from its first step to its last, beside the mean power tessera predicts
# for its steps and the card's idle draw and limit. One panel a workload.
#
# Usage: analysis/power-plot.sh DIR OUT.png   (DIR: what power.sh wrote, or its raw.tgz unpacked)
# (needs python3 and gnuplot)
set -euo pipefail
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -eq 2 ] || usage
dir=$1 out=$2
[ -f "$dir/windows.txt" ] || { echo "power-plot.sh: $dir/windows.txt: no such file (a power.sh folder?)" >&2; exit 2; }
for tool in python3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "power-plot.sh: $tool not found (apt-get install python3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the panels, a line each: title, x range's end, y range's end, predicted, limit and idle watts (the
# trace in TMP/K.dat, K from 0); the gnuplot commands are written here, the title through gp_str
PYTHONPATH="$(dirname "$0")" python3 - "$dir" "$tmp" <<'PY'
import os, sys
import power_trace
d, tmp = sys.argv[1], sys.argv[2]
tdp, idle = power_trace.card(d)["tdp_w"], power_trace.card(d)["idle_w"]
with open(os.path.join(tmp, "panels.tsv"), "w") as g:
    for k, (name, m, pts, e, span, _) in enumerate(power_trace.runs(d, margin=1.0)):
        with open(os.path.join(tmp, f"{k}.dat"), "w") as o:
            o.writelines("%.3f %.1f\n" % p for p in pts)
        pred, meas = m["busy_energy_j"] / m["busy_s"], e / span
        title = "%s: measured mean %.0f W, predicted for its steps %.0f W (%+.1f%%)" % (
            name, meas, pred, 100 * (pred - meas) / meas)
        g.write("%s\t%g\t%g\t%g\t%g\t%g\n" % (" ".join(title.split()), m["live_t1_unix"] - m["live_t0_unix"] + 1,
                                             tdp * 1.1, pred, tdp, idle))
PY
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
{
    echo "set multiplot layout $(wc -l <"$tmp/panels.tsv"),1"
    k=0
    while IFS=$'\t' read -r title xmax ymax pred tdp idle; do
        echo "set title $(gp_str "$title")"
        echo "set xrange [-1:$xmax]"
        echo "set yrange [0:$ymax]"
        echo "plot $(gp_file "$tmp/$k.dat") using 1:2 with lines lc rgb \"#0072B2\" title \"nvidia-smi\"," \
            "$pred with lines lc rgb \"#D55E00\" lw 2 dt 2 title \"tessera, its steps\"," \
            "$tdp with lines lc rgb \"#999999\" dt 3 title \"limit\", $idle with lines lc rgb \"#009E73\" dt 3 title \"idle\""
        k=$((k + 1))
    done <"$tmp/panels.tsv"
    echo "unset multiplot"
} >"$tmp/panels.gp"
gnuplot <<GP
set terminal pngcairo size 900,$((230 * $(wc -l <"$dir/windows.txt"))) font ",9"
set output $(gp_file "$out")
set termoption noenhanced
set xlabel "Seconds from the first step"
set ylabel "Power (W)"
set key center center horizontal opaque
set grid
load $(gp_file "$tmp/panels.gp")
GP
echo "power-plot.sh: $out"
