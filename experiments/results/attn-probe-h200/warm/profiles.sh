#!/bin/bash
# session 9, call 3: the profile-vs-replay attention gap. LLaDA-8B profiled twice on one instance
# (as fidelity.sh does: --reps 2), with the default warm-up and with --warm-ms 150, then the
# single-sequence Reuse steps profiled alone in fresh processes; SM clock and power sampled throughout.
# All processes share the GEMM cache of the shipped calibrations (experiments/results/fidelity-h200).
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=$PWD/deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
SECONDS=0
o=$OUT/c3; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee $o/gpu.txt
make -j16 DEPS=deps/root BUILD=build/gpu > $o/build.txt 2>&1; echo "build rc $? ${SECONDS}s"
cp experiments/results/fidelity-h200/gemm-algos.db /tmp/algos.db
export TESSERA_GEMM_CACHE=/tmp/algos.db
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 200 > $o/clocks.csv &
smi=$!
echo "A start ${SECONDS}s" >> $o/marks.txt
timeout 200 ./build/gpu/tessera engine profile --model llada-8b --db $o/a.db --reps 2 > $o/a.log 2>&1; echo "A rc $? ${SECONDS}s" | tee -a $o/marks.txt
timeout 200 ./build/gpu/tessera engine profile --model llada-8b --db $o/b.db --reps 2 --warm-ms 150 > $o/b.log 2>&1; echo "B rc $? ${SECONDS}s" | tee -a $o/marks.txt
for kv in 480 1024 2048; do
  timeout 60 ./build/gpu/tessera engine profile --model llada-8b --db $o/s$kv.db --reps 2 --step 1,32,$kv,0 > $o/s$kv.log 2>&1
done
echo "steps done ${SECONDS}s" | tee -a $o/marks.txt
kill $smi
python3 - $o <<'PY'
import sqlite3, sys
o = sys.argv[1]
def get(db, segs, q, kv, lr, op):
    try:
        c = sqlite3.connect(f"{o}/{db}")
        r = c.execute("SELECT ms, total_ms FROM engine_profile WHERE segs=? AND q=? AND kv=? AND logit_rows=? AND op=?",
                      (segs, q, kv, lr, op)).fetchone()
        return r
    except Exception as e:
        return None
print("step                      op         A(default)      B(warm 150)     alone")
for segs, q, kv, lr in [(1,32,128,0),(1,32,480,0),(1,32,1024,0),(1,32,2048,0),(1,32,4096,0),(16,32,480,32),(16,32,2048,32),(4,32,1024,32),(16,512,0,512)]:
    for op in ("attention", "gate_up", "qkv"):
        a = get("a.db", segs, q, kv, lr, op); b = get("b.db", segs, q, kv, lr, op)
        s = get(f"s{kv}.db", segs, q, kv, lr, op) if (segs, q, lr) == (1, 32, 0) else None
        f = lambda r: "%7.3f (%7.2f)" % r if r else "      -        "
        print(f"{segs:2d}x{q:4d} over {kv:4d} lr {lr:3d}  {op:9s} {f(a)} {f(b)} {f(s)}")
PY
