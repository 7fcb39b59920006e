#!/usr/bin/env bash
# own.sh SYSTEM OUT: a cache policy's own code against tessera's, for the records SYSTEM-own-code-h100.
# Six requests, one at a time: prompts of 128, 512 and 1,024 tokens twice, 128 positions each, one a
# step (random weights never pass a confidence threshold).
#   SYSTEM dkv: horseee/dKV-Cache generation_utils/llada_dkv_cache_decode.py generate (CODE
#     [baselines/dkv], at 49a76fc; experiments/validate/dkv.py), dKV-Cache-Decode in blocks of 32, its
#     cache refreshed every 8 steps of a block (its Table 1's for LLaDA);
#   SYSTEM elastic: yxu-dev/Elastic-Cache llada/generate.py generate_with_elastic_cache (CODE
#     [baselines/elastic], at 46c0bc3; experiments/validate/elastic.py), its GSM8K settings (a window of
#     16, threshold 0.9, gamma 0.9, one tracked token a layer);
#   SYSTEM d2cache: Kamichanw/d2Cache vanilla_generate with its d2Cache (CODE [baselines/d2cache], at
#     72feb60; experiments/validate/d2cache.py), its LLaDA-Instruct settings (one block, current_k 32,
#     rollout_p 0.1, sigma 10);
#   SYSTEM fdllm-v2, fdllm-v2-dual: NVlabs/Fast-dLLM v2/generation_functions.py batch_sample over
#     Fast-dLLM v2 7B's own model code (CODE [baselines/fast-dllm-v2], at af42f51;
#     experiments/validate/fdllm_v2.py) in its shape, as its eval.py runs it (blocks of 32, sub-blocks
#     of 8, threshold 0.9), without and with its sub-block DualCache; priced with Dream-7B's torch-eager
#     calibration, its rows named for fast-dllm-v2-7b (the same Qwen2.5-7B shape; the harness measured
#     full attention where Fast-dLLM v2's is block-causal); the dual run takes the plain one's held-out
#     grids (PROFILE_FROM=DIR: that run's OUT).
#   - MEASURE=1, on the GPU: the system's loop on LLaDA-8B's shape with random weights: OUT/forwards.csv
#     (every forward's rows and what chose them) and OUT/requests.csv; then the held-out grid (prompts
#     of 128 to 2,048 tokens, 64 positions each, twice) with its loop (OUT/SYSTEM-profile/) and with
#     LLaDA's reference loop (OUT/native/profile/, driver.py: the machine's host line; the checkouts
#     llada and fast-dllm beside CODE). Without MEASURE, OUT holds them already;
#   - compare.py SYSTEM-knobs reads the decisions its loop took into the policy's parameters (Elastic's
#     tracked tokens a step, the share of steps its drift test refreshed and from which layer; d2Cache's
#     rollout nucleus as a share of the positions it chooses among; Fast-dLLM v2's DualCache: the
#     block's steps a sub-block runs before its first position is decoded; dKV-Cache and Fast-dLLM v2
#     without its DualCache take none);
#   - tessera sim --policy SYSTEM --impl torch-SYSTEM predicts the same requests with them (the H100's
#     torch-eager calibration, the machine's host line; the implementation's issue time is what
#     `compare.py issue OUT SYSTEM-profile` gives);
#   - compare.py SYSTEM sets them side by side: OUT/SYSTEM.csv.
# Needs: with MEASURE=1, a GPU, PyTorch and transformers (d2Cache: pydantic); TESSERA [build/tessera].
set -euo pipefail
usage="usage: own.sh dkv|elastic|d2cache|fdllm-v2|fdllm-v2-dual OUT"
system=${1:?$usage} out=${2:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
code=${CODE:-baselines/${system%-dual}} bin=${TESSERA:-$root/build/tessera}
model=(--model llada-8b) calib=$root/sim/data/calib/h100-llada-8b-torch-eager.csv
prof=${system%-dual}-profile impl=torch-${system%-dual}
case $system in
dkv) policy=(--policy dkv-cache --dkv-refresh 8 --block 32) ;;
elastic) policy=(--policy elastic --ec-window 16 --block 32) ;;
d2cache) policy=(--policy d2cache --d2-k 32 --block 128) ;;
fdllm-v2 | fdllm-v2-dual)
    policy=(--policy fdllm-v2 --block 8 --v2-sub-blocks 4 --v2-dual "$([ "$system" = fdllm-v2 ] && echo 0 || echo 1)")
    model=(--model fast-dllm-v2-7b) calib=dream code=${CODE:-baselines/fast-dllm-v2} ;;
*) echo "own.sh: SYSTEM '$system' is not one of dkv, elastic, d2cache, fdllm-v2, fdllm-v2-dual" >&2 && exit 2 ;;
esac
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$calib" = dream ]; then # Dream-7B's rows, of the same shape, as Fast-dLLM v2 7B's
    calib=$tmp/h100-fast-dllm-v2-7b-torch-eager.csv
    sed 's/,dream-7b,/,fast-dllm-v2-7b,/' "$root/sim/data/calib/h100-dream-7b-torch-eager.csv" >"$calib"
fi
printf 'arrival_ns,prompt_tokens,output_tokens\n' >"$out/trace.csv"
for _ in 1 2; do for P in 128 512 1024; do echo "0,$P,128" >>"$out/trace.csv"; done; done
if [ "${MEASURE:-0}" = 1 ]; then
    base=$(dirname "$code")
    case $system in
    dkv) drive() { python3 "$here/dkv.py" --code "$code" --refresh 8 "$@"; } ;;
    elastic) drive() { python3 "$here/elastic.py" --code "$code" --model-code "$base/fast-dllm" "$@"; } ;;
    d2cache) drive() { python3 "$here/d2cache.py" --code "$code" "$@"; } ;;
    fdllm-v2) drive() { python3 "$here/fdllm_v2.py" --code "$code" "$@"; } ;;
    fdllm-v2-dual) drive() { python3 "$here/fdllm_v2.py" --code "$code" --dual "$@"; } ;;
    esac
    drive --trace "$out/trace.csv" --out "$out"
    if [ -n "${PROFILE_FROM:-}" ]; then
        cp -r "$PROFILE_FROM/$prof" "$PROFILE_FROM/native" "$out/"
    else
        mkdir -p "$out/$prof" "$out/native"
        printf 'arrival_ns,prompt_tokens,output_tokens\n' >"$out/$prof/profile.csv"
        for P in 128 512 1024 2048 128 512 1024 2048; do echo "0,$P,64" >>"$out/$prof/profile.csv"; done
        drive --trace "$out/$prof/profile.csv" --out "$out/$prof"
        python3 "$here/driver.py" --system native --code "$base/llada" --model-code "$base/fast-dllm" \
            --trace "$out/$prof/profile.csv" --out "$out/native"
    fi
fi
python3 "$here/compare.py" host "$out" "$tmp/host.csv" >/dev/null # the machine's host line (LLaDA's loop)
knobs=()
case $system in dkv | fdllm-v2) ;; *) read -r -a knobs <<<"$(python3 "$here/compare.py" "$system-knobs" "$out")" ;; esac
"$bin" sim "${model[@]}" "${policy[@]}" "${knobs[@]}" --decode fixed:1 --scheduler static --max-batch 1 \
    --trace "$out/trace.csv" --gpu h100 --impl "$impl" --host "$tmp/host.csv" --cost calibrated --extrapolate \
    --calib "$calib" --db "$tmp/$system.db" --quiet --no-progress >/dev/null
python3 "$here/compare.py" "$system" "$out" "$tmp/$system.db" >"$out/$system.csv"
cat "$out/$system.csv"
