#!/usr/bin/env bash
# sweep.sh GRID OUT [--jobs N] [--slurm] [--max-runs N]: `tessera exp sweep`. Expands GRID into
# independent `tessera sim` runs, one database each, runs them and merges their databases into
# OUT/sweep.db.
#
# GRID: one option a line, `--NAME VALUE [VALUE ...]` (a line of one value sets it for every run;
# '#' starts a comment); the runs are every combination of the lines' values, in the lines' order.
#   --policy dual sparse
#   --rps 0.5 1 2
#   --requests 100
# The runs are counted first, the product of the lines' counts of values: more than --max-runs N
# (default 10000) stops the sweep before anything is run or written (a grid of 20 lines of two
# values is 1,048,576 runs). A line holding a NUL byte or another control character but a tab (a
# Windows line end's carriage return among them) is refused, naming it; a UTF-8 byte-order mark
# opening the file is skipped, and said. Every combination is checked next (a one-request run of
# it): a bad value stops the sweep before any run, naming it; runs that differ in runtime or cost
# model (presets of different runtimes), or in the cap on the requests their schedulers run at once,
# are said not to compare like for like, naming the options that hold them fixed. Writes OUT/runs.txt
# (run K's arguments on line K, its database OUT/runs/run-K.db) and then:
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
# Grid values are words, never file patterns or commands. OUT and GRID may hold any character (a
# quote, a space, `$(...)`, a newline): every command, job file and figure script written names them
# quoted, as data. With --slurm, OUT may hold no newline and no backslash, which a #SBATCH line
# cannot carry (refused, exit 2).
# Usage: tessera exp sweep GRID OUT [--jobs N] [--slurm] [--max-runs N] [--force]   (OUT missing or empty, unless --force)
set -uo pipefail
set -f # a grid's values are words, never file patterns
# shellcheck source=experiments/lib/eta.sh
source "$(dirname "${BASH_SOURCE[0]}")/eta.sh"
usage="usage: tessera exp sweep GRID OUT [--jobs N] [--slurm] [--max-runs N]"
grid=${1:?$usage}
out=${2:?$usage}
shift 2
bin=${TESSERA:?sweep.sh runs from tessera exp sweep (TESSERA names the binary)}
jobs=$(nproc 2>/dev/null || echo 2) slurm=0 max_runs=10000
while [ $# -gt 0 ]; do
    case $1 in
        --jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "tessera exp sweep: --jobs: '${2:-}' is not a count of 1 or more" >&2; exit 2; }
                jobs=$2; shift 2 ;;
        --max-runs) [[ ${2:-} =~ ^[1-9][0-9]{0,8}$ ]] ||
                        { echo "tessera exp sweep: --max-runs: '${2:-}' is not a count from 1 to 999999999" >&2; exit 2; }
                    max_runs=$2; shift 2 ;;
        --slurm) slurm=1; shift ;;
        *) echo "tessera exp sweep: unexpected argument '$1' (--jobs N, --slurm, --max-runs N)" >&2; exit 2 ;;
    esac
done
[ -r "$grid" ] || { echo "tessera exp sweep: $grid: cannot read the grid" >&2; exit 2; }
# a job file's #SBATCH line is read by Slurm, not the shell: OUT goes there between double quotes,
# each '"' escaped and each '%' doubled (Slurm's file name pattern); a line break ends the line and
# a backslash is an escape to the pattern, so neither can be carried
if [ "$slurm" = 1 ]; then
    case $out in
        *$'\n'*) echo "tessera exp sweep: --slurm: OUT $(printf %q "$out") holds a newline, which the job file's #SBATCH --output line cannot carry: name another OUT" >&2
                 exit 2 ;;
        *\\*) echo "tessera exp sweep: --slurm: OUT $(printf %q "$out") holds a backslash, which Slurm's file name pattern (#SBATCH --output) reads as an escape: name another OUT" >&2
              exit 2 ;;
    esac
fi

# the grid's bytes: a control character but a tab refused, naming its line; a byte-order mark skipped
bad=$(LC_ALL=C grep -naP -m1 '[^\t\x20-\x7e\x80-\xff]' "$grid" | cut -d: -f1)
if [ -n "$bad" ]; then
    c=$(LC_ALL=C sed -n "${bad}p" "$grid" | LC_ALL=C grep -oaP -m1 '[^\t\x20-\x7e\x80-\xff]' | head -c1 | od -An -tx1 | tr -d ' \n')
    case $c in
        00) what="a NUL byte" ;;
        0d) what="a carriage return (a Windows line end: save the grid with Unix line ends)" ;;
        *) what="the control character 0x$c" ;;
    esac
    echo "tessera exp sweep: $grid:$bad: $what; a grid is text, one option and its values a line" >&2
    exit 2
fi
bom=0
if [ "$(head -c3 "$grid" | od -An -tx1 | tr -d ' \n')" = efbbbf ]; then
    bom=1
    echo "sweep: $grid:1: a UTF-8 byte-order mark, skipped" >&2
fi

# the grid's lines: each option and its values, checked, and the runs counted (their product) before
# any is expanded
opts=() values=() varying=() numeric=()
lineno=0 count=1 over=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    [ "$lineno" = 1 ] && [ "$bom" = 1 ] && line=${line#$'\xef\xbb\xbf'}
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
    opts+=("$opt") values+=("${words[*]:1}")
    # the count is at most max_runs + 1 before each line's product, so it cannot overflow
    count=$((count * (${#words[@]} - 1)))
    [ "$count" -gt "$max_runs" ] && count=$((max_runs + 1)) over=1
done <"$grid"
[ ${#opts[@]} -gt 0 ] || { echo "tessera exp sweep: $grid: no option to sweep" >&2; exit 2; }
if [ "$over" = 1 ]; then
    runs=1
    for v in "${values[@]}"; do
        read -r -a words <<<"$v"
        runs=$(awk -v a="$runs" -v b="${#words[@]}" 'BEGIN { printf "%.0f", a * b }')
    done
    echo "tessera exp sweep: $grid: $runs runs (every combination of its ${#opts[@]} lines' values), more than --max-runs $max_runs: vary fewer options or fewer values, or raise --max-runs" >&2
    exit 2
fi
# the combinations, the last line varying fastest
combos=("")
for i in "${!opts[@]}"; do
    read -r -a words <<<"${values[i]}"
    next=()
    for c in "${combos[@]}"; do
        for v in "${words[@]}"; do next+=("$c ${opts[i]} $v"); done
    done
    combos=("${next[@]}")
done
n=${#combos[@]}

# every run's options checked before anything is written (a one-request run): a refusal names the
# bad value; each run's runtime and cost model noted (their summary's impl and cost)
kinds="" caps=""
for k in "${!combos[@]}"; do
    # shellcheck disable=SC2086 # a run's options: the grid's words, split on purpose (set -f: no patterns)
    if ! js=$("$bin" sim ${combos[k]} --requests 1 --quiet --no-progress --json 2>&1); then
        echo "tessera exp sweep: $grid: run $((k + 1)) (${combos[k]# }): $js" >&2
        exit 2
    fi
    kinds+="$(sed -n 's/.*"impl":"\([^"]*\)","cost":"\([a-z]*\).*/runtime \1, cost \2/p' <<<"$js")"$'\n'
    caps+="$(sed -n 's/.*"concurrency_cap":\(-*[0-9]*\),"concurrency_option":"\([^"]*\)".*/\2 \1/p' <<<"$js" |
        sed 's/^ -1$/no cap of requests/; s/ 0$/ 0 (what memory allows)/')"$'\n'
done
# a comparison of runs that differ in runtime or cost model is not like for like: said, with the
# options that hold them fixed
if [ "$(sort -u <<<"${kinds%$'\n'}" | wc -l)" -gt 1 ]; then
    echo "sweep: note: its runs differ in runtime or cost model ($(sort -u <<<"${kinds%$'\n'}" | paste -sd ';' | sed 's/;/; /g')): give --impl and --cost on a line of their own to compare like for like" >&2
fi
# nor of runs whose schedulers cap the requests running at once differently (a preset's own cap)
if [ "$(sort -u <<<"${caps%$'\n'}" | wc -l)" -gt 1 ]; then
    echo "sweep: note: its runs cap the requests running at once differently ($(sort -u <<<"${caps%$'\n'}" | paste -sd ';' | sed 's/;/; /g')): give each the same cap ($(sort -u <<<"${caps%$'\n'}" | grep -o '^--[a-z-]*' | sort -u | paste -sd ' ' | sed 's/ /, /g')) to compare like for like" >&2
fi
mkdir -p "$out/runs" || exit 2
# runs.txt: run K's arguments on line K, each word quoted for the shell (paths with spaces too)
runs=$(for k in "${!combos[@]}"; do
    # shellcheck disable=SC2086 # as above: the grid's words, one argument each
    printf '%q ' ${combos[k]} --db "$out/runs/run-$((k + 1)).db" --quiet --no-progress | sed 's/ $//'
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
    # the shell's lines name every path quoted for the shell (printf %q); the #SBATCH line names the
    # log between double quotes, as Slurm reads it (OUT's newline and backslash refused above)
    q_out=$(printf %q "$out") q_bin=$(printf %q "$bin")
    slurm_log=$out/runs/slurm-
    slurm_log=${slurm_log//%/%%} slurm_log=${slurm_log//\"/\\\"}
    cat >"$out/sweep.sbatch" <<EOF
#!/usr/bin/env bash
#SBATCH --job-name=tessera-sweep
#SBATCH --array=1-$n
#SBATCH --output="${slurm_log}%a.log"
# one task a run: line SLURM_ARRAY_TASK_ID of runs.txt; afterwards:
#   $q_bin db merge $(printf %q "$out/sweep.db") $q_out/runs/run-*.db
out=$q_out
bin=$q_bin
args=\$(sed -n "\${SLURM_ARRAY_TASK_ID}p" "\$out/runs.txt")
eval "set -- \$args" # (its words are quoted for the shell)
exec "\$bin" sim "\$@"
EOF
    echo "sweep: wrote $out/sweep.sbatch (sbatch it; then: tessera db merge $out/sweep.db $out/runs/run-*.db)"
    exit 0
fi

rm -f "$out/sweep.db" "$out/throughput.png" "$out/latency.png"
# each line of commands.txt one bash command, N at a time; a failed run exits 255, after which xargs
# starts no more (its own note of that discarded: the run's line says it). A signal to the sweep
# ends its runs too (they share its process group), and the runs finished stay for a rerun.
trap 'trap - INT TERM HUP; kill -TERM 0 2>/dev/null; exit 143' INT TERM HUP
# the runs' lines pass through eta_lines, which adds the time left; xargs's status comes back in a file
rm -f "$out/runs/xargs.rc"
{
    xargs -d '\n' -P "$jobs" -I CMD bash -c CMD <"$out/commands.txt" 2>/dev/null
    echo $? >"$out/runs/xargs.rc"
} | eta_lines "$(wc -l <"$out/commands.txt")" &
wait $!
rc=$(cat "$out/runs/xargs.rc" 2>/dev/null || echo 1)
rm -f "$out/runs/xargs.rc"
trap - INT TERM HUP
dbs=() # in run order
for k in $(seq 1 "$n"); do [ -f "$out/runs/run-$k.db" ] && dbs+=("$out/runs/run-$k.db"); done
[ "$rc" -eq 0 ] || echo "tessera exp sweep: a run failed, so no more were started; the ${#dbs[@]} that finished are merged" >&2
[ ${#dbs[@]} -gt 0 ] || exit 1
"$bin" db merge "$out/sweep.db" "${dbs[@]}" || exit 1
# figures where the grid varies one option, or two of which the last numeric one is the x axis:
# throughput and mean latency over it, a curve for each value of the other
x="" by=""
for i in "${!varying[@]}"; do [ "${numeric[i]}" = 1 ] && x=${varying[i]}; done
for v in "${varying[@]}"; do [ "$v" = "$x" ] || by=$v; done
if [ -n "$x" ] && [ ${#varying[@]} -le 2 ] && command -v gnuplot >/dev/null; then
    plot="$(dirname "$0")/../../analysis/plot.sh"
    if bash "$plot" sweep "$out/throughput.png" "$out/sweep.db" "$x" throughput_tok_s ${by:+"$by"} >/dev/null 2>"$out/plot.err" &&
        bash "$plot" sweep "$out/latency.png" "$out/sweep.db" "$x" lat_mean_s ${by:+"$by"} >/dev/null 2>"$out/plot.err"; then
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
