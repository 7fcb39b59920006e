#!/usr/bin/env bash
# analysis/anchor_compare.sh: the `torch-eager` calibration against the PyTorch anchor's own
# whole-step timings (../shared/anchors/torch_llada_step.h200.jsonl: a LLaDA-8B-shaped eager forward
# on an H200, measured separately). Every anchor case (Refresh with all or masked logits, Reuse of
# one 32-token block over the cache) is priced by `tessera calib price --impl torch-eager` with the
# calibrated and the roofline back ends. Prints one row per step and the MAPE of each back end.
#
# Usage: analysis/anchor_compare.sh [ANCHOR.jsonl] [calib price's options: --gpu G --calib FILE --host H ...]
#        (tessera in build/ or TESSERA=path)
set -euo pipefail
anchor=${1:-$(dirname "$0")/../../shared/anchors/torch_llada_step.h200.jsonl}
shift $(($# > 0 ? 1 : 0))
bin=${TESSERA:-build/tessera}
[ -f "$anchor" ] || { echo "anchor_compare.sh: no $anchor" >&2; exit 1; }
python3 - "$anchor" "$bin" "$@" <<'PY'
import json, subprocess, sys
anchor, tessera, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
def price(segs, q, kv, rows):
    out = subprocess.run([tessera, "calib", "price", "--impl", "torch-eager", "--extrapolate",
                          "--step", f"{segs},{q},{kv},{rows}"] + extra, capture_output=True, text=True, check=True).stdout
    f = next(l for l in out.splitlines() if l.startswith("step ")).split()
    return float(f[1]), float(f[3])
print(f"{'step':<42} {'anchor':>9} {'calibrated':>11} {'err':>7} {'roofline':>9} {'err':>7}")
errs = {"calibrated": [], "roofline": []}
for line in open(anchor):
    r = json.loads(line)
    if "B" not in r:
        continue
    B, T, m = r["B"], r["T"], r["masked"]
    cases = [(f"refresh {B}x{T}, all logits", r["refresh_all_logits_ms"], (B, T, 0, T)),
             (f"refresh {B}x{T}, {m} masked logits", r["refresh_masked_logits_ms"], (B, T, 0, m)),
             (f"reuse {B}x32 over {T - 32}", r["reuse_block32_ms"], (B, 32, T - 32, 32))]
    for name, meas, shape in cases:
        c, f = price(*shape)
        ec, ef = 100 * (c - meas) / meas, 100 * (f - meas) / meas
        errs["calibrated"].append(abs(ec)); errs["roofline"].append(abs(ef))
        print(f"{name:<42} {meas:9.3f} {c:11.3f} {ec:+6.1f}% {f:9.3f} {ef:+6.1f}%")
for k, v in errs.items():
    print(f"{k}: MAPE {sum(v) / len(v):.1f}% over {len(v)} steps (max {max(v):.1f}%)")
PY
