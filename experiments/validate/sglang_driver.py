#!/usr/bin/env python3
"""sglang_driver.py: runs SGLang's own dLLM serving (the sglang package, its offline Engine: tokenizer
manager, scheduler and model runner in their own processes) over a trace, for the record
sglang-h200 and `tessera exp run validate-sglang`.

SGLang does the work: its scheduler's dLLM mixin forms the rounds (at most --max-running-requests
requests, prefill first, each block from position 0), its LowConfidence algorithm denoises them
(threshold 0.95, at least one token a step) first done first out or in sync, its LLaDA2 model runs
the forwards on its own kernels (FlashInfer attention, its fused MoE, CUDA graphs where it captures
them), and its radix cache keeps the prompts' blocks.

The driver supplies only the glue:
  - LLaDA2.0-mini's config.json from the folder --model names (no checkpoint: SGLang's dummy load
    format builds the model, its weights drawn as sglang_hook/sitecustomize.py says). Drawn weights
    make every step's confidence far below 0.95, so each step commits its one token: 32 steps a
    block, tessera's --decode fixed:1;
  - prompts of random token ids below the mask id, drawn with --prompt-seed [5] for every trace, so
    a later trace's prompts are an earlier one's and SGLang's radix cache holds them (--fresh-prompts
    draws each trace's own); skip_tokenizer_init, ignore_eos, max_new_tokens G;
  - the trace's arrivals, replayed in real time: a request goes to the engine when it arrives;
  - timing: each request's wall-clock arrival and finish (its async_generate returning), and every
    scheduler round (sglang_hook/sitecustomize.py).

Writes, for each trace, OUT/TRACE-STEM/requests.csv (id,arrival_s,finish_s,prompt_tokens,gen_tokens,
out_tokens), rounds.csv (the hook's rows, start_s relative to the trace's start) and meta.json.

Usage: sglang_driver.py --model DIR --trace FILE [--trace FILE...] --out DIR [--fdfo 0|1] [--mrr N]
                        [--warmup N] [--prompt-seed S]
                        [--fresh-prompts]
"""
import argparse, asyncio, csv, glob, json, os, random, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
MASK_ID = 156895  # sglang/srt/dllm/config.py, LLaDA2MoeModelLM


def read_trace(path):
    with open(path) as f:
        return [(int(r["arrival_ns"]) / 1e9, int(r["prompt_tokens"]), int(r["output_tokens"]))
                for r in csv.DictReader(f)]


async def replay(engine, rows, seed):
    rng = random.Random(seed)
    prompts = [[rng.randrange(1000, MASK_ID - 1000) for _ in range(p)] for _, p, _ in rows]
    t0 = time.time()
    done = [None] * len(rows)

    async def one(i):
        at, p, g = rows[i]
        await asyncio.sleep(max(0.0, t0 + at - time.time()))
        arrival = time.time() - t0
        out = await engine.async_generate(input_ids=prompts[i], sampling_params={
            "max_new_tokens": g, "ignore_eos": True, "temperature": 0.0})
        done[i] = (i, arrival, time.time() - t0, p, g, len(out.get("output_ids", [])))
    await asyncio.gather(*(one(i) for i in range(len(rows))))
    return t0, done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--trace", action="append", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fdfo", type=int, default=1)
    ap.add_argument("--mrr", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--prompt-seed", type=int, default=5)
    ap.add_argument("--fresh-prompts", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    step_log = os.path.join(a.out, "rounds")
    os.environ["SGLANG_STEP_LOG"] = step_log
    os.environ.setdefault("SGLANG_STAND_INS", "xgrammar,IPython,modelscope")
    os.environ["PYTHONPATH"] = os.path.join(HERE, "sglang_hook") + os.pathsep + os.environ.get("PYTHONPATH", "")
    import importlib.util  # this process's own hook (its children load it from PYTHONPATH)
    spec = importlib.util.spec_from_file_location("sglang_hook", os.path.join(HERE, "sglang_hook", "sitecustomize.py"))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    import sglang, torch
    t_start = time.time()
    engine = sglang.Engine(model_path=os.path.abspath(a.model), trust_remote_code=True, load_format="dummy",
                           skip_tokenizer_init=True, dllm_algorithm="LowConfidence", dllm_fdfo=bool(a.fdfo),
                           max_running_requests=a.mrr, grammar_backend="none", random_seed=0,
                           log_level="warning")
    up_s = time.time() - t_start
    warm = [(0.0, 128, 64)] * a.warmup
    if warm:
        engine.loop.run_until_complete(replay(engine, warm, 99))
    for k, tr in enumerate(a.trace):
        stem = os.path.splitext(os.path.basename(tr))[0]
        d = os.path.join(a.out, stem)
        os.makedirs(d, exist_ok=True)
        rows = read_trace(tr)
        marks = {f: os.path.getsize(f) for f in glob.glob(step_log + ".*")}
        seed = a.prompt_seed + (k if a.fresh_prompts else 0)
        t0, done = engine.loop.run_until_complete(replay(engine, rows, seed))
        with open(os.path.join(d, "requests.csv"), "w") as f:
            f.write("id,arrival_s,finish_s,prompt_tokens,gen_tokens,out_tokens\n")
            for r in done:
                f.write("%d,%.6f,%.6f,%d,%d,%d\n" % r)
        with open(os.path.join(d, "rounds.csv"), "w") as f:
            f.write("start_s,ms,reqs,q_tokens,forwards,graph,kv_tokens\n")
            for log in sorted(glob.glob(step_log + ".*")):
                with open(log) as g:
                    g.seek(marks.get(log, 0))
                    for line in g:
                        if line.startswith("start_s"):
                            continue
                        w, rest = line.split(",", 1)
                        f.write("%.6f,%s" % (float(w) - t0, rest))
        lat = [r[2] - r[1] for r in done]
        print(f"{stem}: {len(done)} requests, mean latency {sum(lat) / len(lat):.3f} s, "
              f"makespan {max(r[2] for r in done):.3f} s", flush=True)
    meta = {"sglang": sglang.__version__, "traces": [os.path.basename(t) for t in a.trace],
            "prompt_seed": a.prompt_seed, "fresh_prompts": a.fresh_prompts, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
            "fdfo": a.fdfo, "max_running_requests": a.mrr, "algorithm": "LowConfidence",
            "engine_up_s": round(up_s, 1),  # the first start on a machine compiles FlashInfer's and Triton's kernels
            "stand_ins": [n for n in os.environ["SGLANG_STAND_INS"].split(",") if n and n in sys.modules
                          and type(sys.modules[n]).__name__ == "Module"], "server_args": {k: str(v) for k, v in vars(engine.server_args).items()
                                                          if k in ("attention_backend", "page_size", "disable_radix_cache",
                                                                   "chunked_prefill_size", "cuda_graph_max_bs",
                                                                   "disable_cuda_graph", "mem_fraction_static")}}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    engine.shutdown()


if __name__ == "__main__":
    main()
