#!/usr/bin/env bash
# dkv.sh OUT: dKV-Cache-Decode, its own code against tessera's dkv-cache policy, for the record
# dkv-own-code-h100. Six requests, one at a time: prompts of 128, 512 and 1,024 tokens twice, 128
# positions each in blocks of 32, one a step, the cache refreshed every 8 steps of a block (its Table
# 1's for LLaDA).
#   - MEASURE=1: experiments/validate/dkv.py runs horseee/dKV-Cache generation_utils/llada_dkv_cache_decode.py
#     (CODE [baselines/dkv], at 49a76fc) on LLaDA-8B's shape with random weights: OUT/forwards.csv (every
#     forward's kind, rows and time) and OUT/requests.csv; without it, OUT holds them already;
#   - tessera sim --policy dkv-cache predicts the same requests (the H100's torch-eager calibration, its
#     loop's float64 softmax: torch-eager-f64);
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
[ "${MEASURE:-0}" = 1 ] && python3 "$here/dkv.py" --code "$code" --trace "$out/trace.csv" --out "$out" --refresh 8
"$bin" sim --model llada-8b --policy dkv-cache --dkv-refresh 8 --decode fixed:1 --block 32 --scheduler static \
    --max-batch 1 --trace "$out/trace.csv" --gpu h100 --impl torch-eager-f64 --cost calibrated --extrapolate \
    --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" --db "$tmp/dkv.db" --quiet --no-progress >/dev/null
python3 "$here/compare.py" dkv "$out" "$tmp/dkv.db" >"$out/dkv.csv"
cat "$out/dkv.csv"
