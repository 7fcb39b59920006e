"""ownloop.py: times a system's own generate loop, forward by forward, for the own-code records
(dkv.py, elastic.py, d2cache.py).

timed_requests wraps MODEL's forward so that a CUDA event marks the start of every forward and
DESCRIBE(args, kwargs) is called after it returns (the loop's arguments, which some loops change in
place) for the forward's own columns (a tensor is read after the request, so that no read-back is
added inside the timed loop); then runs RUN(P, G, ids) on each request of REQS (read_requests's or
read_prompts's: ids None for random ones) one at a time after WARMUP runs of the first, and writes
OUT/forwards.csv (request,index,<COLUMNS>,ms: a forward's start to the next one's, the last to the
request's end, so that the loop's host work between forwards is in it) and OUT/requests.csv
(request,prompt_tokens,gen_tokens,forwards,ms). write_meta writes OUT/meta.json.
"""
import argparse
import csv
import json
import os

import torch


def arguments(trace_required=True):
    """The arguments every own-loop driver takes: --code (the checkout), --trace, --out, --seed, --warmup."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", required=True)
    ap.add_argument("--trace", required=trace_required)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1)
    return ap


def write_meta(out, code, **extra):
    """OUT/meta.json: the versions, the card and the checkout's commit (its COMMIT file)."""
    import transformers
    path = os.path.join(code, "COMMIT")
    meta = dict(commit=open(path).read().strip() if os.path.exists(path) else "", torch=torch.__version__,
                transformers=transformers.__version__, gpu=torch.cuda.get_device_name(), **extra)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def read_requests(trace):
    """TRACE's requests as (P, G, None): a prompt of random ids of P tokens each."""
    with open(trace) as f:
        return [(int(r["prompt_tokens"]), int(r["output_tokens"]), None) for r in csv.DictReader(f)]


def read_prompts(path, gen):
    """A prompt file's requests (a JSON array of token ids a line) as (P, GEN, ids)."""
    with open(path) as f:
        return [(len(ids), gen, ids) for ids in (json.loads(line) for line in f if line.strip())]


def value(c):
    """A column's value: DESCRIBE may give a GPU tensor, read here, after the request, not mid-loop."""
    return c.item() if hasattr(c, "item") else c


def timed_requests(model, reqs, run, describe, columns, out, warmup=1):
    os.makedirs(out, exist_ok=True)
    marks = []
    orig = model.forward

    def timed(*args, **kw):
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        res = orig(*args, **kw)
        marks.append((describe(args, kw), ev))
        return res

    model.forward = timed
    for _ in range(warmup):
        run(*reqs[0])
    torch.cuda.synchronize()
    marks.clear()
    with open(os.path.join(out, "forwards.csv"), "w") as ff, open(os.path.join(out, "requests.csv"), "w") as fr:
        ff.write("request,index," + ",".join(columns) + ",ms\n")
        fr.write("request,prompt_tokens,gen_tokens,forwards,ms\n")
        for i, (P, G, ids) in enumerate(reqs):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            run(P, G, ids)
            end.record()
            end.synchronize()
            for k, (cols, ev) in enumerate(marks):
                nxt = marks[k + 1][1] if k + 1 < len(marks) else end
                ff.write(f"{i},{k}," + ",".join(str(value(c)) for c in cols) + f",{ev.elapsed_time(nxt):.4f}\n")
            fr.write(f"{i},{P},{G},{len(marks)},{start.elapsed_time(end):.3f}\n")
            marks.clear()
    model.forward = orig
