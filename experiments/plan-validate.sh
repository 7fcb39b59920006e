#!/usr/bin/env bash
# experiments/plan-validate.sh: tessera plan's capacities against SGLang's own serving on an H200 (the sglang-h200 record).
#
# The record ran SGLang 0.5.17 (LLaDA2.0-mini, --max-running-requests 8, both modes) over four traces
# of 32 requests at rising rates (traces/fixed-rps1..4.csv: 256 prompt tokens and 128 generated) and
# measured each trace's mean latency. For each mode, each SLO `mean=B` with B the midpoint between two
# neighbouring traces' measured means (a rule, not a fit) held at the slower trace and failed at the
# faster one: SGLang's capacity under B lies between their offered rates ((n - 1) / the last arrival,
# the overload rule's). tessera plan capacity predicts it from the record's first trace, its arrivals
# rescaled (--system sglang, the record's settings), point and robust (--confidence 90): does the
# point capacity fall between the two rates, and where does the robust one fall?
#
# Writes OUT/report.md (a row an SLO) and OUT/capacity.csv.
#
# Usage: tessera exp run plan-validate OUT [--force]   (or experiments/plan-validate.sh OUT with TESSERA=path)
set -uo pipefail
out=${1:?usage: tessera exp run plan-validate OUT [--force]}
bin=${TESSERA:-build/tessera}
here=$(cd "$(dirname "$0")/.." && pwd)
rec=$here/experiments/records/sglang-h200
die() { echo "plan-validate.sh: $*" >&2; exit 1; }
mkdir -p "$out" || exit 2
echo "mode,bound_s,held_trace,held_rps,failed_trace,failed_rps,capacity_rps,robust_rps,between" >"$out/capacity.csv"
for mode in fdfo sync; do
    f=$([ $mode = fdfo ] && echo 1 || echo 0)
    # the fixed-length traces by rate: their measured means, and their offered rates
    rows=$(for k in 1 2 3 4; do
        mean=$(awk -F, -v t="fixed-rps$k" '$1 == t { print $8 }' "$rec/$mode-sglang/sglang.csv")
        rate=$(tail -1 "$rec/traces/fixed-rps$k.csv" | awk -F, '{ printf "%.4f", 31 / ($1 * 1e-9) }')
        [ -n "$mean" ] || die "$rec/$mode-sglang/sglang.csv: no fixed-rps$k"
        echo "fixed-rps$k $mean $rate"
    done)
    while read -r t1 m1 r1 t2 m2 r2; do
        bound=$(echo "$m1 $m2" | awk '{ printf "%.4f", ($1 + $2) / 2 }')
        "$bin" plan capacity --slo "mean=${bound}s" --tolerance 0.01 --system sglang --fdfo "$f" --max-running-requests 8 \
            --decode fixed:1 --gpu h200 --trace "$rec/traces/fixed-rps1.csv" --seed 1 --no-progress --json >"$out/$mode-$bound.json" ||
            die "tessera plan capacity failed ($mode, mean $bound s)"
        python3 - "$out/$mode-$bound.json" "$mode" "$bound" "$t1" "$r1" "$t2" "$r2" >>"$out/capacity.csv" <<'PY' || exit 1
import json, sys
path, mode, bound, t1, r1, t2, r2 = sys.argv[1:]
d = json.load(open(path))
cap, rob = d["capacity_rps"], d["robust_rps"]
print(f"{mode},{bound},{t1},{r1},{t2},{r2},{cap:.4f},{'' if rob is None else f'{rob:.4f}'},"
      f"{'yes' if float(r1) <= cap < float(r2) else 'below' if cap < float(r1) else 'above'}")
PY
    done < <(echo "$rows" | awk 'NR > 1 { print prev, $0 } { prev = $0 }')
done
{
    echo "# tessera plan's capacity against SGLang's own serving (record sglang-h200)"
    echo
    echo "SGLang 0.5.17 on an H200, LLaDA2.0-mini, --max-running-requests 8; an SLO on the mean latency"
    echo "halfway between two traces' measured means; the measured capacity lies between their offered rates."
    echo
    echo "| mode | mean at most (s) | held (measured) | failed (measured) | point capacity | robust (90%) | point between |"
    echo "|---|---:|---|---|---:|---:|---|"
    tail -n +2 "$out/capacity.csv" | awk -F, '{ printf "| %s | %.3f | %s, %.2f req/s | %s, %.2f req/s | %.2f | %s | %s |\n",
        $1 == "fdfo" ? "first done, first out" : "sync", $2, $3, $4, $5, $6, $7, $8 == "" ? "-" : sprintf("%.2f", $8), $9 }'
    n=$(tail -n +2 "$out/capacity.csv" | wc -l)
    y=$(tail -n +2 "$out/capacity.csv" | awk -F, '$9 == "yes"' | wc -l)
    echo
    echo "The point capacity lies between the measured rates for $y of $n SLOs."
} >"$out/report.md"
echo "plan-validate.sh: $out/report.md"
