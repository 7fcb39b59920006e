#!/usr/bin/env bash
# experiments/validate/measure.sh: on a GPU machine, runs one seed system's own generate loop
# (experiments/validate/driver.py) over its two validation traces and the held-out profile grid, and
# writes OUT/SYSTEM.tgz (SYSTEM-low/, SYSTEM-high/, profile/: requests.csv, forwards.csv, meta.json).
# DPad's loops (dpad, dpad-prefix, dpad-dual) and D2F's run their burst (SYSTEM-burst/) and the held-out
# grid.
# PROFILE_ONLY=1: the held-out grid alone (profile/). SparseD's generate (sparsed, and sparsed-dense
# without its sparsity) runs sparsed-long.csv alone (sparsed-long/).
# dllm-serve runs its own runtime (experiments/validate/serve_driver.py) over its two traces and its
# held-out grid (serve-N/, with steps.csv).
# LENGTHS=fit|held (native, fast-dllm, dllm-cache, sparse-dllm): the length grid alone instead
# (lengths-LENGTHS-b32/ and -b64/, each in its block length).
# CODE: the checkouts, one folder a system (llada, fast-dllm, dllm-cache, sparse-dllm, dllm-serve, each with a
# COMMIT file; experiments/validate/README.md says how to make them) [baselines]; TRACES: the folder
# experiments/validate/traces.sh wrote [CODE/traces].
# Usage: experiments/validate/measure.sh SYSTEM OUT
set -euo pipefail
sys=${1:?usage: measure.sh SYSTEM OUT}
out=${2:?usage: measure.sh SYSTEM OUT}
code=${CODE:-baselines}
traces=${TRACES:-$code/traces}
repo=$code/$sys
[ "$sys" = native ] && repo=$code/llada
[ "${sys#dpad-}" != "$sys" ] && repo=$code/dpad
[ "$sys" = sparsed-dense ] && repo=$code/sparsed
[ -d "$repo" ] || { echo "measure.sh: $repo not found: make the checkouts as experiments/validate/README.md says" >&2; exit 2; }
work=$(mktemp -d)
if [ -n "${LENGTHS:-}" ]; then
    case $sys in native | fast-dllm | dllm-cache | sparse-dllm) ;; *) echo "measure.sh: LENGTHS: a batch-1 loop (native, fast-dllm, dllm-cache, sparse-dllm), not $sys" >&2; exit 2 ;; esac
    for b in 32 64; do
        python3 "$(dirname "$0")/driver.py" --system "$sys" --code "$repo" --model-code "$code/fast-dllm" --block $b \
            --warmup 1 --trace "$traces/lengths-$LENGTHS-b$b.csv" --out "$work/$sys" 2>&1 | grep -v "use_return_dict"
    done
elif [ "$sys" = dllm-serve ]; then
    grid=()
    for n in 1 2 4 8 16 32 48 64; do grid+=(--trace "$traces/serve-$n.csv"); done
    python3 "$(dirname "$0")/serve_driver.py" --code "$repo" --trace "$traces/$sys-low.csv" \
        --trace "$traces/$sys-high.csv" "${grid[@]}" --out "$work/$sys"
elif [ "${sys#sparsed}" != "$sys" ]; then # SparseD's generate, sparse and dense: long prompts, no grid
    warm=1
    [ "$sys" = sparsed ] && warm=4 # a request of each length first: FlexAttention compiles for each shape
    python3 "$(dirname "$0")/driver.py" --system "$sys" --code "$repo" --trace "$traces/sparsed-long.csv" \
        --warmup $warm --out "$work/$sys" 2>&1 | grep -v "use_return_dict"
elif [ "${sys#dpad}" != "$sys" ] || [ "$sys" = d2f ]; then # DPad's three loops, D2F's: their burst, own model files
    runs=(--trace "$traces/$sys-burst.csv")
    [ "${PROFILE_ONLY:-0}" = 1 ] && runs=()
    python3 "$(dirname "$0")/driver.py" --system "$sys" --code "$repo" "${runs[@]}" --trace "$traces/profile.csv" \
        --warmup 2 --out "$work/$sys" 2>&1 | grep -v "use_return_dict"
else
    runs=(--trace "$traces/$sys-low.csv" --trace "$traces/$sys-high.csv")
    [ "${PROFILE_ONLY:-0}" = 1 ] && runs=()
    python3 "$(dirname "$0")/driver.py" --system "$sys" --code "$repo" --model-code "$code/fast-dllm" \
        "${runs[@]}" --trace "$traces/profile.csv" --out "$work/$sys" 2>&1 | grep -v "use_return_dict"
    if [ "$sys" = dllm-cache ]; then # its loop in static batches too
        for b in 4 16; do
            python3 "$(dirname "$0")/driver.py" --system "$sys" --code "$repo" --model-code "$code/fast-dllm" \
                --batch $b --trace "$traces/$sys-b$b.csv" --out "$work/$sys" 2>&1 | grep -v "use_return_dict"
        done
    fi
fi
mkdir -p "$out"
tar -czf "$out/$sys.tgz" -C "$work" "$sys"
rm -rf "$work"
