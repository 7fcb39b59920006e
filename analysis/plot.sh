#!/usr/bin/env bash
# plot.sh: figures from tessera databases, drawn by gnuplot from SQL queries.
#
#   analysis/plot.sh latency-cdf OUT.png DB [DB...]   request latency CDF, one curve per run
#   analysis/plot.sh steps OUT.png DB [RUN_ID]          a run's step timeline: duration and
#                                                       query tokens per step
#   analysis/plot.sh ops OUT.png DB [RUN_ID]            time by op (cost model breakdown)
#
# Curves are labelled from each run's configuration (system or policy/scheduler, GPU).
# Needs sqlite3 and gnuplot (Debian: sqlite3 gnuplot-nox).
set -euo pipefail
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 3 ] || usage
kind=$1 out=$2
shift 2
for tool in sqlite3 gnuplot; do
    command -v $tool >/dev/null || { echo "plot.sh: $tool not found (apt-get install sqlite3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
label_sql="SELECT coalesce(nullif(json_extract(config_json,'\$.system'),''),
  json_extract(config_json,'\$.policy') || '/' || json_extract(config_json,'\$.scheduler'))
  || ' on ' || json_extract(config_json,'\$.gpu') || ' (run ' || run_id || ')' FROM runs WHERE run_id = "

case $kind in
latency-cdf)
    plots=()
    i=0
    for db in "$@"; do
        [ -f "$db" ] || { echo "plot.sh: $db: no such database" >&2; exit 2; }
        for run in $(sqlite3 "$db" "SELECT run_id FROM runs ORDER BY run_id"); do
            f="$tmp/cdf$i.dat"
            sqlite3 -separator ' ' "$db" "SELECT (finish_ns - arrival_ns) / 1e9,
                (ROW_NUMBER() OVER (ORDER BY finish_ns - arrival_ns)) * 1.0 /
                (SELECT count(*) FROM requests WHERE run_id = $run AND state = 'finished')
                FROM requests WHERE run_id = $run AND state = 'finished'
                ORDER BY finish_ns - arrival_ns" >"$f"
            label=$(sqlite3 "$db" "$label_sql $run")
            plots+=("'$f' using 1:2 with lines lw 2 title '$label'")
            i=$((i + 1))
        done
    done
    [ $i -gt 0 ] || { echo "plot.sh: no runs found" >&2; exit 2; }
    plotcmd=$(IFS=,; echo "${plots[*]}")
    gnuplot <<GP
set terminal pngcairo size 900,560 font ",11"
set output '$out'
set title 'Request latency (finish - arrival)'
set xlabel 'latency (s)'
set ylabel 'fraction of requests'
set key bottom right
set grid
set logscale x
plot $plotcmd
GP
    ;;
steps|ops)
    db=$1
    run=${2:-$(sqlite3 "$db" "SELECT max(run_id) FROM runs")}
    label=$(sqlite3 "$db" "$label_sql $run")
    if [ "$kind" = steps ]; then
        sqlite3 -separator ' ' "$db" "SELECT start_ns / 1e9, duration_ns / 1e6, q_tokens
            FROM steps WHERE run_id = $run ORDER BY step_id" >"$tmp/steps.dat"
        [ -s "$tmp/steps.dat" ] || { echo "plot.sh: run $run has no steps (run without --no-steps)" >&2; exit 2; }
        gnuplot <<GP
set terminal pngcairo size 1000,560 font ",11"
set output '$out'
set title 'Steps of $label'
set xlabel 'simulated time (s)'
set ylabel 'step duration (ms)'
set y2label 'query tokens in the step'
set y2tics
set ytics nomirror
set grid
plot '$tmp/steps.dat' using 1:2 with points pt 7 ps 0.3 title 'duration (ms)', \
     '$tmp/steps.dat' using 1:3 axes x1y2 with lines lw 1 lc rgb '#80a0a0a0' title 'query tokens'
GP
    else
        sqlite3 -separator ' ' "$db" "SELECT op, seconds FROM op_breakdown
            WHERE run_id = $run AND seconds > 0 ORDER BY seconds DESC" >"$tmp/ops.dat"
        gnuplot <<GP
set terminal pngcairo size 900,500 font ",11"
set output '$out'
set title 'Time by op: $label'
set ylabel 'seconds (summed over steps)'
set style fill solid 0.8
set boxwidth 0.7
set xtics rotate by -35
set grid ytics
plot '$tmp/ops.dat' using 0:2:xtic(1) with boxes notitle
GP
    fi
    ;;
*) usage ;;
esac
echo "wrote $out"
