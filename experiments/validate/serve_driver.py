#!/usr/bin/env python3
"""serve_driver.py: runs dLLM-Serve's own runtime (chosen-ox/dLLM-Serve's dllmserve package, imported
unchanged from CODE) as a server, for `tessera exp run validate`.

The runtime's LLMEngine does the work: its Scheduler (first come, first served, continuous batching
within max_num_batched_tokens 16,384 and max_num_seqs 512), its BlockManager over the KV pool its
ModelRunner sizes (gpu_memory_utilization 0.8, after its own warm-up), its LLaDA model over nano-vLLM's
layers, its attention and its sampling (_reconstruct_and_sample_optimized_v2, log_optimize_level 2).
Every request carries the SparseConfig of the repository's README (enabled, retention 0.5, delay 1,
blocks of 32, one kept set a K/V head), temperature 0, steps = gen_length = G (its output length
rounded up to blocks of 32): tessera's fixed:1.

The driver supplies only the glue:
  - weights drawn at random (normal, std 0.02; norms 1) in place of load_model's safetensors, in the
    shape of LLaDA-8B-Instruct's config.json, handed to the runtime as its AutoConfig would;
  - a tokenizer that knows only LLaDA's EOS id (prompts are token ids: random, below the mask id);
  - the trace's arrivals, replayed in real time: a request is added to the engine when it arrives,
    and the engine steps while it holds work;
  - timing: a CUDA event before and after every engine step (the scheduler, the forward, the sampling
    and the postprocessing); wall-clock arrival, start (its first step) and finish.
Packages the GPU machines lack are replaced by the nearest PyTorch call, checked and listed in
meta.json: flash_attn's flash_attn_varlen_func (the diffusion batch's one attention) by PyTorch's
torch.nn.attention.varlen.varlen_attn (FlashAttention's kernel inside PyTorch), checked against
per-sequence SDPA at start; flash_attn_with_kvcache (autoregressive decode, never called here) by a
stand-in that refuses; xxhash (prefix hashing, never called on the diffusion path) likewise.

Writes, for each trace, OUT/TRACE-STEM/requests.csv (id,arrival_s,start_s,finish_s,prompt_tokens,
gen_tokens,forwards), steps.csv (index,start_s,ms,seqs,q_tokens,full,select,reuse: every engine step;
full: sequences in a full-attention step, select: those that also select and cache their K/V, reuse:
those running their block over the cache), forwards.csv (id,index,kind,q_tokens,ms: each request's
steps, with the step's time and query tokens) and meta.json.

Usage: serve_driver.py --code DIR --trace FILE [--trace FILE...] --out DIR [--warmup N] [--limit N]
"""
import argparse, json, os, socket, sys, tempfile, time, types

import torch
import torch.nn.functional as F

from driver import BLOCK, MASK_ID, commit_of, random_init, read_trace  # the loops' driver, beside this file

EOS_ID = 126081
LLADA_8B = dict(d_model=4096, n_heads=32, n_kv_heads=32, n_layers=32, mlp_hidden_size=12288,
                vocab_size=126464, embedding_size=126464, max_sequence_length=4096, rope_theta=500000.0,
                rms_norm_eps=1e-5, mask_token_id=MASK_ID, eos_token_id=EOS_ID, pad_token_id=EOS_ID)
SUBSTITUTED = []


def _sdpa_per_seq(q, k, v, cu_q, cu_k, scale):
    out = torch.empty_like(q)
    cq, ck = cu_q.tolist(), cu_k.tolist()
    for i in range(len(cq) - 1):
        a = F.scaled_dot_product_attention(q[cq[i]:cq[i + 1]].transpose(0, 1), k[ck[i]:ck[i + 1]].transpose(0, 1),
                                           v[ck[i]:ck[i + 1]].transpose(0, 1), scale=scale)
        out[cq[i]:cq[i + 1]] = a.transpose(0, 1)
    return out


def stand_ins():
    """flash_attn and xxhash where they are missing (see the module's docstring)."""
    try:
        import flash_attn  # noqa: F401
        SUBSTITUTED.append("none: flash_attn installed")
    except ImportError:
        from torch.nn.attention.varlen import varlen_attn

        def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                   softmax_scale=None, causal=False, block_table=None, **_):
            if causal or block_table is not None:
                raise NotImplementedError("flash_attn stand-in: the diffusion path only (non-causal, no block table)")
            return varlen_attn(q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k),
                               scale=softmax_scale)

        def flash_attn_with_kvcache(*_, **__):
            raise NotImplementedError("flash_attn stand-in: autoregressive decode is not on the diffusion path")

        # the stand-in against per-sequence SDPA on a ragged batch
        g = torch.Generator(device="cuda").manual_seed(0)
        lq, lk = [7, 32, 300], [7, 250, 300]
        q = torch.randn(sum(lq), 32, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(sum(lk), 32, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(sum(lk), 32, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        cu = lambda l: torch.tensor([0] + [sum(l[:i + 1]) for i in range(len(l))], device="cuda", dtype=torch.int32)
        got = flash_attn_varlen_func(q, k, v, cu(lq), cu(lk), max(lq), max(lk), softmax_scale=128 ** -0.5)
        want = _sdpa_per_seq(q, k, v, cu(lq), cu(lk), 128 ** -0.5)
        err = (got.float() - want.float()).abs().max().item()
        if err > 2e-2:
            raise SystemExit(f"serve_driver.py: varlen_attn differs from per-sequence SDPA by {err}")
        mod = types.ModuleType("flash_attn")
        mod.flash_attn_varlen_func, mod.flash_attn_with_kvcache = flash_attn_varlen_func, flash_attn_with_kvcache
        sys.modules["flash_attn"] = mod
        SUBSTITUTED.append(f"flash_attn (not installed): flash_attn_varlen_func by torch.nn.attention.varlen.varlen_attn "
                           f"(largest difference from per-sequence SDPA on a ragged check batch {err:.1e}); "
                           "flash_attn_with_kvcache by a stand-in that refuses (autoregressive decode only)")
    try:
        import xxhash  # noqa: F401
    except ImportError:
        sys.modules["xxhash"] = types.ModuleType("xxhash")
        SUBSTITUTED.append("xxhash (not installed): an empty module (prefix hashing, never called on the diffusion path)")


def random_load(model, path):
    """load_model's stand-in: every parameter drawn in place on the GPU (driver.py's draw)."""
    random_init(model, 1)


def build_engine(code, model_dir):
    sys.path.insert(0, code)
    stand_ins()
    from transformers import PretrainedConfig

    class LLaDAConfig(PretrainedConfig):
        model_type = "llada"

    hf = LLaDAConfig(**LLADA_8B)
    for k, v in LLADA_8B.items():  # transformers may keep some of these only as its own fields
        setattr(hf, k, v)
    import dllmserve.config as dconf
    import dllmserve.engine.llm_engine as dengine
    import dllmserve.engine.model_runner as drunner
    dconf.AutoConfig = types.SimpleNamespace(from_pretrained=lambda *a, **k: hf)
    dengine.AutoTokenizer = types.SimpleNamespace(
        from_pretrained=lambda *a, **k: types.SimpleNamespace(eos_token_id=EOS_ID, decode=lambda ids: ""))
    drunner.load_model = random_load
    os.environ["DLLMSERVE_DISABLE_ATEXIT"] = "1"
    with socket.socket() as s:  # the runtime's process group (one rank) on a free port
        s.bind(("localhost", 0))
        os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    from dllmserve import LLM
    engine = LLM(model_dir, enforce_eager=True, tensor_parallel_size=1)
    SUBSTITUTED.append("load_model: random weights drawn on the GPU (no checkpoint); AutoConfig: LLaDA-8B-Instruct's "
                       "config.json fields; AutoTokenizer: LLaDA's EOS id only (prompts are token ids)")
    return engine


class Recorder:
    """The engine's ModelRunner.run, wrapped: each step's sequences and their cache states, before it runs."""

    def __init__(self, engine):
        self.batch = []
        orig = engine.model_runner.run

        def run(seqs, is_prefill):
            self.batch = [(s.seq_id, s.sparse_state.cache_state if s.sparse_state else 0,
                           len(s) if not s.sparse_state or s.sparse_state.cache_state < 2 else s.sparse_state.block_len)
                          for s in seqs]
            return orig(seqs, is_prefill)

        engine.model_runner.run = run


def serve(engine, rec, trace, prompt_of, sampling, sparse, log=None):
    """Replays TRACE in real time through ENGINE. Returns (requests, steps) rows."""
    ids, reqs, steps = {}, {}, []
    t0 = time.perf_counter()
    nxt = 0
    while nxt < len(trace) or not engine.is_finished():
        now = time.perf_counter() - t0
        while nxt < len(trace) and trace[nxt][0] <= now:
            arr, p, G = trace[nxt]
            sid = engine.add_request(prompt_of(p), sampling(G), sparse)
            ids[sid] = nxt
            reqs[nxt] = dict(arrival=arr, p=p, G=G, start=None, finish=None, steps=[])
            nxt += 1
        if engine.is_finished():
            time.sleep(max(0.0, trace[nxt][0] - (time.perf_counter() - t0)))
            continue
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start = time.perf_counter() - t0
        begin.record()
        out, _ = engine.step()
        end.record()
        end.synchronize()
        finish = time.perf_counter() - t0
        ms = begin.elapsed_time(end)
        q = sum(n for *_, n in rec.batch)
        kinds = [sum(1 for _, c, _ in rec.batch if c == k) for k in (0, 1, 2)]
        steps.append((len(steps), start, ms, len(rec.batch), q, *kinds))
        for sid, c, n in rec.batch:
            r = reqs[ids[sid]]
            if r["start"] is None:
                r["start"] = start
            r["steps"].append((len(steps) - 1, ("full", "select", "block")[c], q, ms))
        for sid, _ in out:
            reqs[ids[sid]]["finish"] = finish
            done = sum(1 for r in reqs.values() if r["finish"] is not None)
            if log and (done % 8 == 0 or done == len(trace)):
                log(f"{done}/{len(trace)} requests, {finish:.0f} s, {len(steps)} steps")
    return reqs, steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--code", required=True, help="dLLM-Serve's checkout (holds dllmserve/ and COMMIT)")
    ap.add_argument("--trace", required=True, action="append",
                    help="tessera CSV: arrival_ns,prompt_tokens,output_tokens (repeatable: one engine, one run a trace)")
    ap.add_argument("--out", required=True, help="writes OUT/TRACE-STEM/ for each trace")
    ap.add_argument("--warmup", type=int, default=4, help="untimed requests first, together and then alone (compiles)")
    ap.add_argument("--limit", type=int, default=0, help="the first N requests only")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model_dir = tempfile.mkdtemp()  # the runtime asserts its model path is a folder; nothing is read from it
    t_build = time.perf_counter()
    engine = build_engine(a.code, model_dir)
    build_s = time.perf_counter() - t_build
    from dllmserve import SamplingParams
    from dllmserve.sparse.state import SparseConfig
    sparse = SparseConfig(enabled=True, retention_ratio=0.5, delay_step=1, default_block_len=BLOCK, head_select=True)
    sampling = lambda G: SamplingParams(temperature=0.0, gen_length=G, steps=G, cfg_scale=0.0,
                                        remasking="low_confidence")
    gen = torch.Generator().manual_seed(a.seed)
    prompt_of = lambda p: torch.randint(0, MASK_ID, (p,), generator=gen).tolist()
    rec = Recorder(engine)
    first = read_trace(a.trace[0])
    if a.warmup:  # shapes across the trace's range, batched and alone, so compiles happen here
        serve(engine, rec, [(0.0, p, G) for _, p, G in first[:a.warmup]], prompt_of, sampling, sparse)
        serve(engine, rec, [(0.0, p, G) for _, p, G in first[:1]], prompt_of, sampling, sparse)
    for path in a.trace:
        trace = read_trace(path)[:a.limit or None]
        stem = os.path.splitext(os.path.basename(path))[0]
        out = os.path.join(a.out, stem)
        os.makedirs(out, exist_ok=True)
        torch.cuda.synchronize()
        reqs, steps = serve(engine, rec, trace, prompt_of, sampling, sparse,
                            log=lambda m: print(f"dllm-serve {stem}: {m}", file=sys.stderr, flush=True))
        with open(os.path.join(out, "requests.csv"), "w") as f:
            f.write("id,arrival_s,start_s,finish_s,prompt_tokens,gen_tokens,forwards\n")
            for i in sorted(reqs):
                r = reqs[i]
                f.write("%d,%.6f,%.6f,%.6f,%d,%d,%d\n" % (i, r["arrival"], r["start"], r["finish"], r["p"], r["G"],
                                                          len(r["steps"])))
        with open(os.path.join(out, "steps.csv"), "w") as f:
            f.write("index,start_s,ms,seqs,q_tokens,full,select,reuse\n")
            for s in steps:
                f.write("%d,%.6f,%.4f,%d,%d,%d,%d,%d\n" % s)
        with open(os.path.join(out, "forwards.csv"), "w") as f:
            f.write("id,index,kind,q_tokens,ms\n")
            for i in sorted(reqs):
                for j, (_, kind, q, ms) in enumerate(reqs[i]["steps"]):
                    f.write("%d,%d,%s,%d,%.4f\n" % (i, j, kind, q, ms))
        import transformers
        meta = dict(system="dllm-serve", commit=commit_of(a.code),
                    torch=torch.__version__, transformers=transformers.__version__, gpu=torch.cuda.get_device_name(),
                    requests=len(reqs), steps=len(steps), warmup=a.warmup, seed=a.seed, build_s=round(build_s, 1),
                    kv_blocks=engine.config.num_kvcache_blocks, max_num_batched_tokens=engine.config.max_num_batched_tokens,
                    substituted=SUBSTITUTED, trace=os.path.basename(path))
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
    os.rmdir(model_dir)


if __name__ == "__main__":
    main()
