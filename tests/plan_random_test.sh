#!/usr/bin/env bash
# plan_random_test.sh: tessera plan capacity on 20 configurations drawn at random (a fixed seed) from
# the real ones: the shipped systems, cards, workloads of the shipped length distributions (or fixed lengths)
# and Poisson or bursty (gamma) arrivals, and SLOs of every kind. For each, tessera sim itself run at the found capacity must
# hold the SLO and at 1.1 times it must not, each judged here from the run's JSON by the SLO's
# definition (sim/docs/plan.md): a pNN term held where the share of all requests (a rejected one a
# miss) within T is at least NN%, a mean term where the finished requests' mean latency is at most T,
# a first-block term where their mean time to the first block is, and the run not overloaded. A
# configuration that cannot run (a model its card cannot hold) or that holds the SLO at no rate is
# drawn again and counted. make check-full runs it.
# Usage: plan_random_test.sh PATH/TO/tessera [N]    Prints "plan-random: N passed, M failed".
set -u
bin=${1:?usage: plan_random_test.sh PATH/TO/tessera [N]}
want=${2:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$bin" "$want" "$tmp" <<'PY'
import json, random, subprocess, sys

bin, want, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(20261129)
systems = ["fast-dllm", "dpad", "d2f", "elastic-cache", "dllm-serve", "sparse-dllm", "dllm-cache", "lmdeploy",
           "focus", "dinfer", "vllm", "mosaic", "native", "fast-dllm-v2", "vllm-dllm-plugin", "sglang", "sglang-sync"]
gpus = ["h100", "h200", "a100-80gb", "l40s", "rtx4090"]
passed = failed = drawn = unrunnable = no_rate = 0
why = {}

def run(args):
    p = subprocess.run([bin] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

def held(d, terms):
    """The SLO judged from tessera sim's JSON by its definition."""
    if d.get("overloaded"):
        return False
    for kind, share, t in terms:
        if kind == "p":
            if d["slo_attainment"] is None or d["slo_attainment"] < share - 1e-12:
                return False
        elif kind == "mean":
            if d["lat_mean_s"] > t:
                return False
        elif d["ttfb_mean_s"] > t:
            return False
    return True

while passed + failed < want and drawn < 10 * want:
    drawn += 1
    system, gpu = rng.choice(systems), rng.choice(gpus)
    workload = ["--requests", str(rng.choice([200, 300]))]
    lengths = rng.choice(["sharegpt", "wildchat", "math", "livebench", "fixed"])
    if lengths == "fixed":
        lengths = "fixed:%d,%d" % (rng.choice([128, 256, 512]), rng.choice([64, 128, 256]))
    workload += ["--lengths", lengths]
    if rng.random() < 0.3:
        workload += ["--arrivals", "gamma:%g" % rng.choice([2, 4])]
    kind = rng.choice(["p", "p", "mean", "first-block"])
    t = rng.choice([5, 10, 30, 60, 120])
    if kind == "p":
        nn = rng.choice([50, 90, 95, 99])
        slo, terms = "p%d=%ds" % (nn, t), [("p", nn / 100, t)]
    elif kind == "mean":
        slo, terms = "mean=%ds" % t, [("mean", 0, t)]
    else:
        slo, terms = "first-block=%ds" % t, [("first-block", 0, t)]
    cfg = ["--system", system, "--gpu", gpu] + workload
    label = " ".join(cfg + ["--slo", slo])
    rc, out, err = run(["plan", "capacity", "--slo", slo, "--confidence", "0", "--json"] + cfg)
    if rc != 0:
        unrunnable += 1
        why.setdefault(err.strip().splitlines()[-1][:100] if err.strip() else "rc %d" % rc, []).append(label)
        continue
    d = json.loads(out)
    cap = d["capacity_rps"]
    if not cap:
        no_rate += 1
        continue
    # the SLO's share term as tessera sim's --slo takes it (seconds; the share judged here)
    slo_s = [x for x in terms if x[0] == "p"]
    verdicts = []
    for rate in (cap, 1.1 * cap):
        extra = ["--slo", str(slo_s[0][2])] if slo_s else []
        rc, out, err = run(["sim", "--rps", repr(rate), "--json", "--quiet"] + cfg + extra)
        if rc != 0:
            verdicts.append(None)
            continue
        verdicts.append(held(json.loads(out), terms))
    if verdicts == [True, False]:
        passed += 1
    else:
        failed += 1
        print("plan-random: FAIL: %s: capacity %g req/s: at it %s, at 1.1 times %s" % (
            label, cap, {True: "held", False: "missed", None: "did not run"}[verdicts[0]],
            {True: "held", False: "missed", None: "did not run"}[verdicts[1]]), file=sys.stderr)
for w, labels in sorted(why.items()):
    print("plan-random: could not run (%d): %s" % (len(labels), w))
print("plan-random: %d configurations drawn: %d could not run, %d held the SLO at no rate, %d judged" % (
    drawn, unrunnable, no_rate, passed + failed))
if passed + failed < want:
    failed += 1
    print("plan-random: FAIL: fewer than %d configurations could be judged" % want, file=sys.stderr)
print("plan-random: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
