#!/usr/bin/env python3
"""compare.py: the validation's arithmetic (experiments/validate.sh runs it; no GPU).

  compare.py host RUNS OUT.csv   the validation machine's host line, fitted on the held-out profile grid
                                 of LLaDA's reference loop (RUNS/native/profile): the mean forward the
                                 GPU does not bound (a full forward of at most 576 tokens), as a tessera
                                 host profile; prints each system's loop's issue time over it (the ratio
                                 of the means: a loop's forwards run 10-17% above their median on
                                 average, a tail of slow issues that the time a request takes sums)
  compare.py host-serve RUNS OUT.csv   dLLM-Serve's runtime's own host line, fitted on its held-out grid
                                 (RUNS/dllm-serve/serve-N: N requests together): the least-squares line of
                                 its steps' times over their sequences, over the steps in which every
                                 sequence runs its block over the cache (host-bound: 32 rows a sequence),
                                 as a tessera host profile of torch-dllm-serve's own loop
  compare.py loop-host SYSTEM RUN OUT.csv [ID...]   a loop's own host line, from one run's forwards
                                 (RUN: a folder of requests.csv and forwards.csv; the requests ID... alone
                                 where given): the mean of its light forwards (the host line's rule),
                                 as a tessera host profile naming the loop's implementation profile
                                 (driver.py --host-line, tessera calib host --probe --loop)
  compare.py lengths-forwards MACHINE SYSTEM BLOCK RUN   a length run's mean forward a request, its block
                                 forwards where it has them (CSV rows
                                 without a header: machine,system,prompt,gen,block,context,forwards,mean_ms;
                                 the context is the prompt and the generation, the cache a forward reads)
  compare.py lengths-report LENGTHS.csv FORWARDS.csv HOST.txt   experiments/validate-lengths.sh's tables
  compare.py lengths-check LENGTHS.csv   its goals, each met or missed: the loop probe within 15% for every
                                 request and within 10% for at least 90% of them; at least 85% inside the
                                 intervals
  compare.py kept SYSTEM RUNS PRED.db  DPad's suffix window, block by block (CSV on stdout:
                                 system,block,predicted,measured_mean,measured_min,measured_max,requests):
                                 the masked suffix positions a block's forwards kept past it, from the
                                 rows of its first forward, predicted (tessera keeps the expected count)
                                 and measured (DPad draws them at random, a set a block)
  compare.py rows SYSTEM RUNS PRED.db   the rows of every forward, the run's k-th forward against its
                                 k-th step (CSV on stdout: system,forwards,rows_equal,mean_abs_diff)
  compare.py sparsed RUNS SPARSE.db DENSE.db   SparseD's generate with its sparsity and without, request by
                                 request (CSV on stdout: prompt_tokens, each side's seconds, the speedup, and
                                 the mean time of the dense steps before the pattern, of the step that builds
                                 it and of the sparse steps after, predicted and measured)
  compare.py issue RUNS PROFILE  an own loop's issue time a forward over LLaDA's reference loop's: the mean of
                                 the light forwards (the host line's rule) of RUNS/PROFILE (ownloop.py's
                                 files) over those of RUNS/native/profile
  compare.py elastic-knobs RUNS  the decisions Elastic-Cache's own loop took (own.sh elastic), as tessera's
                                 --ec-track, --ec-refresh-share and --ec-depth
  compare.py d2cache-knobs RUNS  the rollout's nucleus d2Cache's own loop chose (own.sh d2cache), as tessera's
                                 --d2-rollout-share
  compare.py fdllm-v2-dual-knobs RUNS  the whole-block steps Fast-dLLM v2's DualCache ran in a later sub-block
                                 (own.sh fdllm-v2-dual), as tessera's --v2-full-steps
  compare.py elastic-drift RUNS  Elastic-Cache's drift test, its own loop against tessera engine generate
                                 --elastic-drift on the same weights (elastic_drift.sh; CSV on stdout)
  compare.py d2cache-rollout RUNS  d2Cache's rollout nucleus, its own loop against tessera engine generate
                                 --d2-rollout on the same weights (d2cache_rollout.sh; CSV on stdout)
  compare.py elastic|d2cache|fdllm-v2|fdllm-v2-dual RUNS PRED.db  the own loop against tessera's policy,
                                 request by request (CSV on stdout)
  compare.py run SYSTEM RATE RUNS PRED.db   one run's table rows (CSV: system,rate,metric,predicted,
                                 measured,error_pct) on stdout and its requests' latencies
                                 (system,rate,id,predicted_s,measured_s) on stderr

A forward's time is its start to the next forward's (the last: to the request's end), so the loop's
sampling and host work between forwards are in it; tessera's step is the same span. Requests are served
one at a time in arrival order on both sides, so the k-th forward of the run is the k-th step. Where
the runtime batches (dllm-serve: its steps.csv), a request's j-th step on one side is compared with its
j-th step on the other.
"""
import csv, json, os, sqlite3, statistics, sys

HOST_LIGHT_TOKENS = 576  # full forwards up to 512 prompt + 64 positions: the GPU's work is under the host's
PHASE_KIND = {"FULL": "full", "REFRESH": "select", "REUSE": "block"}  # tessera's sparse phases, the runtime's states


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def light_ms(run, ids=None):
    """The times (ms) of a run's light forwards (block forwards, or full ones of at most HOST_LIGHT_TOKENS),
    of its requests ids alone where given."""
    ctx = {r["id"]: int(r["prompt_tokens"]) + int(r["gen_tokens"]) for r in read(os.path.join(run, "requests.csv"))
           if ids is None or r["id"] in ids}
    return [float(f["ms"]) for f in read(os.path.join(run, "forwards.csv"))
            if f["id"] in ctx and (f["kind"] == "block" or ctx[f["id"]] <= HOST_LIGHT_TOKENS)]


def light_forwards(runs, system):
    return light_ms(os.path.join(runs, system, "profile"))


# each batch-1 loop's implementation profile (tessera list impls): a host line measured on the loop names it
LOOP_IMPL = {"native": "torch-llada", "fast-dllm": "torch-fast-dllm", "dllm-cache": "torch-dllm-cache",
             "sparse-dllm": "torch-sparse-dllm"}


def loop_host_line(run, ids=None):
    """The mean light forward (ms) of a run's requests (ids: those alone) and their count."""
    ms = light_ms(run, ids)
    if not ms:
        sys.exit(f"compare.py: {run}: no light forwards (block forwards, or full ones of at most "
                 f"{HOST_LIGHT_TOKENS} tokens) to fit a host line on")
    return statistics.mean(ms), len(ms)


def loop_host(system, run, out, *ids):
    if system not in LOOP_IMPL:
        sys.exit(f"compare.py: loop-host: {system}: one of {', '.join(LOOP_IMPL)}")
    line, n = loop_host_line(run, set(ids) if ids else None)
    meta = read_meta(run)
    with open(out, "w") as f:
        f.write("host0_ms,seg_ms,eager_gap_ms,steps,impl,device\n")
        f.write(f"{line:.4f},0,0,{n},{LOOP_IMPL[system]},{meta['gpu']} ({system}'s own loop, torch {meta['torch']})\n")
    print(f"{system}'s own loop: {line:.2f} ms a forward ({n} light forwards) -> {out}")


def lengths_forwards(machine, system, block, run):
    reqs = read(os.path.join(run, "requests.csv"))
    fw = read(os.path.join(run, "forwards.csv"))
    for r in reqs:
        mine = [f for f in fw if f["id"] == r["id"]]
        blocks = [float(f["ms"]) for f in mine if f["kind"] == "block"]
        ms = blocks or [float(f["ms"]) for f in mine]
        p, g = int(r["prompt_tokens"]), int(r["gen_tokens"])
        print(f"{machine},{system},{p},{g},{block},{p + g},{len(ms)},{statistics.mean(ms):.2f}")


def lengths_report(lengths, forwards, host_txt):
    rows, fw = read(lengths), read(forwards)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    print("# Four batch-1 loops on two unseen H200 machines\n")
    print("Each machine's probes:\n")
    for line in open(host_txt):
        print(f"- {line.strip()}")
    print("\n## Each request, predicted after each probe\n")
    print("| machine | loop | prompt | generation | block | measured (s) | harness probe (s) | error | loop probe (s) "
          "| error | 90% interval (s) | inside |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['machine']} | {r['system']} | {r['prompt']} | {r['gen']} | {r['block']} | {float(r['measured_s']):.2f} "
              f"| {float(r['probe_s']):.2f} | {float(r['probe_err_pct']):+.1f}% | {float(r['loop_s']):.2f} "
              f"| {float(r['loop_err_pct']):+.1f}% | {float(r['loop_lo_s']):.2f}-{float(r['loop_hi_s']):.2f} | {r['inside']} |")
    print("\n## Summary\n")
    print("| requests | harness probe: median abs error | within 10% | loop probe: median abs error | within 10% "
          "| worst | inside the 90% interval | median half-width |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    groups = [("all", rows)] + [(f"machine {m}", [r for r in rows if r["machine"] == m]) for m in ("a", "b")]
    groups += [(f"generation {g}", [r for r in rows if r["gen"] == g]) for g in sorted({r["gen"] for r in rows}, key=int)]
    for name, rs in groups:
        if not rs:
            continue
        pe = [abs(float(r["probe_err_pct"])) for r in rs]
        le = [abs(float(r["loop_err_pct"])) for r in rs]
        hw = [50 * (float(r["loop_hi_s"]) - float(r["loop_lo_s"])) / float(r["loop_s"]) for r in rs]
        inside = sum(r["inside"] == "yes" for r in rs)
        print(f"| {name} ({len(rs)}) | {med(pe):.1f}% | {sum(e <= 10 for e in pe)}/{len(rs)} | {med(le):.1f}% "
              f"| {sum(e <= 10 for e in le)}/{len(rs)} | {max(le):.1f}% | {inside}/{len(rs)} | ±{med(hw):.1f}% |")
    print("\n## A loop's time a forward against its cached length\n")
    print("The mean forward of each request (its block forwards where its loop has them), in ms, by the context "
          "it reads (prompt and generation):\n")
    print("| machine | loop | block | context: mean forward (ms) |")
    print("|---|---|---:|---|")
    keys = sorted({(r["machine"], r["system"], r["block"]) for r in fw}, key=lambda k: (k[0], k[1], int(k[2])))
    for m, sy, b in keys:
        cells = [f"{r['context']}: {float(r['mean_ms']):.1f}" for r in fw
                 if (r["machine"], r["system"], r["block"]) == (m, sy, b) and int(r["forwards"]) > 0]
        print(f"| {m} | {sy} | {b} | {', '.join(cells)} |")


def lengths_check(lengths):
    rows = read(lengths)
    le = [abs(float(r["loop_err_pct"])) for r in rows]
    inside = sum(r["inside"] == "yes" for r in rows)
    checks = [(max(le) <= 15, f"the loop probe predicts every request within 15% (worst {max(le):.1f}%)"),
              (sum(e <= 10 for e in le) >= 0.9 * len(le),
               f"the loop probe predicts at least 90% of the requests within 10% ({sum(e <= 10 for e in le)}/{len(le)})"),
              (inside >= 0.85 * len(rows), f"at least 85% of the measurements lie in their 90% intervals ({inside}/{len(rows)})")]
    for ok, what in checks:
        print(("goal met: " if ok else "goal missed: ") + what)


def host(runs, out):
    native = light_forwards(runs, "native")
    base, n = statistics.mean(native), len(native)
    meta = read_meta(os.path.join(runs, "native", "profile"))
    with open(out, "w") as f:
        f.write("host0_ms,seg_ms,eager_gap_ms,steps,device\n")
        f.write(f"{base:.4f},0,0,{n},{meta['gpu']} (validation machine: LLaDA's loop, torch {meta['torch']})\n")
    print(f"host line of the validation machine: {base:.2f} ms a forward (LLaDA's reference loop, "
          f"{n} forwards of the profile grid)")
    for s in ("native", "fast-dllm", "dllm-cache", "sparse-dllm", "dpad", "dpad-prefix", "dpad-dual", "d2f"):
        if os.path.isdir(os.path.join(runs, s, "profile")):
            print(f"  {s:12s} its loop's issue time a forward: {statistics.mean(light_forwards(runs, s)) / base:.3f}"
                  " of LLaDA's")


def host_serve(runs, out):
    segs, ms = [], []
    grid = sorted(g for g in os.listdir(os.path.join(runs, "dllm-serve")) if g.startswith("serve-"))
    for g in grid:
        for st in read(os.path.join(runs, "dllm-serve", g, "steps.csv")):
            if st["full"] == "0" and st["select"] == "0":
                segs.append(int(st["seqs"]))
                ms.append(float(st["ms"]))
    line = statistics.linear_regression(segs, ms)
    meta = read_meta(os.path.join(runs, "dllm-serve", grid[0]))
    with open(out, "w") as f:
        f.write("host0_ms,seg_ms,eager_gap_ms,steps,impl,device\n")
        f.write(f"{line.intercept:.4f},{line.slope:.4f},0,{len(ms)},torch-dllm-serve,{meta['gpu']} (validation "
                f"machine: dLLM-Serve's runtime, torch {meta['torch']})\n")
    print(f"dLLM-Serve's runtime's host line: {line.intercept:.2f} ms a step + {line.slope:.2f} ms a sequence "
          f"({len(ms)} steps of its held-out grid, {min(segs)} to {max(segs)} sequences)")


def read_meta(d):
    with open(os.path.join(d, "meta.json")) as f:
        return json.load(f)


def pct(p, m):
    return 100.0 * (p - m) / m if m else float("nan")


def summary(lat, gen, first, last):
    lat = sorted(lat)
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
    return {"throughput_tok_s": gen / (last - first), "lat_mean_s": statistics.mean(lat), "lat_p99_s": p99}


def run(system, rate, runs, db):
    d = os.path.join(runs, system, f"{system}-{rate}")
    mreq, mfwd = read(os.path.join(d, "requests.csv")), read(os.path.join(d, "forwards.csv"))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    preq = con.execute("SELECT req_id, arrival_ns, finish_ns, G FROM requests WHERE state = 'finished' "
                       "ORDER BY req_id").fetchall()
    psteps = [r[0] / 1e6 for r in con.execute("SELECT duration_ns FROM steps ORDER BY step_id")]
    pkind = [r[0] for r in con.execute("SELECT num_full + num_refresh + num_prefill > 0 FROM steps ORDER BY step_id")]
    con.close()
    if len(preq) != len(mreq):
        sys.exit(f"compare.py: {system} {rate}: {len(preq)} requests predicted finished, {len(mreq)} measured")
    mlat = [float(r["finish_s"]) - float(r["arrival_s"]) for r in mreq]
    plat = [(f - a) / 1e9 for _, a, f, _ in preq]
    m = summary(mlat, sum(int(r["gen_tokens"]) for r in mreq), min(float(r["arrival_s"]) for r in mreq),
                max(float(r["finish_s"]) for r in mreq))
    p = summary(plat, sum(g for *_, g in preq), min(a for _, a, _, _ in preq) / 1e9, max(f for _, _, f, _ in preq) / 1e9)
    for k in ("throughput_tok_s", "lat_mean_s", "lat_p99_s"):
        print(f"{system},{rate},{k},{p[k]:.4g},{m[k]:.4g},{pct(p[k], m[k]):+.1f}")
    if os.path.exists(os.path.join(d, "steps.csv")):  # a batching runtime: a request's j-th step on each side
        nsteps = len(read(os.path.join(d, "steps.csv")))
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        pseg = {}
        for req, phase, ns in con.execute("SELECT g.req_id, g.phase, s.duration_ns FROM segments g JOIN steps s "
                                          "USING (run_id, step_id) ORDER BY g.req_id, g.step_id"):
            pseg.setdefault(req, []).append((ns / 1e6, phase))
        con.close()
        mseg = {}
        for f in mfwd:
            mseg.setdefault(int(f["id"]), []).append(f)
        pairs = [(pm, f, PHASE_KIND.get(ph) == f["kind"]) for i in sorted(mseg)
                 for (pm, ph), f in zip(pseg.get(i, []), mseg[i])]
        print(f"{system},{rate},forwards,{len(psteps)},{nsteps},{pct(len(psteps), nsteps):+.1f}")
        unmatched = sum(abs(len(pseg.get(i, [])) - len(mseg[i])) for i in mseg)
        if unmatched:  # a request's steps on one side beyond its count on the other: not in the MAPE
            print(f"{system},{rate},forward_unmatched,{unmatched},0,")
    else:  # one request at a time: the k-th forward of the run is the k-th step
        print(f"{system},{rate},forwards,{len(psteps)},{len(mfwd)},{pct(len(psteps), len(mfwd)):+.1f}")
        # native's and dLLM-Cache's forwards are all full-length: their kinds tell nothing apart
        pairs = [(ps, f, system in ("native", "dllm-cache") or bool(full) == (f["kind"] == "full"))
                 for ps, full, f in zip(psteps, pkind, mfwd)] if len(psteps) == len(mfwd) else []
    if pairs:
        errs, means = {"all": []}, {}
        for ps, f, _ in pairs:
            e = abs(ps - float(f["ms"])) / float(f["ms"])
            errs["all"].append(e)
            errs.setdefault(f["kind"], []).append(e)
            means.setdefault(f["kind"], ([], []))
            means[f["kind"]][0].append(ps)
            means[f["kind"]][1].append(float(f["ms"]))
        for k, (pv, mv) in means.items():
            p_, m_ = statistics.mean(pv), statistics.mean(mv)
            print(f"{system},{rate},forward_mean_ms_{k},{p_:.2f},{m_:.2f},{pct(p_, m_):+.1f}")
        for k, v in errs.items():
            print(f"{system},{rate},forward_mape_{k},{100 * statistics.mean(v):.1f},,")
        mismatched = sum(1 for *_, same in pairs if not same)
        if mismatched:
            print(f"{system},{rate},forward_kind_mismatches,{mismatched},0,")
    for (i, *_), pl, ml in zip(preq, plat, mlat):
        print(f"{system},{rate},{i},{pl:.4f},{ml:.4f}", file=sys.stderr)


def kept(system, runs, db):
    """The suffix rows a block's first forward keeps past the block, on both sides: its rows less the
    prompt and the blocks to its end (the loop without a cache and the dual cache's first forward run
    them all: q = P + (b + 1) Bs + n_b), a block of BLOCK positions."""
    block = 32
    d = os.path.join(runs, system, f"{system}-burst")
    prompt = {int(r["id"]): int(r["prompt_tokens"]) for r in read(os.path.join(d, "requests.csv"))}
    measured = {}
    for f in read(os.path.join(d, "forwards.csv")):
        i, k = int(f["id"]), int(f["index"])
        if k % block == 0:
            b = k // block
            measured.setdefault(b, []).append(int(f["q_tokens"]) - prompt[i] - (b + 1) * block)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    predicted = {}
    for req, q, n in con.execute("SELECT g.req_id, g.q, r.P FROM segments g JOIN requests r USING (run_id, req_id) "
                                 "ORDER BY g.req_id, g.step_id"):
        predicted.setdefault(req, []).append(q - n)
    con.close()
    print("system,block,predicted,measured_mean,measured_min,measured_max,requests")
    for b in sorted(measured):
        p = {v[b * block] - (b + 1) * block for v in predicted.values()}
        if len(p) != 1:
            sys.exit(f"compare.py: {system}: block {b}'s kept suffix differs between requests of one length: {sorted(p)}")
        m = measured[b]
        print(f"{system},{b},{p.pop()},{statistics.mean(m):.2f},{min(m)},{max(m)},{len(m)}")


def rows(system, runs, db):
    """Each forward's rows against the predicted step's, in order (one request at a time)."""
    d = os.path.join(runs, system, f"{system}-burst")
    measured = [int(f["q_tokens"]) for f in read(os.path.join(d, "forwards.csv"))]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    predicted = [q for (q,) in con.execute("SELECT q FROM segments ORDER BY step_id")]
    con.close()
    if len(measured) != len(predicted):
        sys.exit(f"compare.py: {system}: {len(predicted)} steps predicted, {len(measured)} forwards measured")
    same = sum(m == p for m, p in zip(measured, predicted))
    diff = statistics.mean(abs(m - p) for m, p in zip(measured, predicted))
    print("system,forwards,rows_equal,mean_abs_diff")
    print(f"{system},{len(measured)},{same},{diff:.2f}")


def sparsed(runs, sparse_db, dense_db):
    """Each request of SparseD's burst on both sides, its steps split where the pattern is built (the
    predicted step whose rows score more keys than the sequence holds)."""
    def measured(system):
        d = os.path.join(runs, system, "sparsed-long")
        reqs = read(os.path.join(d, "requests.csv"))
        fwd = {}
        for f in read(os.path.join(d, "forwards.csv")):
            fwd.setdefault(int(f["id"]), []).append(float(f["ms"]))
        return {int(r["id"]): (int(r["prompt_tokens"]), float(r["finish_s"]) - float(r["start_s"]), fwd[int(r["id"])])
                for r in reqs}

    def predicted(db):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        out = {}
        for req, ns, keys, q in con.execute("SELECT g.req_id, s.duration_ns, g.attn_keys, g.q FROM segments g JOIN "
                                            "steps s USING (run_id, step_id) ORDER BY g.step_id"):
            out.setdefault(req, []).append((ns / 1e6, keys > q))
        con.close()
        return out

    ms, md, ps, pd = measured("sparsed"), measured("sparsed-dense"), predicted(sparse_db), predicted(dense_db)
    mean = lambda v: statistics.mean(v) if v else float("nan")
    print("prompt_tokens,dense_pred_s,dense_meas_s,sparse_pred_s,sparse_meas_s,speedup_pred,speedup_meas,"
          "dense_step_pred_ms,dense_step_meas_ms,pattern_pred_ms,pattern_meas_ms,sparse_step_pred_ms,sparse_step_meas_ms")
    for i in sorted(ms):
        P, s_meas, s_fwd = ms[i]
        d_meas = md[i][1]
        steps = ps[i]
        k = next(j for j, (_, builds) in enumerate(steps) if builds)
        if len(steps) != len(s_fwd):
            sys.exit(f"compare.py: sparsed: request {i}: {len(steps)} steps predicted, {len(s_fwd)} forwards measured")
        s_pred, d_pred = sum(t for t, _ in steps) / 1e3, sum(t for t, _ in pd[i]) / 1e3
        print(f"{P},{d_pred:.3f},{d_meas:.3f},{s_pred:.3f},{s_meas:.3f},{d_pred / s_pred:.3f},{d_meas / s_meas:.3f},"
              f"{mean([t for t, _ in steps[:k]]):.1f},{mean(s_fwd[:k]):.1f},{steps[k][0]:.1f},{s_fwd[k]:.1f},"
              f"{mean([t for t, _ in steps[k + 1:]]):.1f},{mean(s_fwd[k + 1:]):.1f}")


def prophet(out, sets):
    """Prophet's own loop against tessera's engine, set by set and request by request (prophet.sh): the step
    each exits at (0: never) on both sides and the share of their response ids that agree."""
    own = [json.loads(l) for l in open(os.path.join(out, "prophet.jsonl"))]
    print("set,thresholds,request,exit_step_prophet,exit_step_tessera,ids_equal_pct")
    for k, t in enumerate(sets.split(";")):
        eng = {r["request"]: r for r in map(json.loads, open(os.path.join(out, "tessera-%d.jsonl" % k)))}
        for r in (r for r in own if r["set"] == k):
            e = eng[r["request"]]
            same = sum(a == b for a, b in zip(r["ids"], e["ids"])) / len(r["ids"])
            print(f'{k},"{t}",{r["request"]},{r["prophet_exit_steps"]},{e["prophet_exit_steps"]},{100 * same:.1f}')


def dkv(out, db):
    """dKV-Cache-Decode's own loop against tessera's dkv-cache policy (own.sh dkv), request by request: the
    forwards, how many of them have the rows tessera's step has, the time, and per kind of forward
    (full, refresh, cached) the mean time each side gives."""
    req, meas = own_forwards(out)
    pred = segment_rows(db)
    print("request,prompt_tokens,forwards_pred,forwards_meas,rows_equal,time_pred_s,time_meas_s,"
          "full_pred_ms,full_meas_ms,refresh_pred_ms,refresh_meas_ms,cached_pred_ms,cached_meas_ms")
    for i in sorted(meas):
        m, p = meas[i], pred.get(i, [])
        same = sum(int(a["rows"]) == b[0] for a, b in zip(m, p))
        kinds = []
        for kind in ("full", "refresh", "cached"):
            idx = [k for k, f in enumerate(m) if f["kind"] == kind and k < len(p)]
            kinds += [statistics.mean(p[k][2] for k in idx) if idx else float("nan"),
                      statistics.mean(float(m[k]["ms"]) for k in idx) if idx else float("nan")]
        print(f"{i},{req[i]['prompt_tokens']},{len(p)},{len(m)},{same},{sum(b[2] for b in p) / 1e3:.3f},"
              f"{sum(float(f['ms']) for f in m) / 1e3:.3f}," + ",".join(f"{v:.2f}" for v in kinds))


def own_forwards(d):
    """An own-code run's forwards (ownloop.py): per request, a list of dicts, with its request's P and G."""
    req = {int(r["request"]): r for r in read(os.path.join(d, "requests.csv"))}
    fwd = {}
    for f in read(os.path.join(d, "forwards.csv")):
        i = int(f["request"])
        f["N"] = int(req[i]["prompt_tokens"]) + int(req[i]["gen_tokens"])
        fwd.setdefault(i, []).append(f)
    return req, fwd


def own_light(d):
    """The forwards of an own-code run the GPU does not bound (compare.py host's rule): at most 576 rows at
    every layer (a forward's full_from, where it has one, runs its later layers on every row)."""
    _, fwd = own_forwards(d)
    return [float(f["ms"]) for fs in fwd.values() for f in fs
            if int(f["rows"]) <= HOST_LIGHT_TOKENS and (f.get("full_from", "") == "" or f["N"] <= HOST_LIGHT_TOKENS)]


def issue(runs, profile):
    """An own loop's issue time a forward over LLaDA's reference loop's, on the held-out grid of both."""
    print(f"{statistics.mean(own_light(os.path.join(runs, profile))) / statistics.mean(light_forwards(runs, 'native')):.3f}")


def elastic_knobs(out):
    """The decisions Elastic-Cache's loop took (own.sh elastic), as tessera's elastic parameters: the tracked
    tokens a step (the mean over its cached forwards, rounded), the share of them that refreshed and the
    layers a refresh keeps (the median)."""
    _, fwd = own_forwards(out)
    cached = [f for fs in fwd.values() for f in fs if f["full_from"] != "0"]
    refresh = [int(f["full_from"]) for f in cached if f["full_from"] != ""]
    print(f"--ec-track {round(statistics.mean(int(f['tracked']) for f in cached))} --ec-refresh-share "
          f"{len(refresh) / len(cached):.4f} --ec-depth {round(statistics.median(refresh)) if refresh else 0}")


def nucleus_share(f):
    """A d2Cache forward's nucleus (its rows neither masked nor the one the step before decoded) over the
    positions it was chosen among (all but the masked rows and that one)."""
    return (int(f["others"]) - 1) / (f["N"] - int(f["masked"]) - 1)


def d2cache_knobs(out):
    """The rollout's nucleus d2Cache's loop chose (own.sh d2cache), as tessera's --d2-rollout-share: the mean
    of its cached forwards' nucleus_share."""
    _, fwd = own_forwards(out)
    share = [nucleus_share(f) for fs in fwd.values() for f in fs[1:]]
    print(f"--d2-rollout-share {statistics.mean(share):.4f}")


def fdllm_v2_knobs(out):
    """The steps Fast-dLLM v2's DualCache ran over the whole block in a sub-block after a block's first (own.sh
    fdllm-v2-dual), as tessera's --v2-full-steps: its steps that kept the block's K/V, less the one a block
    starts with, over its later sub-blocks (three a block of four), over every request."""
    _, fwd = own_forwards(out)
    full = sum(f["block_cache"] == "2" for fs in fwd.values() for f in fs)
    blocks = sum(f["writes"] == "1" and f["index"] != "0" for fs in fwd.values() for f in fs)  # the commits
    print(f"--v2-full-steps {(full - blocks) / (3 * blocks):.4f}")


def fdllm_v2(out, db):
    """Fast-dLLM v2's own loop against tessera's fdllm-v2 policy (own.sh fdllm-v2, fdllm-v2-dual), with the
    forwards that run the whole block (without the DualCache: every one after the prefill) on each side."""
    def extra(m, p):
        return f"{sum(b[0] == 32 for b in p[1:])},{sum(int(f['rows']) == 32 for f in m[1:])}"
    own_against(out, db, "block_rows_pred,block_rows_meas", extra)


def segment_rows(db):
    """Per request, its steps' (rows, phase, ms): a step with a front shape counts its front layers' rows
    (q_front: an Elastic-Cache refresh's before its layer), as an own loop's forward counts its first
    layer's."""
    pred = {}
    for r, phase, q, qf, ms in sqlite3.connect(db).execute(
            "SELECT g.req_id, g.phase, g.q, g.q_front, s.duration_ns / 1e6 FROM segments g JOIN steps s "
            "ON s.run_id = g.run_id AND s.step_id = g.step_id ORDER BY g.req_id, g.step_id"):
        pred.setdefault(r, []).append((qf if qf > 0 else q, phase, ms))
    return pred


def own_against(out, db, extra_head, extra):
    """An own loop's forwards against tessera's steps, request by request (elastic, d2cache): the forwards,
    how many run the rows tessera's step runs, EXTRA's columns, the time, and the mean time of the first
    forward and of the later ones on each side."""
    req, meas = own_forwards(out)
    pred = segment_rows(db)
    print("request,prompt_tokens,forwards_pred,forwards_meas,rows_equal,rows_mean_pred,rows_mean_meas,"
          + extra_head + ",time_pred_s,time_meas_s,first_pred_ms,first_meas_ms,later_pred_ms,later_meas_ms")
    for i in sorted(meas):
        m, p = meas[i], pred.get(i, [])
        n = min(len(m), len(p))
        print(f"{i},{req[i]['prompt_tokens']},{len(p)},{len(m)},{sum(int(a['rows']) == b[0] for a, b in zip(m, p))},"
              f"{statistics.mean(b[0] for b in p[1:]):.1f},{statistics.mean(int(a['rows']) for a in m[1:]):.1f},"
              f"{extra(m, p)},{sum(b[2] for b in p) / 1e3:.3f},{sum(float(f['ms']) for f in m) / 1e3:.3f},"
              f"{p[0][2]:.2f},{float(m[0]['ms']):.2f},{statistics.mean(b[2] for b in p[1:n]):.2f},"
              f"{statistics.mean(float(f['ms']) for f in m[1:n]):.2f}")


def elastic(out, db):
    """Elastic-Cache's own loop against tessera's elastic policy (own.sh elastic), with the refreshes on each
    side and the tracked tokens a step its loop ran (mean, least, most)."""
    def extra(m, p):
        tracked = [int(f["tracked"]) for f in m[1:]]
        return (f"{sum(b[1] == 'REFRESH' for b in p)},{sum(f['full_from'] not in ('', '0') for f in m)},"
                f"{statistics.mean(tracked):.1f},{min(tracked)},{max(tracked)}")
    own_against(out, db, "refresh_pred,refresh_meas,tracked_mean,tracked_min,tracked_max", extra)


def elastic_drift(out):
    """Elastic-Cache's drift test, its own loop (OUT/own/) against tessera engine generate --elastic-drift
    (OUT/tessera.jsonl) on the same weights and prompts, request by request: the steps that tested drift,
    those that refreshed and the tracked tokens a tested step, on each side (elastic_drift.sh)."""
    req, meas = own_forwards(os.path.join(out, "own"))
    eng = [json.loads(line) for line in open(os.path.join(out, "tessera.jsonl"))]
    print("request,prompt_tokens,tested_own,refresh_own,refresh_layer_median_own,tracked_own,tested_tessera,"
          "refresh_tessera,tracked_tessera")
    for i in sorted(meas):
        m, e = meas[i][1:], eng[i]
        layers = [int(f["full_from"]) for f in m if f["full_from"] != ""]
        print(f"{i},{req[i]['prompt_tokens']},{len(m)},{len(layers)},"
              f"{statistics.median(layers) if layers else float('nan'):g},"
              f"{statistics.mean(int(f['tracked']) for f in m):.1f},{e['elastic_tested']},{e['elastic_refreshes']},"
              f"{e['elastic_tracked'] / max(1, e['elastic_tested']):.1f}")


def d2cache_rollout(out):
    """d2Cache's rollout nucleus, its own loop (OUT/own/) against tessera engine generate --d2-rollout
    (OUT/tessera.jsonl) on the same weights and prompts, request by request: the mean share of the other
    positions the nucleus takes a step on each side (d2cache_rollout.sh; its own loop's as
    compare.py d2cache-knobs reads it), and its mean size."""
    req, meas = own_forwards(os.path.join(out, "own"))
    eng = [json.loads(line) for line in open(os.path.join(out, "tessera.jsonl"))]
    print("request,prompt_tokens,steps_own,nucleus_own,share_own,steps_tessera,nucleus_tessera,share_tessera")
    for i in sorted(meas):
        m, e = meas[i][1:], eng[i]
        share = [nucleus_share(f) for f in m]
        print(f"{i},{req[i]['prompt_tokens']},{len(m)},{statistics.mean(int(f['others']) - 1 for f in m):.1f},"
              f"{statistics.mean(share):.4f},{e['d2_steps']},{e['d2_nucleus'] / max(1, e['d2_steps']):.1f},"
              f"{e['d2_share']:.4f}")


def d2cache(out, db):
    """d2Cache's own loop against tessera's d2cache policy (own.sh d2cache), with the rollout's nucleus a step
    its loop chose (mean, least, most)."""
    def extra(m, p):
        nucleus = [int(f["others"]) - 1 for f in m[1:]]
        return f"{statistics.mean(nucleus):.1f},{min(nucleus)},{max(nucleus)}"
    own_against(out, db, "nucleus_mean,nucleus_min,nucleus_max", extra)

if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "host":
        host(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "host-serve":
        host_serve(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[1] == "loop-host":
        loop_host(*sys.argv[2:])
    elif len(sys.argv) == 6 and sys.argv[1] == "lengths-forwards":
        lengths_forwards(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "lengths-report":
        lengths_report(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "lengths-check":
        lengths_check(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "sparsed":
        sparsed(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "rows":
        rows(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "kept":
        kept(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "dkv":
        dkv(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "elastic":
        elastic(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "elastic-knobs":
        elastic_knobs(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "elastic-drift":
        elastic_drift(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "d2cache":
        d2cache(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "d2cache-rollout":
        d2cache_rollout(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "d2cache-knobs":
        d2cache_knobs(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] in ("fdllm-v2", "fdllm-v2-dual"):
        fdllm_v2(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "fdllm-v2-dual-knobs":
        fdllm_v2_knobs(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "issue":
        issue(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "prophet":
        prophet(*sys.argv[2:])
    elif len(sys.argv) == 6 and sys.argv[1] == "run":
        run(*sys.argv[2:])
    else:
        sys.exit(__doc__.split("\n\n")[0])
