"""dgemma_sampler.py: the memory vLLM's DiffusionGemma sampler step takes, measured by running the
step itself (vllm/model_executor/models/diffusion_gemma.py, _compiled_sample_step, at the commit
baselines/vllm-dgemma/COMMIT names), unchanged, over random logits of the model's shape.

For each count N of decoding canvases the step runs on logits [N * CL, V] in fp32 (what the
softcap hands it), compiled as vLLM compiles it (torch.compile, dynamic shapes, inductor; vLLM never
runs it eagerly, where its self-conditioning write mixes dtypes that inductor promotes); the bytes it allocates beyond what it is given (the peak over the step, less what was
allocated before it) are its transient. "tiled" runs vLLM's request-tiled loop (PR #45672): groups of
max(1, min(N, floor(0.5 free / (CL V 4 10)))) canvases, free read from the device before the loop,
with the device held so that what is free is what vLLM leaves outside its budget at
--gpu-memory-utilization UTIL (environment; default 0.9, vLLM's): (1 - UTIL) of the device's memory.

Usage: python3 dgemma_sampler.py SAMPLE_STEP.py OUT.csv [N ...]   (N: canvases, default 1 2 4 8 16 32)
Writes OUT.csv: mode,canvases,group,logit_bytes,transient_bytes,free_bytes,ms
"""
import csv
import os
import sys
import time

import torch

CL, V, HIDDEN, ST = 256, 262144, 2816, 2  # the checkpoint's canvas, vocabulary, hidden size, stability + 1


def load_step(path):
    """The step's function from its source, as its module defines it (its decorator applied here)."""
    ns = {"torch": torch}
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns["_compiled_sample_step"]


def state(n, dev):
    """The per-request state tensors for n slots, as DiffusionGemmaRequestStates allocates them."""
    z = lambda *s, dt=torch.int64: torch.zeros(*s, dtype=dt, device=dev)
    return dict(canvas=z(n, CL), argmax_canvas=z(n, CL), step_tensor=z(n, dt=torch.int32),
                is_encoder_phase=z(n, dt=torch.bool), confident_tensor=z(n, dt=torch.bool),
                sc_embeds=z(n, CL, HIDDEN, dt=torch.float32),
                history=z(n, ST, CL), history_len_tensor=z(n, dt=torch.int32),
                sampled=z(n, CL, dt=torch.int32), num_sampled=z(n, dt=torch.int32), draft_tokens=z(n, CL))


def run(step, logits, n, group, st, embed, dev):
    """The sampler's loop over groups of canvases, as DiffusionSampler.__call__ runs it."""
    slots = torch.arange(n, device=dev)
    valid = torch.full((n,), CL, dtype=torch.int64, device=dev)
    for a in range(0, n, group):
        b = min(a + group, n)
        step(logits[a * CL:b * CL], slots[a:b], slots[a:b], slots, valid[a:b],
             st["canvas"], st["argmax_canvas"], st["step_tensor"], st["is_encoder_phase"],
             st["confident_tensor"], st["sc_embeds"], embed, torch.tensor(HIDDEN ** 0.5, device=dev),
             st["history"], st["history_len_tensor"], st["sampled"], st["num_sampled"], st["draft_tokens"],
             max_denoising_steps=48.0, t_min=0.0, t_max=1.0, confidence_threshold=0.1, vocab_size=V,
             CL=CL, ST=ST, entropy_bound=0.1, sc_vocab_start=0, sc_vocab_end=V, tp_size=1, tp_group_name="")


def measure(step, n, tiled, dev, embed, util):
    st = state(n, dev)
    logits = torch.randn(n * CL, V, dtype=torch.float32, device=dev) * 4
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    ballast = None
    if tiled:  # (what vLLM's KV pool and the rest of its budget would hold)
        held = free - int((1 - util) * total)
        ballast = torch.empty(max(held, 0), dtype=torch.uint8, device=dev) if held > 0 else None
        free, _ = torch.cuda.mem_get_info()
    group = max(1, min(n, int(free * 0.5) // (CL * V * 4 * 10))) if tiled else n
    run(step, logits, n, group, st, embed, dev)  # (compiles, warms the allocator)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    run(step, logits, n, group, st, embed, dev)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    peak = torch.cuda.max_memory_allocated() - base
    del logits, st, ballast
    torch.cuda.empty_cache()
    return group, n * CL * V * 4, peak, free, ms


def main():
    src, out = sys.argv[1], sys.argv[2]
    counts = [int(x) for x in sys.argv[3:]] or [1, 2, 4, 8, 16, 32]
    dev = torch.device("cuda")
    util = float(os.environ.get("UTIL", "0.9"))
    compiled = torch.compile(load_step(src), dynamic=True, backend="inductor")
    embed = torch.randn(V, HIDDEN, dtype=torch.bfloat16, device=dev) * 0.02
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "canvases", "group", "logit_bytes", "transient_bytes", "free_bytes", "ms"])
        for mode, tiled in (("whole", False), ("tiled", True)):
            for n in counts:
                try:
                    g, lb, peak, free, ms = measure(compiled, n, tiled, dev, embed, util)
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    w.writerow([mode, n, "", n * CL * V * 4, "oom", "", ""])
                    print(f"{mode} {n}: out of memory", flush=True)
                    continue
                w.writerow([mode, n, g, lb, peak, free, f"{ms:.1f}"])
                f.flush()
                print(f"{mode} {n}: group {g}, transient {peak / 2**30:.2f} GiB = {peak / lb:.2f} x the fp32 "
                      f"logits, free before {free / 2**30:.1f} GiB, {ms:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
