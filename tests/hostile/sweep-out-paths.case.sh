# shellcheck shell=bash disable=SC2154,SC2015 # bin, root: hostile_test.sh's; CHECK && ok || bad: one of them runs
# OUT paths that would be code if pasted: a single quote closing a gnuplot string, a double quote, $(...),
# backquotes, spaces, a newline, and a leading '<' or '|' (which gnuplot reads as a command to read
# from or pipe into). exp sweep, exp run (focus-fig8: lib/figure.sh's figure; crossover: lib/plot.sh's)
# and analysis/plot.sh take each as a name, data: the run ends with its figure drawn inside OUT, no
# command pasted from a path runs (no PWNED), and nothing is written outside OUT.
# (Sourced by hostile_test.sh in a folder of its own.)
# shellcheck disable=SC2016 # $(...) and backquotes meant literally: they are the names
outs=("q'; system 'touch PWNED'; set output 'x" 'd"`touch PWNED`"' '$(touch PWNED)' 'b`touch PWNED`'
      'sp ace' $'new\nline' '<touch PWNED' '|touch PWNED')
# is_png FILE WHAT: FILE is a PNG
is_png() {
    [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' \n')" = 211PNG ] && ok || bad "$2: no PNG $(printf %q "$1")"
}
# a grid file whose name is hostile too
grid="g'\`touch PWNED\`\$(touch PWNED).txt"
printf -- '--policy dual sparse\n--rps 1 4\n--requests 8\n' >"$grid"
for o in "${outs[@]}"; do
    q=$(printf %q "$o")
    expect 0 "exp sweep into $q" -- "$bin" exp sweep "$grid" "$o" --jobs 2
    contains "exp sweep into $q draws its figures" "throughput.png and"
    is_png "$o/throughput.png" "exp sweep into $q"
    is_png "$o/latency.png" "exp sweep into $q"
    # analysis/plot.sh: OUT.png and DB both under the hostile folder, the PNG's own name hostile too
    png="$o/it's \`touch PWNED\` \$(touch PWNED).png"
    expect 0 "plot.sh sweep into $q" -- bash "$root/analysis/plot.sh" sweep "$png" "$o/sweep.db" rps throughput_tok_s policy
    is_png "$png" "plot.sh sweep into $q"
    expect 0 "plot.sh latency-cdf into $q" -- bash "$root/analysis/plot.sh" latency-cdf "$o/cdf.png" "$o/sweep.db"
    is_png "$o/cdf.png" "plot.sh latency-cdf into $q"
    expect 0 "plot.sh steps into $q" -- bash "$root/analysis/plot.sh" steps "$o/steps.png" "$o/sweep.db"
    is_png "$o/steps.png" "plot.sh steps into $q"
    expect 0 "exp run focus-fig8 into $q" -- "$bin" exp run focus-fig8 "$o.fig" --quick
    is_png "$o.fig/figure.png" "exp run focus-fig8 into $q"
    [ -s "$o.fig/figure.gp" ] && ok || bad "exp run focus-fig8 into $q: no figure.gp"
done
# lib/plot.sh's figures (plot_png), for the paths gnuplot would read as code
for o in "${outs[0]}" "${outs[5]}" "${outs[6]}" "${outs[7]}"; do
    q=$(printf %q "$o")
    expect 0 "exp run crossover into $q" -- env BATCHES="1 2" LIMIT=0 "$bin" exp run crossover "$o.plot"
    is_png "$o.plot/figure.png" "exp run crossover into $q"
done
# RUN_ID goes into SQL: a number or refused
expect 2 "plot.sh steps with a RUN_ID that is not a number" -- \
    bash "$root/analysis/plot.sh" steps x.png "${outs[0]}/sweep.db" "1; SELECT writefile('PWNED', 'x')"
contains "plot.sh names the RUN_ID" "is not a run's number"
# nothing but the grid and the OUT folders here (names compared byte for byte, a newline's too)
want=$({ for o in "${outs[@]}"; do printf '%s\0%s\0' "$o" "$o.fig"; done
         for o in "${outs[0]}" "${outs[5]}" "${outs[6]}" "${outs[7]}"; do printf '%s\0' "$o.plot"; done
         printf '%s\0' "$grid"; } | sort -z | od -An -tx1)
[ "$(find . -mindepth 1 -maxdepth 1 -printf '%f\0' | sort -z | od -An -tx1)" = "$want" ] &&
    ok || bad "sweep-out-paths: files outside the OUT folders: $(find . -mindepth 1 -maxdepth 1 -printf '%f|')"
# an OUT that begins with '-' is a folder, not an option, to every tool the scripts run
mkdir dash && cd dash || return
expect 0 "exp run into a folder named -d" -- "$bin" exp run focus-fig8 -d --quick
is_png ./-d/figure.png "exp run into a folder named -d"
cd .. || return
