#!/usr/bin/env bash
# analysis/fleet-plot.sh: a fleet's control over time, from `tessera sim --fleet|--replicas N --json`
# with --autoscale SPEC or --load-control SPEC: the requests outstanding on the fleet (the load, left
# axis) beside the replicas up and starting, or the decode threshold (right axis), at each reading
# (the autoscaler's where the run has both).
#
# Usage: analysis/fleet-plot.sh FLEET.json OUT.png
# (needs python3 and gnuplot)
set -euo pipefail
usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -eq 2 ] || usage
json=$1 out=$2
[ -f "$json" ] || { echo "fleet-plot.sh: $json: no such file" >&2; exit 2; }
for tool in python3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "fleet-plot.sh: $tool not found (apt-get install python3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$json" "$tmp" <<'PY'
import json, sys
path, tmp = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        d = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"fleet-plot.sh: {path}: {e}")
if isinstance(d, dict) and isinstance(d.get("fleet"), dict):  # (a fleet's JSON as earlier versions wrote it)
    f = d.pop("fleet")
    d = dict(d, **{k: v for k, v in f.items() if k != "replicas"}, num_replicas=f.get("replicas"))
if not isinstance(d, dict) or "num_replicas" not in d or not isinstance(d.get("replicas"), list):
    sys.exit(f"fleet-plot.sh: {path}: not a fleet's JSON (tessera sim --replicas N|--fleet FILE --json)")
key = "scale" if d.get("scale") else "threshold" if d.get("threshold") else None
if not key:
    sys.exit(f"fleet-plot.sh: {path}: no autoscaler or load-control readings (the run had neither --autoscale "
             "nor --load-control)")
with open(f"{tmp}/kind.txt", "w") as out:
    out.write(key)
with open(f"{tmp}/scale.dat", "w") as out:
    for k, row in enumerate(d[key]):
        if not (isinstance(row, list) and len(row) == 4 and all(isinstance(x, (int, float)) for x in row)):
            sys.exit(f"fleet-plot.sh: {path}: {key}[{k}]: expected [seconds, %s, outstanding]"
                     % ("up, starting" if key == "scale" else "threshold, TPF"))
        out.write("%g %g %g %d\n" % tuple(row))
with open(f"{tmp}/replicas.txt", "w") as out:
    out.write("%d" % d["num_replicas"])
with open(f"{tmp}/title.txt", "w") as out:
    gpus = sorted({str(r.get("gpu", "")).upper() for r in d["replicas"] if isinstance(r, dict)} - {""})
    control = ("--autoscale " + d["autoscale"] if key == "scale" and d.get("autoscale")
               else "--load-control " + d["load_control"] if key == "threshold" and d.get("load_control") else key)
    most = ", at most %d up" % max(row[1] for row in d[key]) if key == "scale" else ""
    out.write("%d %s replicas behind %s: p99 %.1f s, %.2f J a token\n%s%s"
              % (d["num_replicas"], "+".join(gpus) or "GPU", d["router"], d["lat_p99_s"], d["energy_per_token_j"],
                 control, most))
PY
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
if [ "$(cat "$tmp/kind.txt")" = scale ]; then
    right="set y2label \"replicas\"; set y2range [0:$(($(cat "$tmp/replicas.txt") + 1))]"
    lines="\"\" using 1:2 axes x1y2 with steps lw 2 lc \"#d62728\" title \"replicas up\", \
        \"\" using 1:(\$2 + \$3) axes x1y2 with steps lw 1 dt 2 lc \"#ff7f0e\" title \"up and starting\""
else
    right="set y2label \"decode threshold\"; set y2range [0:1]"
    lines="\"\" using 1:2 axes x1y2 with steps lw 2 lc \"#d62728\" title \"threshold\""
fi
gnuplot <<EOF
set terminal pngcairo size 1000,520 font "sans,11"
set output $(gp_file "$out")
set title $(gp_str "$(cat "$tmp/title.txt")")
set xlabel "time (s)"
set ylabel "requests outstanding on the fleet"
$right
set ytics nomirror
set y2tics
set yrange [0:*]
set key outside bottom center horizontal
set bmargin 6
set grid
plot $(gp_file "$tmp/scale.dat") using 1:4 with filledcurves x1 fillcolor "#c6dbef" title "requests outstanding", $lines
EOF
echo "wrote $out"
