#!/usr/bin/env python3
"""torch_lmax.py: PyTorch's own L_max and reserved memory for a whole-sequence dLLM step, eager and
under torch.compile (Mosaic's baselines, measured).

One step of a whole sequence of L tokens (no KV cache, as Mosaic's workload runs) of a model's shape
(random bf16 weights, every layer's held on the GPU; torch_model.py's layer, the one
torch_profile.py times), then the logits of every row and their confidence: softmax in fp32
(torch.softmax(..., dtype=float32): the fp32 copy of `tessera mem --softmax-copy 4`) and its max. Three ways of running it:
  eager        PyTorch eager (Native and Mosaic-Torch)
  compile      the layers compiled by torch.compile (default mode, dynamic shapes), the LM head and
               the sampling eager, as a serving framework compiles the model's forward but not its
               sampler (Mosaic-Compile: torch.compile in Mosaic-Torch, a port onto vLLM)
  compile-all  the LM head and the sampling compiled with the layers (Inductor may fuse the softmax
               into its max and never write the fp32 copy)
Under a memory limit (the card's memory: PyTorch's allocator is capped at the limit less what the
CUDA context and libraries hold outside it), L_max is found by bisection: a length fits when its
step runs twice without running out of memory. The step runs --layers-run of the model's layers
(activations die layer by layer, so more layers move neither the peak nor the reserve). Without a
limit, at --lengths, it records the peak of allocated and of reserved bytes above the weights
(reserved / allocated - 1 is the allocator's inflation), the step's time (step_ms, over
--layers-run layers) and, where the layers run apart from the head, theirs (layers_ms).
Writes one JSON object per line to stdout or --out.
A mixture of experts (--models llada-moe-7b) runs its FFN as torch_model.py's grouped MoE, with
LLaDA-MoE's per-head QK norms.
Usage: torch_lmax.py [--out FILE] [--models llada-8b,dream-7b] [--modes eager,compile,compile-all]
                     [--limits-mib 24576,40960] [--lengths 2048,8192,32768] [--layers-run 2]
"""
import argparse, gc, json, sys, time
import torch
import torch.nn.functional as F
from torch_model import Shape, moe, new_layer, rms, rope, w

SHAPES = {  # layers, hidden, heads, kv heads, head dim, ffn, vocab, qkv bias (tessera list models)
    "llada-8b": (32, 4096, 32, 32, 128, 12288, 126464, False),
    "dream-7b": (28, 3584, 28, 4, 128, 18944, 152064, True),
    "llada-moe-7b": (16, 2048, 16, 16, 128, 0, 157184, False),
}
MOE = {"llada-moe-7b": (64, 8, 1024)}  # experts, experts a token, an expert's width (weights renormalised)
QK_NORM = {"llada-moe-7b"}

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--out", help="JSONL file (default: stdout)")
ap.add_argument("--models", default="llada-8b,dream-7b")
ap.add_argument("--modes", default="eager,compile,compile-all")
ap.add_argument("--limits-mib", default="24576,40960", help="card memories to emulate (MiB)")
ap.add_argument("--lengths", default="2048,8192,32768", help="lengths for the unlimited peaks and times")
ap.add_argument("--layers-run", type=int, default=2)
args = ap.parse_args()
for name in args.models.split(","):
    if name not in SHAPES:
        sys.exit(f"torch_lmax.py: --models: unknown model '{name}' (known: {', '.join(SHAPES)})")
out = open(args.out, "w") if args.out else sys.stdout
dev = "cuda"
MIB = 1 << 20


def emit(**kw):
    print(json.dumps(kw), file=out, flush=True)


def build(name):
    NL, D, H, KVH, HD, FF, V, bias = SHAPES[name]
    torch.manual_seed(0)
    E, K, FE = MOE.get(name, (0, 0, 0))
    s = Shape(D, H, KVH, HD, FF, qkv_bias=bias, qk_norm=name in QK_NORM, experts=E, top_k=K, expert_ffn=FE)
    layers = [new_layer(s) for _ in range(NL)]
    emb, lm = w(V, D), w(V, D)

    # the layer written whole, not as torch_model.layer_ops' thunks: their shared state would hold
    # each op's output to the layer's end, and what PyTorch holds when is what this measures
    def body(x, pos):
        B, T, _ = x.shape
        for l in layers[: args.layers_run]:
            y = rms(x) @ l["qkv"].T
            if "qkv_b" in l:
                y = y + l["qkv_b"]
            q, k, v = y.split([H * HD, KVH * HD, KVH * HD], -1)
            q, k = q.view(B, T, H, HD), k.view(B, T, KVH, HD)
            if "qn" in l:  # per-head RMSNorm of the queries and keys before the rotation
                q, k = rms(q, l["qn"]), rms(k, l["kn"])
            q = rope(q, pos, s.inv).transpose(1, 2)
            k = rope(k, pos, s.inv).transpose(1, 2)
            v = v.view(B, T, KVH, HD).transpose(1, 2)
            if KVH != H:
                k, v = k.repeat_interleave(H // KVH, 1), v.repeat_interleave(H // KVH, 1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=False)
            x = x + o.transpose(1, 2).reshape(B, T, H * HD) @ l["o"].T
            if E:
                x = x + moe(s, l, rms(x).reshape(B * T, D)).view(B, T, D)
            else:
                g, u = (rms(x) @ l["gu"].T).chunk(2, -1)
                x = x + (F.silu(g) * u) @ l["down"].T
        return rms(x)

    def head(h):
        logits = h @ lm.T
        conf, tok = torch.softmax(logits, -1, dtype=torch.float32).max(-1)
        return conf, tok

    return dict(NL=NL, D=D, emb=emb, body=body, head=head)


def runner(m, mode):
    """The step, and its layers alone (None where they are compiled with the head)."""
    body, head = m["body"], m["head"]
    if mode == "compile":
        body = torch.compile(body, dynamic=True)
    if mode == "compile-all":
        both = torch.compile(lambda x, pos: head(body(x, pos)), dynamic=True)
        return (lambda ids, pos: both(m["emb"][ids], pos)), None
    return (lambda ids, pos: head(body(m["emb"][ids], pos))), (lambda ids, pos: body(m["emb"][ids], pos))


def clean():
    gc.collect()
    torch.cuda.empty_cache()


def inputs(m, L):
    """A step's token ids (drawn over the vocabulary) and positions for L tokens."""
    return torch.randint(0, m["emb"].shape[0], (1, L), device=dev), torch.arange(L, device=dev)


def attempt(m, run, L):
    """One step of L tokens, twice; True when both fit."""
    ids, pos = inputs(m, L)
    try:
        for _ in range(2):
            r = run(ids, pos)
            torch.cuda.synchronize()
            del r
        return True
    except torch.cuda.OutOfMemoryError:
        return False
    except RuntimeError as e:  # cuBLAS or Triton running out of memory
        if "out of memory" in str(e).lower() or "CUBLAS_STATUS_ALLOC_FAILED" in str(e):
            return False
        raise
    finally:
        del ids, pos
        clean()


def lmax(m, run, lo=256):
    if not attempt(m, run, lo):
        return 0, 1
    hi, probes = lo * 2, 1
    while attempt(m, run, hi):
        lo, hi, probes = hi, hi * 2, probes + 1
    probes += 1
    while hi - lo > 16:
        mid = (lo + hi) // 2
        if attempt(m, run, mid):
            lo = mid
        else:
            hi = mid
        probes += 1
    return lo, probes


def timed(fn, reps=5):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return sorted(ts)[len(ts) // 2]


total = torch.cuda.get_device_properties(0).total_memory
emit(device=torch.cuda.get_device_name(0), torch=torch.__version__, total_bytes=total)
with torch.no_grad():
    for name in args.models.split(","):
        m = build(name)
        clean()
        weights = torch.cuda.memory_allocated()
        for mode in args.modes.split(","):
            torch._dynamo.reset()
            run, layers_only = runner(m, mode)
            t0 = time.time()
            ok = attempt(m, run, 512) and attempt(m, run, 1024)  # compiles (a dynamic-shape graph after a second length)
            compile_s = time.time() - t0
            if not ok:
                emit(model=name, mode=mode, error="a 1024-token step does not fit without a limit")
                continue
            # unlimited: peaks above the weights, and times
            torch.cuda.set_per_process_memory_fraction(1.0)
            for L in [int(x) for x in args.lengths.split(",") if x]:
                ids, pos = inputs(m, L)
                clean()
                torch.cuda.reset_peak_memory_stats()
                base_a, base_r = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
                try:
                    run(ids, pos)
                    torch.cuda.synchronize()
                    alloc = torch.cuda.max_memory_allocated() - base_a
                    resv = torch.cuda.max_memory_reserved() - base_r
                    step_ms = timed(lambda: run(ids, pos))
                    layers_ms = timed(lambda: layers_only(ids, pos)) if layers_only else None
                    emit(model=name, mode=mode, L=L, peak_alloc_bytes=alloc, peak_reserved_bytes=resv,
                         inflation=round(resv / alloc - 1, 4), step_ms=round(step_ms, 3),
                         layers_ms=layers_ms and round(layers_ms, 3), layers_run=args.layers_run,
                         layers=m["NL"])
                except torch.cuda.OutOfMemoryError:
                    emit(model=name, mode=mode, L=L, error="out of memory without a limit")
                del ids, pos
                clean()
            # under each card's memory
            for lim in [int(x) for x in args.limits_mib.split(",") if x]:
                clean()
                free, tot = torch.cuda.mem_get_info()
                outside = (tot - free) - torch.cuda.memory_reserved()  # context and libraries
                cap = lim * MIB - outside
                torch.cuda.set_per_process_memory_fraction(max(cap, 0) / tot)
                L, probes = lmax(m, run)
                emit(model=name, mode=mode, limit_mib=lim, lmax=L, probes=probes, weights_bytes=weights,
                     outside_bytes=outside, allocator_cap_bytes=cap, compile_s=round(compile_s, 1),
                     layers_run=args.layers_run)
                torch.cuda.set_per_process_memory_fraction(1.0)
            del run, layers_only
            torch._dynamo.reset()
            clean()
        del m
        clean()
