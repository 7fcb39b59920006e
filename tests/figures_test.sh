#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# figures_test.sh: the paper experiments' figures read as the papers' do. Runs tessera exp run papers
# OUT --quick once (or reads OUT, given as the second argument) and checks, from each experiment's
# OUT/NAME/figure.gp and figure.png:
#   - the PNG exists and is a non-empty PNG, its gnuplot script beside it;
#   - a table where the paper's is a table (cells and rules, no axes);
#   - every axis label is words with a unit: no underscore, no bare metric name, a y label with its
#     unit in parentheses;
#   - every series drawn has a legend entry, and no two entries share both colour and marker;
#   - a bar chart (boxes or histograms) where the paper's is a bar chart;
#   - the legend outside the data: the panels draw no key, one legend is drawn under them.
# Prints a line for each check that fails and closes with "figures: N passed, M failed"; exits 1 on a
# failure.
# Usage: tests/figures_test.sh PATH/TO/tessera [OUT]
set -u
bin=${1:?usage: figures_test.sh PATH/TO/tessera [OUT]}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-}
if [ -z "$out" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    out=$tmp/papers
    "$bin" exp run papers "$out" --quick >"$tmp/papers.log" 2>&1 ||
        echo "figures: exp run papers --quick failed: $(grep -m3 -i 'fail' "$tmp/papers.log")"
fi
# the paper's figure is a table, or a bar chart (every one of its panels or some)
tables="dllm-serve-table4 focus-table5 dinfer-table1"
bars="dllm-serve-fig5 dllm-serve-fig8 mosaic-fig14 mosaic-fig15-18 focus-fig7 focus-fig8"
pass=0 fail=0
# gp_value: stdin's "AXIS<TAB>EXPR" lines with EXPR, a gnuplot string expression as gp_str writes it
# ('text' and "\ooo" pieces joined by '.'), read to its value
gp_value() {
    awk -F'\t' '{
        e = $2; v = ""
        while (e != "") {
            c = substr(e, 1, 1); e = substr(e, 2)
            if (c == "\047") { i = index(e, "\047"); v = v substr(e, 1, i - 1); e = substr(e, i + 1) }
            else if (c == "\"") {
                while (e != "" && substr(e, 1, 1) != "\"") {
                    if (substr(e, 1, 1) == "\\" && substr(e, 2, 3) ~ /^[0-7][0-7][0-7]$/) {
                        v = v sprintf("%c", substr(e, 2, 1) * 64 + substr(e, 3, 1) * 8 + substr(e, 4, 1)); e = substr(e, 5)
                    } else { v = v substr(e, 1, 1); e = substr(e, 2) }
                }
                e = substr(e, 2)
            }
        }
        print $1 "\t" v }'
}
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }

mapfile -t names < <(awk -F'\t' '!/^#/ && NF >= 2 && $3 == "" { print $1 }' "$here/experiments/papers.tsv")
for n in "${names[@]}"; do
    d=$out/$n gp=$out/$n/figure.gp
    if [ -s "$d/figure.png" ] && [ "$(head -c 4 "$d/figure.png" | od -An -c | tr -d ' ')" = "211PNG" ]; then ok; else
        bad "$n" "no figure.png, or not a PNG"; fi
    [ -s "$gp" ] || { bad "$n" "no figure.gp beside the figure"; continue; }
    if [[ " $tables " == *" $n "* ]]; then
        # a table: cells as labels, rules as arrows, no data plotted
        if [ "$(grep -c '^set label' "$gp")" -ge 6 ] && grep -q '^set arrow' "$gp" && ! grep -q 'set [xy]label' "$gp" &&
            [ "$(grep '^plot' "$gp")" = "plot NaN notitle" ]; then ok; else bad "$n" "the paper's table is not drawn as a table"; fi
        # its overloaded runs named in a note, where it has any
        if grep -q $'\toverloaded\t1$' "$d/points.tsv"; then
            grep -q "Overloaded (arrivals outpace what it serves" "$gp" && ok || bad "$n" "overloaded runs behind the table, no note names them"
        fi
        continue
    fi
    # axis labels in words with units
    metrics=$(cut -f4 "$d/points.tsv" | sort -u)
    labels=$(sed -n 's/^set \([xy]\)label \(.*\)$/\1\t\2/p' "$gp" | gp_value)
    why=$(printf '%s\n' "$labels" | awk -F'\t' -v metrics="$metrics" '
        BEGIN { n = split(metrics, m, "\n"); for (i = 1; i <= n; i++) metric[m[i]] = 1 }
        NF < 2 && $1 == "y" { print "an empty y label"; next }
        $2 == "" { next }
        $2 ~ /_/ { print "label \"" $2 "\" has an underscore" }
        $2 ~ /^[a-z0-9.+-]+$/ || ($2 in metric) { print "label \"" $2 "\" is a bare name" }
        $1 == "y" && $2 !~ /\(.+\)/ { print "y label \"" $2 "\" has no unit in parentheses" }')
    [ -n "$labels" ] && [ -z "$why" ] && ok || bad "$n" "$(printf '%s' "${why:-no axis labels}" | paste -sd';' | sed 's/;/; /g')"
    # every series in the legend, no two with the same colour and marker
    why=$(awk '
        /^set style line / { for (i = 1; i <= NF; i++) { if ($i == "lc") c[$4] = $(i + 2); if ($i == "pt") p[$4] = $(i + 1) } }
        /^# the legend/ { legend = 1 }
        /^plot / && !legend { s = $0; while (match(s, /ls [0-9]+/)) { used[substr(s, RSTART + 3, RLENGTH - 3)] = 1; s = substr(s, RSTART + RLENGTH) } }
        /^plot / && legend { s = $0; while (match(s, /ls [0-9]+ title/)) { k = substr(s, RSTART + 3, RLENGTH - 9); entry[k] = 1; ne++
                                 pair[c[k] "/" p[k]]++; s = substr(s, RSTART + RLENGTH) } }
        END {
            for (k in used) if (!(k in entry)) print "series " k " is drawn but not in the legend"
            for (q in pair) { np++; if (pair[q] > 1) print "legend entries share colour and marker " q }
            if (ne == 0) print "no legend"
        }' "$gp")
    [ -z "$why" ] && ok || bad "$n" "$(printf '%s' "$why" | paste -sd';' | sed 's/;/; /g')"
    # a bar chart where the paper's is one
    if [[ " $bars " == *" $n "* ]]; then
        grep -Eq 'with (boxes|histograms)|style data histograms' "$gp" && ok || bad "$n" "the paper's bar chart is drawn without bars"
    fi
    # how each system is known, in its legend entry, where the points say (points.known)
    if [ -s "$d/points.known" ] && awk -F'\t' '$4 != "" { f = 1 } END { exit !f }' "$d/points.known"; then
        sed -n '/^# the legend/,$p' "$gp" | grep -Eq "title '[^']*\((validated|measured|modelled)[^']*\)'" && ok ||
            bad "$n" "no legend entry says how its system is known"
    fi
    # an overloaded run's point or bar marked: a black cross in a panel and the legend's entry, exactly
    # where a drawn run was overloaded (a figure of no overloaded run names none)
    drawn_over=$(grep -c "pt 2 ps 2.4 lw 2 lc rgb '#000000' notitle" "$gp")
    named=$(sed -n '/^# the legend/,$p' "$gp" | grep -c "title 'overloaded: its arrivals outpace what it serves'")
    if grep -q $'\toverloaded\t1$' "$d/points.tsv" && [ "$drawn_over" = 0 ]; then
        bad "$n" "its points hold overloaded runs, none is crossed"
    fi
    if [ "$drawn_over" -gt 0 ]; then
        [ "$named" = 1 ] && ok || bad "$n" "an overloaded run is crossed, the legend does not say what the cross is"
    else
        [ "$named" = 0 ] && ok || bad "$n" "the legend names the overloaded cross, no run carries it"
    fi
    # the legend outside the data: no key in the panels (unset key before the first plot, no titled
    # plot there), one key set at the screen, under them
    if awk '/^# the legend/ { legend = 1 } /^unset key/ && !legend { unset = 1 }
            /^plot / && !legend && (!unset || / title /) { bad = 1 }
            /^set key/ && !legend { bad = 1 } /^set key (at screen|.*outside|.*below)/ && legend { key = 1 }
            END { exit !(key && !bad) }' "$gp"; then ok; else bad "$n" "the legend is not outside the panels' data"; fi
done
echo "figures: $pass passed, $fail failed"
[ $fail = 0 ]
