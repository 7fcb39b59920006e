#!/usr/bin/env bash
# experiments/fidelity.sh: how close the simulator's predictions are to the GPU.
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
# Every engine process of the experiment shares one GEMM algorithm cache, OUT/gemm-algos.db
# (tessera engine --help, --gemm-cache): the profile's algorithm choices are the replays'. With
# CALIB_DIR, DIR/gemm-algos.db (the cache the calibrations were measured with) is copied there first.
#
# OPS=1 also times every op of every replayed step (engine replay --ops; about twice the replay
# time), and `calib eval` adds its per-op breakdown to the log (OUT/scratch/run-*.db keep the op times).
#
# The schedules commit a block's EOS positions in one step once its content is in (--eos bulk),
# under fixed:1 too: a mix of short and whole-block steps, and the recorded runs' schedules.
#
# MEASURED=FILE (an all-steps.csv[.gz] from an earlier run) re-evaluates without a GPU: the
# simulations are deterministic, so each run's steps are simulated again and the recorded measured
# times are attached to them (checked step by step) instead of replaying; CALIB_DIR=DIR takes the
# calibrations from DIR/calib-MODEL.csv (default: profile them, or reuse those in OUT).
#
# PROFILES=DIR takes each calibration as `tessera calib merge` of DIR/MODEL.*.csv[.gz] (two or more
# profiles, each OUT/calib-MODEL.csv of an earlier run, best from different machine instances: a
# profile's level moves 1-2% with the instance) instead of profiling; the merge is OUT/calib-MODEL.csv.
#
# WARM_MS=MS profiles each step after MS ms of its own repetition (engine profile --warm-ms: the
# light-load clock: a Reuse step profiled at its own steady clock rather than after a Refresh).
#
# CLOCK=auto|on|off prices the calibrated back end at the card's clock state (calib eval --clock, as
# tessera sim --clock: the card's clock under its power limit, sim/data/clock.csv) [auto].
#
# POLICIES="..." runs those policies [dual block]; sparse-head is the sparse policy with one kept set
# per K/V head (--sparse-select head), sparse the one set for all heads; dllm-cache runs dLLM-Cache
# (its feature cache priced by the calibration's fc grid where it has one).
#
# IMPL=tessera-fused simulates that implementation profile and runs the engine's FFN fused
# (engine profile --ffn fused; replays follow the run's implementation), so OUT's
# calibrations are of the fused engine.
#
# GPU=NAME names the GPU in tessera's table the machine has [h200]: the calibrations are imported
# for it and the workloads simulated on it.
#
# Usage: tessera exp run fidelity OUT [MODELS] [--force]   (or experiments/fidelity.sh OUT [MODELS] with
#                                                          TESSERA=path)
# Needs: GPU unless MEASURED
set -uo pipefail
out=${1:?usage: fidelity.sh OUT [models]}
models=${2:-"llada-8b sdar-8b"}
bin=${TESSERA:-build/gpu/tessera}
impl=${IMPL:-tessera}
gpu=${GPU:-h200}
[ -x "$bin" ] || { echo "fidelity.sh: $bin not found: make BUILD=build/gpu, or set TESSERA" >&2; exit 2; }
ffn="split"
[ "$impl" = tessera-fused ] && ffn="fused"
scratch=${SCRATCH:-$out/scratch}
mkdir -p "$out" "$scratch"
echo "model,policy,scheduler,rps,backend,steps,measured_s,mape_pct,p90_pct,total_pct" >"$out/fidelity.csv"
gemm_cache="$out/gemm-algos.db"
if [ -n "${CALIB_DIR:-}" ] && [ -f "$CALIB_DIR/gemm-algos.db" ] && [ ! -f "$gemm_cache" ]; then
    cp "$CALIB_DIR/gemm-algos.db" "$gemm_cache" || exit 1
fi
measured=${MEASURED:-}
if [ -n "$measured" ]; then
    [ -f "$measured" ] || { echo "fidelity.sh: no $measured" >&2; exit 1; }
    case "$measured" in *.gz) gzip -dc "$measured" >"$scratch/measured.csv" ;; *) cp "$measured" "$scratch/measured.csv" ;; esac
fi
echo "run,step_id,segments,q_tokens,kv_tokens,logit_rows,measured_s,calibrated_s,roofline_s" >"$out/all-steps.csv"
# attach_measured DB TAG: the recorded measured times of run TAG as DB's engine_steps
attach_measured() {
    python3 - "$1" "$2" "$scratch/measured.csv" <<'PY'
import csv, sqlite3, sys
db, tag, src = sys.argv[1:4]
rows = {int(r["step_id"]): r for r in csv.DictReader(open(src)) if r["run"] == tag}
con = sqlite3.connect(db)
run = con.execute("SELECT max(run_id) FROM runs").fetchone()[0]
steps = con.execute("SELECT step_id, num_segs, q_tokens, duration_ns FROM steps WHERE run_id = ?", (run,)).fetchall()
if len(steps) != len(rows) + 1:  # the replay's first step (GEMM tuning) is not recorded
    sys.exit(f"fidelity.sh: {tag}: {len(steps)} simulated steps, {len(rows)} recorded (+1 expected)")
con.execute("CREATE TABLE IF NOT EXISTS engine_steps(run_id INTEGER, step_id INTEGER, predicted_ns INTEGER, "
            "measured_ns INTEGER, device TEXT, PRIMARY KEY(run_id, step_id))")
for sid, segs, q, pred in steps:
    r = rows.get(sid)
    if r is None and sid == steps[0][0]:
        r = {"segments": segs, "q_tokens": q, "measured_s": pred * 1e-9}  # left out by calib eval
    if r is None or int(r["segments"]) != segs or int(r["q_tokens"]) != q:
        sys.exit(f"fidelity.sh: {tag}: step {sid} differs from the recorded one")
    con.execute("INSERT OR REPLACE INTO engine_steps VALUES(?,?,?,?,?)",
                (run, sid, pred, round(float(r["measured_s"]) * 1e9), "recorded"))
con.commit()
PY
}
for model in $models; do
    calib="${CALIB_DIR:-$out}/calib-$model.csv"
    if [ ! -f "$calib" ] && [ -n "${PROFILES:-}" ]; then
        parts=()
        for p in "$PROFILES/$model".*.csv "$PROFILES/$model".*.csv.gz; do
            [ -f "$p" ] || continue
            case "$p" in
                *.gz) gzip -dc "$p" >"$scratch/$(basename "$p" .gz)" || exit 1; parts+=("$scratch/$(basename "$p" .gz)") ;;
                *) parts+=("$p") ;;
            esac
        done
        "$bin" calib merge "${parts[@]}" --gpu "$gpu" --out "$calib" || exit 1
    fi
    if [ ! -f "$calib" ]; then
        rm -f "$scratch/profile-$model.db"
        "$bin" engine profile --gemm-cache "$gemm_cache" --ffn "$ffn" --model "$model" --db "$scratch/profile-$model.db" --reps 2 \
            ${WARM_MS:+--warm-ms "$WARM_MS"} | tail -1
        "$bin" calib import "$scratch/profile-$model.db" --gpu "$gpu" --out "$calib" || exit 1
    fi
    for policy in ${POLICIES:-dual block}; do
        popts=(--policy "$policy")
        [ "$policy" = sparse-head ] && popts=(--policy sparse --sparse-select head)
        for sched in static phase; do
            for rps in 1 4; do
                tag="$model-$policy-$sched-$rps"
                db="$scratch/run-$tag.db"
                rm -f "$db"
                batch=() # static batches of at most 8 (a parameter of the static scheduler)
                [ "$sched" = static ] && batch=(--max-batch 8)
                "$bin" sim --model "$model" --gpu "$gpu" --impl "$impl" "${popts[@]}" --scheduler "$sched" --rps "$rps" \
                    --requests 16 --lengths lognormal:6.0,0.7,5.0,0.6 --gen-len 128 "${batch[@]}" --eos bulk \
                    --seed 7 --db "$db" --quiet --no-progress >/dev/null || continue
                if [ -n "$measured" ]; then
                    attach_measured "$db" "$tag" || continue
                else
                    "$bin" engine replay --gemm-cache "$gemm_cache" --db "$db" ${OPS:+--ops} >/dev/null || continue
                fi
                "$bin" calib eval --db "$db" --calib "$calib" --extrapolate --clock "${CLOCK:-auto}" --csv "$scratch/steps-$tag.csv" |
                    awk -v m="$model" -v p="$policy" -v s="$sched" -v r="$rps" -v f="$out/fidelity.csv" '
                        /replayed steps/ { for (i = 2; i <= NF; i++) { if ($i == "replayed") steps = $(i-1); if ($i == "measured") meas = $(i+1) } }
                        /^  (calibrated|roofline) +per-step/ {
                            gsub("%", ""); printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", m, p, s, r, $1, steps, meas, $4, $7, $10 >> f
                            print m, p, s, r, $0; next }
                        /^    / { print "   ", $0 }'
                # the table's columns by name (calib eval --csv has more: max_kv, each op's times)
                awk -F, -v OFS=, -v tag="$tag" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
                    { print tag, $col["step_id"], $col["segments"], $col["q_tokens"], $col["kv_tokens"],
                          $col["logit_rows"], $col["measured_s"], $col["calibrated_s"], $col["roofline_s"] }' \
                    "$scratch/steps-$tag.csv" >>"$out/all-steps.csv"
            done
        done
    done
done
# every run skipped (no GPU, a failing build, a record without these models): say so, not a table of none
[ "$(wc -l <"$out/fidelity.csv")" -gt 1 ] || { echo "fidelity.sh: no run of $models priced; see the messages above" >&2; exit 1; }
"$(dirname "$0")/../analysis/fidelity-plot.sh" "$out"
echo "wrote $out/fidelity.csv"
