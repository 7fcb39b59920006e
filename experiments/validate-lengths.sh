#!/usr/bin/env bash
# validate-lengths.sh: the four batch-1 loops on H200 machines tessera has never seen, at prompts up to
# 2,048 and generations up to 512, predicted after a probe of each machine.
#
# The record experiments/records/loops-h200 holds two machines (a/, b/: two H200 machines, each with
# its own host), each with the harness's host probe (probe.csv: tessera calib host --probe's profile)
# and the four loops (experiments/validate/driver.py: LLaDA's reference loop, Fast-dLLM's dual cache,
# dLLM-Cache, Sparse-dLLM, each its public code at the commit experiments/validate/README.md names,
# random weights in LLaDA-8B-Instruct's shape) over the length grid (experiments/validate/traces.sh:
# machine a the fit grid, machine b the held-out one), one request at a time, one position a step.
#
# Every request but the first of each loop's blocks-of-32 run is predicted alone (its own trace:
# its latency is its service time), three ways:
#   probe   the machine's harness probe as --host: the loop's host multiple (sim/cost/impl.c) times the
#           harness's line (tessera calib host --probe)
#   loop    the loop's own host line as --host, fitted on that one request of 128 prompt tokens and 64
#           positions (experiments/validate/compare.py loop-host: what tessera calib host --probe --loop
#           measures), with the prediction's 90% interval (sim --interval 90)
# and beside them each request's mean forward (its block forwards where its loop has them) against
# the context it reads: the length's own effect on the loop's time a forward.
#
# Writes OUT/lengths.csv (machine,system,prompt,gen,block,measured_s, each way's prediction and error,
# the loop interval and whether the measurement lies in it), OUT/forwards.csv (machine,system,prompt,
# gen,block,context,forwards, their mean ms), OUT/lengths.md (the tables) and, where gnuplot is
# found, OUT/lengths.png; and the goals, each a line saying met or missed (they do not fail the run): the
# loop probe predicts every request within 15% and at least 90% of them within 10%; at least 85% of the
# measurements lie in their 90% intervals.
#
# MEASURE=1 measures a machine again first (LENGTHS=fit|held experiments/validate/measure.sh for the four
# loops with the checkouts in CODE, default baselines/, and engine/bench/torch_profile.py --host-probe),
# into OUT/record/MACHINE (MACHINE=a for the fit grid, b for the held-out one [b]), and compares it with the
# other machine of the record.
#
# Usage: tessera exp run validate-lengths OUT [--force]   (or experiments/validate-lengths.sh OUT with TESSERA=path)
# Needs: GPU with MEASURE
set -euo pipefail
out=${1:?usage: validate-lengths.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/experiments/lib/record.sh"
source "$root/analysis/lib_gnuplot.sh"
bin=${TESSERA:-$root/build/tessera}
[ -x "$bin" ] || { echo "validate-lengths.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
cmp=$root/experiments/validate/compare.py
systems="native fast-dllm dllm-cache sparse-dllm"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$(record_path validate-lengths.sh loops-h200 "$tmp" "the four loops over the length grid on two H200 machines" \
    "MEASURE=1 tessera exp run validate-lengths OUT") || exit 2
if [ "${MEASURE:-0}" = 1 ]; then
    m=${MACHINE:-b}
    case $m in a) grid=fit ;; b) grid=held ;; *) echo "validate-lengths.sh: MACHINE=$m: a or b" >&2; exit 2 ;; esac
    new=$out/record
    mkdir -p "$new/$m"
    cp -r "$rec/traces" "$new/"
    for o in a b; do [ "$o" = "$m" ] || cp -r "$rec/$o" "$new/"; done
    python3 "$root/engine/bench/torch_profile.py" --host-probe --out "$new/$m/probe.csv"
    for s in $systems; do LENGTHS=$grid TRACES=$new/traces "$root/experiments/validate/measure.sh" "$s" "$new/$m"; done
    rec=$new
fi

# the H200's torch-eager calibration, Sparse-dLLM's with the harness's KV-selection grid merged in (as
# experiments/validate.sh does for the H100)
cal=$root/sim/data/calib/h200-llada-8b-torch-eager.csv
bash "$root/analysis/records.sh" get torch-select-h200 select-llada-8b.csv "$tmp/select.csv"
"$bin" calib merge "$cal" "$tmp/select.csv" --gpu h200 --out "$tmp/calib-select.csv" >/dev/null

# predict MACHINE SYSTEM P G B HOST OUT.json [--interval 90]: one request alone
predict() {
    local m=$1 s=$2 p=$3 g=$4 b=$5 host=$6 json=$7
    shift 7
    local c=$cal opts=()
    [ "$s" = sparse-dllm ] && c=$tmp/calib-select.csv
    [ "$s" = native ] && opts=(--impl torch-llada) # the reference loop as it is at its named commit
    printf 'arrival_ns,prompt_tokens,output_tokens\n0,%s,%s\n' "$p" "$g" >"$tmp/one.csv"
    "$bin" sim --system "$s" "${opts[@]}" --max-batch 1 --gpu h200 --cost calibrated --extrapolate --calib "$c" \
        --host "$host" --trace "$tmp/one.csv" --block "$b" --seed 1 "$@" --json --quiet --no-progress >"$json"
}

echo "machine,system,prompt,gen,block,measured_s,probe_s,probe_err_pct,loop_s,loop_err_pct,loop_lo_s,loop_hi_s,inside" \
    >"$tmp/lengths.csv"
echo "machine,system,prompt,gen,block,context,forwards,mean_ms" >"$tmp/forwards.csv"
: >"$out/host.txt"
for m in a b; do
    [ -f "$rec/$m/probe.csv" ] || { echo "validate-lengths.sh: $rec/$m/probe.csv missing: measure it (MEASURE=1)" >&2; exit 2; }
    runs=$tmp/$m
    mkdir -p "$runs"
    "$bin" calib host "$rec/$m/probe.csv" --out "$runs/probe-host.csv" | sed "s/^/machine $m: /" | head -1 >>"$out/host.txt"
    for s in $systems; do
        tar -xzf "$rec/$m/$s.tgz" -C "$runs"
        first=$(ls -d "$runs/$s"/lengths-*-b32)
        python3 "$cmp" loop-host "$s" "$first" "$runs/$s-host.csv" 0 | sed "s/^/machine $m: /; s/ -> .*//" >>"$out/host.txt"
        for run in "$runs/$s"/lengths-*; do
            b=${run##*-b}
            python3 "$cmp" lengths-forwards "$m" "$s" "$b" "$run" >>"$tmp/forwards.csv"
            tail -n +2 "$run/requests.csv" | while IFS=, read -r id _ start finish p g _; do
                [ "$run" = "$first" ] && [ "$id" = 0 ] && continue # the loop probe's own request
                predict "$m" "$s" "$p" "$g" "$b" "$runs/probe-host.csv" "$tmp/probe.json"
                predict "$m" "$s" "$p" "$g" "$b" "$runs/$s-host.csv" "$tmp/loop.json" --interval 90
                python3 - "$m" "$s" "$p" "$g" "$b" "$start" "$finish" "$tmp/probe.json" "$tmp/loop.json" \
                    >>"$tmp/lengths.csv" <<'EOF'
import json, sys
m, s, p, g, b, start, finish, probe, loop = sys.argv[1:]
meas = float(finish) - float(start)
pp = json.load(open(probe))["lat_mean_s"]
d = json.load(open(loop))
lp, (lo, hi) = d["lat_mean_s"], d["interval"]["lat_mean_s"]
err = lambda x: 100 * (x - meas) / meas
print(f"{m},{s},{p},{g},{b},{meas:.3f},{pp:.3f},{err(pp):.1f},{lp:.3f},{err(lp):.1f},{lo:.3f},{hi:.3f},"
      f"{'yes' if lo <= meas <= hi else 'no'}")
EOF
            done
        done
    done
done
cp "$tmp/lengths.csv" "$tmp/forwards.csv" "$out/"
python3 "$cmp" lengths-report "$out/lengths.csv" "$out/forwards.csv" "$out/host.txt" >"$out/lengths.md"
cat "$out/lengths.md"

if command -v gnuplot >/dev/null; then
    # a file a loop and a machine: measured, predicted after the harness probe, after the loop probe, its interval
    for sy in $systems; do
        for m in a b; do
            awk -F, -v s="$sy" -v m="$m" 'NR > 1 && $1 == m && $2 == s { print $6, $7, $9, $11, $12 }' \
                "$out/lengths.csv" >"$tmp/$sy-$m.dat"
        done
    done
    top=$(awk -F, 'NR > 1 { m = $6 > m ? $6 : m; m = $12 > m ? $12 : m } END { print m * 1.3 }' "$out/lengths.csv")
    # series COLUMNS: a plot's series, a colour a loop, filled circles machine a and open squares machine b
    series() {
        local cols=$1 c sy n=0 colours=('#0072B2' '#D55E00' '#009E73' '#CC79A7') sep="" m pt
        for sy in $systems; do
            c=${colours[n]} n=$((n + 1))
            for m in a b; do
                pt=7 && [ "$m" = b ] && pt=4
                printf '%s%s using %s with %s pt %d ps 1.4 lc rgb "%s" %s' "$sep" "$(gp_file "$tmp/$sy-$m.dat")" "$cols" \
                    "$([ "$cols" = 1:2 ] && echo points || echo yerrorbars)" "$pt" "$c" \
                    "$([ "$m" = a ] && echo "title \"$sy\"" || echo notitle)"
                sep=", "
            done
        done
    }
    gnuplot <<EOF
set terminal pngcairo size 1500,660 font ',11'
set output $(gp_file "$out/lengths.png")
set multiplot layout 1,2 title "Four batch-1 loops on two unseen H200 machines (filled: machine a, open: machine b), predicted after each probe"
set xlabel 'measured latency of a request (s)'; set ylabel 'predicted latency (s)'; set grid; set key top left opaque box
set logscale xy; set xrange [1:$top]; set yrange [1:$top]; set size square
set xtics (1, 2, 5, 10, 20, 50); set ytics (1, 2, 5, 10, 20, 50)
set title "After the harness probe (the loop's multiple of its line)"
plot x with lines dt 2 lw 1.5 lc rgb '#555555' title 'predicted = measured', \
     0.9*x with lines dt 3 lw 1.5 lc rgb '#888888' title '±10%', 1.1*x with lines dt 3 lw 1.5 lc rgb '#888888' notitle, \
     $(series 1:2)
set title "After the loop probe (its own line), with 90% intervals"
plot x with lines dt 2 lw 1.5 lc rgb '#555555' title 'predicted = measured', \
     0.9*x with lines dt 3 lw 1.5 lc rgb '#888888' title '±10%', 1.1*x with lines dt 3 lw 1.5 lc rgb '#888888' notitle, \
     $(series 1:3:4:5)
unset multiplot
EOF
fi
python3 "$cmp" lengths-check "$out/lengths.csv"
