#!/usr/bin/env bash
# d2cache_rollout.sh OUT: d2Cache's attention rollout, its own loop against tessera engine generate --d2-rollout on
# the same weights, on one GPU, for d2cache-own-code-h100/rollout. Four prompts of random token ids (seed 7), two
# of 128 tokens and two of 512, 128 positions each, its LLaDA-Instruct settings (one block, one position a step,
# current_k 32, rollout_p 0.1).
#   - experiments/validate/d2cache.py runs Kamichanw/d2Cache's vanilla_generate with its d2Cache (CODE
#     [baselines/d2cache]) on LLaDA-8B's shape with random weights, every forward's rows and its nucleus
#     (OUT/own/), and writes those weights as safetensors (WEIGHTS [/tmp/llada-d2cache.safetensors], 16 GB);
#   - tessera engine generate runs the same prompts on the same weights (--weights) with --policy vanilla
#     --decoder topk:1 --block 128 --d2-rollout 0.1,32: the same rule over the whole sequence's fresh attention
#     (OUT/tessera.jsonl, OUT/tessera.txt);
#   - compare.py d2cache-rollout sets them side by side: OUT/rollout.csv.
# Needs: a GPU, PyTorch, safetensors, pydantic (d2cache.py), and TESSERA [build/gpu/tessera] built with CUDA.
# Without MEASURE=1, OUT holds both sides already and only the comparison runs.
set -euo pipefail
out=${1:?usage: d2cache_rollout.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
code=${CODE:-baselines/d2cache} bin=${TESSERA:-build/gpu/tessera} weights=${WEIGHTS:-/tmp/llada-d2cache.safetensors}
mkdir -p "$out"
if [ "${MEASURE:-0}" = 1 ]; then
    python3 -c 'import random; r = random.Random(7); print("\n".join(str([r.randrange(126000) for _ in range(n)]) for n in (128, 128, 512, 512)))' \
        >"$out/prompts.jsonl"
    python3 "$here/d2cache.py" --code "$code" --prompts "$out/prompts.jsonl" --gen 128 --weights "$weights" \
        --out "$out/own" >"$out/own.log" 2>&1
    "$bin" engine generate --model llada-8b --weights "$weights" --prompts "$out/prompts.jsonl" --policy vanilla \
        --decoder topk:1 --gen-len 128 --block 128 --d2-rollout 0.1,32 --requests-out "$out/tessera.jsonl" \
        >"$out/tessera.txt" 2>&1
fi
python3 "$here/compare.py" d2cache-rollout "$out" >"$out/rollout.csv"
cat "$out/rollout.csv"
