#!/usr/bin/env python3
"""torch_profile.py: the `torch-eager` implementation profile, measured.

A PyTorch eager forward of a model's shape (random bf16 weights; torch_model.py's layer, the PyTorch
anchor's, with SDPA over cached + fresh K/V, and a chunked LM head with a softmax confidence and
argmax) is timed over the step shapes `tessera engine profile`
sweeps (LLaDA-8B's by default; --model and the shape options for another, as `tessera list models`
gives it: engine/calibrate.sh passes them): each op of one layer captured in a CUDA graph of its own and
replayed (median of REPS, times the layer count: the op's GPU work alone, as CUDA events around an
eager op would also hold the gaps its host leaves the GPU between its kernels), and the whole step as
it runs (total_ms: the real step, host launch gaps included, which eager PyTorch pays).
It also separates the two things an eager step waits for: gpu_ms, the same step captured in a CUDA
graph and replayed (the GPU's work alone, no launch gaps), and host_ms, the time Python takes to
issue the eager step (measured from an idle GPU, before synchronising). Eager PyTorch runs ahead
of the GPU, so its step takes about max(host_ms, gpu_ms); `tessera calib fit` models it so.
And it counts the CUDA kernels each op launches (torch.profiler), for the torch-eager roofline
profile (sim/cost/impl.c), written to --kernels.
A mixture of experts (--experts E --top-k K --expert-ffn F: LLaDA-MoE-7B's form) runs its FFN as
torch_model.py's grouped MoE, timed as two ops: router (the fp32 softmax's top k, the copies sorted
by expert) and experts (the grouped GEMMs, SwiGLU, the weighted copies added back).
With --runtime dllm-serve it times dLLM-Serve's own PyTorch runtime in place of the anchor's layer
(torch_dllm_serve.py says what that runs: nano-vLLM's layers with torch.compile'd RMSNorm and RoPE, a
Python loop over the sequences in every layer's attention, the inputs and the unmasking a sequence at
a time), the `torch-dllm-serve` implementation profile.
With --grid select it times instead the sparse KV selection of dLLM-Serve's PyTorch code
(chosen-ox/dLLM-Serve dllmserve/layers/attention.py: _select_important_kv, one kept set for all
heads, and _select_important_head_kv, one a K/V head) inside Refresh steps of 1, 4 and 16 sequences
of 256 to 4,096 tokens, the engine's select grid (tessera engine profile --grid select): each
sequence's last 32 rows (the block) score its other rows, which are max-pooled (kernel 3) and half of
them kept, gathered and written to the cache, a Python loop over the sequences a layer as that code
runs it; rows with op kv_select, keep and sel_heads, for `tessera calib merge` into the base grid's.
Writes a calibration CSV (device,model,segs,q,kv,logit_rows,op,ms,total_ms,gpu_ms,host_ms,keep,
sel_heads) to stdout or --out;
import it with
    tessera calib import FILE --gpu h200 --out sim/data/calib/h200-llada-8b-torch-eager.csv
With --host-probe it runs a small grid (token counts 1 to 512 and one of 4,096, at least 5 repetitions)
and names the device with this machine's CPU and driver: the profile `tessera calib host --probe` fits
a host profile to.
Usage: torch_profile.py [--out FILE] [--reps N] [--quick] [--host-probe] [--kernels FILE] [--grid base|select]
                        [--runtime eager|dllm-serve]
                        [--model NAME --layers L --hidden D --heads H --kv-heads KV --head-dim HD
                         --ffn F --vocab V [--qkv-bias] [--qk-norm] [--experts E --top-k K --expert-ffn F]]
"""
import argparse, csv, json, statistics, sys, time
import torch
import torch.nn.functional as F
import torch_model
from torch_dllm_serve import Runtime, select_seq
from torch_model import Shape, new_layer, rms, w

CHUNK = 2048  # logit rows per LM-head chunk (tessera's default max_num_logits)
Q_GRID = [1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
KV_GRID = [0, 128, 480, 1024, 2048, 4096]
SEG_GRID = [16, 1]
SCORE_ROWS = 32  # a selecting sequence's block: its last rows, whose mean query scores the others
SEL_Q_GRID, SEL_SEG_GRID = [256, 512, 1024, 2048, 4096], [1, 4, 16]
SEL_RATIO, SEL_POOL = 0.5, 3  # dLLM-Serve's retention ratio and max-pool kernel (its Table 3)
capturing = False  # a CUDA graph is being captured (profile: the GPU's time alone)

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--out", help="CSV file (default: stdout)")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--quick", action="store_true", help="a few shapes only (smoke test)")
ap.add_argument("--kernels", help="JSON file for the CUDA kernels launched per op of one layer")
ap.add_argument("--host-probe", action="store_true",
                help="the host probe (tessera calib host --probe): a small grid, the device named with this "
                     "machine's CPU and driver")
ap.add_argument("--grid", choices=("base", "select"), default="base",
                help="base: the step grid; select: Refresh steps with dLLM-Serve's KV selection [base]")
ap.add_argument("--runtime", choices=("eager", "dllm-serve"), default="eager",
                help="eager: the anchor's layer; dllm-serve: dLLM-Serve's runtime (torch_dllm_serve.py) [eager]")
ap.add_argument("--model", default="llada-8b", help="the model's name in the profile [llada-8b]")
for name, default in (("layers", 32), ("hidden", 4096), ("heads", 32), ("kv-heads", 32), ("head-dim", 128),
                      ("ffn", 12288), ("vocab", 126464)):
    ap.add_argument("--" + name, type=int, default=default, help=f"[{default}: LLaDA-8B's]")
ap.add_argument("--qkv-bias", action="store_true", help="a bias on the QKV projection (Qwen2, Dream-7B)")
ap.add_argument("--qk-norm", action="store_true", help="per-head RMSNorm of Q and K (Qwen3, SDAR-8B)")
ap.add_argument("--experts", type=int, default=0, help="a mixture's experts, its FFN a grouped MoE [0: dense]")
ap.add_argument("--top-k", type=int, default=0, help="the experts a token is routed to")
ap.add_argument("--expert-ffn", type=int, default=0, help="an expert's width")
args = ap.parse_args()
NL, D, H, KVH, HD, FF, V = args.layers, args.hidden, args.heads, args.kv_heads, args.head_dim, args.ffn, args.vocab
E, K, FE = args.experts, args.top_k, args.expert_ffn
if min(NL, D, H, KVH, HD, V) < 1 or (FF < 1 and not E) or H % KVH:
    sys.exit("torch_profile.py: every dimension must be positive (--ffn but for a mixture of experts) and the query "
             "heads a multiple of the K/V heads")
if E and not (0 < K <= E and FE > 0):
    sys.exit(f"torch_profile.py: --experts {E} needs --top-k in 1..{E} and a positive --expert-ffn")
if E and args.runtime != "eager":
    sys.exit("torch_profile.py: --runtime dllm-serve runs LLaDA-8B's dense layers, not a mixture of experts")
dev = "cuda"
torch.manual_seed(0)


shape = Shape(D, H, KVH, HD, FF, args.qkv_bias, args.qk_norm, E, K, FE)
RT = Runtime(shape, V) if args.runtime == "dllm-serve" else None
make_layer = RT.new_layer if RT else (lambda: new_layer(shape))
emb = w(V, D)
layer = make_layer()
layers = [layer] + [make_layer() for _ in range(NL - 1)]
lm = w(V, D)
ln_f = torch.ones(D, device=dev, dtype=torch_model.DT)


def set_capturing(on):
    """A CUDA graph is being captured (or no longer): what cannot be captured is replaced."""
    global capturing
    capturing = on
    if RT:
        RT.capturing = on


def select_kv(st, cache_k, cache_v, per_head):
    """dLLM-Serve's selection in every sequence of the step (a loop, as its attention layer runs it;
    torch_dllm_serve.select_seq). Tensors in its layout: tokens, heads, head dim."""
    B, _, T, _ = st["q"].shape
    for b in range(B):
        q, k, v = (st[n][b].transpose(0, 1) for n in ("q", "k", "v"))  # [T, heads, HD]
        select_seq(q, k, v, SCORE_ROWS, per_head, cache_k, cache_v, b * T, capturing)


def inputs(segs, q, kv, selecting):
    """A step's token ids, positions and cached K/V in the runtime's layout: the anchor's batched
    [segs, q] (K/V [segs, K/V heads, kv, head dim]), dLLM-Serve's flat [segs * q] (K/V in slots)."""
    if RT:
        RT.setup(segs, q, kv, SCORE_ROWS if selecting else 0)
        cache = (w(segs * kv, KVH, HD), w(segs * kv, KVH, HD)) if kv else None
        return torch.randint(0, V, (segs * q,), device=dev), torch.arange(kv, kv + q, device=dev).repeat(segs), cache
    cache = (w(segs, KVH, kv, HD), w(segs, KVH, kv, HD)) if kv else None
    return torch.randint(0, V, (segs, q), device=dev), torch.arange(kv, kv + q, device=dev), cache


def layer_ops(l, x, pos, cache, select=None):
    if RT:
        return RT.layer_ops(l, x, pos, cache, select)
    st, ops = torch_model.layer_ops(shape, l, x, pos, cache)
    if select is not None:  # (per_head, cache_k, cache_v): the selection after the attention
        per_head, ck, cv = select
        at = [n for n, _ in ops].index("attention") + 1
        ops.insert(at, ("kv_select", lambda: select_kv(st, ck, cv, per_head)))
    return st, ops


def head(x, logit_rows):
    """The final norm, then the LM head and sampling over the last logit_rows rows of every sequence,
    in CHUNK-row chunks, as (name, thunk) pairs run in order."""
    if RT:
        return RT.head_ops(RT.rms(x, ln_f), lm, logit_rows, CHUNK)
    h = rms(x)
    rows = h[:, h.shape[1] - logit_rows :].reshape(-1, D)
    st, ops = {}, []
    for i in range(0, rows.shape[0], CHUNK):
        ops.append(("lm_head", lambda r=rows[i : i + CHUNK]: st.update(lg=r @ lm.T)))
        ops.append(("sample", lambda: st["lg"].float().softmax(-1).max(-1)))
    return ops


def step(ids, pos, cache, logit_rows, select=None):
    if RT and not capturing:  # dLLM-Serve builds its inputs on the host every step
        x, pos = RT.inputs(emb)
    else:
        x = emb[ids]
    for l in layers:
        st, ops = layer_ops(l, x, pos, cache, select)
        for _, f in ops:
            f()
        x = st["x"]
    if logit_rows:
        for _, f in head(x, logit_rows):
            f()


def timed(fn, reps):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def graph_ms(fns, reps):
    """Each thunk's GPU time alone: captured in a CUDA graph of its own, in order (each reads what the
    one before it wrote), and replayed. Events around the eager op would also hold the gaps its host
    leaves the GPU between its kernels (and dLLM-Serve's Python loops over the sequences), which are
    the host's (host_ms)."""
    set_capturing(True)
    gs = []
    for f in fns:
        gs.append(torch.cuda.CUDAGraph())
        with torch.cuda.graph(gs[-1]):
            f()
    set_capturing(False)
    for g in gs:
        g.replay()
    torch.cuda.synchronize()
    return [timed(g.replay, reps) for g in gs]


def op_graphs(ids, pos, cache, select, R, reps):
    """Each op of one layer (times the layers) and of the head, from graph_ms."""
    st = {}
    embed = lambda: st.update(x=emb[ids])
    ms = dict(embed=graph_ms([embed], reps)[0])
    lst, ops = layer_ops(layer, st["x"], pos, cache, select)
    for (name, _), t in zip(ops, graph_ms([f for _, f in ops], reps)):
        ms[name] = ms.get(name, 0) + t * NL
    if R:
        hops = head(lst["x"], R)
        for (name, _), t in zip(hops, graph_ms([f for _, f in hops], reps)):
            ms[name] = ms.get(name, 0) + t
    return ms


def profile(segs, q, kv, with_logits, reps, per_head=None):
    """One step's ops (ms a step, each from a CUDA graph of its own: op_graphs), its whole time, its
    GPU time alone and its host's issue time; per_head not None: a Refresh that selects (True: a kept
    set a K/V head)."""
    ids, pos, cache = inputs(segs, q, kv, per_head is not None)
    select = None if per_head is None else (per_head, w(segs * q, KVH, HD), w(segs * q, KVH, HD))
    R = q if with_logits else 0
    step(ids, pos, cache, R, select)  # warm-up: library handles, workspaces and compiled functions
    torch.cuda.synchronize()
    ms = op_graphs(ids, pos, cache, select, R, reps)
    total = timed(lambda: step(ids, pos, cache, R, select), reps)
    # the host's issue time, from an idle GPU (dLLM-Serve's runtime reads back mid-step: its waits
    # there are not the host's work)
    hs = []
    for _ in range(reps):
        torch.cuda.synchronize()
        if RT:
            RT.blocked = 0.0
        t0 = time.perf_counter(); step(ids, pos, cache, R, select)
        hs.append((time.perf_counter() - t0 - (RT.blocked if RT else 0)) * 1e3)
        torch.cuda.synchronize()
    # the GPU's time alone: the step replayed from a CUDA graph
    set_capturing(True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(ids, pos, cache, R, select)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step(ids, pos, cache, R, select)
    set_capturing(False)
    gpu = timed(g.replay, reps)
    del g
    torch.cuda.empty_cache()
    return ms, total, gpu, statistics.median(hs)


def count_kernels():
    """CUDA kernels launched by each op of one layer and of the head (a 64-token step over 480
    cached keys with logits), counted with torch.profiler."""
    from torch.profiler import profile as tprofile, ProfilerActivity
    q, kv = 64, 480
    ids, pos, cache = inputs(1, q, kv, False)
    counts = {}
    def count(name, f):
        with tprofile(activities=[ProfilerActivity.CUDA]) as p:
            r = f(); torch.cuda.synchronize()
        n = sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        counts[name] = counts.get(name, 0) + n
        return r
    def one_pass(counted):
        run = count if counted else (lambda name, f: f())
        x = run("embed", lambda: emb[ids])
        st, ops = layer_ops(layer, x, pos, cache)
        for name, f in ops:
            run(name, f)
        for name, f in head(st["x"], q):
            run(name, f)
    one_pass(False)  # warm-up: library handles and workspaces exist before counting
    torch.cuda.synchronize()
    one_pass(True)
    return counts


out = open(args.out, "w", newline="") if args.out else sys.stdout
wr = csv.writer(out)
wr.writerow(["device", "model", "segs", "q", "kv", "logit_rows", "op", "ms", "total_ms", "gpu_ms", "host_ms",
             "keep", "sel_heads"])
device = f"{torch.cuda.get_device_name()} (torch {torch.__version__} " + \
    (f"dLLM-Serve runtime, {RT.attention_kernel})" if RT else "eager)")
if args.host_probe:  # the machine a host profile was measured on: its CPU and its driver beside the card
    args.reps = max(args.reps, 5)
    cpu = next((l.split(":", 1)[1].strip().replace(",", " ") for l in open("/proc/cpuinfo") if l.startswith("model name")),
               "CPU unknown")
    try:
        import subprocess
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=30).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        drv = "unknown"
    device = device[:-1] + f"; {cpu}; driver {drv})"
steps = []  # (segs, q, kv, with_logits, per_head: None where the step selects nothing)
if args.grid == "select":
    q_grid, seg_grid = ([256, 1024], [1, 4]) if args.quick else (SEL_Q_GRID, SEL_SEG_GRID)
    steps = [(sg, q, 0, 0, ph) for ph in (False, True) for q in q_grid for sg in seg_grid if q * sg <= 16384]
else:
    q_grid, kv_grid = ([1, 32, 512, 4096], [0, 480]) if args.quick else (Q_GRID, KV_GRID)
    if args.host_probe:  # host-bound steps enough for a steady line, and GPU-bound ones for the gaps
        q_grid, kv_grid = [1, 8, 32, 64, 128, 512, 4096], [0, 480]
    for q in q_grid:
        for kv in kv_grid:
            for sg in SEG_GRID:
                for with_logits in (0, 1):
                    if (kv and q > 512) or (sg == 1 and (q > 512 or with_logits)):
                        continue
                    steps.append((min(sg, 16384 // q), q, kv, with_logits, None))
n = 0
with torch.no_grad():
    for segs, q, kv, with_logits, per_head in steps:
        ms, total, gpu, host = profile(segs, q, kv, with_logits, args.reps, per_head)
        keep = 0 if per_head is None else (q - SCORE_ROWS) // 2
        for op, v in ms.items():
            wr.writerow([device, args.model, segs, q, kv, q if with_logits else 0, op, f"{v:.6g}",
                         f"{total:.6g}", f"{gpu:.6g}", f"{host:.6g}", keep, int(bool(per_head))])
        n += 1
        what = "" if per_head is None else f", selecting {keep} {'a K/V head' if per_head else 'for all heads'}"
        print(f"  {segs:2d} x q {q:5d} over {kv:5d} cached{' +logits' if with_logits else ''}{what}: {total:9.3f} ms"
              f" (GPU alone {gpu:8.3f}, host {host:8.3f})", file=sys.stderr, flush=True)
    if args.kernels:
        with open(args.kernels, "w") as f:
            json.dump({"device": device, "kernels_per_layer_op": count_kernels(), "layers": NL}, f, indent=1)
print(f"torch profile: {n} steps", file=sys.stderr)
