#!/usr/bin/env python3
"""torch_moe.py: the Hugging Face mixture-of-experts block as PyTorch eager runs it, timed.

The LLaDA-MoE (and OLMoE, Mixtral) modelling code's sparse MoE block: the router's linear layer, a
softmax in fp32, the top-k experts of each token (their weights renormalised where the model says
so), then a Python loop over every expert: the tokens routed to it found by torch.where on a one-hot
mask (a nonzero, which waits for the GPU), gathered, run through the expert's SwiGLU MLP, scaled by
their routing weights and added back with index_add_. Fast-dLLM runs LLaDA-MoE this way.

For each token count T: the block's time (CUDA-synchronised wall clock, the median of --reps calls
after warm-up), its CUDA kernels a call (torch.profiler), how many experts the tokens reach, and the
floor of the same work: the weights of the experts reached over the copy bandwidth measured here, or
its FLOPs over the bf16 GEMM rate measured here, whichever is larger. Random bf16 weights from the
model's shapes; the router's weights random too, so the tokens spread over the experts about evenly,
as a trained router's load balancing aims to.

Prints a table; --out writes one JSON object a line (model, T, ms, kernels, experts_hit, floor_ms).
Usage: torch_moe.py [--model llada-moe-7b] [--tokens 32,64,256,1536] [--reps 20] [--out FILE]
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DT = torch.bfloat16
# hidden, experts, experts a token, an expert's intermediate size, renormalised top-k weights
MODELS = {"llada-moe-7b": (2048, 64, 8, 1024, True), "olmoe-1b-7b": (2048, 64, 8, 1024, False)}


def w(*s):
    return torch.randn(*s, device="cuda", dtype=DT) * 0.02


class Block:
    def __init__(self, hidden, experts, top_k, inter, norm):
        self.H, self.E, self.K, self.norm = hidden, experts, top_k, norm
        self.gate = w(experts, hidden)
        self.experts = [(w(inter, hidden), w(inter, hidden), w(hidden, inter)) for _ in range(experts)]

    def forward(self, x):
        """The Hugging Face block over x [T, H]."""
        logits = F.linear(x, self.gate)
        rw = F.softmax(logits, dim=1, dtype=torch.float)
        rw, sel = torch.topk(rw, self.K, dim=-1)
        if self.norm:
            rw = rw / rw.sum(dim=-1, keepdim=True)
        rw = rw.to(x.dtype)
        out = torch.zeros_like(x)
        mask = F.one_hot(sel, num_classes=self.E).permute(2, 1, 0)
        for e in range(self.E):
            g, u, d = self.experts[e]
            idx, top_x = torch.where(mask[e])
            cur = x[None, top_x].reshape(-1, self.H)
            y = F.linear(F.silu(F.linear(cur, g)) * F.linear(cur, u), d) * rw[top_x, idx, None]
            out.index_add_(0, top_x, y.to(x.dtype))
        return out, sel


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def ceilings():
    """The copy bandwidth (bytes/s) and bf16 GEMM rate (FLOP/s) of this GPU, measured."""
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    s = median_ms(lambda: b.copy_(a), 10) * 1e-3
    bw = 2 * a.numel() / s
    m = w(8192, 8192)
    s = median_ms(lambda: m @ m, 10) * 1e-3
    return bw, 2 * 8192 ** 3 / s


def kernels_a_call(fn):
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="llada-moe-7b", choices=sorted(MODELS))
    ap.add_argument("--tokens", default="32,64,256,1536")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        tokens = [int(t) for t in a.tokens.split(",")]
    except ValueError:
        sys.exit(f"torch_moe.py: --tokens: '{a.tokens}' is not a list of token counts")
    if a.reps < 1 or any(t < 1 for t in tokens):
        sys.exit("torch_moe.py: --reps and every token count must be at least 1")
    if not torch.cuda.is_available():
        sys.exit("torch_moe.py: no CUDA device")
    torch.manual_seed(0)
    hidden, experts, top_k, inter, norm = MODELS[a.model]
    blk = Block(hidden, experts, top_k, inter, norm)
    bw, rate = ceilings()
    print(f"{torch.cuda.get_device_name()}: copy {bw / 1e12:.2f} TB/s, bf16 GEMM {rate / 1e12:.0f} TFLOP/s; "
          f"{a.model}: {experts} experts, {top_k} a token, intermediate {inter}")
    print(f"{'T':>6} {'ms':>8} {'kernels':>8} {'experts':>8} {'floor ms':>9} {'x floor':>8}")
    out = open(a.out, "w") if a.out else None
    with torch.no_grad():
        for T in tokens:
            x = w(T, hidden) * 50
            ms = median_ms(lambda: blk.forward(x), a.reps)
            n = kernels_a_call(lambda: blk.forward(x))
            hit = int(torch.unique(blk.forward(x)[1]).numel())
            flops = 2 * T * hidden * experts + 2 * T * top_k * 3 * hidden * inter
            floor = max(hit * 3 * hidden * inter * 2 / bw, flops / rate) * 1e3
            print(f"{T:6d} {ms:8.3f} {n:8d} {hit:8d} {floor:9.4f} {ms / floor:8.1f}")
            if out:
                out.write(json.dumps({"model": a.model, "T": T, "ms": round(ms, 4), "kernels": n, "experts_hit": hit,
                                      "floor_ms": round(floor, 5), "gpu": torch.cuda.get_device_name()}) + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
