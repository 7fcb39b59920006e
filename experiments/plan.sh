#!/usr/bin/env bash
# experiments/plan.sh: what to deploy: the cheapest SGLang fleet for one load within one SLO, by card, concurrency cap and threshold.
#
# tessera plan size sizes SGLang serving LLaDA2.0-mini on H200, H100 and L40S fleets over its
# concurrency cap and the decoder's confidence threshold (experiments/plan-space.txt), on Azure's
# conversation trace (its first REQUESTS requests, their arrivals rescaled to each probe's rate); then
# the capacity a replica against the threshold, card by card at the cap of 32: where lowering the
# threshold buys capacity, and the accuracy it costs (the decode profile's published figures, not
# simulated).
#
# The plan is made twice, with and without the early stop (its probes run to their ends): every
# candidate's capacity and replicas must agree (report.md says so, or the experiment fails).
#
# Writes OUT/plan.txt (the ranked plan), OUT/plan.csv, OUT/runs/ (a run file a candidate), OUT/report.md
# (the plan, the capacity by threshold, the early stop's check) and, with gnuplot, OUT/pareto.png and
# OUT/threshold.png.
#
# Usage: tessera exp run plan OUT [--force]   (RPS=4 req/s, SLO=p95=20s, REQUESTS=400; AZURE=the
#        conversation trace, ../shared/traces/raw/'s by default; or experiments/plan.sh OUT with
#        TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run plan OUT [--force]}
bin=${TESSERA:-build/tessera}
here=$(cd "$(dirname "$0")/.." && pwd)
rps=${RPS:-4} slo=${SLO:-p95=20s} requests=${REQUESTS:-400}
azure=${AZURE:-$here/../shared/traces/raw/AzureLLMInferenceTrace_conv.csv}
[ -r "$azure" ] || { echo "plan.sh: $azure: no Azure conversation trace (AZURE=PATH)" >&2; exit 2; }
die() { echo "plan.sh: $*" >&2; exit 1; }
mkdir -p "$out" || exit 2
space=$here/experiments/plan-space.txt
common=(--rps "$rps" --slo "$slo" --space "$space" --system sglang --rounds-host h200 --trace "$azure"
        --requests "$requests" --no-progress)
"$bin" plan size "${common[@]}" --out "$out/plan" --force >"$out/plan.txt" || die "tessera plan size failed"
"$bin" plan size "${common[@]}" --no-early-stop --confidence 0 --out "$out/whole" --force >/dev/null ||
    die "tessera plan size --no-early-stop failed"
cp "$out/plan/plan.csv" "$out/plan.csv" && rm -rf "$out/runs" && cp -r "$out/plan/runs" "$out/runs" || exit 1
[ -f "$out/plan/pareto.png" ] && cp "$out/plan/pareto.png" "$out/pareto.png"
# the early stop's check: the same capacity and replicas for every candidate
same=$(join -t, -j1 <(tail -n +2 "$out/plan/plan.csv" | cut -d, -f2,6,8 | sort) \
    <(tail -n +2 "$out/whole/plan.csv" | cut -d, -f2,6,8 | sort) |
    awk -F, '$2 == $4 && $3 == $5 { n++ } END { print n + 0 }')
total=$(($(wc -l <"$out/plan/plan.csv") - 1))
rm -rf "$out/plan" "$out/whole"
# the capacity a replica by threshold, each card at the cap of 32
awk -F, 'NR > 1 && $2 ~ /max-running-requests=32 / {
        split($2, w, " "); gpu = substr(w[1], 5); tau = w[3]; sub(/.*tau=/, "", tau); sub(/[;,].*/, "", tau)
        printf "%s %s %s %s\n", gpu, tau, $8, $11 }' "$out/plan.csv" | sort -k1,1 -k2,2gr >"$out/threshold.dat"
[ -s "$out/threshold.dat" ] || die "no candidate at the cap of 32 in $out/plan.csv"
{
    echo "# What to deploy: SGLang serving LLaDA2.0-mini at $rps req/s within $slo"
    echo
    echo "Azure's conversation trace, its first $requests requests rescaled to each rate; candidates of"
    echo "experiments/plan-space.txt; GPU-hours at sim/data/prices.csv's rates. H200 is validated against"
    echo "SGLang itself; H100 and L40S are modelled (the forwards as tessera's engine runs them, the host's"
    echo "work between rounds carried from the H200: an assumption)."
    echo
    echo '```'
    cat "$out/plan.txt"
    echo '```'
    echo
    echo "## Capacity a replica against the decoder's threshold (cap 32)"
    echo
    echo "| card | threshold | req/s a replica | published accuracy (%) |"
    echo "|---|---|---|---|"
    awk '{ printf "| %s | %s | %.3g | %.2f |\n", $1, $2, $3, $4 }' "$out/threshold.dat"
    echo
    echo "## The early stop"
    echo
    echo "$same of $total candidates have the same capacity a replica and the same replicas with every probe"
    echo "run to its end (--no-early-stop)."
} >"$out/report.md"
plot_png plan "$out/threshold.png" 760 460 <<GP
set title "capacity a replica within $slo, against the decoder's threshold (cap 32)"
set xlabel "confidence threshold (published accuracy at 0.95, 0.90, 0.85: 70.2, 69.0, 67.9%)"
set ylabel "req/s a replica"
set xrange [0.96:0.84]
set grid
set key right center
plot for [g in "h200 h100 l40s"] $(gp_file "$out/threshold.dat") using (strcol(1) eq g ? \$2 : NaN):3 with linespoints lw 2 pt 7 title g
GP
[ "$same" -eq "$total" ] || die "the early stop changed $((total - same)) of $total candidates' capacity or replicas"
echo "plan.sh: $out/report.md"
