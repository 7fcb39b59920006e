#!/usr/bin/env bash
# sweep.sh GRID OUT [--jobs N] [--slurm]: `tessera exp sweep`. Expands GRID into independent
# `tessera sim` runs, one database each, runs them and merges their databases into OUT/sweep.db.
#
# GRID: one option a line, `--NAME VALUE [VALUE ...]` (a line of one value sets it for every run;
# '#' starts a comment); the runs are every combination of the lines' values, in the lines' order.
#   --policy dual sparse
#   --rps 0.5 1 2
#   --requests 100
# Every combination is checked first (a one-request run of it): a bad value stops the sweep before
# any run, naming it. Writes OUT/runs.txt (run K's arguments on line K, its database
# OUT/runs/run-K.db) and then:
#   locally: runs them N at a time (--jobs N, default: the cores; xargs -P), a line per finished
#            run, and merges them (tessera db merge) into OUT/sweep.db; a failed run stops the
#            sweep: no run starts after it, those under way finish, its log is OUT/runs/run-K.log
#            and the databases of the runs that finished are merged; where the grid varies one
#            option, or two of which the last numeric one makes the x axis, it draws
#            OUT/throughput.png and OUT/latency.png over it (analysis/plot.sh sweep);
#   --slurm: writes OUT/sweep.sbatch instead, a job array of the same runs (sbatch OUT/sweep.sbatch,
#            then tessera db merge OUT/sweep.db OUT/runs/*.db).
# A grid that varies three options or more draws no figure (it says so): analysis/plot.sh sweep
# draws one over any option of OUT/sweep.db. A sweep interrupted (OUT/INCOMPLETE) and run again with
# the same grid keeps the runs it finished and runs the others; a signal to the sweep ends its runs.
# Grid values are words, never file patterns; OUT may hold any character.
# Usage: tessera exp sweep GRID OUT [--jobs N] [--slurm] [--force]   (OUT missing or empty, unless --force)
set -uo pipefail
set -f # a grid's values are words, never file patterns
grid=${1:?usage: tessera exp sweep GRID OUT [--jobs N] [--slurm]}
out=${2:?usage: tessera exp sweep GRID OUT [--jobs N] [--slurm]}
shift 2
bin=${TESSERA:?sweep.sh runs from tessera exp sweep (TESSERA names the binary)}
jobs=$(nproc 2>/dev/null || echo 2) slurm=0
while [ $# -gt 0 ]; do
    case $1 in
        --jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "tessera exp sweep: --jobs: '${2:-}' is not a count of 1 or more" >&2; exit 2; }
                jobs=$2; shift 2 ;;
        --slurm) slurm=1; shift ;;
        *) echo "tessera exp sweep: unexpected argument '$1' (--jobs N, --slurm)" >&2; exit 2 ;;
    esac
done
[ -r "$grid" ] || { echo "tessera exp sweep: $grid: cannot read the grid" >&2; exit 2; }

# the grid: its lines' values, checked; the combinations expanded, the last line varying fastest
combos=("")
varying=() numeric=()
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%%#*}
    read -r -a words <<<"$line"
    [ ${#words[@]} -eq 0 ] && continue
    opt=${words[0]}
    if [[ ! $opt =~ ^--[a-z][a-z0-9-]*$ ]] || [ ${#words[@]} -lt 2 ]; then
        echo "tessera exp sweep: $grid:$lineno: expected '--OPTION VALUE [VALUE ...]', got '$line'" >&2
        exit 2
    fi
    case $opt in --db|--append|--replace|--json|--help)
        echo "tessera exp sweep: $grid:$lineno: $opt is the sweep's to set" >&2; exit 2 ;;
    esac
    if [ ${#words[@]} -gt 2 ]; then # an option the runs vary, and whether its values are all numbers
        varying+=("${opt#--}")
        numeric+=("$(printf '%s\n' "${words[@]:1}" | grep -qvE '^-?[0-9]+([.][0-9]+)?$' && echo 0 || echo 1)")
    fi
    next=()
    for c in "${combos[@]}"; do
        for v in "${words[@]:1}"; do next+=("$c $opt $v"); done
    done
    combos=("${next[@]}")
done <"$grid"
n=${#combos[@]}
[ "$n" -gt 0 ] && [ -n "${combos[0]}" ] || { echo "tessera exp sweep: $grid: no option to sweep" >&2; exit 2; }

# every run's options checked before anything is written (a one-request run): a refusal names the
# bad value
for k in "${!combos[@]}"; do
    if ! err=$("$bin" sim ${combos[$k]} --requests 1 --quiet --no-progress 2>&1 >/dev/null); then
        echo "tessera exp sweep: $grid: run $((k + 1)) (${combos[$k]# }): $err" >&2
        exit 2
    fi
done
mkdir -p "$out/runs" || exit 2
# runs.txt: run K's arguments on line K, each word quoted for the shell (paths with spaces too)
runs=$(for k in "${!combos[@]}"; do
    printf '%q ' ${combos[$k]} --db "$out/runs/run-$((k + 1)).db" --quiet --no-progress | sed 's/ $//'
    echo
done)
# an interrupted sweep run again (tessera exp sweep sets TESSERA_SWEEP_RESUME where OUT says so):
# the runs whose databases were written are kept, where the grid is the same; a run's database
# exists only whole (tessera writes a new one before giving it its name)
resume=0
if [ "${TESSERA_SWEEP_RESUME:-0}" = 1 ] && [ -f "$out/runs.txt" ]; then
    if [ "$(cat "$out/runs.txt")" = "$runs" ]; then
        resume=1
    else
        echo "sweep: $out/runs.txt is another grid's: starting over" >&2
    fi
fi
[ "$resume" = 1 ] ||
    rm -f "$out"/runs/run-*.db "$out"/runs/run-*.log "$out/sweep.db" "$out/throughput.png" "$out/latency.png"
echo "$runs" >"$out/runs.txt"
: >"$out/commands.txt"
kept=0
for k in $(seq 1 "$n"); do
    if [ -f "$out/runs/run-$k.db" ]; then kept=$((kept + 1)); continue; fi
    log=$(printf '%q' "$out/runs/run-$k.log")
    printf '%q sim %s >%s 2>&1 && echo "sweep: run %d of %d done" || { echo "sweep: run %d of %d failed (its log: %s)"; exit 255; }\n' \
        "$bin" "$(sed -n "${k}p" "$out/runs.txt")" "$log" "$k" "$n" "$k" "$n" "$log" >>"$out/commands.txt"
done
if [ "$kept" -gt 0 ]; then
    echo "sweep: $n runs from $grid ($out/runs.txt); $kept done before, kept"
else
    echo "sweep: $n runs from $grid ($out/runs.txt)"
fi

if [ "$slurm" = 1 ]; then
    cat >"$out/sweep.sbatch" <<EOF
#!/usr/bin/env bash
#SBATCH --job-name=tessera-sweep
#SBATCH --array=1-$n
#SBATCH --output=$out/runs/slurm-%a.log
# one task a run: line SLURM_ARRAY_TASK_ID of runs.txt; afterwards:
#   $bin db merge $out/sweep.db $out/runs/run-*.db
args=\$(sed -n "\${SLURM_ARRAY_TASK_ID}p" "$out/runs.txt")
eval "set -- \$args" # (its words are quoted for the shell)
exec "$bin" sim "\$@"
EOF
    echo "sweep: wrote $out/sweep.sbatch (sbatch it; then: tessera db merge $out/sweep.db $out/runs/run-*.db)"
    exit 0
fi

rm -f "$out/sweep.db" "$out/throughput.png" "$out/latency.png"
# each line of commands.txt one bash command, N at a time; a failed run exits 255, after which xargs
# starts no more (its own note of that discarded: the run's line says it). A signal to the sweep
# ends its runs too (they share its process group), and the runs finished stay for a rerun.
trap 'trap - INT TERM HUP; kill -TERM 0 2>/dev/null; exit 143' INT TERM HUP
xargs -d '\n' -P "$jobs" -I CMD bash -c CMD <"$out/commands.txt" 2>/dev/null &
wait $!
rc=$?
trap - INT TERM HUP
dbs=() # in run order
for k in $(seq 1 "$n"); do [ -f "$out/runs/run-$k.db" ] && dbs+=("$out/runs/run-$k.db"); done
[ "$rc" -eq 0 ] || echo "tessera exp sweep: a run failed, so no more were started; the ${#dbs[@]} that finished are merged" >&2
[ ${#dbs[@]} -gt 0 ] || exit 1
"$bin" db merge "$out/sweep.db" "${dbs[@]}" || exit 1
# figures where the grid varies one option, or two of which the last numeric one is the x axis:
# throughput and mean latency over it, a curve for each value of the other
x="" by=""
for i in "${!varying[@]}"; do [ "${numeric[$i]}" = 1 ] && x=${varying[$i]}; done
for v in "${varying[@]}"; do [ "$v" = "$x" ] || by=$v; done
if [ -n "$x" ] && [ ${#varying[@]} -le 2 ] && command -v gnuplot >/dev/null; then
    plot="$(dirname "$0")/../../analysis/plot.sh"
    if bash "$plot" sweep "$out/throughput.png" "$out/sweep.db" "$x" throughput_tok_s $by >/dev/null 2>"$out/plot.err" &&
        bash "$plot" sweep "$out/latency.png" "$out/sweep.db" "$x" lat_mean_s $by >/dev/null 2>"$out/plot.err"; then
        echo "sweep: $out/throughput.png and $out/latency.png over $x${by:+, a curve for each $by} (analysis/plot.sh sweep draws others)"
    else
        echo "sweep: no figure: $(cat "$out/plot.err")"
    fi
    rm -f "$out/plot.err"
elif [ ${#varying[@]} -gt 2 ]; then
    echo "sweep: no figure: the grid varies ${#varying[@]} options (${varying[*]}); a figure shows one over x and" \
         "a curve for each value of a second (analysis/plot.sh sweep OUT.png $out/sweep.db X METRIC [BY] draws one)"
elif [ -z "$x" ]; then
    echo "sweep: no figure: no option the grid varies is numeric, to make its x axis"
fi
[ "$rc" -eq 0 ]
