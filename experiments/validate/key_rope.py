#!/usr/bin/env python3
"""key_rope.py: the GPU work a cached loop does over every key it reads, timed with the loops' own code.

Fast-dLLM's model file (llada/model/modeling_llada.py) keeps its K/V cache unrotated and, in every
layer of every cached forward, rotates every key again: RotaryEmbedding.forward casts q and the whole
cache's k to fp32, applies RoPE to both and casts back. dLLM-Cache's hook (dllm_cache/hooks/
cache_hook_LLaDA.py: RoPe_forward, with _attention's torch.cat of the cache and the rows' K and V) does
the same over its concatenated cache. tessera prices this as bytes a cached key's element moves
(sim/cost/impl.c: KEY_ROPE_BYTES 52, KV_CAT_BYTES 8) at the card's memory bandwidth.

For each batch B and cached length L, one layer's call on LLaDA-8B's shape (32 heads of 128, 32 query
rows a sequence over L keys) runs --reps times after --warmup, timed with CUDA events around each call
(the median is written): the rows' call alone (L = 32) and over L keys. At batch 4 the GPU is busy for
each call's whole length from 1,024 keys up, so the difference between two lengths is the cached keys'
GPU work; at batch 1 the host's issue of the call's kernels bounds it up to about 2,048 keys.
Writes CSV: loop,batch,keys,call_ms (keys 32: the rows alone).
Usage: key_rope.py --code BASELINES [--out FILE] [--lengths 1024,2048,3072,4096] [--batches 1,4]
"""
import argparse, csv, importlib, os, sys, types

import torch

ROWS, HEADS, HEAD_DIM = 32, 32, 128


def need(module):
    """einops is imported by the model file but unused here: a stand-in where missing."""
    try:
        importlib.import_module(module)
    except ImportError:
        sys.modules[module] = types.ModuleType(module)


def rotary(code):
    """Fast-dLLM's RotaryEmbedding on LLaDA-8B's configuration (rope_full_precision, theta 500,000)."""
    need("einops")
    sys.path.insert(0, os.path.join(code, "fast-dllm", "llada"))
    mdl = importlib.import_module("model.modeling_llada")
    conf = importlib.import_module("model.configuration_llada")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
    from driver import LLADA_8B
    cfg = conf.LLaDAConfig(**LLADA_8B)
    mc = mdl.create_model_config_from_pretrained_config(cfg)
    mc.init_device = "cuda"
    return mdl.RotaryEmbedding(mc, mdl.BufferCache())


def dllm_cache_call(code, rot):
    """dLLM-Cache's hook: its RoPe_forward bound to the same module, after its cat of K and V."""
    sys.path.insert(0, os.path.join(code, "dllm-cache"))
    hook = importlib.import_module("dllm_cache.hooks.cache_hook_LLaDA")
    fwd = types.MethodType(hook.RoPe_forward, rot)

    def call(q, k_past, k, v_past, v):
        kk = torch.cat((k_past, k), dim=-2)
        vv = torch.cat((v_past, v), dim=-2)
        return fwd(q, kk), vv
    return call


def time_ms(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--code", required=True, help="the checkouts (fast-dllm/, dllm-cache/), as measure.sh's CODE")
    ap.add_argument("--out", help="CSV [stdout]")
    ap.add_argument("--lengths", default="1024,2048,3072,4096", help="cached keys a sequence")
    ap.add_argument("--batches", default="1,4", help="sequences a call")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    torch.manual_seed(0)
    rot = rotary(a.code)
    cache_call = dllm_cache_call(a.code, rot)
    rows = []
    for B in (int(x) for x in a.batches.split(",")):
        q = torch.randn(B, HEADS, ROWS, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
        for L in [ROWS] + [int(x) for x in a.lengths.split(",")]:
            k = torch.randn(B, HEADS, L, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
            past = k[:, :, :L - ROWS].contiguous()
            new = k[:, :, L - ROWS:].contiguous()
            with torch.no_grad():
                rows.append(("fast-dllm", B, L, time_ms(lambda: rot(q, k), a.warmup, a.reps)))
                rows.append(("dllm-cache", B, L,
                             time_ms(lambda: cache_call(q, past, new, past, new), a.warmup, a.reps)))
            print(f"key_rope: batch {B}, {L} keys: fast-dllm {rows[-2][3]:.4f} ms, dllm-cache {rows[-1][3]:.4f} ms",
                  file=sys.stderr)
            del k, past, new
    f = open(a.out, "w", newline="") if a.out else sys.stdout
    w = csv.writer(f)
    w.writerow(["loop", "batch", "keys", "call_ms"])
    for r in rows:
        w.writerow([r[0], r[1], r[2], f"{r[3]:.4f}"])
    if a.out:
        f.close()


if __name__ == "__main__":
    main()
