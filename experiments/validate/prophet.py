#!/usr/bin/env python3
"""prophet.py: Prophet's own early-commit loop run on the GPU, for the record prophet-own-code-h100
(experiments/validate/prophet.sh runs it beside `tessera engine generate --prophet` on the same weights).

Builds LLaDA-8B's shape as driver.py does (Fast-dLLM's llada/model/modeling_llada.py, weights drawn
normal with std 0.02 and norms 1 in bf16, one seed), writes those weights as safetensors in LLaDA's own
names (WEIGHTS, which the engine loads with --weights), then runs pixeli99/Prophet
generate_earlyexit.py generate() from CODE, unchanged, on every prompt of PROMPTS (a JSON array of
token ids a line): G positions in blocks of 32, one a step (steps = G), its top-2 gap test over the 5
answer positions from response offset OFFSET, once at each set of thresholds given. Writes OUT, a JSON
object a prompt and set: the set's index, the prompt's length, the step at which Prophet committed its
rest (0: never) and its ids.

Usage: prophet.py --code CODE --model-code FAST_DLLM --prompts FILE --weights FILE --out FILE
                  --gen G --offset OFFSET --thresholds EARLY,MID,LATE[;EARLY,MID,LATE...] [--seed S]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402  (its model builder and constants)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", required=True)
    ap.add_argument("--model-code", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--offset", type=int, required=True)
    ap.add_argument("--thresholds", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    sets = [[float(x) for x in t.split(",")] for t in a.thresholds.split(";")]
    sys.path.insert(0, os.path.join(a.model_code, "llada"))
    model = driver.build_llada("model.modeling_llada", "model.configuration_llada", a.seed)
    if not os.path.exists(a.weights):
        from safetensors.torch import save_file
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, a.weights)
    sys.path.insert(0, a.code)
    gen = __import__("generate_earlyexit").generate
    prompts = [json.loads(line) for line in open(a.prompts) if line.strip()]
    with open(a.out, "w") as out:
        for k, (early, mid, late) in enumerate(sets):
            for i, ids in enumerate(prompts):
                prompt = torch.tensor([ids], dtype=torch.long, device="cuda")
                x, info = gen(model, prompt, steps=a.gen, gen_length=a.gen, block_length=driver.BLOCK,
                              temperature=0.0, cfg_scale=0.0, remasking="low_confidence", mask_id=driver.MASK_ID,
                              analyze_gap=True, answer_start_pos=len(ids) + a.offset,
                              early_exit_thresholds={"early": early, "mid": mid, "late": late})
                ex = info["exit_info"]
                out.write(json.dumps({"set": k, "request": i, "prompt": len(ids),
                                      "prophet_exit_steps": ex["exit_decision_step"] if ex["early_exit_triggered"] else 0,
                                      "ids": x[0, len(ids):].tolist()}) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
