#!/usr/bin/env bash
# analysis/plan-plot.sh: a plan's candidates (tessera plan size --out DIR) as DIR/pareto.png: each
# ranked candidate's cost per hour against its p99 latency at the load (left, labelled by rank, the
# cheapest way to each latency joined as a staircase) and against its decoder's published accuracy
# (right, where candidates publish one); the front of the three (no other candidate as cheap, as fast
# and as accurate, and better in one) filled in both.
#
# Usage: analysis/plan-plot.sh DIR   (reads DIR/plan.csv, writes DIR/pareto.png; needs gnuplot)
set -euo pipefail
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -eq 1 ] || usage
dir=$1
csv=$dir/plan.csv
[ -f "$csv" ] || { echo "plan-plot.sh: $csv: no such file" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plan-plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the ranked rows' numbers only (rank, $/hour, p99, accuracy, front): a label is never read as text
head -1 "$csv" | grep -q '^rank,candidate,status,usd_per_hour,usd_per_mtok,replicas,gpus,rps_per_replica,p99_s,mean_s,accuracy,' ||
    { echo "plan-plot.sh: $csv: not a plan (tessera plan size --out DIR writes one)" >&2; exit 2; }
awk -F, 'NR > 1 && $3 == "ranked" { printf "%d %.6g %.6g %.6g %d\n", $1, $4, $9, $11, $14 }' "$csv" >"$tmp/all.dat"
[ -s "$tmp/all.dat" ] || { echo "plan-plot.sh: $csv: no ranked candidate to draw" >&2; exit 1; }
awk '$5 == 1' "$tmp/all.dat" >"$tmp/front.dat"
# cost against p99 alone: by cost, each candidate faster than every cheaper one
sort -g -k2,2 -k3,3 "$tmp/all.dat" | awk 'NR == 1 || $3 < best { print; best = $3 }' >"$tmp/stairs.dat"
acc=$(awk '$4 >= 0 { n++ } END { print n + 0 }' "$tmp/all.dat")
# a cost or p99 the same for every candidate: that axis's range held open 10% either side (gnuplot's own
# would be empty)
ranges=$(awk 'NR == 1 { a = b = $2; c = d = $3 } { a = $2 < a ? $2 : a; b = $2 > b ? $2 : b; c = $3 < c ? $3 : c; d = $3 > d ? $3 : d }
    END { if (a == b) printf "set xrange [%.6g:%.6g]; ", 0.9 * a, 1.1 * a + (a == 0); if (c == d) printf "set yrange [%.6g:%.6g]", 0.9 * c, 1.1 * c + (c == 0) }' "$tmp/all.dat")
gnuplot <<GP
set terminal pngcairo size $([ "$acc" -gt 0 ] && echo 1200 || echo 700),520 font ",11"
set output $(gp_file "$dir/pareto.png")
set multiplot layout 1,$([ "$acc" -gt 0 ] && echo 2 || echo 1) title "tessera plan size: candidates that serve the load within the SLO (filled: the front)"
set grid
set key top right
set xlabel "cost (USD an hour)"
set ylabel "p99 latency at the load (s)"
set offsets graph 0.05, graph 0.1, graph 0.1, graph 0.1
$ranges
plot $(gp_file "$tmp/stairs.dat") using 2:3 with steps lw 1.5 lc rgb "#2c7fb8" title "cheapest at each p99", \
     $(gp_file "$tmp/all.dat") using 2:3 with points pt 6 ps 1.4 lc rgb "#888888" title "candidate (rank)", \
     "" using 2:3:(sprintf("%d", \$1)) with labels offset 0.9,0.6 font ",9" notitle, \
     $(gp_file "$tmp/front.dat") using 2:3 with points pt 7 ps 1.4 lc rgb "#c0392b" title "front: cost, p99, accuracy"
$(if [ "$acc" -gt 0 ]; then cat <<GP2
set ylabel "published accuracy of the decoder (%)"
set key bottom right
set autoscale y
plot $(gp_file "$tmp/all.dat") using 2:(\$4 >= 0 ? \$4 : NaN) with points pt 6 ps 1.4 lc rgb "#888888" title "candidate", \
     $(gp_file "$tmp/front.dat") using 2:(\$4 >= 0 ? \$4 : NaN) with points pt 7 ps 1.4 lc rgb "#c0392b" title "front: cost, p99, accuracy"
GP2
fi)
unset multiplot
GP
