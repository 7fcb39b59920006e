#!/usr/bin/env bash
# experiments/fidelity.sh: how close the simulator's predictions are to the GPU (issue 4).
#
# On a GPU machine with the engine built: for each model (LLaDA-8B, SDAR-8B), profile the engine's
# ops and import the profile as a calibration; then for each policy (dual, block), scheduler
# (static, phase) and load (two request rates) simulate a workload with mixed lengths, replay its
# steps on the engine and price them with the calibrated and the roofline back ends.
# Writes OUT/fidelity.csv (one row per run and back end), OUT/all-steps.csv (per step, tagged with
# its run), OUT/calib-MODEL.csv (the calibrations) and, where gnuplot is found,
# OUT/fidelity-steps.png (predicted vs measured per step) and OUT/fidelity-errors.png (the
# distribution of per-step errors), drawn by analysis/fidelity-plot.sh. Databases go to SCRATCH (default OUT/scratch). A calibration
# already in OUT is reused.
#
# Usage: experiments/fidelity.sh OUT [MODELS]   (tessera in build/gpu or TESSERA=path)
set -uo pipefail
out=${1:?usage: fidelity.sh OUT [models]}
models=${2:-"llada-8b sdar-8b"}
bin=${TESSERA:-build/gpu/tessera}
scratch=${SCRATCH:-$out/scratch}
mkdir -p "$out" "$scratch"
echo "model,policy,scheduler,rps,backend,steps,measured_s,mape_pct,p90_pct,total_pct" >"$out/fidelity.csv"
echo "run,step_id,segments,q_tokens,kv_tokens,logit_rows,measured_s,calibrated_s,roofline_s" >"$out/all-steps.csv"
for model in $models; do
    calib="$out/calib-$model.csv"
    if [ ! -f "$calib" ]; then
        "$bin" engine profile --model "$model" --db "$scratch/profile-$model.db" --reps 2 | tail -1
        "$bin" calib import "$scratch/profile-$model.db" --gpu h200 --out "$calib" || exit 1
    fi
    for policy in dual block; do
        for sched in static phase; do
            for rps in 1 4; do
                tag="$model-$policy-$sched-$rps"
                db="$scratch/run-$tag.db"
                rm -f "$db"
                "$bin" sim --model "$model" --policy "$policy" --scheduler "$sched" --rps "$rps" \
                    --requests 16 --lengths lognormal:6.0,0.7,5.0,0.6 --gen-len 128 --max-batch 8 \
                    --seed 7 --db "$db" --quiet --no-progress >/dev/null || continue
                "$bin" engine replay --db "$db" >/dev/null || continue
                "$bin" calib eval --db "$db" --calib "$calib" --extrapolate --csv "$scratch/steps-$tag.csv" |
                    awk -v m="$model" -v p="$policy" -v s="$sched" -v r="$rps" -v f="$out/fidelity.csv" '
                        /replayed steps/ { for (i = 2; i <= NF; i++) { if ($i == "replayed") steps = $(i-1); if ($i == "measured") meas = $(i+1) } }
                        /calibrated|roofline/ {
                            gsub("%", ""); printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", m, p, s, r, $1, steps, meas, $4, $7, $10 >> f
                            print m, p, s, r, $0 }'
                tail -n +2 "$scratch/steps-$tag.csv" | sed "s/^/$tag,/" >>"$out/all-steps.csv"
            done
        done
    done
done
"$(dirname "$0")/../analysis/fidelity-plot.sh" "$out"
echo "wrote $out/fidelity.csv"
