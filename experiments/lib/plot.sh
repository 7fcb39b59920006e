# shellcheck shell=bash
# plot.sh: an experiment's own figure, drawn by gnuplot where it is installed (sourced by the
# experiments whose figures are not a paper's layout, lib/figure.sh's):
#   plot_png EXP PNG WIDTH HEIGHT <<EOF ... EOF
# runs the gnuplot commands on stdin after setting a PNG of WIDTH x HEIGHT pixels as their output (no
# enhanced text: labels print as written). Where gnuplot fails, PNG is removed and EXP says why on
# stderr, the report standing without it; without gnuplot, nothing is drawn. The commands name paths
# and outside text through gp_file and gp_str (analysis/lib_gnuplot.sh, sourced here).
# shellcheck source=../../analysis/lib_gnuplot.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../analysis/lib_gnuplot.sh"
plot_png() {
    local exp=$1 png=$2 w=$3 h=$4 log
    if ! command -v gnuplot >/dev/null 2>&1; then
        cat >/dev/null
        return 0
    fi
    log="$(dirname "$png")/gnuplot.log"
    if { printf 'set terminal pngcairo size %s,%s font ",10"\nset output %s\nset termoption noenhanced\n' "$w" "$h" \
            "$(gp_file "$png")"; cat; } | gnuplot 2>"$log"; then
        rm -f "$log"
    else
        rm -f "$png"
        echo "$exp: no figure $(basename "$png"): gnuplot: $(head -2 "$log")" >&2
    fi
}

# rate_panels TITLE KEY: the gnuplot commands of two panels by request rate, generated tokens/s and mean
# latency (log scale), each plotting the caller's `curves COLUMN` (a gnuplot plot's arguments: columns 2
# and 3 of its data); KEY is the throughput panel's `set key` line, the latency panel has none. For
# plot_png's stdin.
rate_panels() {
    cat <<EOF
set multiplot layout 1,2 title $(gp_str "$1") font ",12"
set xrange [0:*]
set yrange [0:*]
set grid lc rgb "#dddddd"
set pointsize 1.4
set xlabel "Request rate (req/s)"
$2
set ylabel "Generated tokens/s"
set title "Throughput"
plot $(curves 2)
unset key
set ylabel "Mean latency (s, log scale)"
set logscale y
set yrange [*:*]
set title "Mean request latency"
plot $(curves 3)
unset multiplot
EOF
}
