#!/bin/bash
# session 9, call 4: the single-request schedules of attn-probe-h200 replayed with --ops on the
# instance of call 3 (same GEMM cache), to set the replays' attention beside profiles A and B
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=$PWD/deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
SECONDS=0
o=$OUT/c4; mkdir -p $o
make -j16 DEPS=deps/root BUILD=build/gpu > $o/build.txt 2>&1; echo "build rc $? ${SECONDS}s"
[ -f /tmp/algos.db ] || cp experiments/results/fidelity-h200/gemm-algos.db /tmp/algos.db
export TESSERA_GEMM_CACHE=/tmp/algos.db
for P in 384 928 1952 4000; do
  ./build/gpu/tessera sim --requests 1 --lengths fixed:$P,128 --gen-len 128 --db $o/r$P.db --quiet --no-progress > /dev/null
  timeout 120 ./build/gpu/tessera engine replay --db $o/r$P.db --ops > $o/r$P.log 2>&1; echo "P $P rc $? ${SECONDS}s"
done
python3 - $o <<'PY'
import sqlite3, sys, statistics as st
o = sys.argv[1]
for P in (384, 928, 1952, 4000):
    c = sqlite3.connect(f"{o}/r{P}.db")
    rows = c.execute("""SELECT s.kv_tokens, o.ms, e.measured_ns FROM steps s JOIN engine_step_ops o USING(run_id, step_id)
                        JOIN engine_steps e USING(run_id, step_id)
                        WHERE s.num_segs = 1 AND s.q_tokens = 32 AND o.op = 'attention'""").fetchall()
    by = {}
    for kv, ms, tot in rows:
        by.setdefault(kv, []).append((ms, tot / 1e6))
    for kv in sorted(by):
        v = by[kv]
        print(f"P {P}: reuse 1 x 32 over {kv}: {len(v)} steps, attention median {st.median(x[0] for x in v):.3f} ms, step median {st.median(x[1] for x in v):.3f} ms")
PY
