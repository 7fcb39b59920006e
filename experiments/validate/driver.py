#!/usr/bin/env python3
"""driver.py: runs a seed system's own public generate loop as a server would, for `tessera exp run
validate`.

The system's code is imported unchanged from CODE (a checkout at a named commit; see
experiments/validate/README.md); this driver supplies only the glue:
  - weights drawn at random (normal, std 0.02; norms 1) in bf16 on the GPU, in the shape of the
    published LLaDA-8B-Instruct config.json (no checkpoint reaches the GPU machines);
  - prompts of random token ids (below the mask id) of the trace's prompt lengths;
  - arrivals: the trace's times, replayed in real time; requests are served first come, first served,
    one at a time, as every one of these loops allocates its canvas with one row;
  - timing: a CUDA event at the start of every forward of the model and one after each request;
    wall-clock arrival, start and finish.
Every request denoises G = its output length rounded up to blocks of 32 (--block), one position a step
(steps = G, no threshold: tessera's fixed:1).

Systems (and the function each runs):
  native       ML-GSAI/LLaDA generate.py generate() (a full forward every step)
  fast-dllm    NVlabs/Fast-dLLM llada/generate.py generate_with_dual_cache()
  dllm-cache   maomaocun/dLLM-cache utils/generate_function.py generate() with register_cache_LLaDA
               (prompt every 100 forwards, response every 7, transfer ratio 0.25)
  sparse-dllm  OpenMOSS/Sparse-dLLM opencompass/models/sparse_dllm/llada_generate.py generate()
               (kernel 3, keep ratio 0.5, block 32)
  dpad         Crys-Chen/DPad llada/generate_dropout.py generate() (no cache), with its own model file;
  dpad-prefix  generate_with_prefix_cache(), dpad-dual generate_with_dual_cache(): the Gaussian suffix
  d2f          zhijie-group/Discrete-Diffusion-Forcing D2F-eval/eval_llada.py DreamLoRA._generate_block_single
               (its pipelined blocks over its own model file, model_cache/llada/: blocks of 32, the paper's
               tau_add 0.1, tau_act 0.95, tau_conf 0.9, max_length 4096), called on a stand-in for its
               lm-eval wrapper holding those settings; without its LoRA (random weights either way)
  sparsed      INV-WZQ/SparseD models/LLaDA/generate.py generate() with SparseD_param (its model file's
               FlexAttention path: skip 0.2, select 0.3, blocks of 128, its README's settings), steps = G
  sparsed-dense  the same generate() and model file without SparseD_param (its --origin: dense SDPA)
  dpad-dual    dropout of its scripts/main_instruct.sh (k 4, scale 2, window 256; the response's length
               where shorter, as its sampler takes no window past it), early termination off (random
               weights may decode its EOS anywhere)
LLaDA's and dLLM-Cache's repositories ship no model file (they load the Hugging Face remote code):
both run Fast-dLLM's llada/model/modeling_llada.py, the Hugging Face file with Fast-dLLM's
replace_position path added, which neither of them takes. Sparse-dLLM runs its own model file.

Writes, for each trace, OUT/TRACE-STEM/requests.csv (id,arrival_s,start_s,finish_s,prompt_tokens,
gen_tokens,forwards), forwards.csv (id,index,kind,q_tokens,ms: each forward's start to the next one's, the last to the
request's end, so that the loop's sampling and host work between forwards are in it) and
meta.json (versions, card, commit, what was substituted).

With --batch B (dllm-cache only: the one loop here whose canvas takes several rows) the requests go
in consecutive static batches of B, as its generate takes them: a batch starts once its last request
has arrived and the batch before it is done, its prompts stacked (they must be of one length, so no
padding is involved), and forwards.csv holds each forward once (under the batch's first request).

Usage: driver.py --system NAME --code DIR [--model-code DIR] --trace FILE [--trace FILE...] --out DIR
                 [--warmup N] [--limit N] [--batch B] [--block N]
                 [--host-line FILE]   (one run a trace, into OUT/TRACE-STEM/)
"""
import argparse, csv, importlib, importlib.util, json, math, os, sys, time, types

import torch

MASK_ID = 126336
BLOCK = 32
LLADA_8B = dict(d_model=4096, n_heads=32, n_kv_heads=32, n_layers=32, mlp_hidden_size=12288, mlp_ratio=4,
                vocab_size=126464, embedding_size=126464, max_sequence_length=4096, rope=True,
                rope_theta=500000.0, rope_full_precision=True, rms_norm_eps=1e-5, block_type="llama",
                activation_type="silu", layer_norm_type="rms", layer_norm_with_affine=True,
                bias_for_layer_norm=False, include_bias=False, include_qkv_bias=False, weight_tying=False,
                attention_dropout=0.0, residual_dropout=0.0, embedding_dropout=0.0, flash_attention=False,
                alibi=False, block_group_size=1, input_emb_norm=False, scale_logits=False,
                attention_layer_norm=False, init_fn="mitchell", init_std=0.02, mask_token_id=MASK_ID,
                eos_token_id=126081, pad_token_id=126081, use_cache=False)
SUBSTITUTED = []
# DPad's loops (llada/generate_dropout.py) and its suffix window (scripts/main_instruct.sh's GSM8K line)
DPAD = {"dpad": "generate", "dpad-prefix": "generate_with_prefix_cache", "dpad-dual": "generate_with_dual_cache"}
DPAD_SIGMA, DPAD_SCALE, DPAD_WINDOW = 4.0, 2.0, 256
# SparseD's settings (its llada_generation.py defaults and README: skip 0.2, select 0.3, blocks of 128)
SPARSED = dict(skip=0.2, select=0.3, block_size=128)
# D2F's thresholds (its paper's defaults, Appendix Table 8) and its LLaDA settings (eval_llada.sh)
D2F = dict(add=0.1, act=0.95, conf=0.9, max_length=4096, eos=126081)


def need(module):
    """einops is imported by the model files but unused on these paths: a stand-in where missing."""
    try:
        importlib.import_module(module)
    except ImportError:
        sys.modules[module] = types.ModuleType(module)
        SUBSTITUTED.append(f"{module}: not installed; an empty module stands in (imported, never called)")


def read_trace(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            p, o = int(r["prompt_tokens"]), int(r["output_tokens"])
            rows.append((int(r["arrival_ns"]) / 1e9, p, BLOCK * max(1, math.ceil(o / BLOCK))))
    return rows


def commit_of(d):
    """The commit a checkout's COMMIT file names ("" where it has none)."""
    path = os.path.join(d, "COMMIT")
    return open(path).read().strip() if os.path.exists(path) else ""


def random_init(model, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02, generator=g)


def build_llada(pkg, cfg_mod, seed, extra=None):
    """The LLaDA-8B shape from PKG's model files, built on the GPU in bf16 (LLaDAModelLM's own
    constructor builds on the CPU in fp32: 32 GB), wrapped by its LLaDAModelLM."""
    conf = importlib.import_module(cfg_mod)
    mdl = importlib.import_module(pkg)
    cfg = conf.LLaDAConfig(**LLADA_8B, **(extra or {}))
    cfg.use_cache = False  # transformers 5 drops it from the config; the model file reads it
    mc = mdl.create_model_config_from_pretrained_config(cfg)
    mc.init_device = "cuda"
    torch.set_default_dtype(torch.bfloat16)
    inner = mdl.LLaDAModel(mc, init_params=False)
    torch.set_default_dtype(torch.float32)
    inner = inner.to(device="cuda", dtype=torch.bfloat16)
    model = mdl.LLaDAModelLM(cfg, model=inner).eval()
    random_init(model, seed)
    return model


def stub_module(name):
    """A module that lets D2F's evaluation file import what only its lm-eval harness uses (peft,
    accelerate, datasets, lm_eval, jinja2): any attribute is a class that, called, returns its argument
    (register_model's decorator), and subclasses fine (TemplateLM)."""
    class Stub:
        def __init__(self, *a, **kw):
            pass

        def __call__(self, x):
            return x

    m = types.ModuleType(name)
    m.__path__ = []
    m.__getattr__ = lambda attr: Stub
    return m


def make_d2f(code, seed):
    """D2F's generation over its own model file: _generate_block_single, unchanged, called with a
    stand-in for its wrapper's self. With random weights no position's confidence passes tau_conf, so
    each fully activated block decodes its top position a step and the semi-activated ones none; the
    EOS token's output row is zeroed, so that the loop's hard-coded EOS (126081) is never the argmax
    and the response is decoded to its end. The loop decodes its text every step for display: the
    stand-in tokenizer returns none."""
    root = os.path.join(code, "D2F-eval")
    sys.path.insert(0, root)
    for mod in ("peft", "accelerate", "datasets", "lm_eval", "lm_eval.api", "lm_eval.api.instance", "lm_eval.api.model",
                "lm_eval.api.registry", "lm_eval.models", "lm_eval.models.utils", "lm_eval.__main__", "jinja2"):
        try:
            importlib.import_module(mod)
        except Exception:  # missing, or not importable beside this transformers
            sys.modules[mod] = stub_module(mod)
            SUBSTITUTED.append(f"{mod}: not installed; a stand-in lets eval_llada.py import (its harness alone uses it)")
    model = build_llada("model_cache.llada.modeling_llada", "model_cache.llada.configuration_llada", seed)
    with torch.no_grad():
        model.model.transformer.ff_out.weight[D2F["eos"]].zero_()
    ev = importlib.import_module("eval_llada")
    me = types.SimpleNamespace(model=model, mask_token_id=MASK_ID, block_size=BLOCK, device=torch.device("cuda"),
                               block_add_threshold=D2F["add"], decoded_token_threshold=D2F["act"],
                               skip_threshold=D2F["conf"], max_length=D2F["max_length"], target_dtype=torch.bfloat16,
                               temperature=0.0, top_p=None, top_k=None, sampling_strategy="default",
                               tokenizer=types.SimpleNamespace(decode=lambda ids, **kw: ""))
    me._update_block_completion_states = types.MethodType(ev.DreamLoRA._update_block_completion_states, me)

    def run(prompt, G):
        me.max_new_tokens = G
        return ev.DreamLoRA._generate_block_single(me, prompt)
    return model, run


def make_system(name, code, model_code, seed):
    """Returns (model, run(prompt, G)) for NAME's own loop."""
    need("einops")
    if name == "sparse-dllm":
        sys.path.insert(0, code)
        base = "opencompass.models.sparse_dllm"
        model = build_llada(base + ".modeling_llada", base + ".configuration_llada", seed,
                            dict(kernel_size=3, keep_ratio=0.5, block_len=BLOCK))
        gen = importlib.import_module(base + ".llada_generate").generate
        return model, lambda prompt, G: gen(model, prompt, steps=G, gen_length=G, block_length=BLOCK,
                                            temperature=0.0, cfg_scale=0.0, remasking="low_confidence",
                                            mask_id=MASK_ID)
    if name == "d2f":
        return make_d2f(code, seed)
    if name in ("sparsed", "sparsed-dense"):  # LLaDA's package alone: models/__init__ imports Dream's too
        sys.path.insert(0, os.path.join(code, "models"))
        model = build_llada("LLaDA.modeling_llada", "LLaDA.configuration_llada", seed)
        gen = importlib.import_module("LLaDA.generate").generate
        sparse = name == "sparsed"
        return model, lambda prompt, G: gen(model, prompt, steps=G, gen_length=G, block_length=BLOCK, temperature=0.0,
                                            remasking="low_confidence", mask_id=MASK_ID,
                                            SparseD_param=dict(SPARSED, new_generation=G, whole_steps=G) if sparse else None)
    if name in DPAD:
        sys.path.insert(0, os.path.join(code, "llada"))
        model = build_llada("model.modeling_llada", "model.configuration_llada", seed)
        gen = getattr(importlib.import_module("generate_dropout"), DPAD[name])
        return model, lambda prompt, G: gen(model, prompt, steps=G, gen_length=G, block_length=BLOCK,
                                            temperature=0.0, remasking="low_confidence", mask_id=MASK_ID,
                                            threshold=None, dropout="gaussian", sigma=DPAD_SIGMA,
                                            scale=DPAD_SCALE, window=min(DPAD_WINDOW, G),
                                            early_termination=False)
    sys.path.insert(0, os.path.join(model_code, "llada"))
    model = build_llada("model.modeling_llada", "model.configuration_llada", seed)
    if name == "fast-dllm":
        gen = importlib.import_module("generate").generate_with_dual_cache
        return model, lambda prompt, G: gen(model, prompt, steps=G, gen_length=G, block_length=BLOCK,
                                            temperature=0.0, remasking="low_confidence", mask_id=MASK_ID,
                                            threshold=None)
    if name == "native":
        spec = importlib.util.spec_from_file_location("llada_reference", os.path.join(code, "generate.py"))
        ref = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ref)
        return model, lambda prompt, G: ref.generate(model, prompt, steps=G, gen_length=G, block_length=BLOCK,
                                                     temperature=0.0, cfg_scale=0.0, remasking="low_confidence",
                                                     mask_id=MASK_ID)
    if name == "dllm-cache":
        sys.path.insert(0, code)
        for m in [m for m in sys.modules if m == "utils" or m.startswith("utils.")]:
            del sys.modules[m]
        from dataclasses import asdict
        from dllm_cache.cache import dLLMCache, dLLMCacheConfig
        from dllm_cache.hooks import register_cache_LLaDA
        gen = importlib.import_module("utils").generate
        dLLMCache.new_instance(**asdict(dLLMCacheConfig(prompt_interval_steps=100, gen_interval_steps=7,
                                                        transfer_ratio=0.25)))
        register_cache_LLaDA(model, "model.transformer.blocks")
        # Fast-dLLM's model passes replace_position to every block; the hooked block takes the
        # Hugging Face file's arguments only
        for b in model.model.transformer.blocks:
            f = b.forward
            b.forward = (lambda f: lambda x, attention_bias=None, layer_past=None, use_cache=False, **kw:
                         f(x, attention_bias, layer_past, use_cache))(f)
        SUBSTITUTED.append("model file: NVlabs/Fast-dLLM llada/model/modeling_llada.py (the repository loads "
                           "the Hugging Face remote code); its blocks' replace_position argument dropped")
        return model, lambda prompt, G: gen(prompt, None, model, steps=G, gen_length=G, block_length=BLOCK,
                                            temperature=0.0, cfg_scale=0.0, remasking="low_confidence",
                                            mask_id=MASK_ID)
    raise SystemExit(f"driver.py: unknown system '{name}' (native fast-dllm dllm-cache sparse-dllm {' '.join(DPAD)})")


class Timer:
    """A CUDA event at every forward's start, tagged with its kind and query length."""

    def __init__(self, model, system):
        self.marks = []
        orig = model.forward

        def timed(*a, **kw):
            ids = a[0] if a else kw.get("input_ids")
            if system == "sparse-dllm":
                kind = "full" if a[2] < 2 else "block"
            elif system == "fast-dllm":
                kind = "block" if "replace_position" in kw else "full"
            elif system in ("dpad-prefix", "dpad-dual", "d2f"):
                kind = "block" if kw.get("past_key_values") is not None else "full"
            else:
                kind = "full"
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.marks.append((kind, int(ids.shape[1]), ev))
            return orig(*a, **kw)

        model.forward = timed

    def take(self, end):
        end.synchronize()
        rows = []
        for i, (kind, q, ev) in enumerate(self.marks):
            nxt = self.marks[i + 1][2] if i + 1 < len(self.marks) else end
            rows.append((i, kind, q, ev.elapsed_time(nxt)))
        self.marks = []
        return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", required=True)
    ap.add_argument("--code", required=True, help="the system's checkout")
    ap.add_argument("--model-code", help="Fast-dLLM's checkout (the model file of native, fast-dllm, dllm-cache)")
    ap.add_argument("--trace", required=True, action="append",
                    help="tessera CSV: arrival_ns,prompt_tokens,output_tokens (repeatable: one model, one run a trace)")
    ap.add_argument("--out", required=True, help="writes OUT/TRACE-STEM/ for each trace")
    ap.add_argument("--warmup", type=int, default=3, help="untimed requests first (compiles, cuBLAS choices)")
    ap.add_argument("--limit", type=int, default=0, help="the first N requests only")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1, help="static batches of B requests (dllm-cache only) [1]")
    ap.add_argument("--host-line", metavar="FILE",
                    help="also writes the loop's own host line, fitted on the last trace's run (compare.py loop-host)")
    ap.add_argument("--block", type=int, default=BLOCK, help=f"the loop's block length [{BLOCK}]")
    a = ap.parse_args()
    if a.block < 1:
        raise SystemExit(f"driver.py: --block {a.block}: a block holds at least one position")
    globals()["BLOCK"] = a.block
    if a.batch < 1 or (a.batch > 1 and a.system != "dllm-cache"):
        raise SystemExit(f"driver.py: --batch {a.batch}: only dllm-cache's loop takes several rows (B >= 1)")
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(a.seed)
    t_build = time.perf_counter()
    model, run = make_system(a.system, a.code, a.model_code or a.code, a.seed)
    build_s = time.perf_counter() - t_build
    timer = Timer(model, a.system)
    gen = torch.Generator().manual_seed(a.seed)

    def prompt_of(p, rows=1):
        return torch.randint(0, MASK_ID, (rows, p), generator=gen).cuda()

    first = read_trace(a.trace[0])
    for w in range(a.warmup):  # shapes across the trace's range, so compiles happen here
        _, p, G = first[(w * 7) % len(first)]
        run(prompt_of(p, a.batch), G)
        timer.marks = []
    for path in a.trace:
        trace = read_trace(path)[:a.limit or None]
        out = os.path.join(a.out, os.path.splitext(os.path.basename(path))[0])
        os.makedirs(out, exist_ok=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        reqs, fwds = [], []
        for i in range(0, len(trace), a.batch):
            if any(r[1:] != trace[i][1:] for r in trace[i:i + a.batch]):
                raise SystemExit(f"driver.py: {path}: the batch of rows {i + 2}-{min(i + a.batch, len(trace)) + 1} "
                                 "mixes lengths (prompt_tokens, output_tokens): a batch's prompts are stacked unpadded")
        t0 = time.perf_counter()
        for i in range(0, len(trace), a.batch):
            batch = trace[i:i + a.batch]
            _, p, G = batch[0]
            prompt = prompt_of(p, len(batch))
            wait = batch[-1][0] - (time.perf_counter() - t0)
            if wait > 0:
                time.sleep(wait)
            start = time.perf_counter() - t0
            run(prompt, G)
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            end.synchronize()
            finish = time.perf_counter() - t0
            rows = timer.take(end)
            reqs += [(i + k, arr, start, finish, p, G, len(rows)) for k, (arr, _, _) in enumerate(batch)]
            fwds += [(i, *r) for r in rows]
            done = i + len(batch)
            if done % 8 < a.batch or done == len(trace):
                print(f"{a.system} {os.path.basename(out)}: {done}/{len(trace)} requests, {finish:.0f} s",
                      file=sys.stderr, flush=True)
        with open(os.path.join(out, "requests.csv"), "w") as f:
            f.write("id,arrival_s,start_s,finish_s,prompt_tokens,gen_tokens,forwards\n")
            for r in reqs:
                f.write("%d,%.6f,%.6f,%.6f,%d,%d,%d\n" % r)
        with open(os.path.join(out, "forwards.csv"), "w") as f:
            f.write("id,index,kind,q_tokens,ms\n")
            for r in fwds:
                f.write("%d,%d,%s,%d,%.4f\n" % r)
        import transformers
        meta = dict(system=a.system, commit=commit_of(a.code), torch=torch.__version__,
                    transformers=transformers.__version__, gpu=torch.cuda.get_device_name(), requests=len(reqs),
                    warmup=a.warmup, seed=a.seed, batch=a.batch, block=BLOCK, build_s=round(build_s, 1), substituted=SUBSTITUTED,
                    peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2), trace=os.path.basename(path))
        if a.system in ("native", "fast-dllm", "dllm-cache") and a.model_code:
            meta["model_commit"] = commit_of(a.model_code)
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
    if a.host_line:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import compare
        compare.loop_host(a.system, out, a.host_line)


if __name__ == "__main__":
    main()
