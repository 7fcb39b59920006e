#!/usr/bin/env python3
"""dkv.py: dKV-Cache-Decode's own loop run on the GPU, for the record dkv-own-code-h100
(experiments/validate/own.sh dkv).

Builds LLaDA-8B's shape as driver.py does (weights normal with std 0.02 and norms 1 in bf16, one seed)
from dKV-Cache's own model file (models/modeling_llada_dkv_cache_decode.py in CODE, horseee/dKV-Cache),
then runs its generation_utils/llada_dkv_cache_decode.py generate(), unchanged, on each request of
TRACE (a tessera CSV: arrival_ns,prompt_tokens,output_tokens; prompts of random token ids), one at a
time: G positions in blocks of 32, one a step, its cache on, refreshed every REFRESH steps of a block
(cache_reloading_step). A CUDA event marks every forward of the model. Writes OUT/forwards.csv
(request,index,kind,rows,ms: kind full, refresh or cached, by the arguments its loop passes) and
OUT/requests.csv (request,prompt_tokens,gen_tokens,forwards,ms).

Usage: dkv.py --code CODE --trace FILE --out DIR [--refresh 8] [--seed 1] [--warmup 1]
"""
import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402  (its model builder and constants)
import ownloop  # noqa: E402


def main():
    ap = ownloop.arguments()
    ap.add_argument("--refresh", type=int, default=8)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sys.path.insert(0, a.code)
    model = driver.build_llada("models.modeling_llada_dkv_cache_decode", "models.configuration_llada", a.seed)
    gen = importlib.import_module("generation_utils.llada_dkv_cache_decode").generate
    g = torch.Generator().manual_seed(a.seed)

    def run(P, G, ids=None):
        prompt = torch.randint(0, driver.MASK_ID, (1, P), generator=g).cuda()
        return gen(model, None, prompt, steps=G, gen_length=G, block_length=driver.BLOCK, temperature=0.0,
                   remasking="low_confidence", mask_id=driver.MASK_ID, enable_cache=True,
                   cache_reloading_step=a.refresh)

    def describe(args, kw):
        ids = args[0] if args else kw.get("input_ids")
        kind = "cached" if kw.get("use_cache") else "refresh" if kw.get("preprocess_cache") else "full"
        return kind, int(ids.shape[1])

    ownloop.timed_requests(model, ownloop.read_requests(a.trace), run, describe, ("kind", "rows"), a.out,
                           a.warmup)


if __name__ == "__main__":
    main()
