#!/usr/bin/env bash
# experiments/validate.sh: tessera's predictions of the seed systems against their own public code
# running on the GPU.
#
# The record experiments/records/validate-h100 holds, for each of LLaDA's reference generate (native),
# Fast-dLLM's dual cache, dLLM-Cache and Sparse-dLLM, that system's own generate loop run at a named
# commit on an H100 (experiments/validate/driver.py: random weights in LLaDA-8B-Instruct's shape, one
# request at a time as each loop's one-row canvas allows) over 64 OSC-length requests with Poisson
# arrivals at two rates, one below what it serves and one above: every request's arrival, start and
# finish and every forward's time; and a held-out grid (prompts of 128 to 2,048 tokens) on the same
# machine. tessera predicts every run from its trace with the system's preset (--max-batch 1, as the
# loop ran), the H100's torch-eager calibration (the PyTorch harness's, merged with its KV-selection
# grid for Sparse-dLLM: records/torch-select-h100) and the validation machine's host line, fitted on
# LLaDA's loop over the held-out grid only (experiments/validate/compare.py host).
# dLLM-Cache's loop also ran in static batches of 4 and 16 (2B requests arriving together: its generate
# takes several rows), predicted with --max-batch B.
# For dLLM-Serve the record holds its own runtime (experiments/validate/serve_driver.py: its
# scheduler batching as it batches) over two rates and its held-out grid (1 to 32 requests together);
# tessera predicts with the dllm-serve preset, the shipped H100 torch-dllm-serve calibration
# (records/torch-dllm-serve-h100: tessera's rebuild of the runtime) and the runtime's own host line,
# fitted on its held-out grid only (compare.py host-serve).
#
# Writes OUT/validate.csv (system,rate,metric,predicted,measured,error_pct: throughput, mean and p99
# latency, the forward count, the per-forward MAPE overall and by kind), OUT/coverage.csv (each
# throughput, mean and p99 latency against its prediction's 90% interval: inside, its half-width, the
# error, the load), OUT/validate.md (a table a system, then coverage and error by load: below and above
# saturation, static batches), OUT/latency.csv (every request's predicted and measured latency) and,
# where gnuplot is found, OUT/latency.png (predicted against measured latency a request, a panel a
# system).
#
# MEASURE=1 measures the runs again first, on this machine's GPU (experiments/validate/measure.sh:
# the checkouts in CODE, default baselines/, as experiments/validate/README.md makes them), into
# OUT/record, and compares those instead.
#
# Usage: tessera exp run validate OUT [--force]   (or experiments/validate.sh OUT with TESSERA=path)
# Needs: GPU with MEASURE
set -euo pipefail
out=${1:?usage: validate.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/experiments/lib/record.sh"
source "$root/analysis/lib_gnuplot.sh"
bin=${TESSERA:-$root/build/tessera}
[ -x "$bin" ] || { echo "validate.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
systems="native fast-dllm dllm-cache sparse-dllm dllm-serve"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$out/record
if [ "${MEASURE:-0}" = 1 ]; then
    mkdir -p "$rec/traces"
    TESSERA=$bin "$root/experiments/validate/traces.sh" "$rec/traces"
    for s in $systems; do TRACES=$rec/traces "$root/experiments/validate/measure.sh" "$s" "$rec"; done
else
    rec=$(record_path validate.sh validate-h100 "$tmp" "the seed systems' runs on an H100" \
        "MEASURE=1 tessera exp run validate OUT, as experiments/validate/README.md says") || exit 2
fi
runs=$tmp/runs
mkdir -p "$runs"
for s in $systems; do
    [ -f "$rec/$s.tgz" ] || { echo "validate.sh: $rec/$s.tgz missing: measure it (MEASURE=1)" >&2; exit 2; }
    tar -xzf "$rec/$s.tgz" -C "$runs"
done
{
    python3 "$root/experiments/validate/compare.py" host "$runs" "$out/host.csv"
    python3 "$root/experiments/validate/compare.py" host-serve "$runs" "$out/host-dllm-serve.csv"
} | tee "$out/host.txt"

# Sparse-dLLM's selection: the H100 torch-eager calibration with the harness's KV-selection grid
# merged in (dLLM-Serve's selection code, one kept set for all heads, standing in for Sparse-dLLM's
# filter_cache: the same scores, max-pool and top-k)
bash "$root/analysis/records.sh" get torch-select-h100 select-llada-8b.csv "$tmp/select.csv"
"$bin" calib merge "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" "$tmp/select.csv" --gpu h100 \
    --out "$tmp/calib-select.csv" >/dev/null
echo "system,rate,metric,predicted,measured,error_pct" >"$tmp/validate.csv"
echo "system,rate,id,predicted_s,measured_s" >"$tmp/latency.csv"
for s in $systems; do
    # one request at a time, but dLLM-Serve's runtime, which batches as its scheduler does
    opts=(--max-batch 1 --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" --host "$out/host.csv")
    case $s in
        sparse-dllm) opts=(--max-batch 1 --calib "$tmp/calib-select.csv" --host "$out/host.csv") ;;
        native) opts+=(--impl torch-llada) ;; # the reference loop as it is at its named commit
        dllm-serve) opts=(--calib "$root/sim/data/calib/h100-llada-8b-torch-dllm-serve.csv"
                          --host "$out/host-dllm-serve.csv") ;;
    esac
    rates="low high"
    [ "$s" = dllm-cache ] && rates="low high b4 b16"
    for rate in $rates; do
        batch=()
        case $rate in b*) batch=(--max-batch "${rate#b}") ;; esac
        "$bin" sim --system "$s" "${opts[@]}" "${batch[@]}" --gpu h100 --cost calibrated --extrapolate \
            --trace "$rec/traces/$s-$rate.csv" --block 32 --seed 1 \
            --db "$tmp/$s-$rate.db" --quiet --no-progress >/dev/null
        # the same prediction's 90% interval over the measured sources of variance (sim --interval)
        "$bin" sim --system "$s" "${opts[@]}" "${batch[@]}" --gpu h100 --cost calibrated --extrapolate \
            --trace "$rec/traces/$s-$rate.csv" --block 32 --seed 1 --interval 90 \
            --json --quiet --no-progress >"$tmp/$s-$rate.interval.json"
        python3 "$root/experiments/validate/compare.py" run "$s" "$rate" "$runs" "$tmp/$s-$rate.db" \
            >>"$tmp/validate.csv" 2>"$tmp/latency-one.csv" || { cat "$tmp/latency-one.csv" >&2; exit 1; }
        cat "$tmp/latency-one.csv" >>"$tmp/latency.csv"
    done
done
mv "$tmp/validate.csv" "$tmp/latency.csv" "$out/"
# coverage: each measurement inside its prediction's 90% interval or not, and the interval's half-width
# as a share of the prediction, by load (below saturation: the low rates; above: the high ones; static
# batches: b4, b16)
python3 - "$out/validate.csv" "$tmp" "$out/coverage.csv" >"$tmp/coverage.md" <<'PY'
import csv, json, statistics, sys
rows, tmp, out = list(csv.DictReader(open(sys.argv[1]))), sys.argv[2], sys.argv[3]
load = {"low": "below saturation", "high": "above saturation", "b4": "static batches", "b16": "static batches"}
res = []
for r in rows:
    if r["metric"] not in ("throughput_tok_s", "lat_mean_s", "lat_p99_s"):
        continue
    lo, hi = json.load(open("%s/%s-%s.interval.json" % (tmp, r["system"], r["rate"])))["interval"][r["metric"]]
    p, m = float(r["predicted"]), float(r["measured"])
    res.append(dict(system=r["system"], rate=r["rate"], load=load[r["rate"]], metric=r["metric"], predicted=p,
                    measured=m, lo=lo, hi=hi, inside=int(lo <= m <= hi), half_width_pct=100 * (hi - lo) / 2 / p,
                    error_pct=100 * (p - m) / m))
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(res[0]))
    w.writeheader()
    for r in res:
        w.writerow({k: ("%.4g" % v if isinstance(v, float) else v) for k, v in r.items()})
print("\n## 90% intervals and errors by load\n")
print("Each prediction's 90% interval (`tessera sim --interval 90`: the sources of sim/data/variance.csv this run "
      "has) against the measurement: inside or not, the interval's half-width, and the error, by load.\n")
print("| load | measurements | inside | median half-width: throughput, mean latency, p99 | median abs error | "
      "largest abs error |\n|---|---|---|---|---|---|")
for l in ("below saturation", "above saturation", "static batches", "all"):
    g = [r for r in res if l == "all" or r["load"] == l]
    w = ", ".join("±%.1f%%" % statistics.median(r["half_width_pct"] for r in g if r["metric"] == k)
                  for k in ("throughput_tok_s", "lat_mean_s", "lat_p99_s"))
    print("| %s | %d | %d (%.0f%%) | %s | %.1f%% | %.1f%% |" % (
        l, len(g), sum(r["inside"] for r in g), 100 * sum(r["inside"] for r in g) / len(g), w,
        statistics.median(abs(r["error_pct"]) for r in g), max(abs(r["error_pct"]) for r in g)))
PY

# the table a system
{
    echo "# tessera against the seed systems' own code (H100)"
    echo
    echo "Predicted from each run's trace with the system's preset; measured: the system's generate loop (one"
    echo "request at a time; dLLM-Cache's also in static batches of 4 and 16, rates b4 and b16), or dLLM-Serve's"
    echo "runtime (batching as its scheduler does)."
    echo
    echo "| system | rate | throughput tok/s (pred / meas / err) | mean latency s | p99 latency s | forwards | per-forward MAPE |"
    echo "|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 { v[$1 "," $2 "," $3] = $4 " / " $5 " / " $6 "%"; m[$1 "," $2 "," $3] = $4
                      if (!seen[$1 "," $2]++) order[++n] = $1 "," $2 }
        END { for (i = 1; i <= n; i++) { split(order[i], k, ",")
              printf "| %s | %s | %s | %s | %s | %s | %s%% |\n", k[1], k[2], v[order[i] ",throughput_tok_s"],
                  v[order[i] ",lat_mean_s"], v[order[i] ",lat_p99_s"], v[order[i] ",forwards"],
                  m[order[i] ",forward_mape_all"] } }' "$out/validate.csv"
    cat "$tmp/coverage.md"
} >"$out/validate.md"
cat "$out/validate.md"

if command -v gnuplot >/dev/null; then
    for s in $systems; do
        for rate in low high b4 b16; do
            awk -F, -v s="$s" -v r="$rate" '$1 == s && $2 == r { print $5, $4 }' "$out/latency.csv" >"$tmp/$s-$rate.dat"
        done
        cat "$tmp/$s-b4.dat" "$tmp/$s-b16.dat" >"$tmp/$s-batch.dat"
    done
    {
        echo "set terminal pngcairo size 2000,460 font ',11'"
        echo "set output $(gp_file "$out/latency.png")"
        echo "set multiplot layout 1,5 title $(gp_str "Request latency: tessera against the systems' own code (H100, 64 OSC-length requests a rate; the static batches 256 + 64 tokens a request)")"
        echo "set xlabel 'measured (s)'; set ylabel 'predicted (s)'; set grid; set key top left opaque box"
        echo "set size square"
        for s in $systems; do
            top=$(cat "$tmp/$s"-*.dat | awk '{ m = $1 > m ? $1 : m; m = $2 > m ? $2 : m } END { print m * 1.05 }')
            echo "set title $(gp_str "$s")"
            case $s in native | dllm-cache) echo "set key top left opaque box" ;; *) echo "unset key" ;; esac
            echo "plot [0:$top][0:$top] x with lines dt 2 lc rgb '#7F7F7F' title 'predicted = measured', \\"
            echo "  $(gp_file "$tmp/$s-low.dat") with points pt 7 ps 0.6 lc rgb '#0072B2' title 'below saturation', \\"
            if [ -s "$tmp/$s-batch.dat" ]; then
                echo "  $(gp_file "$tmp/$s-high.dat") with points pt 5 ps 0.6 lc rgb '#D55E00' title 'above saturation', \\"
                echo "  $(gp_file "$tmp/$s-batch.dat") with points pt 9 ps 1.4 lc rgb '#009E73' title 'static batches of 4 and 16'"
            else
                echo "  $(gp_file "$tmp/$s-high.dat") with points pt 5 ps 0.6 lc rgb '#D55E00' title 'above saturation'"
            fi
        done
        echo "unset multiplot"
    } >"$tmp/latency.gp"
    gnuplot <"$tmp/latency.gp" # on stdin: gnuplot runs a script file named "<CMD" as CMD's output
fi
