#!/usr/bin/env python3
"""d2cache.py: d2Cache's own loop run on the GPU, for the record d2cache-own-code-h100
(experiments/validate/own.sh d2cache).

Runs Kamichanw/d2Cache's src/generation/vanilla.py vanilla_generate() with its src/cache/d2cache.py
d2Cache, unchanged (CODE, at 72feb60), over its own model file (src/models/llada/) in LLaDA-8B's shape
with random weights (driver.py's draw: normal with std 0.02, norms 1, bf16, one seed), on each request
of TRACE (a tessera CSV; prompts of random token ids) one at a time, with the settings its Hydra
configuration gives LLaDA-Instruct with cache=d2cache (configs/gen_args.py, configs/cache/d2cache.yaml):
one block of the whole response, one position a step (maskgit_plus, sigma 10), current_k 32, rollout_p
0.1, sigma 10, no inflation; eager attention, which d2Cache needs for the weights.

What the driver changes, only glue: its package imports its evaluation stack (omegaconf, hydra, loguru,
dotenv, dill, lm_eval, accelerate) though this path calls none of it: a module whose attributes are
no-ops stands in where one is missing; its LLaDAModelLM.tie_weights takes no argument, which
transformers 5's post_init passes (with weight_tying off it does nothing): a no-op stands in.

Writes OUT/forwards.csv (request,index,rows,masked,others,ms: the rows every layer runs, the masked
positions among them, the rest: the position the step before decoded and the rollout's nucleus) and
OUT/requests.csv (ownloop.py).

With --prompts FILE (a JSON array of token ids a line) in place of --trace, each request is one of
its prompts with --gen positions; --weights FILE writes the model's weights as safetensors there
first, for tessera engine generate --weights (the rollout measured on the same weights).

Usage: d2cache.py --code CODE (--trace FILE | --prompts FILE [--gen 128]) --out DIR [--weights FILE]
                  [--seed 1] [--warmup 1]
"""
import functools
import importlib
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402  (its weights' draw and constants)
import ownloop  # noqa: E402

EVAL_STACK = ("omegaconf", "hydra", "hydra.utils", "hydra.core", "hydra.core.hydra_config", "loguru", "dotenv", "dill",
              "lm_eval", "lm_eval.api", "lm_eval.api.model", "lm_eval.api.instance", "accelerate", "accelerate.utils")
CACHE = dict(rollout_p=0.1, current_k=32, sigma=10.0, inflate_w=0)
STOOD_IN = []  # the modules of EVAL_STACK not installed


class _NoOps(type):
    def __getattr__(cls, name):  # OmegaConf.register_new_resolver(...) and the like
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None


class NoOp(metaclass=_NoOps):
    def __init__(self, *a, **k):
        pass


def _attr(name):  # dunders stay missing: inspect reads __file__ of every module
    if name.startswith("__"):
        raise AttributeError(name)
    return NoOp


def stand_in(mod):
    try:
        importlib.import_module(mod)
    except Exception:
        m = types.ModuleType(mod)
        m.__path__ = []
        m.__getattr__ = _attr
        sys.modules[mod] = m
        STOOD_IN.append(mod)


def main():
    ap = ownloop.arguments(trace_required=False)
    ap.add_argument("--prompts")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--weights")
    a = ap.parse_args()
    for mod in EVAL_STACK:
        stand_in(mod)
    eos = driver.LLADA_8B["eos_token_id"]
    os.environ.update(MASK_TOKEN_ID=str(driver.MASK_ID), EOS_TOKEN_ID=str(eos), PAD_TOKEN_ID=str(eos))
    sys.path.insert(0, a.code)
    d2 = importlib.import_module("src.cache.d2cache").d2Cache
    vanilla = importlib.import_module("src.generation.vanilla").vanilla_generate
    conf = importlib.import_module("src.models.llada.configuration_llada")
    mdl = importlib.import_module("src.models.llada.modeling_llada")
    mdl.LLaDAModelLM.tie_weights = lambda self, *args, **kw: None
    cfg = conf.LLaDAConfig(**driver.LLADA_8B, attn_implementation="eager")
    cfg.use_cache = False
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = mdl.LLaDAModelLM(cfg)
    torch.set_default_dtype(torch.float32)
    model.eval()
    driver.random_init(model, a.seed)
    assert model.model.transformer.blocks[0].config._attn_implementation == "eager"
    if a.weights:
        from safetensors.torch import save_file
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, a.weights)
    g = torch.Generator().manual_seed(a.seed)
    cache_cls = functools.partial(d2, **CACHE)

    def run(P, G, ids=None):
        prompt = (torch.tensor([ids]) if ids else torch.randint(0, eos, (1, P), generator=g)).cuda()
        return vanilla(model, prompt, attention_mask=torch.ones_like(prompt), alg="maskgit_plus", gen_length=G,
                       block_length=G, num_transfer_tokens=1, temperature=0.0, sigma=10.0,
                       mask_token_id=driver.MASK_ID, pad_token_id=eos, eos_token_id=eos, stop_until_eos=False,
                       cache_cls=cache_cls)

    def describe(args, kw):
        x = args[0] if args else kw["input_ids"]
        sel = kw["past_key_values"]._full_q_mask  # the rows this forward ran (None: the first, every row)
        ran = torch.ones_like(x[0], dtype=torch.bool) if sel is None else sel[0]
        rows, masked = ran.sum(), ((x[0] == driver.MASK_ID) & ran).sum()
        return rows, masked, rows - masked

    ownloop.write_meta(a.out, a.code, stood_in=STOOD_IN, cache=CACHE)
    reqs = ownloop.read_prompts(a.prompts, a.gen) if a.prompts else ownloop.read_requests(a.trace)
    ownloop.timed_requests(model, reqs, run, describe, ("rows", "masked", "others"), a.out, a.warmup)


if __name__ == "__main__":
    main()
