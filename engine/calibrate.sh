#!/usr/bin/env bash
# calibrate.sh OUT [MODEL]: calibrates tessera on this machine's GPU in one command (make calibrate).
#   1. finds the GPU and its entry in tessera's table; a card the table lacks gets its ceilings
#      measured (engine_bench's GEMM rate and copy bandwidth) and written as a --gpu-file entry;
#   2. profiles the engine over the whole grid for MODEL [llada-8b] (select part included);
#   3. imports and fits the profile as the calibration of this GPU, MODEL and the tessera engine;
#   4. with TORCH=1, profiles PyTorch eager too where python3 imports torch (the torch-eager
#      implementation; its harness runs the model's shapes: the dense models, not the mixtures of
#      experts). It adds about 200 s on an H100 to the 250 s the other stages take
#      (records/calibrate-time-h100), so it is off unless asked for; without it, where torch imports,
#      the host probe (tessera calib host --probe: PyTorch eager's host on this machine, about a
#      minute) writes OUT/host.csv, installed as host-GPU.csv beside the calibrations;
#   5. replays a held-out schedule (16 requests the profile never ran) on the engine and prices it:
#      the calibration's per-step MAPE against the roofline's;
#   6. fits the card's clock under its power limit (tessera sim --clock): eight steps benched alone,
#      each from a cool card (engine_bench --only clock), fitted by tessera calib clock;
#   7. installs the calibrations and the clock's line (clock.csv) where --cost calibrated looks first
#      (tessera list calibrations: $TESSERA_CALIB_DIR, else ~/.local/share/tessera/calib), writes
#      OUT/report.txt and packs what the project needs into OUT/tessera-calibration-GPU-MODEL.tar.gz
#      (calib_bundle.sh).
# Progress goes to stderr a line a stage; the report to stdout and OUT/report.txt.
# Environment: TESSERA (the binary, build/tessera), IMPL (tessera or tessera-fused: the engine's
# FFN), REPS (profile repetitions, 2), TORCH=1 (profile PyTorch eager too).
set -uo pipefail
out=${1:?usage: calibrate.sh OUT [MODEL]}
model=${2:-llada-8b}
bin=${TESSERA:-build/tessera}
eb=$(dirname "$bin")/engine_bench # the engine's benchmark, beside it
impl=${IMPL:-tessera}
root=$(cd "$(dirname "$0")/.." && pwd)
ffn="split"
[ "$impl" = tessera-fused ] && ffn="fused"
mkdir -p "$out"
eng=(--gemm-cache "$out/gemm-algos.db" --ffn "$ffn") # every engine command's: one algorithm cache, the FFN
step() { echo "calibrate: [$1/7] $2" >&2; }
die() { echo "calibrate: $*" >&2; exit 1; }
[ -x "$bin" ] || die "no $bin (build it with make: the engine needs nvcc)"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no NVIDIA GPU here"

# 1. the GPU and its table entry
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
mem_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
gpu=$("$bin" list gpus --device "$name" "${mem_mib%%.*}") || gpu=
gpu_opts=()
if [ -n "$gpu" ]; then
    step 1 "GPU: $name ($mem_mib MiB): tessera's entry $gpu"
else
    gpu=$(echo "$name" | tr '[:upper:]' '[:lower:]' | sed 's/nvidia //; s/[^a-z0-9]\+/-/g; s/-$//')
    step 1 "GPU: $name ($mem_mib MiB): not in tessera's table; measuring its ceilings as entry $gpu"
    "$eb" "${eng[@]}" --model "$model" --only gemm >"$out/ceilings.txt" 2>&1 || die "engine_bench failed ($out/ceilings.txt)"
    read -r tflops tbs < <(awk '/^ceilings:/ { for (i = 1; i <= NF; i++) { if ($i == "TFLOP/s,") t = $(i-1); if ($i == "TB/s") b = $(i-1) } }
        END { print t, b }' "$out/ceilings.txt")
    { [ -n "$tflops" ] && [ -n "$tbs" ]; } || die "no ceilings in $out/ceilings.txt"
    printf '{"%s": {"mem_gib": %.2f, "bf16_tflops": %s, "mem_bw_gbs": %.0f}}\n' "$gpu" \
        "$(echo "$mem_mib / 1024" | bc -l)" "$tflops" "$(echo "$tbs * 1000" | bc -l)" >"$out/gpu.json"
    gpu_opts=(--gpu-file "$out/gpu.json")
fi

# 2-3. the engine's profile, fitted
step 2 "profiling $model on the engine ($impl), the whole grid: a few minutes"
rm -f "$out/profile.db"
"$bin" engine profile "${eng[@]}" --model "$model" --db "$out/profile.db" --reps "${REPS:-2}" >"$out/profile.txt" 2>&1 ||
    die "engine profile failed ($out/profile.txt)"
calib="$out/$gpu-$model-$impl.csv"
step 3 "fitting the profile: $calib"
"$bin" calib import "$out/profile.db" --gpu "$gpu" "${gpu_opts[@]}" --out "$calib" >"$out/import.txt" 2>&1 ||
    die "calib import failed: $(cat "$out/import.txt")"

# 4. PyTorch eager, where it is importable: the model's shape as tessera lists it, its QKV bias and QK
# norms; a mixture of experts where the harness runs its form (a softmax router choosing K of E experts,
# renormalised, no shared expert: LLaDA-MoE-7B's), its experts a grouped MoE
torch_calib=
shape=$("$bin" list models | awk -v m="$model" '$1 == m && ($10 == "-" || ($10 ~ /^[0-9]+\/[0-9]+x[0-9]+\+0$/ && $14 == "softmax,norm")) {
    printf "--layers %s --hidden %s --heads %s --kv-heads %s --head-dim %s --ffn %s --vocab %s", $2, $3, $4, $5, $6, $7, $8
    if ($13 ~ /(^|,)bias(,|$)/) printf " --qkv-bias"; if ($13 ~ /qk-norm/) printf " --qk-norm"
    if ($10 != "-") { split($10, e, /[\/x+]/); printf " --experts %s --top-k %s --expert-ffn %s", e[2], e[1], e[3] } }')
if [ "${TORCH:-0}" = 1 ] && [ -n "$shape" ] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    step 4 "profiling PyTorch eager (engine/bench/torch_profile.py)"
    torch_calib="$out/$gpu-$model-torch-eager.csv"
    # shellcheck disable=SC2086
    if ! python3 "$root/engine/bench/torch_profile.py" --model "$model" $shape --out "$out/torch-profile.csv" \
            >"$out/torch.txt" 2>&1 ||
        ! "$bin" calib import "$out/torch-profile.csv" --gpu "$gpu" "${gpu_opts[@]}" --out "$torch_calib" \
            >>"$out/torch.txt" 2>&1; then
        echo "calibrate: the PyTorch profile failed ($out/torch.txt); going on without it" >&2
        torch_calib=
    fi
elif python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    step 4 "PyTorch eager's host on this machine: the host probe (about a minute; TORCH=1 profiles the whole grid)"
    "$bin" calib host --probe --out "$out/host.csv" >"$out/host.txt" 2>&1 ||
        echo "calibrate: the host probe failed ($out/host.txt); going on without it" >&2
else
    step 4 "PyTorch eager: skipped (torch with CUDA does not import here)"
fi

# 5. a held-out schedule: simulated, replayed on the engine, priced
step 5 "replaying a held-out schedule (16 requests) and pricing it"
rm -f "$out/heldout.db"
"$bin" sim --model "$model" --gpu "$gpu" "${gpu_opts[@]}" --impl "$impl" --requests 16 --rps 4 --gen-len 128 \
    --lengths lognormal:6.5,0.6,5.0,0.6 --seed 11 --db "$out/heldout.db" --quiet --no-progress >/dev/null ||
    die "the held-out simulation failed"
"$bin" engine replay "${eng[@]}" --db "$out/heldout.db" >"$out/replay.txt" 2>&1 || die "engine replay failed ($out/replay.txt)"
"$bin" calib eval --db "$out/heldout.db" --calib "$calib" --extrapolate >"$out/eval.txt" 2>&1 ||
    die "calib eval failed ($out/eval.txt)"

# 6. the card's clock under its power limit, fitted to the warm traces of eight steps from a cool card
# (the GEMM rate the card held in the same bench gives each step's load)
step 6 "the card's clock under its power limit: eight steps, each from a cool card (about a minute)"
clock_line=
if "$eb" "${eng[@]}" --model "$model" --only clock --warm-s 1.5 --warm-trace "$out/warm.csv" \
        >"$out/clock-bench.txt" 2>&1; then
    held=$(awk '/held back to back/ { for (i = 2; i <= NF; i++) if ($i == "TFLOP/s") { print $(i - 1); exit } }' \
        "$out/clock-bench.txt")
    if "$bin" calib clock "$out/warm.csv" --gpu "$gpu" "${gpu_opts[@]}" --model "$model" --held-tflops "$held" \
            >"$out/clock-fit.txt" 2>&1; then
        clock_line=$(awk -F': ' '/^clock.csv: / { print $2 }' "$out/clock-fit.txt")
        clock_line="${clock_line%,RECORD},make calibrate $(date +%F)"
    fi
fi
[ -n "$clock_line" ] || echo "calibrate: the clock's fit failed ($out/clock-bench.txt, $out/clock-fit.txt); going on without it" >&2

# 7. installed where --cost calibrated looks first
dir=${TESSERA_CALIB_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/tessera/calib}
step 7 "installing into $dir"
mkdir -p "$dir" || die "cannot create $dir"
cp "$calib" "$dir/" || die "cannot write $dir"
[ -n "$torch_calib" ] && cp "$torch_calib" "$dir/"
[ -s "$out/host.csv" ] && cp "$out/host.csv" "$dir/host-$gpu.csv"
if [ -n "$clock_line" ]; then # this card's line replaces any earlier one of it
    { echo "gpu,k,tau_ms,lo,hi,held_tflops,record"
      [ -f "$dir/clock.csv" ] && tail -n +2 "$dir/clock.csv" | awk -F, -v g="$gpu" '$1 != g'
      echo "$clock_line"; } >"$out/clock.csv" || die "cannot write $out/clock.csv"
    cp "$out/clock.csv" "$dir/clock.csv" || die "cannot write $dir/clock.csv"
fi
{
    echo "tessera calibration of $name ($gpu), $model, $impl engine"
    echo "  profile      $(tail -1 "$out/profile.txt")"
    echo "  calibration  $dir/$(basename "$calib")${torch_calib:+ and $(basename "$torch_calib")}"
    [ ${#gpu_opts[@]} -gt 0 ] && echo "  GPU entry    $out/gpu.json (not in tessera's table: pass --gpu-file $out/gpu.json --gpu $gpu)"
    [ -s "$out/host.csv" ] && echo "  host         $dir/host-$gpu.csv: $(grep -m1 '^host of ' "$out/host.txt" | sed 's/^host of [^:]*: //') (PyTorch eager's loops as this machine issues them: tessera sim --host $dir/host-$gpu.csv)"
    echo "  held-out schedule, replayed on the engine and priced:"
    sed -n 's/^  \(calibrated\|roofline\)/    \1/p' "$out/eval.txt"
    if [ -n "$clock_line" ]; then
        echo "  clock        $dir/clock.csv: $(sed -n 2p "$out/clock-fit.txt")"
    else
        echo "  clock        not fitted (tessera sim prices each step at its own steady state on this card)"
    fi
    echo "  use it:      tessera sim --gpu $gpu ${gpu_opts[*]:+${gpu_opts[*]} }--model $model --impl $impl --cost calibrated"
    echo "  send it:     $out/tessera-calibration-$gpu-$model.tar.gz (sim/docs/calibration.md, \"Sending a calibration\")"
} | tee "$out/report.txt"
TESSERA=$bin bash "$root/engine/calib_bundle.sh" "$out" "$gpu" "$model" >/dev/null || die "cannot bundle $out"
