#!/usr/bin/env bash
# analysis/price_profile.sh: a calibration against another profile of the same GPU and model (another
# machine start: out of sample). Each profiled step's whole time, as measured without per-op events
# (total_ms), is set against the calibration's price of that step (tessera calib price, which prices an
# eager implementation as max(host, GPU)); the roofline's beside it. Prints the per-step MAPE, median
# and 90th percentile, and for a profile that measured the host apart (gpu_ms, host_ms) the host-bound
# and GPU-bound steps apart. OP=NAME sets one op instead (each step's op time scaled, as the fit scales
# it, by the step's total over the sum of its ops) and prints every step's row before the summary.
#
# Usage: analysis/price_profile.sh CALIB.csv PROFILE.csv[.gz] GPU MODEL IMPL   (TESSERA=path, build/tessera;
#        HOST=NAME prices with --host NAME: the host of the machine that measured PROFILE)
# e.g.   bash analysis/records.sh get torch-eager-h100 torch-sdar-8b-2.csv.gz prof.csv.gz   (a record's profile)
#        analysis/price_profile.sh sim/data/calib/h100-sdar-8b-torch-eager.csv prof.csv.gz h100 sdar-8b torch-eager
set -euo pipefail
calib=${1:?usage: price_profile.sh CALIB.csv PROFILE.csv GPU MODEL IMPL} prof=${2:?PROFILE} gpu=${3:?GPU}
model=${4:?MODEL} impl=${5:?IMPL}
bin=${TESSERA:-build/tessera}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$prof" in *.gz) gzip -dc "$prof" >"$tmp/profile.csv" ;; *) cp "$prof" "$tmp/profile.csv" ;; esac
python3 - "$bin" "$calib" "$tmp/profile.csv" "$gpu" "$model" "$impl" "${HOST:-}" "${OP:-}" <<'PY'
import csv, statistics, subprocess, sys
bin_, calib, prof, gpu, model, impl, host, op = sys.argv[1:9]
steps, op_ms, sum_ms = {}, {}, {}
for r in csv.DictReader(open(prof)):
    k = (r["segs"], r["q"], r["kv"], r["logit_rows"])
    steps[k] = (float(r["total_ms"]), float(r.get("gpu_ms") or 0), float(r.get("host_ms") or 0))
    sum_ms[k] = sum_ms.get(k, 0.0) + float(r["ms"])
    if r["op"] == op:
        op_ms[k] = float(r["ms"])
if op:
    if not op_ms:
        sys.exit(f"price_profile.sh: {prof} holds no {op} times")
    steps = {k: (v[0] * op_ms[k] / sum_ms[k], 0.0, 0.0) for k, v in steps.items() if k in op_ms}
    print(f"{'segs':>5s} {'q':>5s} {'kv':>6s} {'logits':>6s} {op + ' ms':>14s} {'calibrated':>10s} {'ratio':>6s}")
err = {"all": [], "roofline": [], "host-bound": [], "GPU-bound": []}
for k, (total, g, h) in sorted(steps.items(), key=lambda kv: tuple(int(x) for x in kv[0])):
    out = subprocess.run([bin_, "calib", "price", "--step", ",".join(k), "--calib", calib, "--gpu", gpu, "--model",
                          model, "--impl", impl] + (["--host", host] if host else []),
                         capture_output=True, text=True, check=True).stdout
    f = next(l for l in out.splitlines() if l.split() and l.split()[0] == (op or "step")).split()
    if op:
        print(f"{k[0]:>5s} {k[1]:>5s} {k[2]:>6s} {k[3]:>6s} {total:14.3f} {float(f[1]):10.3f} {float(f[1]) / total:6.3f}")
    e = abs(float(f[1]) / total - 1)
    err["all"].append(e)
    err["roofline"].append(abs(float(f[3]) / total - 1))
    if h > 0:
        err["host-bound" if h > g else "GPU-bound"].append(e)
for name, a in err.items():
    if a:
        a.sort()
        print(f"{name:11s} {len(a):4d} steps  per-step MAPE {100 * statistics.mean(a):5.1f}%  median "
              f"{100 * statistics.median(a):5.1f}%  p90 {100 * a[int(0.9 * len(a))]:5.1f}%")
PY
