#!/usr/bin/env bash
# elastic_drift.sh OUT: Elastic-Cache's drift test, its own loop against tessera engine generate --elastic-drift on
# the same weights, on one GPU, for elastic-own-code-h100/drift. Four prompts of random token ids (seed 7), two
# of 128 tokens and two of 512, 128 positions each, its GSM8K settings (window 16, gamma 0.9).
#   - experiments/validate/elastic.py runs yxu-dev/Elastic-Cache generate_with_elastic_cache (CODE
#     [baselines/elastic]) on LLaDA-8B's shape with random weights, every forward's tracked tokens and the layer
#     its test refreshed from (OUT/own/), and writes those weights as safetensors (WEIGHTS
#     [/tmp/llada-elastic.safetensors], 16 GB);
#   - tessera engine generate runs the same prompts on the same weights (--weights) with --policy vanilla
#     --decoder topk:1 --elastic-drift 0.9,16: the same test over the whole sequence's fresh attention, each
#     key's from the step Elastic-Cache's schedule last computed it (OUT/tessera.jsonl, OUT/tessera.txt);
#   - compare.py elastic-drift sets them side by side: OUT/drift.csv.
# Needs: a GPU, PyTorch, safetensors, and TESSERA [build/gpu/tessera] built with CUDA. Without MEASURE=1, OUT
# holds both sides already and only the comparison runs.
set -euo pipefail
out=${1:?usage: elastic_drift.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
code=${CODE:-baselines/elastic} bin=${TESSERA:-build/gpu/tessera} weights=${WEIGHTS:-/tmp/llada-elastic.safetensors}
mkdir -p "$out"
if [ "${MEASURE:-0}" = 1 ]; then
    python3 -c 'import random; r = random.Random(7); print("\n".join(str([r.randrange(126000) for _ in range(n)]) for n in (128, 128, 512, 512)))' \
        >"$out/prompts.jsonl"
    python3 "$here/elastic.py" --code "$code" --model-code "$(dirname "$code")/fast-dllm" --prompts "$out/prompts.jsonl" \
        --gen 128 --weights "$weights" --out "$out/own" >"$out/own.log" 2>&1
    "$bin" engine generate --model llada-8b --weights "$weights" --prompts "$out/prompts.jsonl" --policy vanilla \
        --decoder topk:1 --gen-len 128 --block 32 --elastic-drift 0.9,16 --requests-out "$out/tessera.jsonl" \
        >"$out/tessera.txt" 2>&1
fi
python3 "$here/compare.py" elastic-drift "$out" >"$out/drift.csv"
cat "$out/drift.csv"
