#!/usr/bin/env python3
"""fdllm_v2.py: Fast-dLLM v2's own loop run on the GPU, for the record fdllm-v2-own-code-h100
(experiments/validate/own.sh fdllm-v2 and fdllm-v2-dual).

Runs NVlabs/Fast-dLLM v2/generation_functions.py batch_sample(), unchanged (CODE, at af42f51), over
the model's own remote code (modeling.py and configuration.py of Efficient-Large-Model/
Fast_dLLM_v2_7B, as CODE/COMMIT names their copies) in Fast-dLLM v2 7B's shape (its config.json) with
random weights (normal with std 0.02, norms 1, bf16, one seed), on each request of TRACE (a tessera
CSV; prompts of random token ids) one at a time, as its eval.py calls it: blocks of 32, sub-blocks of
8, threshold 0.9, greedy; --dual turns its sub-block DualCache on (use_block_cache).

Its code was written against transformers 4.53.1; under transformers 5 four things it reads moved,
and this driver puts them back without touching its files: the docstring decorator (which refuses a
class of no auto class in transformers 5: the class as it is), the "default" RoPE initialisation
(transformers 4.53.1's formula), a cache's layer by index (each layer's keys and values) and, where
the installed Cache class has none, its layer count. Two inputs keep a random model's run to its end:
no stop token (-1: no request finishes early, so the cleanup that needs transformers 4's cache fields
never runs) and the mask token never chosen (its logit set to -inf before the loop's own sampling;
a chosen mask token would leave its position masked, and greedy decoding would repeat the step).

Writes OUT/forwards.csv (request,index,rows,cached,writes,block_cache,ms: the rows a forward runs, the
cached positions before them, whether it writes them to the cache (the prefill and a finished block's
commit), and whether it runs a sub-block over the block's kept K/V (1) or keeps them (2)) and
OUT/requests.csv (ownloop.py).

Usage: fdllm_v2.py --code CODE --trace FILE --out DIR [--dual] [--seed 1] [--warmup 1]
"""
import importlib
import json
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # noqa: E402  (need: a stand-in for a module imported and never called)
import ownloop  # noqa: E402

EVAL = dict(block_size=32, small_block_size=8, threshold=0.9, mask_id=151665, stop_token=-1)
PAD_ID = 151643  # its tokenizer's pad_token_id, the one thing batch_sample reads of the tokenizer


def shims():
    """transformers 5's counterparts of what the model file reads of transformers 4.53.1."""
    from transformers import cache_utils, modeling_rope_utils

    def default_rope(config, device=None, seq_len=None, **_):
        head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        dim = int(head * getattr(config, "partial_rotary_factor", 1.0))
        theta = getattr(config, "rope_theta", None) or config.rope_parameters["rope_theta"]
        inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
        return inv, 1.0

    import transformers.utils

    done = []
    try:  # transformers 5's docstring decorator refuses a class its auto classes do not know
        transformers.utils.auto_docstring(type("Fast_dLLM_QwenForCausalLM", (), {}))
    except ValueError:
        def as_is(obj=None, **_):
            return obj if obj is not None else (lambda o: o)

        transformers.utils.auto_docstring = as_is
        done.append("auto_docstring: the class as it is (its docstrings unchecked)")
    if "default" not in modeling_rope_utils.ROPE_INIT_FUNCTIONS:
        modeling_rope_utils.ROPE_INIT_FUNCTIONS["default"] = default_rope
        done.append("ROPE_INIT_FUNCTIONS['default']: transformers 4.53.1's formula")
    if not hasattr(cache_utils.Cache, "__getitem__"):
        cache_utils.Cache.__getitem__ = lambda self, i: (self.layers[i].keys, self.layers[i].values)
        done.append("Cache[i]: layer i's (keys, values)")
    if not hasattr(cache_utils.Cache, "__len__"):
        cache_utils.Cache.__len__ = lambda self: sum(getattr(l, "keys", None) is not None for l in self.layers)
        done.append("len(Cache): its filled layers")
    return done


def config_of(code, **over):
    """Fast-dLLM v2 7B's configuration (CODE's copy of its config.json), with OVER replaced."""
    conf = importlib.import_module("configuration")
    with open(os.path.join(code, "hf_Fast_dLLM_v2_7B_config.json")) as f:
        d = json.load(f)
    for k in ("architectures", "auto_map", "model_type", "transformers_version", "torch_dtype"):
        d.pop(k, None)
    d.update(over)
    if "num_hidden_layers" in over:
        d["layer_types"] = ["full_attention"] * over["num_hidden_layers"]
    return conf.Fast_dLLM_QwenConfig(**d)


def build(code, seed, device="cuda", **over):
    """The model from CODE's files with random weights, in bf16 on DEVICE, in eval mode, its loop bound,
    its sampling never choosing the mask token."""
    sys.path.insert(0, code)
    driver.need("einops")
    done = shims()
    mdl = importlib.import_module("modeling")
    gen = importlib.import_module("generation_functions")
    cfg = config_of(code, **over)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = mdl.Fast_dLLM_QwenForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    model = model.to(device=device, dtype=torch.bfloat16).eval()
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1 and p.shape[0] == cfg.hidden_size and p.dtype.is_floating_point:
                p.fill_(1.0)  # the norms (the QKV biases, of other widths, stay random)
            else:
                p.normal_(0.0, 0.02, generator=g)
    sample = model.sample_with_top_p

    def no_mask(logits, *a, **kw):
        logits = logits.clone()
        logits[..., EVAL["mask_id"]] = float("-inf")
        return sample(logits, *a, **kw)

    model.sample_with_top_p = no_mask
    model.mdm_sample = types.MethodType(gen.Fast_dLLM_QwenForCausalLM.batch_sample, model)
    return model, done


def generate(model, prompt, G, dual):
    """batch_sample over one prompt [1, P] as eval.py calls it, G positions; the output row."""
    P = prompt.shape[1]
    out = model.mdm_sample(prompt, tokenizer=types.SimpleNamespace(pad_token_id=PAD_ID),
                           max_new_tokens=G, min_len=P, seq_len=torch.tensor([P], device=prompt.device),
                           use_block_cache=dual, **EVAL)
    return out[0]


def describe(args, kw):
    """A forward's columns: its rows, the cached positions, whether it writes them, its block cache."""
    ids = kw.get("input_ids", args[0] if args else None)
    rows, past, writes = int(ids.shape[1]), kw.get("past_key_values"), bool(kw.get("update_past_key_values"))
    cached = int(past.get_seq_length()) - (rows if writes else 0) if past is not None else 0  # (read after it)
    block = 1 if kw.get("block_past_key_values") is not None else 2 if kw.get("use_block_cache") else 0
    return [rows, cached, int(writes), block]


def main():
    ap = ownloop.arguments()
    ap.add_argument("--dual", action="store_true")
    a = ap.parse_args()
    model, done = build(a.code, a.seed)
    g = torch.Generator().manual_seed(a.seed)

    def run(P, G, ids=None):
        prompt = torch.randint(0, EVAL["mask_id"], (1, P), generator=g).cuda()
        return generate(model, prompt, G, a.dual)

    ownloop.timed_requests(model, ownloop.read_requests(a.trace), run, describe,
                           ["rows", "cached", "writes", "block_cache"], a.out, a.warmup)
    ownloop.write_meta(a.out, a.code, settings=dict(EVAL, dual=a.dual), substituted=done)


if __name__ == "__main__":
    main()
