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
    command -v $tool >/dev/null || { echo "power-plot.sh: $tool not found (apt-get install python3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$(dirname "$0")" python3 - "$dir" "$tmp" <<'PY'
import os, sys
import power_trace
d, tmp = sys.argv[1], sys.argv[2]
tdp, idle = power_trace.card(d)["tdp_w"], power_trace.card(d)["idle_w"]
with open(os.path.join(tmp, "panels.gp"), "w") as g:
    rows = list(power_trace.runs(d, margin=1.0))
    g.write("set multiplot layout %d,1\n" % len(rows))
    for k, (name, m, pts, e, span, _) in enumerate(rows):
        with open(os.path.join(tmp, f"{k}.dat"), "w") as o:
            o.writelines("%.3f %.1f\n" % p for p in pts)
        pred, meas = m["busy_energy_j"] / m["busy_s"], e / span
        g.write('set title "%s: measured mean %.0f W, predicted for its steps %.0f W (%+.1f%%)"\n'
                % (name, meas, pred, 100 * (pred - meas) / meas))
        g.write("set xrange [-1:%g]\nset yrange [0:%g]\n" % (m["live_t1_unix"] - m["live_t0_unix"] + 1, tdp * 1.1))
        g.write('plot "%s/%d.dat" using 1:2 with lines lc rgb "#0072B2" title "nvidia-smi", '
                '%g with lines lc rgb "#D55E00" lw 2 dt 2 title "tessera, its steps", '
                '%g with lines lc rgb "#999999" dt 3 title "limit", %g with lines lc rgb "#009E73" dt 3 title "idle"\n'
                % (tmp, k, pred, tdp, idle))
    g.write("unset multiplot\n")
PY
gnuplot <<GP
set terminal pngcairo size 900,$((230 * $(wc -l <"$dir/windows.txt"))) font ",9"
set output "$out"
set termoption noenhanced
set xlabel "Seconds from the first step"
set ylabel "Power (W)"
set key center center horizontal opaque
set grid
load "$tmp/panels.gp"
GP
echo "power-plot.sh: $out"
