#!/usr/bin/env bash
# analysis/transfer_check.sh: how close `tessera calib transfer` comes to a calibration measured on
# the target GPU. The source calibration is carried to the target by roofline ratios, and each
# profiled step's time (the sum of its ops) is set against the measured calibration's time of the
# same step. Prints the per-step MAPE, median and 90th percentile, and the steps it misses most; for
# profiles that measured the host apart from the GPU (eager PyTorch), the same of each step's GPU time.
#
# Usage: analysis/transfer_check.sh SOURCE.csv FROM MEASURED.csv[.gz] TO [IMPL]   (tessera in build/ or
#        TESSERA=path; IMPL the calibration's implementation profile, tessera unless given)
# e.g.   bash analysis/records.sh get calibrate-h100 h100-llada-8b-tessera.csv.gz h100.csv.gz   (a record's)
#        analysis/transfer_check.sh sim/data/calib/h200-llada-8b-tessera.csv h200 h100.csv.gz h100
set -euo pipefail
src=${1:?usage: transfer_check.sh SOURCE.csv FROM MEASURED.csv TO [IMPL]} from=${2:?FROM} meas=${3:?MEASURED} to=${4:?TO}
impl=${5:-tessera}
bin=${TESSERA:-build/tessera}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$meas" in *.gz) gzip -dc "$meas" >"$tmp/measured.csv" ;; *) cp "$meas" "$tmp/measured.csv" ;; esac
"$bin" calib transfer "$src" --from "$from" --to "$to" --impl "$impl" --out "$tmp/transferred.csv" >/dev/null
python3 - "$tmp/transferred.csv" "$tmp/measured.csv" "$from" "$to" <<'PY'
import collections, csv, statistics, sys
COLS = ("segs", "q", "kv", "logit_rows", "kv_long", "keep", "sel_heads", "fc_rows", "probe")
def key(r): return tuple(r.get(c, "0") for c in COLS)
def steps(path):
    t = collections.defaultdict(float)
    for r in csv.DictReader(open(path)):
        t[key(r)] += float(r["ms"])
    return t
def gpu_times(path): # a host/GPU split profile's (eager PyTorch) GPU time of each step
    return {key(r): float(r["gpu_ms"]) for r in csv.DictReader(open(path)) if r.get("gpu_ms")}
def summary(a): # sorted absolute errors
    return (f"per-step MAPE {100 * statistics.mean(a):.1f}%, median {100 * statistics.median(a):.1f}%, "
            f"p90 {100 * a[int(0.9 * len(a))]:.1f}%")
tr, me = steps(sys.argv[1]), steps(sys.argv[2])
errs = sorted(((tr[k] - me[k]) / me[k], k) for k in me if k in tr)
a = sorted(abs(e) for e, _ in errs)
print(f"{sys.argv[3]} -> {sys.argv[4]}: {len(a)} profiled steps, {summary(a)}")
tg, mg = gpu_times(sys.argv[1]), gpu_times(sys.argv[2])
g = sorted(abs(tg[k] - mg[k]) / mg[k] for k in mg if k in tg and mg[k] > 0)
if g:
    print(f"  GPU time (host/GPU split profiles): {summary(g)}")
print("most missed (segs, q, kv, logit rows, kv_long, keep, per head):")
for e, k in sorted(errs, key=lambda x: -abs(x[0]))[:5]:
    fc = f" (dLLM-Cache: {k[7]} rows, probe {k[8]})" if k[7] != "0" else ""
    print(f"  {100 * e:+6.1f}%  {', '.join(k[:7])}{fc}")
PY
