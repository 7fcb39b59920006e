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
python3 - "$dir" "$tmp" <<'PY'
import datetime, json, os, sys
d, tmp = sys.argv[1], sys.argv[2]
def when(s):  # nvidia-smi's timestamp, local time
    return datetime.datetime.strptime(s.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
power = json.load(open(os.path.join(d, "gpu-power.json")))
card = next(iter(power.values()))
names = [l.split()[0] for l in open(os.path.join(d, "windows.txt")) if l.strip()]
panels = []
for k, name in enumerate(names):
    m = json.load(open(os.path.join(d, f"sim-{name}.json")))
    a, b = m["live_t0_unix"], m["live_t1_unix"]
    pts = []
    for line in open(os.path.join(d, f"power-{name}.csv")):
        f = line.split(",")
        if len(f) == 2 and f[1].strip() not in ("", "[N/A]"):
            t = when(f[0])
            if a - 1 <= t <= b + 1:
                pts.append((t - a, float(f[1])))
    with open(os.path.join(tmp, f"{k}.dat"), "w") as o:
        o.writelines("%.3f %.1f\n" % p for p in pts)
    inside = [p for p in pts if 0 <= p[0] <= b - a]
    e = sum((inside[i + 1][0] - inside[i][0]) * (inside[i + 1][1] + inside[i][1]) / 2 for i in range(len(inside) - 1))
    span = inside[-1][0] - inside[0][0]
    panels.append((k, name, b - a, m["busy_energy_j"] / m["busy_s"], e / span))
with open(os.path.join(tmp, "panels.gp"), "w") as g:
    g.write("set multiplot layout %d,1\n" % len(panels))
    for k, name, span, pred, meas in panels:
        g.write('set title "%s: measured mean %.0f W, predicted for its steps %.0f W (%+.1f%%)"\n'
                % (name, meas, pred, 100 * (pred - meas) / meas))
        g.write("set xrange [-1:%g]\nset yrange [0:%g]\n" % (span + 1, card["tdp_w"] * 1.1))
        g.write('plot "%s/%d.dat" using 1:2 with lines lc rgb "#0072B2" title "nvidia-smi", '
                '%g with lines lc rgb "#D55E00" lw 2 dt 2 title "tessera, its steps", '
                '%g with lines lc rgb "#999999" dt 3 title "limit", %g with lines lc rgb "#009E73" dt 3 title "idle"\n'
                % (tmp, k, pred, card["tdp_w"], card["idle_w"]))
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
