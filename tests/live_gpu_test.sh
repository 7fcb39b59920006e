#!/usr/bin/env bash
# live_gpu_test.sh: live mode on a GPU machine (make check-gpu). A small schedule runs with
# --executor gpu: every step is executed and measured (live_steps == num_steps), every request
# finishes, the measured time is positive and within a factor of 3 of the calibrated model's, and
# the database records the measured step times; a preset with the caching planner runs live too,
# and so does the fused FFN's implementation profile, dInfer's preset (vicinity refresh), the
# delayed intra-block cache on SDAR-8B and FOCUS's eviction over it, a mixture of experts, the sparse
# caches, dLLM-Cache's feature cache, and a run whose steps lazy chunking splits.
# Usage: live_gpu_test.sh PATH/TO/tessera
set -u
bin=${1:?usage: live_gpu_test.sh PATH/TO/tessera}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" sim --requests 6 --rps 8 --gen-len 64 --lengths fixed:200,64 --cost calibrated --executor gpu \
    --json --quiet --no-progress --db "$tmp/live.db" >"$tmp/out.json" || { echo "live: the run failed"; exit 1; }
python3 - "$tmp/out.json" "$tmp/live.db" "$(dirname "$0")" <<'PY' || exit 1
import json, sqlite3, sys
sys.path.insert(0, sys.argv[3])
from live_summary import fails as summary_fails
s = json.load(open(sys.argv[1]))
fails, meas, model = summary_fails(s, 6)
db = sqlite3.connect(sys.argv[2])
(steps_s,) = db.execute("SELECT sum(duration_ns) * 1e-9 FROM steps").fetchone()
if abs(steps_s - meas) > 1e-3 * meas + 1e-6 * s["num_steps"]:
    fails.append(f"database steps sum to {steps_s} s, measured {meas} s")
for f in fails:
    print("live: FAIL:", f)
print(f"live: {s['num_steps']} steps measured {meas:.3f} s (model {model:.3f} s); "
      f"{'ok' if not fails else 'failed'}")
sys.exit(1 if fails else 0)
PY
# executed LABEL FILE: the run whose --json summary is FILE executed every step live and finished
# its 4 requests
executed() {
    python3 - "$1" "$2" <<'PY'
import json, sys
label, s = sys.argv[1], json.load(open(sys.argv[2]))
ok = s.get("live_steps") == s["num_steps"] > 0 and s["num_finished"] == 4
print(f"live: {label} {s['num_steps']} steps executed in {s.get('live_measured_s', 0):.3f} s "
      f"(model {s.get('live_model_s', 0):.3f} s); {'ok' if ok else 'failed'}")
sys.exit(0 if ok else 1)
PY
}
# the engine lays out its activations by the simulation's planner: the fast-dllm preset (PyTorch's
# caching allocator model) runs live with every step executed
"$bin" sim --system fast-dllm --requests 4 --rps 8 --gen-len 32 --lengths fixed:200,32 --executor gpu \
    --json --quiet --no-progress >"$tmp/caching.json" || { echo "live: the caching-planner run failed"; exit 1; }
executed "fast-dllm (caching planner)" "$tmp/caching.json" || exit 1
# the fused FFN's implementation profile runs the engine's FFN fused (priced by the roofline: the
# first run above compares a live run with the calibrated model)
"$bin" sim --impl tessera-fused --cost roofline --requests 4 --rps 8 --gen-len 32 --lengths fixed:600,32 \
    --executor gpu --json --quiet --no-progress >"$tmp/fused.json" || { echo "live: the tessera-fused run failed"; exit 1; }
executed "tessera-fused" "$tmp/fused.json" || exit 1
# dInfer's preset live: vicinity windows (the block and 16 tokens each side over the rest of the
# cache, their K/V rewritten) under threshold decoding
"$bin" sim --system dinfer --requests 4 --rps 8 --gen-len 64 --lengths fixed:300,64 --executor gpu \
    --json --quiet --no-progress >"$tmp/dinfer.json" || { echo "live: the dinfer run failed"; exit 1; }
executed "dinfer (vicinity refresh)" "$tmp/dinfer.json" || exit 1
# dInfer's IterSmooth live: every step's logit rows softmaxed and multiplied by the embedding matrix
"$bin" sim --policy dual --scheduler request --decode threshold:2 --iter-smooth --requests 4 --rps 8 --gen-len 64 \
    --lengths fixed:300,64 --cost calibrated --executor gpu --json --quiet --no-progress >"$tmp/smooth.json" ||
    { echo "live: the IterSmooth run failed"; exit 1; }
executed "dual + IterSmooth" "$tmp/smooth.json" || exit 1
# FOCUS's delayed intra-block cache live on a block-causal model: the query set shrinks inside a
# block (q = len - cached over the prefix and the cached positions) and the commit step carries
# the finished block's rest
"$bin" sim --model sdar-8b --policy block+delayed --scheduler request --requests 4 --rps 8 --gen-len 64 \
    --lengths fixed:300,64 --executor gpu --json --quiet --no-progress >"$tmp/delayed.json" ||
    { echo "live: the block+delayed run failed"; exit 1; }
executed "block+delayed (sdar-8b)" "$tmp/delayed.json" || exit 1
# FOCUS's eviction live: layers 0 and 1 over every active row of the block, the importance delta and
# the kept rows chosen on the GPU, the later layers over them alone
"$bin" sim --model sdar-8b --policy focus --scheduler request --requests 4 --rps 8 --gen-len 64 \
    --lengths fixed:300,64 --cost calibrated --executor gpu --json --quiet --no-progress >"$tmp/focus.json" ||
    { echo "live: the focus run failed"; exit 1; }
executed "focus (sdar-8b, eviction)" "$tmp/focus.json" || exit 1
# a mixture of experts live: LLaDA2.0-mini's dense first layer, its routed and shared experts
"$bin" sim --model llada2.0-mini --requests 4 --rps 8 --gen-len 32 --lengths fixed:200,32 --executor gpu \
    --json --quiet --no-progress >"$tmp/moe.json" || { echo "live: the llada2.0-mini run failed"; exit 1; }
executed "llada2.0-mini (mixture of experts)" "$tmp/moe.json" || exit 1
# sparse caches live, both kinds of kept set: FULL steps, the selecting REFRESH (scores, ranking and
# compaction on the GPU, every layer) and REUSE steps over the kept keys, priced by the calibration
for sel in uniform head; do
    "$bin" sim --policy sparse --sparse-select $sel --cost calibrated --requests 4 --rps 8 --gen-len 64 \
        --lengths fixed:600,64 --executor gpu --json --quiet --no-progress >"$tmp/sparse-$sel.json" ||
        { echo "live: the sparse ($sel) run failed"; exit 1; }
    executed "sparse ($sel selection)" "$tmp/sparse-$sel.json" || exit 1
done
# dLLM-Cache live, its preset and on the engine's own profile priced by the calibration: whole
# refreshes, response refreshes over the cached prompt, and partial updates whose rows each layer's
# value check picks on the GPU, the others carried on their cached attention and FFN outputs
"$bin" sim --system dllm-cache --requests 4 --rps 8 --gen-len 64 --lengths fixed:300,64 --executor gpu \
    --json --quiet --no-progress >"$tmp/dllm-cache.json" || { echo "live: the dllm-cache run failed"; exit 1; }
executed "dllm-cache (feature cache)" "$tmp/dllm-cache.json" || exit 1
"$bin" sim --policy dllm-cache --cost calibrated --requests 4 --rps 8 --gen-len 64 --lengths fixed:300,64 \
    --executor gpu --json --quiet --no-progress >"$tmp/dllm-cache-cal.json" ||
    { echo "live: the dllm-cache run priced by the calibration failed"; exit 1; }
executed "dllm-cache (tessera, calibrated)" "$tmp/dllm-cache-cal.json" || exit 1
# lazy chunking live: on a card the simulator sees as 17.38 GiB (16.5 beside the 900 MiB Mosaic's
# chunk search keeps free), Mosaic's lazy chunking splits the FFN of the largest steps; the engine
# runs each step's own chunk counts (its step_desc), and every step is executed
printf '{"h200": {"mem_gib": 17.38}}\n' >"$tmp/small.json"
"$bin" sim --system mosaic --gpu-file "$tmp/small.json" --gpu h200 --lengths fixed:3000,64 --gen-len 64 --requests 4 \
    --rps 8 --executor gpu --json --quiet --no-progress --db "$tmp/lazy.db" >"$tmp/lazy.json" ||
    { echo "live: the lazy-chunking run failed"; exit 1; }
executed "mosaic, lazy chunking" "$tmp/lazy.json" || exit 1
python3 - "$tmp/lazy.db" <<'PY'
import sqlite3, sys
n, chunked = sqlite3.connect(sys.argv[1]).execute("SELECT count(*), sum(ffn_chunks > 1) FROM steps").fetchone()
print(f"live: lazy chunking: {chunked} of {n} steps ran their FFN in 2 or more chunks; "
      f"{'ok' if chunked else 'failed (no step was chunked)'}")
sys.exit(0 if chunked else 1)
PY
