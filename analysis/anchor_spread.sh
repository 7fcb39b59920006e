#!/usr/bin/env bash
# analysis/anchor_spread.sh: repeated runs of the PyTorch anchor (../shared/anchors/torch_llada_step.py)
# on one machine, against each other and against the calibrated back end. A run's 21 steps are priced
# by every other run (the per-step MAPE one run's timings give another's: how far the anchor
# reproduces itself) and by `analysis/anchor_compare.sh` under each host profile of HOSTS. Prints one
# row per run: the median of its 7 Reuse steps (host-bound on a Hopper card: their time is the host's
# issue of the eager step), the median and range of the MAPE the other runs give it, and the
# calibrated back end's MAPE under each host; then the run-by-run matrix.
#
# Usage: HOSTS="h100-xeon FILE ..." analysis/anchor_spread.sh ANCHOR.jsonl... [-- calib price's options]
#        (HOSTS empty: the calibration's own host only; tessera in build/ or TESSERA=path)
set -euo pipefail
here=$(dirname "$0")
anchors=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do anchors+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#anchors[@]} -ge 2 ] || { echo "usage: analysis/anchor_spread.sh ANCHOR.jsonl ANCHOR.jsonl... [-- calib price's options]" >&2; exit 2; }
for a in "${anchors[@]}"; do [ -f "$a" ] || { echo "anchor_spread.sh: no $a" >&2; exit 1; }; done
# the calibrated back end's MAPE of each run under each host (anchor_compare.sh's last lines)
declare -a cols=("own host")
declare -a mape=()
for h in ${HOSTS:-}; do cols+=("--host $(basename "$h" .csv)"); done
for a in "${anchors[@]}"; do
    row=$(bash "$here/anchor_compare.sh" "$a" "$@" | awk '/^calibrated:/ {print $3}')
    for h in ${HOSTS:-}; do
        row+=" $(bash "$here/anchor_compare.sh" "$a" "$@" --host "$h" | awk '/^calibrated:/ {print $3}')"
    done
    mape+=("$row")
done
python3 - "${#anchors[@]}" "${anchors[@]}" "${cols[@]}" -- "${mape[@]}" <<'PY'
import json, os, statistics as st, sys
n = int(sys.argv[1])
paths = sys.argv[2:2 + n]
rest = sys.argv[2 + n:]
cols, mape = rest[:rest.index("--")], rest[rest.index("--") + 1:]
keys = ("refresh_all_logits_ms", "refresh_masked_logits_ms", "reuse_block32_ms")
runs = []
for p in paths:
    rows = [json.loads(l) for l in open(p) if l.strip()]
    rows = [r for r in rows if "B" in r]
    runs.append(([r[k] for r in rows for k in keys], [r["reuse_block32_ms"] for r in rows]))
if len({len(v) for v, _ in runs}) != 1:
    sys.exit("anchor_spread.sh: the runs do not hold the same steps")
def err(meas, pred):
    return 100 * st.mean(abs(p - m) / m for m, p in zip(meas, pred))
names = [os.path.basename(p).removesuffix(".jsonl") for p in paths]
w = max(8, max(len(s) for s in names))
print(f"{'run':<{w}} {'Reuse ms':>9} {'by the other runs':>20}  " + "  ".join(f"{c:>16}" for c in cols))
for i, (v, reuse) in enumerate(runs):
    others = [err(v, u) for j, (u, _) in enumerate(runs) if j != i]
    rng = f"{st.median(others):.1f}% ({min(others):.1f}-{max(others):.1f})"
    print(f"{names[i]:<{w}} {st.median(reuse):9.1f} {rng:>20}  " + "  ".join(f"{m:>16}" for m in mape[i].split()))
print()
print("each run (row) priced by each run's timings (column, in the rows' order), per-step MAPE %")
print(f"{'':<{w}} " + " ".join(f"{j + 1:>6}" for j in range(n)))
for i, (v, _) in enumerate(runs):
    print(f"{names[i]:<{w}} " + " ".join(f"{err(v, u):6.1f}" for u, _ in runs))
PY
