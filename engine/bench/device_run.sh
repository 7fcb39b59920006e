#!/usr/bin/env bash
# device_run.sh OUTDIR: everything the engine's results in engine/BENCHMARKS.md come from, in one
# call on a GPU machine: build, engine check, a simulated schedule replayed on the engine, the
# per-op profile, the engine benchmark, and PyTorch side by side (SDPA on the same attention shapes,
# and the PyTorch anchor of ../shared/anchors when it was copied to deps/anchors/, then the engine
# on every shape the anchor ran).
# Usage (repository root): bash engine/bench/device_run.sh "$OUT"   [DEPS=deps/root for carried libs]
set -uo pipefail
out=${1:?usage: device_run.sh OUTDIR}
export PATH=$PATH:/usr/local/cuda/bin
b=build/gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$out/gpu.txt"
make -j16 ${DEPS:+DEPS=$DEPS} BUILD=$b 2>&1 | grep -E "error|warning|LINK" || true
./$b/tessera engine check 2>&1 | tee "$out/check.txt" | tail -1
# a simulated schedule (LLaDA-8B, dual cache, phase scheduler, tessera profile) replayed step by step
./$b/tessera sim --requests 24 --rps 4 --db "$out/run.db" --quiet --no-progress | tee "$out/replay.txt"
./$b/tessera engine replay --db "$out/run.db" 2>&1 | tee -a "$out/replay.txt"
./$b/tessera engine profile --db "$out/profile.db" --reps 3 2>&1 | tail -3
./$b/tessera engine bench --reps 20 --json "$out/bench.jsonl" 2>&1 | tee "$out/bench.txt"
python3 engine/bench/sdpa_bench.py 2>&1 | tee "$out/sdpa.jsonl"
if [ -f deps/anchors/torch_llada_step.py ]; then
    PYTHONUNBUFFERED=1 timeout 240 python3 deps/anchors/torch_llada_step.py 2>&1 | tee "$out/anchor.jsonl"
    # the engine on every shape the anchor ran, beside its times
    ./$b/tessera engine bench --only anchor --anchor "$out/anchor.jsonl" --json "$out/engine_anchor.jsonl" 2>&1 |
        tee "$out/engine_anchor.txt"
fi
