#!/usr/bin/env bash
# lmax_gpu_test.sh: `tessera mem lmax --live` on a GPU machine (make check-gpu). Under a hard 24 GB
# limit with LLaDA-8B's weights held: PyTorch's allocator model with monolithic logits and the fp32
# softmax copy, and Mosaic's stack (first-fit, mask-only logits, lazy chunking). Each live L_max
# must be within 15% of the simulated one; the process's device memory after the step must be what
# it held before the activations plus the arena mapped (the plan, to the 2 MiB granularity), and no
# more than the limit; Mosaic's L_max must be at least 15x the baseline's.
# Usage: lmax_gpu_test.sh PATH/TO/tessera
set -u
bin=${1:?usage: lmax_gpu_test.sh PATH/TO/tessera}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" mem lmax --live --json --mem-limit 24 --planner caching --softmax-copy 4 --layers 2 >"$tmp/base.json" ||
    { echo "lmax: the caching run failed"; exit 1; }
"$bin" mem lmax --live --json --mem-limit 24 --planner first-fit --mask-ratio 0.5 --chunking lazy \
    >"$tmp/mosaic.json" || { echo "lmax: the first-fit run failed"; exit 1; }
python3 - "$tmp/base.json" "$tmp/mosaic.json" <<'PY'
import json, sys
MiB = 2**20
runs = [json.load(open(p)) for p in sys.argv[1:]]
fails = []
for r in runs:
    tag = f"{r['planner']}/{r['chunking']}"
    if not r["lmax_live"] > 0 or abs(r["lmax_live"] / r["lmax_simulated"] - 1) > 0.15:
        fails.append(f"{tag}: live {r['lmax_live']} vs simulated {r['lmax_simulated']}")
    if not 0 <= r["mapped_bytes"] - r["planned_bytes"] < 2 * MiB:
        fails.append(f"{tag}: mapped {r['mapped_bytes']} for a plan of {r['planned_bytes']}")
    if abs(r["used_bytes"] - r["fixed_bytes"] - r["mapped_bytes"]) > 8 * MiB:
        fails.append(f"{tag}: {r['used_bytes']} in use != {r['fixed_bytes']} + {r['mapped_bytes']} mapped")
    if r["used_bytes"] > r["mem_limit_bytes"]:
        fails.append(f"{tag}: {r['used_bytes']} in use over the limit {r['mem_limit_bytes']}")
    if "out of device memory" not in r["next_fails"]:
        fails.append(f"{tag}: L_max + 1 failed for another reason: {r['next_fails']}")
if runs[0]["layers_run"] != 2:
    fails.append(f"{runs[0]['layers_run']} layers ran, asked for 2")
ratio = runs[1]["lmax_live"] / max(1, runs[0]["lmax_live"])
if ratio < 15:
    fails.append(f"Mosaic's stack reaches {ratio:.1f}x the caching baseline, under 15x")
for f in fails:
    print("lmax: FAIL:", f)
print(f"lmax: live L_max {runs[0]['lmax_live']} (caching) and {runs[1]['lmax_live']} (Mosaic), {ratio:.1f}x; "
      f"{'ok' if not fails else 'failed'}")
sys.exit(1 if fails else 0)
PY
