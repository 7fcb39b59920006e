#!/usr/bin/env python3
"""derive_eager_impl.py: the torch-eager roofline profile's host figures (sim/impl.c), derived from
the PyTorch harness's measurements (engine/bench/torch_profile.py).

Kernel counts per op come from the harness's torch.profiler count of one layer (--kernels JSON; the
two norms of a layer are counted together; o_proj and down include their residual add, which the
roofline model prices as its own `resid` op). The per-kernel issue cost is the host-bound steps'
issue time (host_ms of the calibration CSV, steps whose host time exceeds their GPU time) over the
kernels a step launches; the per-segment cost is the slope of the issue time between the profiled
segment counts. Prints the values to put in impl.c.

Usage: analysis/derive_eager_impl.py KERNELS.json CALIBRATION.csv
"""
import csv, json, statistics, sys

if len(sys.argv) != 3:
    sys.exit(__doc__.strip().splitlines()[-1])
k = json.load(open(sys.argv[1]))
per = k["kernels_per_layer_op"]
layers = k["layers"]
kern = {"embed": per["embed"], "norm": per["norm"] / 2, "qkv": per["qkv"], "rope": per["rope"],
        "kv_write": 0, "attention": per["attention"], "o_proj": per["o_proj"] - 1, "resid": 1,
        "gate_up": per["gate_up"], "act": per["act"], "down": per["down"] - 1,
        "lm_head": per["lm_head"], "sample": per["sample"]}
layer = sum(per[o] for o in ("norm", "qkv", "rope", "attention", "o_proj", "gate_up", "act", "down"))
step_kernels = per["embed"] + layers * layer  # no logits: the host-bound steps' common part

steps = {}
for r in csv.DictReader(open(sys.argv[2])):
    key = (int(r["segs"]), int(r["q"]), int(r["kv"]), int(r["logit_rows"]))
    steps[key] = (float(r["gpu_ms"]), float(r["host_ms"]))
by_segs = {}
for (segs, q, kv, rows), (gpu, host) in steps.items():
    if host > gpu and rows == 0:
        by_segs.setdefault(segs, []).append(host)
med = {s: statistics.median(v) for s, v in by_segs.items()}
s_lo, s_hi = min(med), max(med)
seg_ms = max(0.0, (med[s_hi] - med[s_lo]) / (s_hi - s_lo)) if s_hi > s_lo else 0.0
launch_us = (med[s_lo] - seg_ms * s_lo) / step_kernels * 1e3
print(f"# {k['device']}: {layer} kernels per layer, {step_kernels} per step without logits")
for s in sorted(med):
    print(f"#   host-bound steps of {s} segments: median issue time {med[s]:.2f} ms ({len(by_segs[s])} steps)")
print(f".launch_s = {launch_us:.3g}e-6, .host_step_s = 0, .host_seg_s = {seg_ms * 1e3:.3g}e-6,")
print(".kernels = {" + ", ".join(f"[OP_{o.upper()}] = {v:g}" for o, v in kern.items()
                                 if o not in ("attention", "o_proj", "lm_head")) +
      f", [OP_ATTN] = {kern['attention']:g}, [OP_OPROJ] = {kern['o_proj']:g}, [OP_LM_HEAD] = {kern['lm_head']:g}}}")
