# sdpa_bench.py: PyTorch's scaled_dot_product_attention on the shapes `engine_bench` times
# its attention kernel on (the anchor's long shapes among them; LLaDA-8B heads: 32 x 128, bf16,
# bidirectional), medians of CUDA-event timings after warm-up: each call alone between two events
# and a synchronisation (ms, tflops: the method of engine_bench's attention table) and in batches
# of 50 calls back to back (batched_ms, batched_tflops: the method of engine/bench/attn_bench.cu).
# Prints one JSON object per shape, for the side-by-side in make bench-engine's output.
import json

import torch
import torch.nn.functional as F

H, D = 32, 128
SHAPES = [(16, 512, 0), (1, 2048, 0), (4, 2048, 0), (1, 8192, 0), (16, 32, 480), (1, 32, 480),
          (1, 32, 8160)]  # (sequences, q, cached)


def median_ms(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def batched_ms(fn, reps=50, batches=7):
    ts = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / reps)
    ts.sort()
    return ts[len(ts) // 2]


with torch.no_grad():
    for b, q, kv in SHAPES:
        keys = q + kv
        qt = torch.randn(b, H, q, D, device="cuda", dtype=torch.bfloat16)
        kt = torch.randn(b, H, keys, D, device="cuda", dtype=torch.bfloat16)
        vt = torch.randn(b, H, keys, D, device="cuda", dtype=torch.bfloat16)
        fn = lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=False)
        ms = median_ms(fn)
        bms = batched_ms(fn)
        flops = 4.0 * D * H * b * q * keys
        name = f"{b} seq x q {q} over {kv} cached"
        print(json.dumps({"sdpa": name, "ms": round(ms, 5), "tflops": round(flops / ms / 1e9, 2),
                          "batched_ms": round(bms, 5), "batched_tflops": round(flops / bms / 1e9, 2)}), flush=True)
