# shellcheck shell=bash
# figure.sh: a paper experiment's figure, laid out as the paper lays it out (sourced by lib/paper.sh;
# paper_finish draws it into OUT/figure.png and keeps its gnuplot script as OUT/figure.gp). Every
# title, label, series name, note and path enters the script through gp_str or gp_file
# (analysis/lib_gnuplot.sh): text, never gnuplot commands.
#
# An experiment describes its figure before paper_finish, from the points in OUT/points.tsv:
#   fig_cols N                           panels a row (all in one row unless given)
#   fig_lines TITLE XLABEL YLABEL [OPT...]   a panel of curves; then, a curve each:
#   fig_curve SERIES SYSTEM WORKLOAD METRIC [paper]
#                                        METRIC against x for SYSTEM in WORKLOAD, where it has
#                                        points (none: no curve; with paper, the
#                                        paper's numbers beside it as hollow markers, series
#                                        "SERIES, the paper")
#   fig_bars TITLE XLABEL YLABEL [OPT...]    a panel of clustered bars; then, a bar each:
#   fig_bar GROUP SERIES SYSTEM WORKLOAD X METRIC   (fig_bar_value GROUP SERIES VALUE: a number)
#   fig_table TITLE; fig_row CELL...     a table instead of panels (the first row its header; a
#                                        first cell equal to the row above's is left blank)
#   fig_note TEXT                        a line of text under the legend
#   FIG_TITLE=TEXT                       the figure's title, where it is not the report's
# Panel options: logx, logy (base 2 for x, 10 for y), scale=K (values times K, a unit's change),
# ref=Y:TEXT (a dashed red line at Y, TEXT in the legend), yfrom0 (the y axis from 0), ymin=Y (from Y),
# yrange=LO:HI (numbers: panels on one scale),
# yaround=Y (the data's range, held open to include Y and 5% either side: a ratio near 1), xfmt=FORMAT,
# yfmt=FORMAT (the tics' gnuplot format), xtics=STEP (a tic every STEP).
# A series (a name in the legend) keeps one colour and marker in every panel; no two series share
# both. Its legend entry says how its system is known (validated, measured or modelled: the points'
# own, OUT/points.known), and a point or bar of an overloaded run (its arrivals outpace what it
# serves, so its latency grows with the run's length: sim/docs/steps.md) carries a black cross, the
# legend saying so. The legend is drawn once, under the panels, outside every panel's data. FIG_DASHES=1 gives
# each series its own dash pattern too (for curves that lie close together).

# the series' styles: colours (Okabe-Ito and Tableau) and filled markers, their hollow twins for
# the paper's numbers
FIG_COLOURS=('#0072B2' '#D55E00' '#009E73' '#CC79A7' '#E69F00' '#56B4E9' '#000000' '#8C564B' '#7F7F7F'
    '#9467BD' '#17BECF' '#BCBD22')
FIG_MARKERS=(7 5 9 13 11 15 7 5 9 13 11 15)
declare -A FIG_HOLLOW=([7]=6 [5]=4 [9]=8 [13]=12 [11]=10 [15]=14)
FIG_DASH=(1 2 4 5 3 1 2 4 5 3 1 2)
# shellcheck source=../../analysis/lib_gnuplot.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../analysis/lib_gnuplot.sh"

fig_reset() {
    FIG_NCOLS=0 FIG_NPANELS=0 FIG_TABLE_TITLE="" FIG_MARKED=0
    declare -gA FIG_KNOWN=()
    FIG_PANEL=() FIG_PLOTS=() FIG_BARDATA=() FIG_KINDS=() FIG_SCALES=()
    FIG_SERIES=() FIG_KIND=() FIG_STYLE=() FIG_ROWS=() FIG_NOTES=()
}
fig_reset

fig_cols() { FIG_NCOLS=$1; }
fig_note() { FIG_NOTES+=("$1"); }

# fig_series NAME KIND [PARENT]: the style index of series NAME (assigned at its first use; KIND
# line, bar or paper: a paper series takes its PARENT's colour and the hollow twin of its marker)
fig_series() {
    local i
    for i in "${!FIG_SERIES[@]}"; do [ "${FIG_SERIES[$i]}" = "$1" ] && { echo $((i + 1)); return; }; done
    echo $((${#FIG_SERIES[@]} + 1))
}
fig_add_series() {
    local name=$1 kind=$2 parent=${3:-} n i c pt dt
    n=$(fig_series "$name")
    [ "$n" -le ${#FIG_SERIES[@]} ] && return 0
    i=$((n - 1))
    [ $i -lt ${#FIG_COLOURS[@]} ] || { echo "$EXP: more than ${#FIG_COLOURS[@]} series in the figure" >&2; exit 1; }
    c=${FIG_COLOURS[$i]} pt=${FIG_MARKERS[$i]} dt=1
    [ "${FIG_DASHES:-0}" = 1 ] && dt=${FIG_DASH[$i]}
    [ "$kind" = ref ] && c='#CC0000' pt=0 dt=2
    if [ "$kind" = paper ]; then
        local p=$(($(fig_series "$parent") - 1))
        c=${FIG_COLOURS[$p]} pt=${FIG_HOLLOW[${FIG_MARKERS[$p]}]:-6}
    fi
    FIG_SERIES+=("$name") FIG_KIND+=("$kind")
    FIG_STYLE+=("set style line $n lc rgb '$c' pt $pt ps 1.5 lw 2 dt $dt")
}

# fig_panel KIND TITLE XLABEL YLABEL OPTS...: a new panel's gnuplot settings (FIG_PANEL) and scale
fig_panel() {
    local kind=$1 title=$2 xl=$3 yl=$4 o gp
    shift 4
    FIG_NPANELS=$((FIG_NPANELS + 1))
    FIG_SCALE=1
    gp="set title $(gp_str "$title")"$'\n'"set xlabel $(gp_str "$xl")"$'\n'"set ylabel $(gp_str "$yl")"$'\n'
    for o in "$@"; do
        case $o in
            logx) gp+="set logscale x 2"$'\n' ;;
            logy) gp+="set logscale y 10"$'\n'"set offsets graph 0.03, graph 0.03, 0, 0"$'\n' ;;
            scale=*) FIG_SCALE=${o#scale=} ;;
            yfrom0) gp+="set yrange [0:*]"$'\n'"set offsets graph 0.03, graph 0.03, graph 0.08, 0"$'\n' ;;
            ymin=*) gp+="set yrange [${o#ymin=}:*]"$'\n' ;;
            yrange=*) gp+="set yrange [${o#yrange=}]"$'\n' ;; # LO:HI, numbers (panels of one scale)
            yaround=*) local a=${o#yaround=} # the data's own range, widened to hold Y and 5% on each side of it
                gp+="set yrange [*<$(awk -v a="$a" 'BEGIN { print 0.95 * a }'):$(awk -v a="$a" 'BEGIN { print 1.05 * a }')<*]"$'\n'"set offsets graph 0.03, graph 0.03, graph 0.1, graph 0.1"$'\n' ;;
            yfmt=*) gp+="set format y $(gp_str "${o#yfmt=}")"$'\n' ;;
            xfmt=*) gp+="set format x $(gp_str "${o#xfmt=}")"$'\n' ;;
            xtics=*) gp+="set xtics ${o#xtics=}"$'\n' ;; # a tic every STEP (a number)
            ref=*) local y=${o#ref=}
                fig_add_series "${y#*:}" ref
                gp+="set arrow from graph 0, first ${y%%:*} to graph 1, first ${y%%:*} nohead lc rgb '#CC0000' dt 2 lw 2 back"$'\n' ;;
            *) echo "$EXP: unknown figure option '$o'" >&2; exit 1 ;;
        esac
    done
    FIG_PANEL[FIG_NPANELS]=$gp FIG_PLOTS[FIG_NPANELS]="" FIG_KINDS[FIG_NPANELS]=$kind
    FIG_SCALES[FIG_NPANELS]=$FIG_SCALE
}
fig_lines() { fig_panel lines "$@"; }
fig_bars() { fig_panel bars "$@"; FIG_BARDATA[FIG_NPANELS]=""; }

# fig_known SERIES SYSTEM WORKLOAD: how the points of SYSTEM in WORKLOAD are known, kept for SERIES's
# legend entry (several ways: each, joined by "/")
fig_known() {
    local k
    # shellcheck disable=SC2154 # out: the experiment's folder, set by paper_init (lib/paper.sh)
    k=$(awk -F'\t' -v s="$2" -v w="$3" '$1 == s && $2 == w && $4 != "" && !seen[$4]++ { printf "%s%s", n++ ? "/" : "", $4 }' \
        "$out/points.known" 2>/dev/null)
    [ -z "$k" ] || [ -n "${FIG_KNOWN[$1]:-}" ] || FIG_KNOWN[$1]=$k
}

# fig_overloaded SYSTEM WORKLOAD X: whether that point's run was overloaded
fig_overloaded() {
    [ "$(value overloaded "$1" "$2" "$3")" = 1 ]
}

# fig_curve SERIES SYSTEM WORKLOAD METRIC [paper]: a curve in the last panel, a cross on each point
# of an overloaded run
fig_curve() {
    local name=$1 s=$2 w=$3 m=$4 p=$FIG_NPANELS n f
    # shellcheck disable=SC2154 # out: the experiment's folder, set by paper_init (lib/paper.sh)
    f="$out/points/fig-$p.dat"
    awk -F'\t' -v s="$s" -v w="$w" -v m="$m" -v k="${FIG_SCALES[p]}" \
        '$1 == s && $2 == w && $4 == m && $3 ~ /^[0-9.eE+-]+$/ && $5 != "" { print $3, $5 * k }' "$out/points.tsv" | sort -g >"$f"
    [ -s "$f" ] || return 0
    fig_add_series "$name" line
    n=$(fig_series "$name")
    mv "$f" "$out/points/fig-$p-$n.dat"
    f="$out/points/fig-$p-$n.dat"
    FIG_PLOTS[p]+="${FIG_PLOTS[p]:+, }$(gp_file "$f") using 1:2 with linespoints ls $n notitle"
    fig_known "$name" "$s" "$w"
    awk -F'\t' -v s="$s" -v w="$w" 'NR == FNR { if ($1 == s && $2 == w && $4 == "overloaded" && $5 == 1) o[$3 + 0] = 1; next }
        ($1 + 0) in o' "$out/points.tsv" "$f" >"$f.over"
    if [ -s "$f.over" ]; then
        FIG_MARKED=1
        FIG_PLOTS[p]+=", $(gp_file "$f.over") using 1:2 with points pt 2 ps 2.4 lw 2 lc rgb '#000000' notitle"
    fi
    [ "${5:-}" = paper ] || return 0
    awk -F'\t' -v s="$s" -v w="$w" -v m="$m" -v k="${FIG_SCALES[p]}" \
        '$1 == s && $2 == w && $4 == m && $3 ~ /^[0-9.eE+-]+$/ { print $3, $5 * k }' "$out/paper.tsv" | sort -g >"$f.paper"
    [ -s "$f.paper" ] || return 0
    fig_add_series "$name, the paper" paper "$name"
    FIG_PLOTS[p]+=", $(gp_file "$f.paper") using 1:2 with points ls $(fig_series "$name, the paper") ps 2.2 notitle"
}

# fig_bar GROUP SERIES SYSTEM WORKLOAD X METRIC: a bar in the last panel (the point's value)
fig_bar() {
    local v
    v=$(value "$6" "$3" "$4" "$5")
    [ -n "$v" ] || { echo "$EXP: no value for the bar '$2' of '$1' ($3, $4, $5, $6)" >&2; exit 1; }
    local over=0
    fig_overloaded "$3" "$4" "$5" && over=1 FIG_MARKED=1
    fig_bar_value "$1" "$2" "$v" "$over"
    fig_known "$2" "$3" "$4"
}
fig_bar_value() {
    fig_add_series "$2" bar
    FIG_BARDATA[FIG_NPANELS]+="$1"$'\t'"$2"$'\t'"$(awk -v v="$3" -v k="${FIG_SCALES[FIG_NPANELS]}" 'BEGIN { print v * k }')"$'\t'"${4:-0}"$'\n'
}

# fig_bar_plots P: the gnuplot settings and plot clauses of bar panel P: a cluster a group, a bar a
# series (in the order first given), each labelled with its value
fig_bar_plots() {
    local p=$1 f
    f="$out/points/fig-$p-bars.dat"
    printf '%s' "${FIG_BARDATA[p]}" | awk -F'\t' -v names="$(printf '%s\n' "${FIG_SERIES[@]}")" '
        BEGIN { n = split(names, all, "\n"); for (i = 1; i <= n; i++) style[all[i]] = i }
        !($1 in g) { g[$1] = ng++; gname[ng - 1] = $1 }
        !($2 in s) { s[$2] = ns++; sname[ns - 1] = $2 }
        { v[$1, $2] = $3; o[$1, $2] = $4 }
        END {
            w = 0.8 / ns
            for (gi = 0; gi < ng; gi++) for (si = 0; si < ns; si++) if ((gname[gi], sname[si]) in v)
                printf "%.6g %s %d %.6g %d\n", gi + (si - (ns - 1) / 2) * w, v[gname[gi], sname[si]], style[sname[si]], w * 0.92,
                    o[gname[gi], sname[si]]
            printf "#xtics"; for (gi = 0; gi < ng; gi++) printf "\t%s\t%d", gname[gi], gi; printf "\n"
            printf "#range %.3f %.3f\n", -0.5, ng - 0.5
        }' >"$f"
    local tics="" range st gpf groups i clauses=""
    # the groups' names and places (a tab between each), a tic each
    IFS=$'\t' read -r -a groups <<<"$(sed -n 's/^#xtics\t//p' "$f")"
    for ((i = 0; i + 1 < ${#groups[@]}; i += 2)); do
        tics+="${tics:+, }$(gp_str "${groups[i]}") ${groups[i + 1]}"
    done
    range=$(sed -n 's/^#range //p' "$f")
    FIG_PANEL[p]+="set xtics ($tics) scale 0"$'\n'"set xrange [${range% *}:${range#* }]"$'\n'
    FIG_PANEL[p]+="set style fill solid 0.85 border lc rgb '#333333'"$'\n'"set grid noxtics ytics"$'\n'
    gpf=$(gp_file "$f")
    while read -r st; do
        clauses+="${clauses:+, }$gpf using (\$3 == $st ? \$1 : NaN):2:4 with boxes ls $st dt 1 notitle"
    done < <(grep -v '^#' "$f" | awk '!seen[$3]++ { print $3 }')
    clauses+=", $gpf using 1:2:(\$2 >= 10000 ? sprintf('%.3g', \$2 / 10 ** (3 * floor(log10(\$2) / 3))) . word('k M G T', floor(log10(\$2) / 3)) : sprintf(\$2 >= 100 ? '%.0f' : '%.3g', \$2)) with labels offset 0,0.6 font ',9' notitle"
    # an overloaded run's bar: a cross inside it, halfway up (its value's label stays clear above)
    grep -q ' 1$' "$f" && clauses+=", $gpf using 1:(\$5 > 0 ? \$2 / 2 : NaN) with points pt 2 ps 2.4 lw 2 lc rgb '#000000' notitle"
    FIG_PLOTS[p]=$clauses
}

fig_table() { FIG_TABLE_TITLE=$1; }
fig_row() { FIG_ROWS+=("$(printf '%s\t' "$@")"); }

# fig_draw TITLE: OUT/figure.png and OUT/figure.gp from the panels (or the table) described
fig_draw() {
    local title=${FIG_TITLE:-$1} over
    if [ -n "$FIG_TABLE_TITLE" ]; then
        # a table's cells carry no mark: a note says which systems' runs behind it were overloaded
        over=$(awk -F'\t' '$4 == "overloaded" && $5 != "" { n[$1]++; o[$1] += ($5 == 1) }
                END { for (s in n) if (o[s]) print s, o[s], n[s] }' "$out/points.tsv" | sort |
            awk -v N="$(awk -F'\t' '$4 == "overloaded" && $5 != "" { n++ } END { print n + 0 }' "$out/points.tsv")" '
                { O += $2; list = list sprintf(" %s %d of %d;", $1, $2, $3) }
                END { if (O) printf "Overloaded (arrivals outpace what it serves, so latency grows with the run'"'"'s length): %d of the %d runs behind this table:%s", O, N, list }' |
            sed 's/;$/./')
        [ -z "$over" ] || FIG_NOTES+=("$over")
        fig_table_gp >"$out/figure.gp"
    else
        [ "$FIG_NPANELS" -gt 0 ] || return 0
        fig_panels_gp "$title" >"$out/figure.gp"
    fi
    # the script on stdin: gnuplot runs a script file named "<CMD" as CMD's output
    gnuplot <"$out/figure.gp" 2>"$out/points/gnuplot.log" ||
        echo "$EXP: gnuplot failed: $(head -2 "$out/points/gnuplot.log")" >&2
}

# fig_panels_gp TITLE: the gnuplot script of the panels, a grid of FIG_NCOLS columns, the title
# above, the legend and the notes below
fig_panels_gp() {
    local title=$1 p cols=$FIG_NCOLS rows pw=470 ph=380 nbars top=46 leg legrows legcols=4 notes W H r c i
    [ "$cols" -gt 0 ] || cols=$FIG_NPANELS
    rows=$(((FIG_NPANELS + cols - 1) / cols))
    # a bar panel is wide enough for its bars and their labels, 50 px a bar
    for ((p = 1; p <= FIG_NPANELS; p++)); do
        [ "${FIG_KINDS[p]}" = bars ] || continue
        nbars=$(printf '%s' "${FIG_BARDATA[p]}" | grep -c .)
        [ $((50 * nbars + 120)) -gt $pw ] && pw=$((50 * nbars + 120))
    done
    W=$((pw * cols)) H=0
    [ $W -lt $((10 * ${#title} + 40)) ] && W=$((10 * ${#title} + 40))
    [ $W -lt 640 ] && W=640
    # the legend's columns: as many entries a row as the canvas holds at the longest's width
    local titles=() over="overloaded: its arrivals outpace what it serves" i
    for i in "${!FIG_SERIES[@]}"; do
        titles+=("${FIG_SERIES[i]}${FIG_KNOWN[${FIG_SERIES[i]}]:+ (${FIG_KNOWN[${FIG_SERIES[i]}]})}")
    done
    [ "$FIG_MARKED" = 1 ] && titles+=("$over")
    legcols=$((W / ($(printf '%s\n' "${titles[@]}" | awk '{ if (length($0) > m) m = length($0) } END { print m }') * 9 + 90)))
    [ $legcols -lt 1 ] && legcols=1
    [ $legcols -gt ${#titles[@]} ] && legcols=${#titles[@]}
    legrows=$(((${#titles[@]} + legcols - 1) / legcols))
    local lines=()
    mapfile -t lines < <(fig_wrap $((W - 20)))
    leg=$((22 * legrows + 20)) notes=$((18 * ${#lines[@]} + 6))
    H=$((top + rows * ph + leg + notes))
    # the panels' width: the canvas's, shared out
    pw=$((W / cols))
    echo "# $EXP: ${title//[[:cntrl:]]/ }"
    echo "set terminal pngcairo size $W,$H font ',11' noenhanced"
    echo "set output $(gp_file "$out/figure.png")"
    printf '%s\n' "${FIG_STYLE[@]}"
    echo "set grid lc rgb '#DDDDDD'"
    echo "unset key"
    echo "set multiplot title $(gp_str "$title") font ',13'"
    for ((p = 1; p <= FIG_NPANELS; p++)); do
        [ "${FIG_KINDS[p]}" = bars ] && fig_bar_plots "$p"
        i=$((p - 1)) r=$((i / cols)) c=$((i % cols))
        echo
        echo "# panel $p (${FIG_KINDS[p]})"
        echo "unset logscale; unset arrow; unset label; set autoscale xy; set offsets graph 0.03, graph 0.03, graph 0.08, graph 0.05"
        echo "set xtics autofreq scale 1; set ytics autofreq; set format x '% h'; set format y '% h'"
        echo "set style fill empty; set grid xtics ytics lc rgb '#DDDDDD'"
        awk -v x="$c" -v y="$r" -v pw="$pw" -v ph="$ph" -v W="$W" -v H="$H" -v top="$top" 'BEGIN {
            printf "set origin %.4f, %.4f\nset size %.4f, %.4f\n", x * pw / W, (H - top - (y + 1) * ph) / H, pw / W, ph / H }'
        printf '%s' "${FIG_PANEL[p]}"
        echo "plot ${FIG_PLOTS[p]}"
    done
    echo
    echo "# the legend, under the panels"
    echo "unset logscale; unset arrow; unset label; set autoscale xy"
    echo "unset border; unset tics; unset xlabel; unset ylabel; unset title; unset grid"
    echo "set xrange [0:1]; set yrange [0:1]"
    echo "set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0"
    awk -v W="$W" -v H="$H" -v l="$leg" -v n="$notes" 'BEGIN {
        printf "set origin 0, %.4f\nset size 1, %.4f\n", n / H, l / H }'
    echo "set key at screen 0.5, $(awk -v H="$H" -v l="$leg" -v n="$notes" 'BEGIN { printf "%.4f", (n + l / 2) / H }') center center horizontal maxcols $legcols width 2 samplen 3 reverse Left box lc rgb '#999999'"
    i=0
    for ((p = 0; p < ${#lines[@]}; p++)); do
        echo "set label $(gp_str "${lines[p]}") at screen 0.01, $(awk -v H="$H" -v y="$((notes - 18 * p - 10))" 'BEGIN { printf "%.4f", y / H }') left font ',10'"
    done
    local clauses=""
    for i in "${!FIG_SERIES[@]}"; do
        local with="linespoints"
        case ${FIG_KIND[i]} in ref) with="lines" ;; bar) with="boxes fs solid 0.85 border lc rgb '#333333'" ;; paper) with="points" ;; esac
        clauses+="${clauses:+, }NaN with $with ls $((i + 1)) title $(gp_str "${titles[i]}")"
    done
    [ "$FIG_MARKED" = 1 ] && clauses+=", NaN with points pt 2 ps 1.5 lw 2 lc rgb '#000000' title $(gp_str "$over")"
    echo "plot $clauses"
    echo "unset multiplot"
}

# fig_wrap WIDTH: the notes, a line each, folded to WIDTH pixels of the notes' font
fig_wrap() {
    local n
    for n in "${FIG_NOTES[@]}"; do printf '%s\n' "$n" | fold -s -w $(($1 * 10 / 66)); done
}

# fig_table_gp: the gnuplot script of the table: a header row, a rule under it and under each
# group (a change of the first cell), text left-aligned and numbers right-aligned. The awk program
# lays the table out and marks each text it places between two unit separators (\037, taken out of
# the text itself); fig_gp_text turns each into a gnuplot string. The output's path comes quoted
# (gp_file) through the environment, where awk reads no escapes.
fig_table_gp() {
    echo "# $EXP: ${FIG_TABLE_TITLE//[[:cntrl:]]/ }"
    printf '%s\n' "${FIG_ROWS[@]}" | FIG_OUTPUT=$(gp_file "$out/figure.png") \
        awk -F'\t' -v title="$FIG_TABLE_TITLE" -v notes="$(fig_wrap 900)" '
        function isnum(s) { return s ~ /^[-+]?[0-9.,]+[x%]?( \(.*\))?$/ || s == "-" }
        function text(s) { gsub(/\037/, " ", s); return "\037" s "\037" }
        { nr++; nf = NF - 1; if (nf > cols) cols = nf
          for (i = 1; i <= nf; i++) { cell[nr, i] = $i; if (length($i) > wid[i]) wid[i] = length($i) } }
        END {
            cw = 8.2; pad = 28; rowh = 26; top = 60
            nn = split(notes, note, "\n"); if (notes == "") nn = 0
            x = 0; for (i = 1; i <= cols; i++) { left[i] = x; x += wid[i] * cw + pad }
            tw = x - pad; W = tw + 60; if (W < length(title) * 10 + 40) W = length(title) * 10 + 40
            for (k = 1; k <= nn; k++) if (W < length(note[k]) * 6.6 + 40) W = length(note[k]) * 6.6 + 40
            # the table centred, its rules 10 px past its columns
            x0 = (W - tw) / 2; for (i = 1; i <= cols; i++) left[i] += x0; ra = (x0 - 10) / W; rb = (x0 + tw + 10) / W
            H = top + nr * rowh + 20 + 18 * nn
            printf "set terminal pngcairo size %d,%d font \",11\" noenhanced\n", W, H
            printf "set output %s\n", ENVIRON["FIG_OUTPUT"]
            print "unset border; unset tics; unset key; set xrange [0:1]; set yrange [0:1]"
            print "set lmargin 0; set rmargin 0; set tmargin 0; set bmargin 0"
            printf "set label %s at screen 0.5, %.4f center font \",13\"\n", text(title), 1 - 24 / H
            for (i = 1; i <= cols; i++) { numcol[i] = nr > 1; for (r = 2; r <= nr; r++) if (!isnum(cell[r, i])) numcol[i] = 0 }
            for (r = 1; r <= nr; r++) {
                y = 1 - (top + (r - 0.5) * rowh) / H
                for (i = 1; i <= cols; i++) {
                    s = cell[r, i]
                    if (r > 2 && i == 1 && s == cell[r - 1, 1]) continue
                    f = (r == 1) ? " font \":Bold,11\"" : ""
                    if (r > 1 ? isnum(cell[r, i]) : numcol[i])
                        printf "set label %s at screen %.4f, %.4f right%s\n", text(s), (left[i] + wid[i] * cw) / W, y, f
                    else
                        printf "set label %s at screen %.4f, %.4f left%s\n", text(s), left[i] / W, y, f
                }
                if (r == 1 || r == nr || cell[r + 1, 1] != cell[r, 1]) {
                    yl = 1 - (top + r * rowh) / H
                    printf "set arrow from screen %.4f, %.4f to screen %.4f, %.4f nohead lw %s lc rgb \"%s\"\n", ra, yl, rb, yl,
                        (r == 1 || r == nr) ? 1.5 : 0.8, (r == 1 || r == nr) ? "#000000" : "#AAAAAA"
                }
            }
            yl = 1 - (top - 2) / H
            printf "set arrow from screen %.4f, %.4f to screen %.4f, %.4f nohead lw 1.5\n", ra, yl, rb, yl
            for (k = 1; k <= nn; k++) printf "set label %s at screen %.4f, %.4f left font \",10\"\n", text(note[k]), 20 / W, 1 - (top + nr * rowh + 8 + 18 * k) / H
            print "plot NaN notitle"
        }' | fig_gp_text
}

# fig_gp_text: stdin's lines with each text between two unit separators (\037) as a gnuplot string
# (gp_str)
fig_gp_text() {
    local line head text
    while IFS= read -r line; do
        while [[ $line == *$'\037'*$'\037'* ]]; do
            head=${line%%$'\037'*} line=${line#*$'\037'}
            text=${line%%$'\037'*} line=${line#*$'\037'}
            printf '%s%s' "$head" "$(gp_str "$text")"
        done
        printf '%s\n' "$line"
    done
}

# fig_metric_label METRIC: a metric's axis label in words with its unit
fig_metric_label() {
    case $1 in
        throughput_tok_s|tps) echo "Throughput (tokens/s)" ;;
        content_tok_s) echo "Content throughput (tokens/s)" ;;
        lat_mean_s) echo "Mean latency (s)" ;;
        lat_p99_s) echo "P99 latency (s)" ;;
        lat_std_s) echo "Latency standard deviation (s)" ;;
        lat_span_s) echo "Latency span, max - min (s)" ;;
        latency_ms) echo "Step latency (ms)" ;;
        speedup) echo "Speedup (x)" ;;
        lmax) echo "Longest context, Lmax (tokens)" ;;
        *) echo "${1//_/ } (as computed)" ;;
    esac
}

# fig_default XLABEL METRIC LOGX: the figure of an experiment that describes none: METRIC against x,
# a panel a workload of PANELS (one panel otherwise), a curve a system
fig_default() {
    local w s panels systems
    read -r -a panels <<<"${PANELS:--}"
    for w in "${panels[@]}"; do
        [ "$w" = - ] && w=""
        fig_lines "$w" "$1" "$(fig_metric_label "$2")" ${3:+logx}
        mapfile -t systems < <(awk -F'\t' -v m="$2" -v w="$w" '$4 == m && (w == "" || $2 == w) && $3 ~ /^[0-9.]+$/ && !seen[$1 "|" $2]++ { print $1 "|" $2 }' "$out/points.tsv")
        for s in "${systems[@]}"; do
            fig_curve "${s%%|*}$([ -z "$w" ] && echo " (${s#*|})")" "${s%%|*}" "${s#*|}" "$2" paper
        done
    done
}
