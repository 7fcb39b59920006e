#!/usr/bin/env bash
# plot.sh: figures from tessera databases, drawn by gnuplot from SQL queries.
#
#   analysis/plot.sh latency-cdf OUT.png DB [DB...]   request latency CDF, one curve per run
#   analysis/plot.sh steps OUT.png DB [RUN_ID]          a run's step timeline: duration and
#                                                       query tokens per step
#   analysis/plot.sh ops OUT.png DB [RUN_ID]            time by op (cost model breakdown)
#   analysis/plot.sh sweep OUT.png DB X Y [BY]          a sweep (tessera exp sweep): summary
#                                                       column Y over option X, a curve for each
#                                                       value of option BY
#
# Curves are labelled from each run's configuration (system or policy/scheduler, GPU). The
# options X and BY are named as tessera sim takes them (rps or --rps, max-batch, sparse-ratio);
# Y is a column of the summary table (throughput_tok_s, lat_mean_s, lat_p99_s, ...). Paths may hold
# any character: they and the labels reach gnuplot as strings (analysis/lib_gnuplot.sh).
# Needs sqlite3 and gnuplot (Debian: sqlite3 gnuplot-nox).
set -euo pipefail
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 3 ] || usage
kind=$1 out=$2
shift 2
for tool in sqlite3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "plot.sh: $tool not found (apt-get install sqlite3 gnuplot-nox)" >&2; exit 1; }
done
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
# a database's path as sqlite3's first argument: one starting with '-' would read as an option
dbarg() { case $1 in -*) echo "./$1" ;; *) echo "$1" ;; esac; }
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
        db=$(dbarg "$db")
        mapfile -t runs < <(sqlite3 "$db" "SELECT run_id FROM runs ORDER BY run_id")
        for run in "${runs[@]}"; do
            f="$tmp/cdf$i.dat"
            sqlite3 -separator ' ' "$db" "SELECT (finish_ns - arrival_ns) / 1e9,
                (ROW_NUMBER() OVER (ORDER BY finish_ns - arrival_ns)) * 1.0 /
                (SELECT count(*) FROM requests WHERE run_id = $run AND state = 'finished')
                FROM requests WHERE run_id = $run AND state = 'finished'
                ORDER BY finish_ns - arrival_ns" >"$f"
            label=$(sqlite3 "$db" "$label_sql $run")
            plots+=("$(gp_file "$f") using 1:2 with lines lw 2 title $(gp_str "$label")")
            i=$((i + 1))
        done
    done
    [ $i -gt 0 ] || { echo "plot.sh: no runs found" >&2; exit 2; }
    plotcmd=$(IFS=,; echo "${plots[*]}")
    gnuplot <<GP
set terminal pngcairo size 900,560 font ",11"
set output $(gp_file "$out")
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
    db=$(dbarg "$1")
    run=${2:-$(sqlite3 "$db" "SELECT max(run_id) FROM runs")}
    [[ $run =~ ^[0-9]+$ ]] || { echo "plot.sh: RUN_ID '$run' is not a run's number" >&2; exit 2; }
    label=$(sqlite3 "$db" "$label_sql $run")
    if [ "$kind" = steps ]; then
        sqlite3 -separator ' ' "$db" "SELECT start_ns / 1e9, duration_ns / 1e6, q_tokens
            FROM steps WHERE run_id = $run ORDER BY step_id" >"$tmp/steps.dat"
        [ -s "$tmp/steps.dat" ] || { echo "plot.sh: run $run has no steps (run without --no-steps)" >&2; exit 2; }
        gnuplot <<GP
set terminal pngcairo size 1000,560 font ",11"
set output $(gp_file "$out")
set title $(gp_str "Steps of $label")
set xlabel 'simulated time (s)'
set ylabel 'step duration (ms)'
set y2label 'query tokens in the step'
set y2tics
set ytics nomirror
set grid
plot $(gp_file "$tmp/steps.dat") using 1:2 with points pt 7 ps 0.3 title 'duration (ms)', \
     '' using 1:3 axes x1y2 with lines lw 1 lc rgb '#80a0a0a0' title 'query tokens'
GP
    else
        sqlite3 -separator ' ' "$db" "SELECT op, seconds FROM op_breakdown
            WHERE run_id = $run AND seconds > 0 ORDER BY seconds DESC" >"$tmp/ops.dat"
        gnuplot <<GP
set terminal pngcairo size 900,500 font ",11"
set output $(gp_file "$out")
set title $(gp_str "Time by op: $label")
set ylabel 'seconds (summed over steps)'
set style fill solid 0.8
set boxwidth 0.7
set xtics rotate by -35
set grid ytics
plot $(gp_file "$tmp/ops.dat") using 0:2:xtic(1) with boxes notitle
GP
    fi
    ;;
sweep)
    [ $# -ge 3 ] || usage
    db=$1 x=$2 y=$3 by=${4:-}
    [ -f "$db" ] || { echo "plot.sh: $db: no such database" >&2; exit 2; }
    db=$(dbarg "$db")
    # words_of NAME: an option's or summary column's axis label in words with its unit (the name
    # itself, without its underscores, where it has none here)
    words_of() {
        case $1 in
            rps) echo "Request rate (req/s)" ;; max_batch) echo "Batch size cap (requests)" ;;
            sparse_ratio) echo "Sparse retention ratio" ;; block) echo "Block size (tokens)" ;;
            gen_len) echo "Generated length (tokens)" ;; requests) echo "Requests" ;;
            throughput_tok_s) echo "Throughput (tokens/s)" ;; content_tok_s) echo "Content throughput (tokens/s)" ;;
            lat_mean_s) echo "Mean latency (s)" ;; lat_p99_s) echo "P99 latency (s)" ;; lat_p50_s) echo "Median latency (s)" ;;
            lat_std_s) echo "Latency standard deviation (s)" ;; lat_span_s) echo "Latency span, max - min (s)" ;;
            ttft_mean_s) echo "Mean time to first token (s)" ;;
            *) echo "${1//_/ }" ;;
        esac
    }
    key() { local k=${1#--}; k=${k//-/_}; [[ $k =~ ^[a-z][a-z0-9_]*$ ]] || { echo "plot.sh: '$1' is not an option's name" >&2; exit 2; }; echo "$k"; }
    xk=$(key "$x")
    { [[ $y =~ ^[a-z][a-z0-9_]*$ ]] && [ "$(sqlite3 "$db" "SELECT count(*) FROM pragma_table_info('summary') WHERE name = '$y'")" = 1 ]; } || {
        echo "plot.sh: $db: '$y' is not a column of the summary table ($(sqlite3 "$db" "SELECT group_concat(name, ' ')
            FROM pragma_table_info('summary') WHERE name != 'run_id'"))" >&2; exit 2; }
    # the options that differ between the runs: X and BY must account for all of them
    varying=$(sqlite3 "$db" "SELECT group_concat(key, ' ') FROM (SELECT key FROM runs, json_each(runs.config_json)
        GROUP BY key HAVING count(DISTINCT quote(value)) > 1 ORDER BY key)")
    [ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE json_type(config_json, '\$.$xk') NOT IN ('integer', 'real')")" = 0 ] || {
        echo "plot.sh: $db: X '$x' is not a number in every run's configuration (the options that vary: ${varying:-none})" >&2; exit 2; }
    curve="'all'"
    if [ -n "$by" ]; then
        byk=$(key "$by")
        [ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE json_type(config_json, '\$.$byk') IS NULL")" = 0 ] || {
            echo "plot.sh: $db: BY '$by' is not an option of every run (the options that vary: ${varying:-none})" >&2; exit 2; }
        curve="json_extract(config_json, '\$.$byk')"
    fi
    # a curve holds one run an x: where two runs of one curve share their x, they differ in another option
    if [ "$(sqlite3 "$db" "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY $curve,
            json_extract(config_json, '\$.$xk') HAVING count(*) > 1)")" != 0 ]; then
        other=$(for k in $varying; do [ "$k" = "$xk" ] || [ "$k" = "${byk:-}" ] || printf '%s ' "$k"; done)
        echo "plot.sh: $db: the runs also differ in ${other% } (give it as BY, or plot the runs of one value apart)" >&2
        exit 2
    fi
    # every run's curve, x and y in one query, split into a data file a curve (sweepI.dat, I from 1)
    sqlite3 -separator $'\t' "$db" "SELECT $curve, json_extract(config_json, '\$.$xk'), $y FROM runs
        JOIN summary USING (run_id) ORDER BY 1, 2" |
        awk -F'\t' -v d="$tmp" '$1 != last || NR == 1 { i++; last = $1; print $1 } { print $2, $3 > (d "/sweep" i ".dat") }' \
            >"$tmp/curves.txt"
    plots=()
    i=0
    while IFS= read -r v; do
        i=$((i + 1))
        title=notitle
        [ -n "$by" ] && title="title $(gp_str "${by#--} $v")"
        # a colour and a marker a curve (gnuplot's line types cycle through 8 colours; the markers
        # through these 6 filled ones, so no two of the first 24 curves share both)
        plots+=("$(gp_file "$tmp/sweep$i.dat") using 1:2 with linespoints lw 2 lt $i pt $(echo 7 5 9 11 13 15 | cut -d' ' -f$(((i - 1) % 6 + 1))) $title")
    done <"$tmp/curves.txt"
    [ $i -gt 0 ] || { echo "plot.sh: $db: no runs" >&2; exit 2; }
    plotcmd=$(IFS=,; echo "${plots[*]}")
    gnuplot <<GP
set terminal pngcairo size 900,560 font ",11" noenhanced
set output $(gp_file "$out")
set title $(gp_str "$(words_of "$y") over $(words_of "$xk" | sed 's/ (.*//')")
set xlabel $(gp_str "$(words_of "$xk")")
set ylabel $(gp_str "$(words_of "$y")")
set key outside right
set grid
plot $plotcmd
GP
    ;;
*) usage ;;
esac
echo "wrote $out"
