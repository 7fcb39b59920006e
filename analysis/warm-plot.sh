#!/usr/bin/env bash
# analysis/warm-plot.sh: `engine_bench --warm-trace`'s replays over time, one panel per
# step and one curve per group of replays (the step, its variants side by side, its linear layers
# alone, all but them): every replay's time (the warm-up rounds as lines, the timed replays as
# points) over the median of the group's timed replays, against seconds since the group's warm-up
# began. A clock that settles shows as a line that flattens; the power limiter's cycle as spikes.
#
# Usage: analysis/warm-plot.sh WARM.csv[.gz] OUT.png
# (needs python3 and gnuplot)
set -euo pipefail
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -eq 2 ] || usage
trace=$1 out=$2
[ -f "$trace" ] || { echo "warm-plot.sh: $trace: no such file" >&2; exit 2; }
for tool in python3 gnuplot; do
    command -v "$tool" >/dev/null || { echo "warm-plot.sh: $tool not found (apt-get install python3 gnuplot-nox)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# per step k: $tmp/k.dat, one block per group (label, then "t ratio" rows of its warm-up rounds, a
# blank line, its timed replays), and $tmp/panels.tsv its title and its groups' colours and titles
python3 - "$trace" "$tmp" <<'PY'
import csv, gzip, io, sys
path, tmp = sys.argv[1], sys.argv[2]
opener = gzip.open if path.endswith(".gz") else open
need = ["label", "phase", "round", "graph", "t_s", "ms"]
steps, groups = [], {}
try:
    with opener(path, "rt") as f:
        r = csv.reader(f)
        head = next(r, None)
        if head != need:
            sys.exit(f"warm-plot.sh: {path}:1: header {','.join(head or [])!r}, expected {','.join(need)}")
        for n, row in enumerate(r, 2):
            if not row:
                continue
            if len(row) != len(need):
                sys.exit(f"warm-plot.sh: {path}:{n}: {len(row)} fields, expected {len(need)}")
            label, phase = row[0], row[1]
            if phase not in ("warm", "timed"):
                sys.exit(f"warm-plot.sh: {path}:{n}: field phase: {phase!r} is not warm or timed")
            try:
                t, ms = float(row[4]), float(row[5])
            except ValueError:
                sys.exit(f"warm-plot.sh: {path}:{n}: field t_s or ms: not a number")
            if not ms > 0:
                sys.exit(f"warm-plot.sh: {path}:{n}: field ms: {row[5]} is not a positive time")
            step, _, what = label.partition(": ")
            if step not in groups:
                steps.append(step)
                groups[step] = {}
            groups[step].setdefault(what or label, {"warm": [], "timed": []})[phase].append((t, ms))
except (OSError, EOFError, UnicodeDecodeError) as e:
    sys.exit(f"warm-plot.sh: {path}: {e}")
if not steps:
    sys.exit(f"warm-plot.sh: {path}: no replays (was it written by `engine_bench --warm-trace`?)")
colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
def one_line(s):  # a field of panels.tsv: no tab, no line break
    return s.replace("\t", " ").replace("\r", " ").replace("\n", " ")
with open(f"{tmp}/panels.tsv", "w") as gp:
    for k, step in enumerate(steps):
        gs = groups[step]
        refs = {}
        with open(f"{tmp}/{k}.dat", "w") as d:
            for what, g in gs.items():
                ref = sorted(ms for _, ms in (g["timed"] or g["warm"]))
                ref = refs[what] = ref[len(ref) // 2]
                for phase in ("warm", "timed"):
                    for t, ms in g[phase]:
                        d.write(f"{t:.4f} {ms / ref:.5f}\n")
                    d.write("\n\n")
        gp.write(f"panel\t{one_line(step)}\n")
        for i, what in enumerate(gs):
            gp.write(f"curve\t{colors[i % len(colors)]}\t{one_line(what)} ({refs[what]:.3f} ms)\n")
with open(f"{tmp}/n", "w") as f:
    f.write(str(len(steps)))
PY
# the panels' plot commands: a panel a step (its title), two clauses a group (its warm-up rounds as a
# line, titled, its timed replays as points), every title through gp_str
# shellcheck source=lib_gnuplot.sh
source "$(dirname "$0")/lib_gnuplot.sh"
panels() {
    local kind colour text k=-1 i=0 cmds=""
    while IFS=$'\t' read -r kind colour text; do
        if [ "$kind" = panel ]; then
            [ -z "$cmds" ] || echo "plot $cmds"
            text=$colour k=$((k + 1)) i=0 cmds=""
            echo "set title $(gp_str "$text")"
            continue
        fi
        cmds+="${cmds:+, \\
     }$(gp_file "$tmp/$k.dat") index $((2 * i)) with lines lw 1.2 lc rgb '$colour' title $(gp_str "$text"), \\
     $(gp_file "$tmp/$k.dat") index $((2 * i + 1)) with points pt 7 ps 0.4 lc rgb '$colour' notitle"
        i=$((i + 1))
    done <"$tmp/panels.tsv"
    [ -z "$cmds" ] || echo "plot $cmds"
}
panels >"$tmp/panels.gp"
n=$(cat "$tmp/n")
cols=$(( n < 2 ? 1 : 2 )) rows=$(( (n + 1) / 2 ))
gnuplot 2>"$tmp/gnuplot.err" <<GP || { cat "$tmp/gnuplot.err" >&2; exit 1; }
set terminal pngcairo size $(( 640 * cols )),$(( 380 * rows + 40 )) font ",10"
set output $(gp_file "$out")
set multiplot layout $rows,$cols title "engine_bench: every replay's time over its group's timed median, from the start of its warm-up"
set xlabel 'seconds since the warm-up began'
set ylabel 'ms / timed median'
set grid
set key top right font ",8"
load $(gp_file "$tmp/panels.gp")
unset multiplot
GP
grep -v -e 'no valid points' -e '^ *$' "$tmp/gnuplot.err" >&2 || true
echo "wrote $out"
