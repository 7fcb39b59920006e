#!/usr/bin/env python3
"""elastic.py: Elastic-Cache's own loop run on the GPU, for the record elastic-own-code-h100
(experiments/validate/own.sh elastic).

Runs yxu-dev/Elastic-Cache llada/generate.py generate_with_elastic_cache(), unchanged (CODE, at 46c0bc3),
over its own model file (llada/model/modeling_llada.py) in LLaDA-8B's shape with random weights
(driver.py's builder: normal with std 0.02, norms 1, bf16, one seed), on each request of TRACE (a tessera
CSV; prompts of random token ids) one at a time, with its GSM8K settings: a window of 16 masked
positions, confidence threshold 0.9, drift bound gamma 0.9, one tracked token a layer, block caching.
The repository ships no configuration_llada.py beside its model file: Fast-dLLM's (MODEL_CODE,
NVlabs/Fast-dLLM llada/model/, the one its model file was written against) is put beside it in a
package of its own. The EOS token's output row is zeroed, so that its loop's hard-coded EOS is never
the argmax and every response is decoded to its end.

Writes OUT/forwards.csv (request,index,rows,tracked,decoded_last,window,full_from,ms: the rows the
forward's first layer runs, its three parts, and the first layer that ran every row: 0 for the first
forward, the layer after the one whose drift test fired for a refresh, empty where none did) and
OUT/requests.csv (ownloop.py).

With --prompts FILE (a JSON array of token ids a line) in place of --trace, each request is one of
its prompts with --gen positions; --weights FILE writes the model's weights (the EOS row zeroed) as
safetensors there first, for tessera engine generate --weights (the drift test on the same weights).

Usage: elastic.py --code CODE --model-code DIR (--trace FILE | --prompts FILE [--gen 128]) --out DIR
                  [--weights FILE] [--seed 1] [--warmup 1]
"""
import importlib
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402  (its model builder and constants)
import ownloop  # noqa: E402

GSM8K = dict(window_length=16, threshold=0.9, gamma=0.9, track_num=1, block_caching=True)


def model_package(code, model_code):
    """A package `model` holding Elastic-Cache's model file and Fast-dLLM's configuration file."""
    root = tempfile.mkdtemp()
    pkg = os.path.join(root, "model")
    os.makedirs(pkg)
    shutil.copy(os.path.join(code, "llada", "model", "modeling_llada.py"), pkg)
    shutil.copy(os.path.join(model_code, "llada", "model", "configuration_llada.py"), pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    return root


def main():
    ap = ownloop.arguments(trace_required=False)
    ap.add_argument("--model-code", required=True)
    ap.add_argument("--prompts")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--weights")
    a = ap.parse_args()
    driver.need("einops")
    sys.path.insert(0, os.path.join(a.code, "llada"))
    sys.path.insert(0, model_package(a.code, a.model_code))
    model = driver.build_llada("model.modeling_llada", "model.configuration_llada", a.seed)
    with torch.no_grad():
        model.model.transformer.ff_out.weight[driver.LLADA_8B["eos_token_id"]].zero_()
    if a.weights:
        from safetensors.torch import save_file
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, a.weights)
    gen = importlib.import_module("generate").generate_with_elastic_cache
    g = torch.Generator().manual_seed(a.seed)

    def run(P, G, ids=None):
        prompt = (torch.tensor([ids]) if ids else torch.randint(0, driver.MASK_ID, (1, P), generator=g)).cuda()
        return gen(model, prompt, gen_length=G, mask_id=driver.MASK_ID, eos_id=driver.LLADA_8B["eos_token_id"],
                   **GSM8K)

    def describe(args, kw):
        ids = args[0] if args else kw["input_ids"]
        pos, lengths = kw["positions"], kw["lengths"]
        rows, tracked, window = int(ids.shape[1]), int(pos[1].numel()), int(pos[2].numel())
        layers = len(model.model.transformer.blocks)
        full_from = 0 if lengths[1] == -1 else "" if lengths[1] >= layers else lengths[1]
        return rows, tracked, 0 if full_from == 0 else rows - tracked - window, window, full_from

    ownloop.write_meta(a.out, a.code, settings=GSM8K,
                       substituted=["llada/model/configuration_llada.py: Fast-dLLM's (the repository has none)"])
    reqs = ownloop.read_prompts(a.prompts, a.gen) if a.prompts else ownloop.read_requests(a.trace)
    ownloop.timed_requests(model, reqs, run, describe,
                           ("rows", "tracked", "decoded_last", "window", "full_from"), a.out, a.warmup)


if __name__ == "__main__":
    main()
