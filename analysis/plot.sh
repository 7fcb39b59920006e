#!/usr/bin/env bash
# plot.sh: figures from tessera databases, drawn by gnuplot from SQL over their exported rows.
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
# A database is data, never code: its rows are read through `tessera db export` (a database that
# is not tessera's is refused there, and here with exit 2); sqlite3 never opens it. The SQL behind a
# figure runs over those rows in a scratch database in the script's own folder ($tmp), and no value
# read from them enters its text: the runs' rows are told apart in one query (window functions
# partitioned by run) and split by awk into a data file a run or curve. RUN_ID must be a number and
# X, Y and BY names, or they are refused. tessera is $TESSERA, else build/tessera or
# build/cpu/tessera beside analysis/, else tessera on the PATH.
# Needs sqlite3 and gnuplot (Debian: sqlite3 gnuplot-nox).
set -euo pipefail
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 3 ] || usage
kind=$1 out=$2
shift 2
for tool in sqlite3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "plot.sh: $tool not found (apt-get install sqlite3 gnuplot-nox)" >&2; exit 1; }
done
# tessera: $TESSERA, else the repository's build (its folder the script's folder's parent by name, as
# cd takes "..": analysis/ may be a link), else the PATH's
bin=${TESSERA:-}
repo=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
for built in "$repo/build/tessera" "$repo/build/cpu/tessera"; do
    [ -n "$bin" ] || [ ! -x "$built" ] || bin=$built
done
[ -n "$bin" ] || bin=$(command -v tessera) || { echo "plot.sh: no tessera binary: build it (make) or set TESSERA" >&2; exit 2; }
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
# a database's path as tessera's argument: one starting with '-' would read as an option
dbarg() { case $1 in -*) echo "./$1" ;; *) echo "$1" ;; esac; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# load DB SCRATCH TABLE [--run ID]: DB's TABLE as tessera db export writes it (CSV), imported into
# table TABLE of the scratch database $tmp/SCRATCH. Its columns are TEXT: a number is CAST where
# order or comparison needs it. tessera's refusal (no such file, not a tessera database) is on
# stderr, and the script exits 2. The runs table comes with a column known_as (how the run's system is
# known: validated, measured or modelled) and a view, labels(run_id, label): each run's curve label,
# its system (or policy/scheduler) ' on ' its GPU ' (run N, how it is known)'.
load() {
    local db=$1 scratch=$2 table=$3
    shift 3
    [[ $table =~ ^[a-z]+$ ]] || { echo "plot.sh: no table '$table'" >&2; exit 2; }
    "$bin" db export "$(dbarg "$db")" "$table" --csv "$@" >"$tmp/$table.csv" || exit 2
    sqlite3 "$tmp/$scratch" ".import --csv /dev/stdin $table" <"$tmp/$table.csv"
    rm -f "$tmp/$table.csv"
    [ "$table" != runs ] && return
    # how each run's system is known (validated, measured or modelled: the summary's known, before
    # its first ':'; '' in a database from before it), as a column of its own
    sqlite3 "$tmp/$scratch" "ALTER TABLE runs ADD COLUMN known_as DEFAULT ''"
    [ "$(sqlite3 "$tmp/$scratch" "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'known'")" = 1 ] &&
        sqlite3 "$tmp/$scratch" "UPDATE runs SET known_as = substr(known, 1, instr(known, ':') - 1)"
    sqlite3 "$tmp/$scratch" "CREATE VIEW labels AS SELECT run_id,
        coalesce(nullif(json_extract(config_json, '\$.system'), ''),
        json_extract(config_json, '\$.policy') || '/' || json_extract(config_json, '\$.scheduler'))
        || ' on ' || json_extract(config_json, '\$.gpu') || ' (run ' || run_id
        || coalesce(', ' || nullif(known_as, ''), '') || ')' AS label FROM runs"
}
# unhex HEX: the text whose bytes SQLite's hex() wrote as HEX (a label read whole, whatever it holds)
unhex() {
    local hex=$1 esc="" i
    for ((i = 0; i < ${#hex}; i += 2)); do esc+="\\x${hex:i:2}"; done
    printf '%b' "$esc"
}

case $kind in
latency-cdf)
    # each database's runs in order: a line "R, its label in hex" a run, then "D, latency (s), the
    # fraction of its finished requests done by then" a finished request; awk starts a data file a
    # run (cdfI.dat) and writes its label beside it (cdfI.label)
    i=0 k=0
    for db in "$@"; do
        [ -f "$db" ] || { echo "plot.sh: $db: no such database" >&2; exit 2; }
        k=$((k + 1))
        load "$db" "db$k.sqlite" runs
        load "$db" "db$k.sqlite" requests
        sqlite3 -separator $'\t' "$tmp/db$k.sqlite" "WITH f AS (SELECT run_id, finish_ns - arrival_ns AS ns FROM requests
                WHERE state = 'finished' AND run_id IN (SELECT run_id FROM runs)),
            rows AS (SELECT run_id, 0 AS part, 0 AS frac, 'R' AS kind, hex(label) AS a FROM labels
                UNION ALL SELECT run_id, 1, ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY ns) * 1.0 /
                    count(*) OVER (PARTITION BY run_id), 'D', ns / 1e9 FROM f)
            SELECT kind, a, CASE part WHEN 1 THEN frac END FROM rows ORDER BY CAST(run_id AS INTEGER), run_id, part, frac" |
            awk -F'\t' -v d="$tmp" -v i="$i" '$1 == "R" { i++; f = d "/cdf" i ".dat"; printf "" > f; print $2 > (d "/cdf" i ".label"); next }
                { print $2, $3 > f }
                END { print i }' >"$tmp/count"
        i=$(<"$tmp/count")
    done
    [ "$i" -gt 0 ] || { echo "plot.sh: no runs found" >&2; exit 2; }
    plots=()
    for ((j = 1; j <= i; j++)); do
        label=$(unhex "$(<"$tmp/cdf$j.label")")
        plots+=("$(gp_file "$tmp/cdf$j.dat") using 1:2 with lines lw 2 title $(gp_str "$label")")
    done
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
    db=$1
    load "$db" s.sqlite runs
    run=${2:-$(sqlite3 "$tmp/s.sqlite" "SELECT max(CAST(run_id AS INTEGER)) FROM runs")}
    [[ $run =~ ^[0-9]+$ ]] || { echo "plot.sh: RUN_ID '$run' is not a run's number" >&2; exit 2; }
    label=$(unhex "$(sqlite3 "$tmp/s.sqlite" "SELECT hex(label) FROM labels WHERE CAST(run_id AS INTEGER) = $run LIMIT 1")")
    if [ "$kind" = steps ]; then
        load "$db" s.sqlite steps --run "$run"
        sqlite3 -separator ' ' "$tmp/s.sqlite" "SELECT start_ns / 1e9, duration_ns / 1e6, q_tokens
            FROM steps ORDER BY CAST(step_id AS INTEGER)" >"$tmp/steps.dat"
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
        load "$db" s.sqlite ops --run "$run"
        sqlite3 -separator ' ' "$tmp/s.sqlite" "SELECT op, CAST(seconds AS REAL) FROM ops
            WHERE CAST(seconds AS REAL) > 0 ORDER BY CAST(seconds AS REAL) DESC" >"$tmp/ops.dat"
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
    # X and BY as the configuration's keys (rps for --rps, max_batch for max-batch)
    xk=${x#--} xk=${xk//-/_} byk=${by#--} byk=${byk//-/_}
    [[ $xk =~ ^[a-z][a-z0-9_]*$ ]] || { echo "plot.sh: '$x' is not an option's name" >&2; exit 2; }
    load "$db" s.sqlite runs
    # the summary's columns: the exported runs' columns after the runs table's own
    { [[ $y =~ ^[a-z][a-z0-9_]*$ ]] && [ "$(sqlite3 "$tmp/s.sqlite" "SELECT count(*) FROM pragma_table_info('runs')
            WHERE name = '$y' AND name NOT IN ('run_id', 'created', 'code_version', 'seed', 'config_json')")" = 1 ]; } || {
        echo "plot.sh: $db: '$y' is not a column of the summary table ($(sqlite3 "$tmp/s.sqlite" "SELECT group_concat(name, ' ')
            FROM pragma_table_info('runs') WHERE name NOT IN ('run_id', 'created', 'code_version', 'seed', 'config_json')"))" >&2; exit 2; }
    # the options that differ between the runs: X and BY must account for all of them
    varying=$(sqlite3 "$tmp/s.sqlite" "SELECT group_concat(key, ' ') FROM (SELECT key FROM runs, json_each(runs.config_json)
        GROUP BY key HAVING count(DISTINCT quote(value)) > 1 ORDER BY key)")
    [ "$(sqlite3 "$tmp/s.sqlite" "SELECT count(*) FROM runs WHERE json_type(config_json, '\$.$xk') NOT IN ('integer', 'real')")" = 0 ] || {
        echo "plot.sh: $db: X '$x' is not a number in every run's configuration (the options that vary: ${varying:-none})" >&2; exit 2; }
    # each run's curve (its BY, or one curve) and x, as columns of the scratch table
    sqlite3 "$tmp/s.sqlite" "ALTER TABLE runs ADD COLUMN plot_curve DEFAULT 'all';
        ALTER TABLE runs ADD COLUMN plot_x; UPDATE runs SET plot_x = json_extract(config_json, '\$.$xk')"
    if [ -n "$by" ]; then
        [[ $byk =~ ^[a-z][a-z0-9_]*$ ]] || { echo "plot.sh: '$by' is not an option's name" >&2; exit 2; }
        [ "$(sqlite3 "$tmp/s.sqlite" "SELECT count(*) FROM runs WHERE json_type(config_json, '\$.$byk') IS NULL")" = 0 ] || {
            echo "plot.sh: $db: BY '$by' is not an option of every run (the options that vary: ${varying:-none})" >&2; exit 2; }
        sqlite3 "$tmp/s.sqlite" "UPDATE runs SET plot_curve = json_extract(config_json, '\$.$byk')"
    fi
    # a curve holds one run an x: where two runs of one curve share their x, they differ in another option
    if [ "$(sqlite3 "$tmp/s.sqlite" "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY plot_curve, plot_x HAVING count(*) > 1)")" != 0 ]; then
        other=$(sqlite3 "$tmp/s.sqlite" "SELECT group_concat(key, ' ') FROM (SELECT key FROM runs, json_each(runs.config_json)
            WHERE key NOT IN ('$xk', '$byk') GROUP BY key HAVING count(DISTINCT quote(value)) > 1 ORDER BY key)")
        echo "plot.sh: $db: the runs also differ in $other (give it as BY, or plot the runs of one value apart)" >&2
        exit 2
    fi
    # every run's curve, x and y in one query (the runs with a summary), split into a data file a
    # curve (sweepI.dat, I from 1); each curve's value in hex beside it, read whole
    # (and whether the run was overloaded: 1, else 0; a database from before the column: 0)
    [ "$(sqlite3 "$tmp/s.sqlite" "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'overloaded'")" = 1 ] ||
        sqlite3 "$tmp/s.sqlite" "ALTER TABLE runs ADD COLUMN overloaded DEFAULT ''"
    # (and with each curve, how its runs' system is known, where they agree)
    sqlite3 -separator $'\t' "$tmp/s.sqlite" "SELECT hex(plot_curve), plot_x, $y, coalesce(nullif(overloaded, ''), 0) = '1',
        (SELECT CASE WHEN count(DISTINCT o.known_as) = 1 THEN max(o.known_as) ELSE '' END FROM runs o
         WHERE o.plot_curve = runs.plot_curve) FROM runs WHERE num_requests != '' ORDER BY plot_curve, plot_x" |
        awk -F'\t' -v d="$tmp" '$1 != last || NR == 1 { i++; last = $1; print $1 "\t" $5 } { print $2, $3, $4 > (d "/sweep" i ".dat") }' \
            >"$tmp/curves.txt"
    any_over=$(cat "$tmp"/sweep*.dat 2>/dev/null | awk '$3 == 1 { n++ } END { print n + 0 }')
    plots=()
    i=0
    while IFS=$'\t' read -r v known; do
        i=$((i + 1))
        title=notitle
        [ -n "$by" ] && title="title $(gp_str "${by#--} $(unhex "$v")${known:+ ($known)}")"
        # a colour and a marker a curve (gnuplot's line types cycle through 8 colours; the markers
        # through these 6 filled ones, so no two of the first 24 curves share both); an overloaded run's
        # point drawn hollow (the filled marker's outline, one number below it)
        pt=$(echo 7 5 9 11 13 15 | cut -d' ' -f$(((i - 1) % 6 + 1)))
        f=$(gp_file "$tmp/sweep$i.dat")
        plots+=("$f using 1:2 with lines lw 2 lt $i notitle"
            "$f using 1:(\$3 == 1 ? 1/0 : \$2) with points lt $i pt $pt ps 1.3 $title"
            "$f using 1:(\$3 == 1 ? \$2 : 1/0) with points lt $i pt $((pt - 1)) ps 1.6 notitle")
    done <"$tmp/curves.txt"
    if [ "$any_over" -gt 0 ]; then
        plots+=("1/0 with points lc rgb 'black' pt 6 ps 1.6 title 'hollow: overloaded'")
    fi
    [ $i -gt 0 ] || { echo "plot.sh: $db: no runs" >&2; exit 2; }
    plotcmd=$(IFS=,; echo "${plots[*]}")
    gnuplot <<GP
set terminal pngcairo size 900,560 font ",11" noenhanced
set output $(gp_file "$out")
set title $(gp_str "$(words_of "$y") over $(words_of "$xk" | sed 's/ (.*//')")
set xlabel $(gp_str "$(words_of "$xk")")
set ylabel $(gp_str "$(words_of "$y")")
set key top left opaque box
set grid
plot $plotcmd
GP
    ;;
*) usage ;;
esac
echo "wrote $out"
