#!/usr/bin/env bash
# prophet.sh OUT: Prophet's early commit, its own code against tessera's engine, on one GPU, for the record
# prophet-own-code-h100. Four prompts of 128 random token ids (seed 7), 128 positions each in blocks of
# 32, one a step, the answer region 5 positions from response offset 100; three sets of thresholds
# (random weights' top-2 gaps are tenths of a logit: Prophet's own 7.5, 5, 2.5 never fire on them).
#   - experiments/validate/prophet.py runs pixeli99/Prophet generate_earlyexit.py (CODE [baselines/prophet])
#     on LLaDA-8B's shape with random weights (Fast-dLLM's model file, MODEL_CODE [baselines/fast-dllm]),
#     and writes those weights as safetensors (WEIGHTS [/tmp/llada-random.safetensors], 16 GB);
#   - tessera engine generate runs the same prompts on the same weights (--weights) with --policy
#     vanilla --decoder topk:1 --prophet 100,EARLY,MID,LATE, each set's outcomes in OUT/tessera-K.jsonl;
#   - compare.py prophet sets them side by side: OUT/prophet.csv.
# Needs: a GPU, PyTorch, safetensors, and TESSERA [build/gpu/tessera] built with CUDA.
set -euo pipefail
out=${1:?usage: prophet.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
code=${CODE:-baselines/prophet} model_code=${MODEL_CODE:-baselines/fast-dllm}
bin=${TESSERA:-build/gpu/tessera} weights=${WEIGHTS:-/tmp/llada-random.safetensors}
sets="0.5,0.4,0.3;0.3,0.25,0.2;1,0.5,0.25"
mkdir -p "$out"
python3 -c 'import random; r = random.Random(7); print("\n".join(str([r.randrange(126000) for _ in range(128)]) for _ in range(4)))' \
    >"$out/prompts.jsonl"
python3 "$here/prophet.py" --code "$code" --model-code "$model_code" --prompts "$out/prompts.jsonl" --weights "$weights" \
    --out "$out/prophet.jsonl" --gen 128 --offset 100 --thresholds "$sets" >"$out/prophet.log" 2>&1
k=0
IFS=';' read -ra each <<<"$sets"
for t in "${each[@]}"; do
    "$bin" engine generate --model llada-8b --weights "$weights" --prompts "$out/prompts.jsonl" --policy vanilla \
        --decoder topk:1 --gen-len 128 --block 32 --prophet "100,$t" --requests-out "$out/tessera-$k.jsonl" \
        >"$out/tessera-$k.txt" 2>&1
    k=$((k + 1))
done
python3 "$here/compare.py" prophet "$out" "$sets" >"$out/prophet.csv"
cat "$out/prophet.csv"
