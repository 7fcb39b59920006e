#!/usr/bin/env python3
"""sglang_compare.py: the arithmetic of experiments/validate-sglang.sh, SGLang's own runs (sglang_driver.py)
beside tessera's predictions of them.

  sglang_compare.py report RUNS PRED OUT   RUNS: a mode's folder of the record (TRACE/requests.csv,
                                           TRACE/rounds.csv, meta.json); PRED: TRACE.json and TRACE.db,
                                           tessera sim's summary (with --interval) and database for each
                                           trace. Writes OUT/sglang.csv (a row a trace), OUT/rounds.csv
                                           (a row a batch size: SGLang's round, its host gap and
                                           tessera's step, medians) and prints the tables (markdown).
  sglang_compare.py summary OUT TABLES [FIT]
                                           OUT/sglang.md's text: each mode's tables (TABLES/MODE-sglang.md,
                                           report's output for SGLang's rounds), the mean latency's error
                                           by trace priced both ways (OUT/MODE-IMPL/sglang.csv) and, with
                                           FIT (the shipped rounds), whether OUT/rounds-fit.csv is it.
  sglang_compare.py check OUT              the goals of issue 91 on OUT/MODE-sglang/sglang.csv (each mode
                                           there), a line each: met or missed (they do not fail the run).
"""
import csv, json, os, sqlite3, statistics as st, sys

from compare import pct as err  # the validation's error of a prediction p against a measurement m, in %


def percentile(p, xs):
    """The p-th percentile as tessera's summary takes it (GSL's: linear between the two nearest ranks)."""
    xs = sorted(xs)
    i = p / 100 * (len(xs) - 1)
    lo = int(i)
    return xs[lo] if lo == len(xs) - 1 else xs[lo] + (i - lo) * (xs[lo + 1] - xs[lo])


def measured(d):
    """A trace's requests and rounds as SGLang ran them (times from the trace's start)."""
    req = list(csv.DictReader(open(os.path.join(d, "requests.csv"))))
    lat = [float(r["finish_s"]) - float(r["arrival_s"]) for r in req]
    rounds = list(csv.DictReader(open(os.path.join(d, "rounds.csv"))))
    gaps = {}
    for a, b in zip(rounds, rounds[1:]):  # a round's host work: the gap to the next, back to back
        g = float(b["start_s"]) - float(a["start_s"]) - float(a["ms"]) / 1e3
        if g < 0.005:  # (a longer gap is the scheduler idle, waiting for a request)
            gaps.setdefault(int(a["reqs"]), []).append(g * 1e3)
    by = {}
    for r in rounds:
        by.setdefault(int(r["reqs"]), []).append(float(r["ms"]))
    return {"n": len(req), "req_s": len(req) / max(float(r["finish_s"]) for r in req),
            "mean": st.mean(lat), "p50": percentile(50, lat), "p99": percentile(99, lat),
            "forwards": sum(int(r["reqs"]) * int(r["forwards"]) for r in rounds) / len(req),
            "rounds": len(rounds), "by": by, "gaps": gaps}


def predicted(json_path, db_path):
    d = json.load(open(json_path))
    con = sqlite3.connect(db_path)
    by = {}  # a step by its requests' rows (a captured graph's extra rows, padding 2, are no request's)
    for rows, ns in con.execute("SELECT count(*), s.duration_ns FROM steps s JOIN segments g ON g.run_id = s.run_id "
                                "AND g.step_id = s.step_id WHERE g.padding != 2 GROUP BY s.run_id, s.step_id"):
        by.setdefault(rows, []).append(ns / 1e6)
    rows = con.execute("SELECT count(*) FROM segments WHERE padding != 2").fetchone()[0]
    iv = d.get("interval", {})
    return {"n": d["num_finished"], "req_s": d["req_s"], "mean": d["lat_mean_s"], "p50": d["lat_p50_s"],
            "p99": d["lat_p99_s"], "forwards": rows / d["num_finished"], "rounds": d["num_steps"],
            "by": by, "mean_iv": iv.get("lat_mean_s"), "p99_iv": iv.get("lat_p99_s"),
            "busy": d["busy_s"], "makespan": d["makespan_ns"] / 1e9}


def report(runs, pred, out):
    meta = json.load(open(os.path.join(runs, "meta.json")))
    rows, rounds_m, gaps_m, steps_p = [], {}, {}, {}
    stems = [os.path.splitext(t)[0] for t in meta["traces"]] if "traces" in meta else \
        sorted(e for e in os.listdir(runs) if os.path.exists(os.path.join(runs, e, "requests.csv")))
    for stem in stems:
        m = measured(os.path.join(runs, stem))
        p = predicted(os.path.join(pred, stem + ".json"), os.path.join(pred, stem + ".db"))
        load = p["busy"] / p["makespan"]
        regime = "below" if load < 0.8 else "near" if load < 0.95 else "above"
        lo, hi = p["mean_iv"] or (None, None)
        rows.append({"trace": stem, "requests": m["n"], "load": round(load, 2), "regime": regime,
                     "meas_req_s": m["req_s"], "pred_req_s": p["req_s"], "req_s_err_pct": err(p["req_s"], m["req_s"]),
                     "meas_mean_s": m["mean"], "pred_mean_s": p["mean"], "mean_err_pct": err(p["mean"], m["mean"]),
                     "pred_mean_lo_s": lo, "pred_mean_hi_s": hi,
                     "inside": "yes" if lo is not None and lo <= m["mean"] <= hi else "no",
                     "meas_p99_s": m["p99"], "pred_p99_s": p["p99"], "p99_err_pct": err(p["p99"], m["p99"]),
                     "meas_forwards": m["forwards"], "pred_forwards": p["forwards"],
                     "meas_rounds": m["rounds"], "pred_rounds": p["rounds"]})
        for b, v in m["by"].items():
            rounds_m.setdefault(b, []).extend(v)
        for b, v in m["gaps"].items():
            gaps_m.setdefault(b, []).extend(v)
        for b, v in p["by"].items():
            steps_p.setdefault(b, []).extend(v)
    fmt = lambda x: "%.4f" % x if isinstance(x, float) else str(x)
    with open(os.path.join(out, "sglang.csv"), "w") as f:
        f.write(",".join(rows[0]) + "\n")
        for r in rows:
            f.write(",".join(fmt(v) if v is not None else "" for v in r.values()) + "\n")
    with open(os.path.join(out, "rounds.csv") if meta["fdfo"] else os.devnull, "w") as f:
        f.write("requests,sglang_rounds,sglang_round_ms,sglang_host_ms,sglang_total_ms,tessera_steps,tessera_step_ms,err_pct\n")
        for b in sorted(set(rounds_m) | set(steps_p)):
            r, g, s = rounds_m.get(b, []), gaps_m.get(b, []), steps_p.get(b, [])
            if len(r) < 5 or len(s) < 5:
                continue
            tot = st.median(r) + (st.median(g) if g else 0.0)
            f.write("%d,%d,%.3f,%.3f,%.3f,%d,%.3f,%.1f\n" % (b, len(r), st.median(r), st.median(g) if g else 0.0, tot,
                                                             len(s), st.median(s), err(st.median(s), tot)))
    print(f"SGLang {meta['sglang']} ({'first done, first out' if meta['fdfo'] else 'sync'}, "
          f"--max-running-requests {meta['max_running_requests']}, {meta['algorithm']}, attention "
          f"{meta['server_args']['attention_backend']}, CUDA graphs {'off' if meta['server_args']['disable_cuda_graph'] == 'True' else 'on'}) "
          f"on an {meta['gpu']}, against `tessera sim --system sglang`:\n")
    print("| trace | load | req/s measured | predicted | error | mean latency (s) measured | predicted [90%] | error "
          "| p99 (s) measured | predicted | error | forwards a request measured / predicted |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        iv = f" [{r['pred_mean_lo_s']:.3f}, {r['pred_mean_hi_s']:.3f}]" if r["pred_mean_lo_s"] is not None else ""
        print(f"| {r['trace']} | {r['load']:.2f} ({r['regime']}) | {r['meas_req_s']:.3f} | {r['pred_req_s']:.3f} "
              f"| {r['req_s_err_pct']:+.1f}% | {r['meas_mean_s']:.3f} | {r['pred_mean_s']:.3f}{iv} | {r['mean_err_pct']:+.1f}% "
              f"| {r['meas_p99_s']:.3f} | {r['pred_p99_s']:.3f} | {r['p99_err_pct']:+.1f}% "
              f"| {r['meas_forwards']:.1f} / {r['pred_forwards']:.1f} |")
    if not meta["fdfo"]:  # (a sync round is a block's forwards, a tessera step one of them: sglang_rounds.py's rows)
        return
    print("\nA round by the requests in it (medians over the traces, prompt blocks' rounds and denoising ones "
          "together): SGLang's round (its forward and LowConfidence's step), the host gap before its next round, "
          "and tessera's step:\n")
    print("| requests | SGLang rounds | round (ms) | host gap (ms) | together (ms) | tessera steps | step (ms) | error |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in csv.DictReader(open(os.path.join(out, "rounds.csv"))):
        print(f"| {r['requests']} | {r['sglang_rounds']} | {float(r['sglang_round_ms']):.2f} | {float(r['sglang_host_ms']):.2f} "
              f"| {float(r['sglang_total_ms']):.2f} | {r['tessera_steps']} | {float(r['tessera_step_ms']):.2f} "
              f"| {float(r['err_pct']):+.1f}% |")


MODES = (("fdfo", "first done, first out"), ("sync", "sync"))


def summary(out, tables, fit=None):
    for mode, name in MODES:
        t = os.path.join(tables, f"{mode}-sglang.md")
        if os.path.exists(t):
            print(f"## {name[0].upper() + name[1:]}, priced by SGLang's own rounds (--impl sglang)\n")
            print(open(t).read())
    print("## Mean latency's error, priced by SGLang's rounds and by the tessera engine's forwards\n")
    print("| mode | trace | load | measured (s) | SGLang's rounds (s) | error | the engine's forwards (s) | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for mode, _ in MODES:
        path = {i: os.path.join(out, f"{mode}-{i}", "sglang.csv") for i in ("sglang", "tessera")}
        if not all(os.path.exists(p) for p in path.values()):
            continue
        eng = {r["trace"]: r for r in csv.DictReader(open(path["tessera"]))}
        for r in csv.DictReader(open(path["sglang"])):
            e = eng[r["trace"]]
            print(f"| {mode} | {r['trace']} | {float(r['load']):.2f} ({r['regime']}) | {float(r['meas_mean_s']):.3f} "
                  f"| {float(r['pred_mean_s']):.3f} | {float(r['mean_err_pct']):+.1f}% | {float(e['pred_mean_s']):.3f} "
                  f"| {float(e['mean_err_pct']):+.1f}% |")
    if fit:
        same = open(fit).read() == open(os.path.join(out, "rounds-fit.csv")).read()
        print(f"\nThe shipped rounds ({os.path.relpath(fit, os.path.join(os.path.dirname(__file__), '..', '..'))}) "
              f"are the record's profile as sglang_rounds.py makes them: {'yes' if same else 'no'}.")


def check(out):
    rows = []
    for mode, _ in MODES:
        p = os.path.join(out, f"{mode}-sglang", "sglang.csv")
        if os.path.exists(p):
            rows += [dict(r, mode=mode) for r in csv.DictReader(open(p))]
    below = [r for r in rows if r["regime"] == "below"]

    def goal(name, ok, over=rows):
        print(f"goal: {name}: {'met' if ok else 'missed'}" if over else f"goal: {name}: no trace to judge it")
    goal("throughput within 10% on every trace", all(abs(float(r["req_s_err_pct"])) <= 10 for r in rows))
    goal("mean latency within 10% below saturation", all(abs(float(r["mean_err_pct"])) <= 10 for r in below), below)
    goal("p99 latency within 15% below saturation", all(abs(float(r["p99_err_pct"])) <= 15 for r in below), below)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "report":
        report(*sys.argv[2:])
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "summary":
        summary(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
