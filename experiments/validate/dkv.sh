#!/usr/bin/env bash
# dkv.sh OUT: dKV-Cache-Decode, its own code against tessera's dkv-cache policy, for the record
# dkv-own-code-h100. Six requests, one at a time: prompts of 128, 512 and 1,024 tokens twice, 128
# positions each in blocks of 32, one a step, the cache refreshed every 8 steps of a block (its Table
# 1's for LLaDA).
#   - MEASURE=1, on the GPU: experiments/validate/dkv.py runs horseee/dKV-Cache
#     generation_utils/llada_dkv_cache_decode.py (CODE [baselines/dkv], at 49a76fc) on LLaDA-8B's shape
#     with random weights: OUT/forwards.csv (every forward's kind, rows and time) and OUT/requests.csv;
#     then the held-out grid (prompts of 128 to 2,048 tokens, 64 positions each, twice) with its loop
#     (OUT/dkv-profile/, which gives its implementation torch-dkv's issue time: 1.52 of LLaDA's) and
#     with LLaDA's reference loop (OUT/native/profile/, driver.py: the machine's host line; the
#     checkouts llada and fast-dllm beside CODE). Without MEASURE, OUT holds them already;
#   - tessera sim --policy dkv-cache --impl torch-dkv predicts the same requests (the H100's torch-eager
#     calibration, the machine's host line);
#   - compare.py dkv sets them side by side: OUT/dkv.csv.
# Needs: with MEASURE=1, a GPU, PyTorch and transformers; TESSERA [build/tessera].
set -euo pipefail
out=${1:?usage: dkv.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
code=${CODE:-baselines/dkv} bin=${TESSERA:-$root/build/tessera}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'arrival_ns,prompt_tokens,output_tokens\n' >"$out/trace.csv"
for k in 1 2; do for P in 128 512 1024; do echo "0,$P,128" >>"$out/trace.csv"; done; done
if [ "${MEASURE:-0}" = 1 ]; then
    python3 "$here/dkv.py" --code "$code" --trace "$out/trace.csv" --out "$out" --refresh 8
    mkdir -p "$out/dkv-profile" "$out/native"
    printf 'arrival_ns,prompt_tokens,output_tokens\n' >"$out/dkv-profile/profile.csv"
    for P in 128 512 1024 2048 128 512 1024 2048; do echo "0,$P,64" >>"$out/dkv-profile/profile.csv"; done
    python3 "$here/dkv.py" --code "$code" --trace "$out/dkv-profile/profile.csv" --out "$out/dkv-profile" --refresh 8
    python3 "$here/driver.py" --system native --code "$(dirname "$code")/llada" --model-code "$(dirname "$code")/fast-dllm" \
        --trace "$out/dkv-profile/profile.csv" --out "$out/native"
fi
python3 "$here/compare.py" host "$out" "$tmp/host.csv" >/dev/null # the machine's host line (LLaDA's loop)
"$bin" sim --model llada-8b --policy dkv-cache --dkv-refresh 8 --decode fixed:1 --block 32 --scheduler static \
    --max-batch 1 --trace "$out/trace.csv" --gpu h100 --impl torch-dkv --host "$tmp/host.csv" --cost calibrated \
    --extrapolate --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" --db "$tmp/dkv.db" --quiet \
    --no-progress >/dev/null
python3 "$here/compare.py" dkv "$out" "$tmp/dkv.db" >"$out/dkv.csv"
cat "$out/dkv.csv"
