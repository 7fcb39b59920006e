#!/usr/bin/env bash
# experiments/live.sh: the simulator against one schedule run live on the GPU.
#
# On a GPU machine with the engine built: for each model, policy, scheduler and load, the same
# workload runs live (`--executor gpu`: the engine executes every step and its measured times drive
# the clock, so the scheduler decides on real times) and is predicted by both back ends
# (`--cost calibrated`, `--cost roofline`). Compared: throughput, mean/p50/p99 request latency,
# makespan. The schedules commit a block's EOS positions in one step (--eos bulk), as
# experiments/fidelity.sh's do. REUSE_LIVE=1 keeps live summaries already in SCRATCH (re-predicting
# needs no GPU). Needs the calibrations of sim/data/calib/ for the GPU (or CALIB_DIR with
# calib-MODEL.csv files, as experiments/fidelity.sh writes them; or CALIB_FROM=GPU: that card's shipped
# calibrations carried to the GPU, sim --calib-from). CLOCK=auto|on|off: the calibrated
# prediction's --clock (the card's clock under its power limit) [auto]. INTERVAL=P: the calibrated
# prediction's P% interval too (sim --interval P), and OUT/coverage.csv: for each run and metric, the
# interval, the live figure and whether it lies inside.
# Writes OUT/live.csv (one row per run and metric: predicted, live, error %) and OUT/live-runs.tgz
# (both JSON summaries of every run; kept unpacked in SCRATCH, default OUT/runs).
#
# Usage: tessera exp run live OUT [MODELS] [--force]   (GPU=h200; or experiments/live.sh OUT [MODELS]
#                                                      with TESSERA=path)
# Needs: GPU
set -uo pipefail
out=${1:?usage: live.sh OUT [models]}
models=${2:-"llada-8b sdar-8b"}
bin=${TESSERA:-build/gpu/tessera}
gpu=${GPU:-h200}
[ -x "$bin" ] || { echo "live.sh: $bin not found: make BUILD=build/gpu, or set TESSERA" >&2; exit 2; }
scratch=${SCRATCH:-$out/runs}
mkdir -p "$out" "$scratch"
echo "model,policy,scheduler,rps,backend,metric,predicted,live,error_pct" >"$out/live.csv"
[ -z "${INTERVAL:-}" ] || echo "model,policy,scheduler,rps,metric,predicted,lo,hi,live,inside" >"$out/coverage.csv"
for model in $models; do
    calib=()
    [ -n "${CALIB_DIR:-}" ] && calib=(--calib "$CALIB_DIR/calib-$model.csv")
    [ -n "${CALIB_FROM:-}" ] && calib=(--calib-from "$CALIB_FROM")
    for policy in dual block; do
        for sched in static phase; do
            for rps in 1 4; do
                tag="$model-$policy-$sched-$rps"
                batch=() # static batches of at most 8 (a parameter of the static scheduler)
                [ "$sched" = static ] && batch=(--max-batch 8)
                args=(--model "$model" --gpu "$gpu" --policy "$policy" --scheduler "$sched" --rps "$rps"
                      --requests 16 --lengths "lognormal:6.0,0.7,5.0,0.6" --gen-len 128 "${batch[@]}"
                      --eos bulk --seed 7 --cost calibrated --clock "${CLOCK:-auto}" --extrapolate --quiet --no-progress --json)
                live="$scratch/$tag-gpu.json"
                if [ "${REUSE_LIVE:-0}" != 1 ] || [ ! -s "$live" ]; then
                    "$bin" sim "${args[@]}" "${calib[@]}" --executor gpu >"$live" || continue
                fi
                "$bin" sim "${args[@]}" "${calib[@]}" >"$scratch/$tag-model.json" || continue
                "$bin" sim "${args[@]}" --cost roofline >"$scratch/$tag-roofline.json" || continue
                if [ -n "${INTERVAL:-}" ]; then
                    "$bin" sim "${args[@]}" "${calib[@]}" --interval "$INTERVAL" >"$scratch/$tag-interval.json" || continue
                    python3 - "$scratch/$tag-interval.json" "$live" "$model,$policy,$sched,$rps" >>"$out/coverage.csv" <<'PY'
import json, sys
p, l = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("throughput_tok_s", "lat_mean_s", "lat_p50_s", "lat_p99_s"):
    lo, hi = p["interval"][k]
    print(f"{sys.argv[3]},{k},{p[k]:.6g},{lo:.6g},{hi:.6g},{l[k]:.6g},{'yes' if lo <= l[k] <= hi else 'no'}")
PY
                fi
                for backend in calibrated roofline; do
                    pred="$scratch/$tag-model.json"
                    [ "$backend" = roofline ] && pred="$scratch/$tag-roofline.json"
                    python3 - "$pred" "$live" "$model,$policy,$sched,$rps,$backend" >>"$out/live.csv" <<'PY'
import json, sys
p, l = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("throughput_tok_s", "lat_mean_s", "lat_p50_s", "lat_p99_s", "makespan_ns"):
    print(f"{sys.argv[3]},{k},{p[k]:.6g},{l[k]:.6g},{100 * (p[k] - l[k]) / l[k]:+.1f}")
PY
                done
                grep "$model,$policy,$sched,$rps," "$out/live.csv" | tr '\n' ' '
                echo
            done
        done
    done
done
# every run skipped (no GPU, a failing build): say so, not a table of none
[ "$(wc -l <"$out/live.csv")" -gt 1 ] || { echo "live.sh: no run of $models compared; see the messages above" >&2; exit 1; }
tar czf "$out/live-runs.tgz" -C "$scratch" .
echo "wrote $out/live.csv"
