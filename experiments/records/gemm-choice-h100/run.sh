#!/usr/bin/env bash
# shellcheck disable=SC2086,SC2043 # a record (experiments/records): the script as it ran, its lines unedited
# device batch: does the GEMM algorithm choice move small steps' times? The same steps and the same
# recorded schedule under three H100 algorithm caches (earlier machine starts) and a fresh tuning.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/deps/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
make --no-print-directory BUILD=build/gpu DEPS=deps/root -j16 all > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $OUT/gpu.txt
T=./build/gpu/tessera
steps="--step 1,32,268,32 --step 2,32,196,32 --step 3,32,238,32 --step 4,32,238,32 --step 6,32,480,32 --step 8,32,480,32"
for c in d2 d3 d12 fresh; do rm -f /tmp/$c.db; [ $c = fresh ] || cp deps/caches/$c.db /tmp/$c.db; done
i=0
for c in d12 d2 d3 fresh fresh d3 d2 d12; do
  i=$((i+1)); s=$(date +%s)
  $T engine bench --model llada-8b --only steps --gemm-cache /tmp/$c.db $steps > $OUT/bench-$i-$c.txt 2>&1
  echo "bench $i $c rc=$? $(( $(date +%s) - s )) s"
done
for c in d12 d2 d3 fresh; do
  for r in static-4; do
    cp deps/runs/run-llada-8b-dllm-cache-$r.db /tmp/run-$c.db
    s=$(date +%s)
    $T engine replay --db /tmp/run-$c.db --gemm-cache /tmp/$c.db > $OUT/replay-$r-$c.txt 2>&1
    echo "replay $r $c rc=$? $(( $(date +%s) - s )) s"
    sqlite3 /tmp/run-$c.db "select step_id, measured_ns from engine_steps" > $OUT/replay-$r-$c.steps 2>/dev/null || python3 -c "
import sqlite3,sys; c=sqlite3.connect('/tmp/run-$c.db')
for r in c.execute('select step_id, measured_ns from engine_steps'): print('%d|%d'%r)" > $OUT/replay-$r-$c.steps
  done
done
for c in d2 d3 d12 fresh; do cp /tmp/$c.db $OUT/cache-$c.db; done
