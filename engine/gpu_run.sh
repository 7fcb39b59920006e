#!/usr/bin/env bash
# gpu_run.sh OUT [check] [bench] [memcheck] [racecheck] [sanitize] [sparse] [select] [fc] [focus] [elastic] [moe] [tp] [generate] [disagg] [herald] [sparsed] [linear-spec] [dgemma] [plan]: the engine's GPU work in one call
# on a GPU machine, its outputs under OUT. A GPU machine may have nvcc but no Debian -dev
# packages: unpack those into deps/root here and carry it (engine/README.md, "On a GPU machine");
# DEPS=deps/root then builds against it.
#   check     make check-gpu: the engine against the CPU reference, live mode, L_max, profile, anchor
#   bench     make bench-engine: the engine's steps against their floors beside PyTorch (SDPA, and the
#             anchor scripts when deps/anchors/ holds them: torch_llada_step.py, eager, and
#             torch_compile_step.py, torch.compile(mode="reduce-overhead"))
#   memcheck  compute-sanitizer's memcheck over `check_engine`
#   racecheck compute-sanitizer's racecheck over `check_engine`
#   sanitize  both (SANITIZE_S: each run's time limit, default 900 s; SANITIZE_ONLY=kernels|steps:
#             that half of `check_engine` only, or steps:K/N the K-th of N parts of the steps half,
#             so that a slow tool's run can be split over calls; SANITIZE_PARTS=N: N processes at once
#             under the tool, each one part of SANITIZE_ONLY's checks (all of `check_engine` where it
#             is unset: --only kernels and the steps half's N - 1 parts), their logs one after the
#             other in the tool's file with each one's exit status and time, each part's summary
#             required; TESSERA_GPU_SHARED then leaves out the device-wide free-memory checks)
#   sparse    the sparse caches on this GPU (an H200: the shipped calibrations' GPU): LLaDA-8B's
#             whole grid profiled, select part included (OUT/profile.db), imported as its
#             calibration (OUT/h200-llada-8b-tessera.csv), the selection's share of each selecting
#             step (select-share.txt), live runs of both selections priced by it, and sparse Reuse
#             steps benched beside the dense ones they replace (16 x 32 over 8,192 cached keys, and
#             over the 4,096 of r = 0.5 and 2,048 of r = 0.25)
#   select    the sparse selection after the step's last layer against after each layer's attention
#             (--select-at layer): check_engine --only select on both kernel paths and with the
#             selection after each layer; the select grid of
#             SELECT_MODELS (default llada-8b) profiled SELECT_RUNS times (default 2) each way,
#             alternating, on this machine start (OUT/select-end-M-N.db, OUT/select-layer-M-N.db),
#             and the medians side by side (OUT/select-share.txt: kv_select's share and the step);
#             then memcheck and racecheck over check_engine --only select (each bounded by SANITIZE_S)
#   fc        dLLM-Cache's feature cache: check_engine --only fc on both kernel paths, a live
#             dllm-cache run on LLaDA-8B priced by the shipped calibration, and the same schedule
#             simulated (OUT/sim-fc.db) and replayed with per-op times (engine_step_ops), summarised
#             by kind of step (fc-fidelity.txt); FC_ARGS replaces the workload options
#   focus     FOCUS's eviction: check_engine --only focus on both kernel paths, engine_bench --only
#             focus on SDAR-8B (FOCUS_MODEL), a live focus run on it priced by the cost model, and
#             the same schedule simulated (OUT/sim-focus.db) and replayed (FOCUS_ARGS replaces the
#             workload options)
#   elastic   Elastic-Cache's input cache: check_engine --only elastic on both kernel paths, live
#             elastic runs on LLaDA-8B priced by the shipped calibration (refreshes from layer 4 and
#             16, one token a step and threshold decoding; live-ec.txt), and the first schedule
#             simulated (OUT/sim-ec.db) and replayed with per-op times, summarised by kind of step
#             (ec-fidelity.txt); EC_ARGS replaces the workload options
#   moe       mixtures of experts: check_engine --only moe on both kernel paths, engine_bench of a
#             Reuse (16 x 32 over 480) and a Refresh (16 x 512) step of LLaDA2.0-mini and
#             LLaDA-MoE-7B against their floors (bench-moe.txt), a live run of each priced by the
#             roofline, and the first's schedule simulated and replayed
#   tp        tensor parallelism over TP_N (default 2) GPUs: make check-gpu-tp (check_engine --tp
#             against one GPU, a live run), then engine_bench --tp of LLaDA-8B's Refresh 16 x 512
#             and Reuse 16 x 32 over 480 beside one GPU with the all-reduce alone (bench-tp.txt),
#             and a schedule simulated with --tp, priced by the calibration of one GPU's share
#             (LLaDA-8B over two H200s is shipped), and replayed (sim-tp.db)
#   generate  check_engine --only generate on both kernel paths (the unmasking and credit kernels,
#             whole generations against the CPU reference), its memcheck, then engine generate on
#             LLaDA-8B (dual cache: threshold, hierarchical, credit, topk:2; threshold and credit with
#             IterSmooth; dInfer's vicinity cache with hierarchical decoding and IterSmooth) and SDAR-8B (threshold, block cache and FOCUS; block with IterSmooth), 16
#             requests of 256 + 256 tokens (GEN_ARGS replaces them), each into
#             OUT/generate-MODEL-DECODER-CACHE[-smooth].txt
#   plan      a planned configuration live: tessera plan capacity of LLaDA-8B with the dual cache on
#             this card (the shipped H200 calibration; PLAN_ARGS replaces the workload, PLAN_SLO the
#             SLO, p90=3s), then the workload run live at the point capacity, at the robust one and at
#             PLAN_FACTORS times the point (0.95 0.9 0.85 1.25), each simulated beside it
#             (OUT/plan-capacity.txt, OUT/plan-live.txt: each run's share within the bound, whether
#             overloaded, whether it held, and its steps' time against the model's; the runs' JSON in
#             OUT/plan-runs.tgz)
#   disagg    a live Refresh/Reuse split over four GPUs of one host (record fleet-disagg-live-h200x4):
#             check_engine --only moves, then LLaDA-8B's dual cache on four replicas, split 2 + 2 and
#             co-located, each live and simulated (OUT/live-disagg.json, live-colocated.json,
#             model-*.json; disagg.txt sets them side by side). The first 400 lines of TRACE (default
#             ../shared/traces/raw/AzureLLMInferenceTrace_conv.csv); DISAGG_ARGS replaces the workload
#             options (default --requests 160 --rps 4 --gen-len 256)
#   herald    HERALD's host part live (record herald-live-h100): engine_bench --only host (its
#             scoring rate), then SDAR-8B live with nothing offloaded and with herald, overlapped and
#             serial, at the default scan rate and at the measured one (OUT/live-*.json; herald.txt
#             sets them side by side); HERALD_ARGS replaces the workload options
#   sparsed   SparseD's patterns (record sparsed-live-h200): check_engine --only sparsed on both
#             kernel paths, then LLaDA-8B one request at a time, live and simulated, for each
#             POLICY:PROMPT of SPARSED_RUNS (default sparsed:2048 sparsed:3968 vanilla:3968; 128
#             positions generated): the whole run and each kind of step (dense, the pattern's build,
#             sparse) set side by side (OUT/live-sparsed.txt); then engine generate under SparseD at
#             each prompt of SPARSED_GEN (default 2048 3968: 4 requests, 128 tokens), its patterns'
#             prompt share (OUT/generate-sparsed-PROMPT.txt)
#   linear-spec  LinearSpec live (record linear-spec-live-h200): LLaDA2.0-mini and SDAR-8B, one
#             request at a time and static batches of 8, LinearSpec beside block diffusion, each
#             priced by the shipped calibration (OUT/live-MODEL-bN-POLICY.json; linear-spec.txt the
#             whole runs' errors; LSPEC_ARGS, default 16 requests of 256 + 256)
#   dgemma    DiffusionGemma's serving schedules live (record dgemma-live-h200), with LLaDA2.0-mini in
#             its place (the engine does not run its sliding and global layers) and the engine's runtime,
#             16 requests of 512 + 512 (two canvases of 256), each priced by the shipped calibration:
#             SGLang's (--system sglang-dgemma: a context pass between the canvases) all at once, first
#             done first out and sync at --max-running-requests 4, first done first out one at a time,
#             and arriving at 2 a second; vLLM's (--system diffusion-gemma: a commit pass) all at once at
#             --max-batch 4 and 8; then --system sglang at 8 running, its rounds padded to captured
#             graphs (OUT/live-*.json; dgemma.txt the whole runs' errors)
# Default: check. Prints each part's last lines; OUT holds the whole logs.
set -uo pipefail
out=${1:?usage: gpu_run.sh OUT [check] [bench] [memcheck] [racecheck] [sanitize]}
shift
parts=${*:-check}
export PATH=$PATH:/usr/local/cuda/bin
b=build/gpu
ce=./$b/tests/gpu/check_engine eb=./$b/engine_bench # the GPU test suite and the benchmark
mk=(make --no-print-directory "BUILD=$b" ${DEPS:+"DEPS=$DEPS"})
gcache=() # a part's engine commands share one GEMM algorithm cache: --gemm-cache FILE
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$out/gpu.txt"
"${mk[@]}" -j16 all >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
# check_both PART DIR: check_engine --only PART with the device's kernels and the portable ones,
# into DIR/check-PART.txt and DIR/check-PART-portable.txt
check_both() {
    $ce --only "$1" >"$2/check-$1.txt" 2>&1 || { cat "$2/check-$1.txt"; return 1; }
    $ce --kernels portable --only "$1" >"$2/check-$1-portable.txt" 2>&1 ||
        { cat "$2/check-$1-portable.txt"; return 1; }
    tail -n 1 "$2/check-$1.txt" "$2/check-$1-portable.txt"
}

# the sparse part (see the header)
sparse_part() {
    local o=$1 t=./$b/tessera
    gcache=(--gemm-cache "$o/gemm-algos.db")
    "$t" engine profile "${gcache[@]}" --db "$o/profile.db" --grid all --reps 2 >"$o/profile.txt" 2>&1 || return 1
    tail -1 "$o/profile.txt"
    "$t" calib import "$o/profile.db" --gpu h200 --out "$o/h200-llada-8b-tessera.csv" || return 1
    python3 -c 'import sqlite3, sys
print("segs q keep sel_heads kv_select_ms step_ms share_%")
for r in sqlite3.connect(sys.argv[1]).execute("SELECT segs, q, keep, sel_heads, ms, total_ms, 100 * ms / total_ms "
        "FROM engine_profile WHERE op = \x27kv_select\x27 ORDER BY sel_heads, q, segs"):
    print(*r[:4], "%.3f %.3f %.2f" % r[4:])' "$o/profile.db" >"$o/select-share.txt" || return 1
    cat "$o/select-share.txt"
    for sel in uniform head; do
        "$t" sim --policy sparse --sparse-select $sel --requests 8 --rps 8 --gen-len 64 --lengths fixed:1000,64 \
            --cost calibrated --calib "$o/h200-llada-8b-tessera.csv" --executor gpu --no-progress \
            >"$o/live-sparse-$sel.txt" 2>&1 || return 1
        grep -E "live|throughput" "$o/live-sparse-$sel.txt"
    done
    "$eb" "${gcache[@]}" --only steps --step 16,32,8192,32 --step 16,32,4096,32 --step 16,32,2048,32 \
        --json "$o/bench-sparse.jsonl" >"$o/bench-sparse.txt" 2>&1 || return 1
    tail -30 "$o/bench-sparse.txt"
}

# the selection part (see the header)
select_part() {
    local o=$1 t=./$b/tessera m k how
    gcache=(--gemm-cache "$o/gemm-algos.db")
    check_both select "$o" || return 1
    $ce "${gcache[@]}" --select-at layer --only select >"$o/check-select-layer.txt" 2>&1 ||
        { cat "$o/check-select-layer.txt"; return 1; }
    tail -n 1 "$o/check-select-layer.txt"
    for m in ${SELECT_MODELS:-llada-8b}; do
        for ((k = 1; k <= ${SELECT_RUNS:-2}; k++)); do
            for how in end layer; do
                "$t" engine profile "${gcache[@]}" --select-at $how --model "$m" --grid select \
                    --reps 2 --db "$o/select-$how-$m-$k.db" >"$o/profile-select-$how-$m-$k.txt" 2>&1 ||
                    { cat "$o/profile-select-$how-$m-$k.txt"; return 1; }
            done
        done
    done
    python3 - "$o" >"$o/select-share.txt" <<'PY' || return 1
import glob, os, sqlite3, statistics, sys
# every selecting step's kv_select and whole step, the median over the runs of each way
runs = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "select-*-*-*.db"))):
    _, how, rest = os.path.basename(f)[:-3].split("-", 2)  # select-HOW-MODEL-N.db
    model = rest.rsplit("-", 1)[0]
    for segs, q, keep, heads, ms, tot in sqlite3.connect(f).execute(
            "SELECT segs, q, keep, sel_heads, ms, total_ms FROM engine_profile WHERE op = 'kv_select'"):
        runs.setdefault((model, heads, q, segs, keep), {}).setdefault(how, []).append((ms, tot))
med = lambda v, i: statistics.median(x[i] for x in v)
print("model sel_heads segs q keep | end: kv_select_ms step_ms share_% | layer: kv_select_ms step_ms share_% | end/layer step")
for (model, heads, q, segs, keep), w in sorted(runs.items()):
    e, l = w.get("end", []), w.get("layer", [])
    if not e or not l:
        continue
    print(model, heads, segs, q, keep, "| %.3f %.3f %.2f | %.3f %.3f %.2f | %.3f" % (
        med(e, 0), med(e, 1), 100 * med(e, 0) / med(e, 1), med(l, 0), med(l, 1), 100 * med(l, 0) / med(l, 1),
        med(e, 1) / med(l, 1)))
PY
    cat "$o/select-share.txt"
    for tool in memcheck racecheck; do
        timeout "${SANITIZE_S:-900}" compute-sanitizer --tool $tool --error-exitcode 3 $ce --only select \
            >"$o/$tool-select.txt" 2>&1 || { tail -20 "$o/$tool-select.txt"; return 1; }
        tail -n 1 "$o/$tool-select.txt"
    done
}

# kind_fidelity DB KIND WHERE WHAT: a replayed schedule's steps by kind (KIND: an SQL expression of a
# segment g naming its kind; a step's kind is its segments' distinct ones), each kind's measured and
# predicted mean and MAPE (the first step left out: it tunes the GEMMs), then each op's measured mean
# time over the steps holding a segment where WHERE holds (WHAT names them)
kind_fidelity() {
    python3 - "$@" <<'PY'
import sqlite3, sys
path, kind, where, what = sys.argv[1:5]
db = sqlite3.connect(path)
rows = db.execute(f"""SELECT e.step_id, e.measured_ns * 1e-6, e.predicted_ns * 1e-6,
    (SELECT group_concat(DISTINCT {kind}) FROM segments g WHERE g.run_id = e.run_id AND g.step_id = e.step_id)
    FROM engine_steps e ORDER BY e.step_id""").fetchall()
by = {}
for step, meas, pred, k in rows[1:]:
    by.setdefault(k, []).append((meas, pred))
print("kind steps measured_ms(mean) predicted_ms(mean) mape_%")
for k, v in sorted(by.items()):
    n = len(v)
    print(k, n, "%.3f %.3f %.2f" % (sum(m for m, _ in v) / n, sum(p for _, p in v) / n,
          100 * sum(abs(p - m) / m for m, p in v) / n))
print(f"op ms_per_step({what}, measured)")
for op, ms in db.execute(f"""SELECT o.op, avg(o.ms) FROM engine_step_ops o WHERE o.step_id IN (SELECT step_id FROM
        segments WHERE {where}) GROUP BY o.op ORDER BY 2 DESC"""):
    print(op, "%.3f" % ms)
PY
}

# the input-cache part (see the header)
elastic_part() {
    local o=$1 t=./$b/tessera depth dec tag card=h100
    gcache=(--gemm-cache "$o/gemm-algos.db")
    check_both elastic "$o" || return 1
    grep -q H200 "$out/gpu.txt" && card=h200
    local args # the runs' options (EC_ARGS, its words split)
    read -r -a args <<<"${EC_ARGS:---model llada-8b --requests 8 --rps 8 --lengths fixed:300,128 --gen-len 128 --seed 7 --eos bulk --ec-track 29 --ec-refresh-share 0.6325}"
    for depth in 4 16; do
        for dec in fixed:1 threshold:llada-gsm8k; do
            tag=d$depth-${dec%%:*}
            "$t" sim --gpu "$card" --policy elastic "${args[@]}" --ec-depth "$depth" --decode "$dec" --cost calibrated --executor gpu \
                "${gcache[@]}" --json --no-progress >"$o/live-ec-$tag.json" 2>"$o/live-ec-$tag.err" ||
                { tail -5 "$o/live-ec-$tag.err"; return 1; }
            python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(sys.argv[2], d["live_steps"], "steps: measured %.3f s, predicted %.3f s (%+.1f%%), per-step MAPE %.1f%%" % (
    d["live_measured_s"], d["live_model_s"], 100 * (d["live_model_s"] / d["live_measured_s"] - 1), 100 * d["live_step_mape"]))' \
                "$o/live-ec-$tag.json" "$tag" | tee -a "$o/live-ec.txt"
        done
    done
    "$t" sim --gpu "$card" --policy elastic "${args[@]}" --ec-depth 4 --cost calibrated --no-progress --quiet --db "$o/sim-ec.db" \
        >/dev/null || return 1
    "$t" engine replay "${gcache[@]}" --db "$o/sim-ec.db" --ops >"$o/replay-ec.txt" 2>&1 || { cat "$o/replay-ec.txt"; return 1; }
    tail -3 "$o/replay-ec.txt"
    kind_fidelity "$o/sim-ec.db" "CASE WHEN g.q_front > 0 THEN 'refresh' WHEN g.kv = 0 THEN 'whole' ELSE 'cached' END" \
        "q_front > 0" "steps with a refresh" >"$o/ec-fidelity.txt" || return 1
    cat "$o/ec-fidelity.txt"
}

# the feature-cache part (see the header)
fc_part() {
    local o=$1 t=./$b/tessera
    gcache=(--gemm-cache "$o/gemm-algos.db")
    check_both fc "$o" || return 1
    local args # the runs' options (FC_ARGS, its words split)
    read -r -a args <<<"${FC_ARGS:---requests 16 --rps 4 --gen-len 256 --lengths fixed:300,256}"
    "$t" sim --policy dllm-cache "${args[@]}" --cost calibrated --executor gpu "${gcache[@]}" --no-progress >"$o/live-fc.txt" 2>&1 ||
        { cat "$o/live-fc.txt"; return 1; }
    grep -E "live|throughput|time by op" "$o/live-fc.txt"
    "$t" sim --policy dllm-cache "${args[@]}" --cost calibrated --no-progress --quiet --db "$o/sim-fc.db" >/dev/null || return 1
    "$t" engine replay "${gcache[@]}" --db "$o/sim-fc.db" --ops >"$o/replay-fc.txt" 2>&1 || { cat "$o/replay-fc.txt"; return 1; }
    tail -3 "$o/replay-fc.txt"
    kind_fidelity "$o/sim-fc.db" "CASE WHEN g.probe > 0 THEN 'partial' WHEN g.carry > 0 THEN 'response' ELSE 'whole' END" \
        "probe > 0" "partial steps" >"$o/fc-fidelity.txt" || return 1
    cat "$o/fc-fidelity.txt"
}

# the eviction part (see the header)
focus_part() {
    local o=$1 t=./$b/tessera model=${FOCUS_MODEL:-sdar-8b}
    gcache=(--gemm-cache "$o/gemm-algos.db")
    check_both focus "$o" || return 1
    "$eb" "${gcache[@]}" --only focus --model "$model" --json "$o/bench-focus.jsonl" >"$o/bench-focus.txt" 2>&1 ||
        { cat "$o/bench-focus.txt"; return 1; }
    grep -E "^(FOCUS's eviction|kept|all 32|[0-9]+ )" "$o/bench-focus.txt"
    local args # the runs' options (FOCUS_ARGS, its words split)
    read -r -a args <<<"${FOCUS_ARGS:---requests 16 --rps 4 --gen-len 256 --lengths fixed:300,256 --cost calibrated}"
    "$t" sim --model "$model" --policy focus "${args[@]}" --executor gpu "${gcache[@]}" --no-progress >"$o/live-focus.txt" 2>&1 ||
        { cat "$o/live-focus.txt"; return 1; }
    grep -E "live|throughput|redundancy" "$o/live-focus.txt"
    "$t" sim --model "$model" --policy focus "${args[@]}" --no-progress --quiet --db "$o/sim-focus.db" >/dev/null || return 1
    "$t" engine replay "${gcache[@]}" --db "$o/sim-focus.db" >"$o/replay-focus.txt" 2>&1 || { cat "$o/replay-focus.txt"; return 1; }
    tail -3 "$o/replay-focus.txt"
    python3 - "$o/sim-focus.db" >"$o/focus-fidelity.txt" <<'PY' || return 1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
# each step: evicting (some segment keeps picked of its candidates) or not
rows = db.execute("""SELECT e.measured_ns * 1e-6, e.predicted_ns * 1e-6,
    (SELECT max(g.probe > 0) FROM segments g WHERE g.run_id = e.run_id AND g.step_id = e.step_id)
    FROM engine_steps e ORDER BY e.step_id""").fetchall()
by = {}
for meas, pred, ev in rows[1:]:
    by.setdefault("evicting" if ev else "plain", []).append((meas, pred))
print("kind steps measured_ms(mean) predicted_ms(mean) mape_%")
for kind, v in sorted(by.items()):
    n = len(v)
    print(kind, n, "%.3f %.3f %.2f" % (sum(m for m, _ in v) / n, sum(p for _, p in v) / n,
          100 * sum(abs(p - m) / m for m, p in v) / n))
PY
    cat "$o/focus-fidelity.txt"
}

# the mixture-of-experts part (see the header)
moe_part() {
    local o=$1 t=./$b/tessera
    gcache=(--gemm-cache "$o/gemm-algos.db")
    check_both moe "$o" || return 1
    : >"$o/bench-moe.txt"
    for model in llada2.0-mini llada-moe-7b; do
        "$eb" "${gcache[@]}" --only steps --model "$model" --step 16,32,480,32 --step 16,512,0,512 \
            --json "$o/bench-moe.jsonl" >>"$o/bench-moe.txt" 2>&1 || { tail -20 "$o/bench-moe.txt"; return 1; }
    done
    grep -E "^engine|^step|eager" "$o/bench-moe.txt"
    local args=(--requests 8 --rps 4 --gen-len 64 --lengths "fixed:300,64" --cost roofline)
    for model in llada2.0-mini llada-moe-7b; do
        "$t" sim --model "$model" "${args[@]}" --executor gpu "${gcache[@]}" --no-progress >"$o/live-moe-$model.txt" 2>&1 ||
            { cat "$o/live-moe-$model.txt"; return 1; }
        grep -E "live|throughput" "$o/live-moe-$model.txt"
    done
    "$t" sim --model llada2.0-mini "${args[@]}" --no-progress --quiet --db "$o/sim-moe.db" >/dev/null || return 1
    "$t" engine replay "${gcache[@]}" --db "$o/sim-moe.db" --ops >"$o/replay-moe.txt" 2>&1 || { cat "$o/replay-moe.txt"; return 1; }
    tail -3 "$o/replay-moe.txt"
}

# the tp part (see the header)
tp_part() {
    local o=$1 t=./$b/tessera n=${TP_N:-2}
    gcache=(--gemm-cache "$o/gemm-algos.db")
    "${mk[@]}" check-gpu-tp "TP=$n" >"$o/check-tp.txt" 2>&1 || { cat "$o/check-tp.txt"; return 1; }
    grep -E "passed|live|throughput" "$o/check-tp.txt"
    "$eb" "${gcache[@]}" --tp "$n" --json "$o/bench-tp.jsonl" >"$o/bench-tp.txt" 2>&1 || { cat "$o/bench-tp.txt"; return 1; }
    cat "$o/bench-tp.txt"
    local args=(--requests 8 --rps 8 --gen-len 64 --lengths "fixed:512,64" --tp "$n" --cost calibrated --no-progress)
    "$t" sim "${args[@]}" --quiet --db "$o/sim-tp.db" >/dev/null || return 1
    "$t" engine replay "${gcache[@]}" --db "$o/sim-tp.db" --tp "$n" >"$o/replay-tp.txt" 2>&1 || { cat "$o/replay-tp.txt"; return 1; }
    tail -3 "$o/replay-tp.txt"
}

generate_part() {
    local o=$1 t=./$b/tessera spec
    gcache=(--gemm-cache "$o/gemm-algos.db")
    check_both generate "$o" || return 1
    timeout "${SANITIZE_S:-900}" compute-sanitizer --tool memcheck --error-exitcode 3 "$ce" --only generate \
        >"$o/memcheck-generate.txt" 2>&1 || { tail -20 "$o/memcheck-generate.txt"; return 1; }
    tail -n 2 "$o/memcheck-generate.txt"
    local gen words # engine generate's options (GEN_ARGS, its words split); a spec's words
    read -r -a gen <<<"${GEN_ARGS:---requests 16 --prompt-len 256 --gen-len 256}"
    for spec in "llada-8b threshold:0.9 dual" "llada-8b hierarchical:0.9,0.4 dual" "llada-8b credit:0.9 dual" \
        "llada-8b topk:2 dual" "sdar-8b threshold:0.9 block" "sdar-8b threshold:0.9 focus" \
        "llada-8b threshold:0.9 dual smooth" "llada-8b credit:0.9 dual smooth" "sdar-8b threshold:0.9 block smooth" \
        "llada-8b hierarchical:0.9,0.4 vicinity smooth"; do
        read -r -a words <<<"$spec" # the model, the decoder, the policy and, where given, smooth
        set -- "${words[@]}"
        local f="$o/generate-$1-${2%%:*}-$3${4:+-$4}.txt"
        "$t" engine generate "${gcache[@]}" --model "$1" --decoder "$2" --policy "$3" ${4:+--iter-smooth} \
            "${gen[@]}" >"$f" 2>&1 || { cat "$f"; return 1; }
        cat "$f"
    done
}

# sanitize_tool TOOL CLEAN: compute-sanitizer's TOOL over `check_engine` (SANITIZE_ONLY's checks: one
# --only value, or several run one after another), or over SANITIZE_PARTS processes at once, each
# bounded by SANITIZE_S, into OUT/sanitizer-TOOL.txt; fails unless every process printed CLEAN (a run
# cut short by the time limit has no summary: that is no pass). A plain run of the same checks first
# fills a GEMM algorithm cache the sanitized runs take their algorithms from: tuning would launch
# every candidate algorithm under the sanitizer (racecheck ten times slower)
sanitize_tool() {
    local tool=$1 clean=$2 log=$out/sanitizer-$1.txt n=${SANITIZE_PARTS:-1} onlys=() k pids=() f ok=0
    local seq=0 gc
    if [ "$n" -le 1 ]; then
        read -r -a onlys <<<"${SANITIZE_ONLY:-}"
        [ ${#onlys[@]} -eq 0 ] && onlys=("")
        seq=1
    elif [ -n "${SANITIZE_ONLY:-}" ]; then
        [ "${SANITIZE_ONLY%%:*}" = steps ] || { echo "SANITIZE_PARTS=$n: only the steps half has parts (SANITIZE_ONLY=steps)" >&2; return 1; }
        for ((k = 1; k <= n; k++)); do onlys+=("${SANITIZE_ONLY%%:*}:$k/$n"); done
    else
        onlys=(kernels)
        for ((k = 1; k < n; k++)); do onlys+=("steps:$k/$((n - 1))"); done
    fi
    gc="$out/gemm-algos-sanitize.db"
    for k in "${!onlys[@]}"; do
        $ce --gemm-cache "$gc" ${onlys[$k]:+--only ${onlys[$k]}} >/dev/null 2>&1 ||
            { echo "$tool: check_engine${onlys[$k]:+ --only ${onlys[$k]}} fails without the sanitizer" >&2; return 1; }
    done
    # processes side by side share the device: the device-wide free-memory check cannot tell theirs
    [ "$n" -gt 1 ] && export TESSERA_GPU_SHARED=1
    for k in "${!onlys[@]}"; do
        ( s0=$SECONDS
          timeout "${SANITIZE_S:-900}" compute-sanitizer --tool "$tool" --error-exitcode 3 \
              $ce --gemm-cache "$gc" ${onlys[$k]:+--only ${onlys[$k]}} >"$log.$k" 2>&1
          r=$?
          echo "exit status $r after $((SECONDS - s0)) s" >>"$log.$k"
          exit $r ) &
        pids+=($!)
        [ $seq = 1 ] && { wait "${pids[0]}" || ok=1; pids=(); } # one after another
    done
    for k in "${!pids[@]}"; do wait "${pids[$k]}" || ok=1; done
    : >"$log"
    for k in "${!onlys[@]}"; do
        f=$log.$k
        echo "=== check_engine${onlys[$k]:+ --only ${onlys[$k]}}" >>"$log"
        cat "$f" >>"$log"
        grep -q "$clean" "$f" || { ok=1; echo "$tool: check_engine${onlys[$k]:+ --only ${onlys[$k]}} left no clean summary" >&2; }
        rm -f "$f"
    done
    return $ok
}

# live_summary FILE...: each live run's predicted total against its measured one, per-step MAPE,
# and its host steps' (live_host_*) where it has some
live_summary() {
    python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    m = d.get("fleet", d)
    line = "%s: %d steps, predicted %+.1f%%, per-step MAPE %.1f%%" % (path.split("/")[-1], m["live_steps"],
        100 * (m["live_model_s"] / m["live_measured_s"] - 1), 100 * m["live_step_mape"])
    if m.get("live_host_steps"):
        line += "; %d host steps, predicted %+.1f%%, MAPE %.1f%%" % (m["live_host_steps"],
            100 * (m["live_host_model_s"] / m["live_host_measured_s"] - 1), 100 * m["live_host_step_mape"])
    if "lat_p99_s" in m:
        line += "; mean %.3f s, p99 %.3f s, %.1f tokens/s" % (m["lat_mean_s"], m["lat_p99_s"], m["throughput_tok_s"])
    if m.get("moves_live"):
        line += "; %d moves %.3f ms each (model %.3f)" % (m["moves_live"], 1e3 * m["move_live_s"] / m["moves_live"],
                                                       1e3 * m["move_model_s"] / m["moves_live"])
    print(line)
PY
}

# step_kinds LIVE_DB SIM_DB: a live run's steps against the same schedule simulated (one request at a
# time: the same steps in both), by kind of step (its segments' attn_keys: dense, a pattern's build
# scoring more keys than its rows, sparse fewer)
step_kinds() {
    python3 - "$@" <<'PY'
import sqlite3, statistics as st, sys
def steps(path):
    c = sqlite3.connect(path)
    dur = dict(c.execute("SELECT step_id, duration_ns FROM steps"))
    kind = {i: "dense" if k == 0 else "build" if k > q else "sparse"
            for i, q, k in c.execute("SELECT step_id, q, attn_keys FROM segments")}
    return dur, kind
(ld, lk), (md, mk) = steps(sys.argv[1]), steps(sys.argv[2])
for k in ("dense", "build", "sparse"):
    ids = [i for i in ld if lk.get(i) == k and mk.get(i) == k and i in md]
    if ids:
        print("  %-6s %4d steps: live median %.2f ms, simulated %.2f ms; in all %+.1f%%, MAPE %.1f%%" % (
            k, len(ids), st.median(ld[i] for i in ids) / 1e6, st.median(md[i] for i in ids) / 1e6,
            100 * (sum(md[i] for i in ids) / sum(ld[i] for i in ids) - 1),
            100 * st.mean(abs(md[i] / ld[i] - 1) for i in ids)))
PY
}

# the SparseD part (see the header)
sparsed_part() {
    local o=$1 t=./$b/tessera card=h100 run pol len
    check_both sparsed "$o" || return 1
    grep -q H200 "$out/gpu.txt" && card=h200
    local args=(--model llada-8b --gpu "$card" --cost calibrated --scheduler static --max-batch 1 --requests 2 --rps 100
                --gen-len 128 --json --no-progress)
    for run in ${SPARSED_RUNS:-sparsed:2048 sparsed:3968 vanilla:3968}; do
        pol=${run%%:*} len=${run#*:}
        "$t" sim --policy "$pol" "${args[@]}" --lengths "fixed:$len,128" --executor gpu --db "$o/live-$pol-$len.db" \
            >"$o/live-$pol-$len.json" 2>"$o/live-$pol-$len.err" || { tail -5 "$o/live-$pol-$len.err"; return 1; }
        "$t" sim --policy "$pol" "${args[@]}" --lengths "fixed:$len,128" --db "$o/sim-$pol-$len.db" >/dev/null || return 1
        live_summary "$o/live-$pol-$len.json" | tee -a "$o/live-sparsed.txt"
        step_kinds "$o/live-$pol-$len.db" "$o/sim-$pol-$len.db" | tee -a "$o/live-sparsed.txt"
    done
    for len in ${SPARSED_GEN:-2048 3968}; do
        "$t" engine generate --model llada-8b --policy sparsed --requests 4 --prompt-len "$len" --gen-len 128 --block 32 \
            --decoder threshold:0.9 >"$o/generate-sparsed-$len.txt" 2>&1 || { tail -5 "$o/generate-sparsed-$len.txt"; return 1; }
        grep "SparseD pattern" "$o/generate-sparsed-$len.txt"
    done
}

# the disaggregation part (see the header)
disagg_part() {
    local o=$1 t=./$b/tessera card=h100 f how
    grep -q H200 "$out/gpu.txt" && card=h200
    check_both moves "$o" || return 1
    head -401 "${TRACE:-../shared/traces/raw/AzureLLMInferenceTrace_conv.csv}" >"$o/trace.csv" || return 1
    local args=(--replicas 4 --policy dual --gpu "$card" --cost calibrated --trace "$o/trace.csv" --json --no-progress) more mode
    read -r -a more <<<"${DISAGG_ARGS:---requests 160 --rps 4 --gen-len 256}" # its words split
    args+=("${more[@]}")
    for f in "disagg:--disagg every,refresh=2,link=host" "colocated:"; do
        how=${f%%:*}
        read -r -a mode <<<"${f#*:}" # the run's own options
        "$t" sim "${args[@]}" "${mode[@]}" >"$o/model-$how.json" 2>/dev/null || return 1
        "$t" sim "${args[@]}" "${mode[@]}" --executor gpu >"$o/live-$how.json" 2>"$o/live-$how.err" || { tail "$o/live-$how.err"; return 1; }
    done
    live_summary "$o/live-disagg.json" "$o/live-colocated.json" | tee "$o/disagg.txt"
    python3 - "$o" <<'PY' | tee -a "$o/disagg.txt"
import json, sys
for how in ("disagg", "colocated"):
    a, b = (json.load(open("%s/%s-%s.json" % (sys.argv[1], k, how))) for k in ("live", "model"))
    print(how, "simulated against live:", ", ".join("%s %+.1f%%" % (k, 100 * (b[k] / a[k] - 1))
          for k in ("lat_mean_s", "lat_p50_s", "lat_p90_s", "lat_p99_s", "throughput_tok_s")))
PY
}

# the HERALD part (see the header)
herald_part() {
    local o=$1 t=./$b/tessera card=h100 rate name
    grep -q H200 "$out/gpu.txt" && card=h200
    "$eb" --only host >"$o/host.txt" 2>&1 || { cat "$o/host.txt"; return 1; }
    rate=$(sed -n 's/.*scoring their keys over 16 threads: [0-9.]* ms, \([0-9.]*\) GB\/s of keys/\1/p' "$o/host.txt")
    [ -n "$rate" ] || { echo "herald: no scoring rate in host.txt" >&2; return 1; }
    local args=(--model sdar-8b --gpu "$card" --cost calibrated --executor gpu --json --no-progress) more pol
    read -r -a more <<<"${HERALD_ARGS:---requests 8 --rps 1 --lengths fixed:8000,256}" # its words split
    args+=("${more[@]}")
    for name in block herald-overlap herald-serial herald-overlap-s herald-serial-s; do
        pol=(--policy herald)
        case $name in
            block) pol=(--policy block) ;;
            herald-overlap) pol+=(--herald-overlap 1) ;;
            herald-serial) pol+=(--herald-overlap 0) ;;
            herald-overlap-s) pol+=(--herald-overlap 1 --herald-scan-gbs "$rate") ;;
            herald-serial-s) pol+=(--herald-overlap 0 --herald-scan-gbs "$rate") ;;
        esac
        "$t" sim "${args[@]}" "${pol[@]}" >"$o/live-$name.json" 2>"$o/live-$name.err" || { tail "$o/live-$name.err"; return 1; }
    done
    { echo "scoring rate: $rate GB/s"; live_summary "$o"/live-block.json "$o"/live-herald-*.json; } | tee "$o/herald.txt"
}

# linear_spec_part OUT: LinearSpec live beside block diffusion, on LLaDA2.0-mini and SDAR-8B, one request
# at a time and static batches of 8, 16 requests of 256 + 256, each priced by the shipped calibration
# (LSPEC_ARGS); block diffusion at LLaDA2.0-mini's published TPF (2.55), LinearSpec at its default
# acceptance (5.46 a round).
linear_spec_part() {
    local o=$1 t=./$b/tessera card=h100 m n pol more
    grep -q H200 "$out/gpu.txt" && card=h200
    read -r -a more <<<"${LSPEC_ARGS:---requests 16 --rps 1000 --lengths fixed:256,256 --gen-len 256 --seed 3}"
    for m in llada2.0-mini sdar-8b; do
        for n in 1 8; do
            for pol in linear-spec block; do
                local args=(--model "$m" --gpu "$card" --cost calibrated --scheduler static --max-batch "$n" "${more[@]}"
                            --policy "$pol" --executor gpu --json --no-progress)
                [ "$pol" = block ] && args+=(--decode threshold:llada2-mini)
                "$t" sim "${args[@]}" >"$o/live-$m-b$n-$pol.json" 2>"$o/live-$m-b$n-$pol.err" ||
                    { tail "$o/live-$m-b$n-$pol.err"; return 1; }
            done
        done
    done
    live_summary "$o"/live-*-b*-*.json | tee "$o/linear-spec.txt"
}

# dgemma_part OUT: DiffusionGemma's serving schedules, SGLang's (separate context passes, prefill first)
# and vLLM's (a commit pass a canvas), run live on LLaDA2.0-mini beside their calibrated price; then
# LLaDA2.0-mini's own SGLang rounds padded to their captured graphs (the padding rows run live too).
dgemma_part() {
    local o=$1 t=./$b/tessera card=h100 run name fdfo mrr load
    grep -q H200 "$out/gpu.txt" && card=h200
    { echo "arrival_ns,prompt_tokens,output_tokens"; yes "0,512,512" | head -16; } >"$o/burst.csv"
    local common=(--model llada2.0-mini --impl tessera --cost calibrated --gpu "$card" --gen-len 0 --seed 3
                  --executor gpu --json --no-progress)
    for run in fdfo-m4:1:4:burst sync-m4:0:4:burst fdfo-m1:1:1:burst fdfo-m4-rps2:1:4:2; do
        IFS=: read -r name fdfo mrr load <<<"$run"
        local arr=(--trace "$o/burst.csv")
        [ "$load" = burst ] || arr=(--requests 16 --rps "$load" --lengths "fixed:512,512")
        "$t" sim --system sglang-dgemma "${common[@]}" --fdfo "$fdfo" --max-running-requests "$mrr" "${arr[@]}" \
            >"$o/live-dgemma-$name.json" 2>"$o/live-dgemma-$name.err" || { tail "$o/live-dgemma-$name.err"; return 1; }
    done
    for mrr in 4 8; do
        "$t" sim --system diffusion-gemma "${common[@]}" --max-batch "$mrr" --trace "$o/burst.csv" \
            >"$o/live-vllm-b$mrr.json" 2>"$o/live-vllm-b$mrr.err" || { tail "$o/live-vllm-b$mrr.err"; return 1; }
    done
    "$t" sim --system sglang --max-running-requests 8 --requests 16 --rps 8 --lengths fixed:300,128 --impl tessera \
        --cost calibrated --gpu "$card" --seed 3 --executor gpu --json --no-progress >"$o/live-sglang-m8.json" \
        2>"$o/live-sglang-m8.err" || { tail "$o/live-sglang-m8.err"; return 1; }
    live_summary "$o"/live-dgemma-*.json "$o"/live-vllm-b*.json "$o/live-sglang-m8.json" | tee "$o/dgemma.txt"
}

# the plan part (see the header)
plan_part() {
    local o=$1 t=./$b/tessera slo=${PLAN_SLO:-p90=3s}
    gcache=(--gemm-cache "$o/gemm-algos.db")
    local args # the workload (PLAN_ARGS, its words split)
    read -r -a args <<<"${PLAN_ARGS:---gpu h200 --cost calibrated --lengths fixed:300,128 --gen-len 128 --requests 200 --seed 3}"
    "$t" plan capacity --slo "$slo" "${args[@]}" --no-progress >"$o/plan-capacity.txt" 2>&1 ||
        { cat "$o/plan-capacity.txt"; return 1; }
    "$t" plan capacity --slo "$slo" "${args[@]}" --no-progress --json >"$o/plan-capacity.json" || return 1
    tail -3 "$o/plan-capacity.txt"
    local point robust bound share
    read -r point robust < <(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["capacity_rps"], d["robust_rps"] or 0)' \
        "$o/plan-capacity.json") || return 1
    bound=${slo#*=} bound=${bound%s} share=${slo%%=*} share=${share#p}
    local runs=(point:"$point" robust:"$robust")
    for f in ${PLAN_FACTORS:-0.95 0.9 0.85 1.25}; do runs+=("x$f:$(python3 -c "print($point * $f)")"); done
    for run in "${runs[@]}"; do
        local name=${run%%:*} rps=${run#*:}
        [ "$rps" != 0 ] || continue
        "$t" sim "${args[@]}" --rps "$rps" --slo "$bound" --executor gpu "${gcache[@]}" --json --no-progress \
            >"$o/live-plan-$name.json" 2>"$o/live-plan-$name.err" || { tail "$o/live-plan-$name.err"; return 1; }
        "$t" sim "${args[@]}" --rps "$rps" --slo "$bound" --json --no-progress --quiet >"$o/sim-plan-$name.json" || return 1
    done
    python3 - "$o" "$share" <<'PY' | tee "$o/plan-live.txt"
import json, os, sys
o, share = sys.argv[1], float(sys.argv[2]) / 100
print("run     rate req/s  live: within  overloaded  held   model: within  overloaded  held")
names = ["point", "robust"] + sorted((f[10:-5] for f in os.listdir(o) if f.startswith("live-plan-x") and f.endswith(".json")),
                                    key=lambda n: float(n[1:]))
for name in names:
    p = os.path.join(o, f"live-plan-{name}.json")
    if not os.path.exists(p):
        continue
    live, model = json.load(open(p)), json.load(open(os.path.join(o, f"sim-plan-{name}.json")))
    row = [name, f"{live['offered_rps']:.3f}"]
    for d in (live, model):
        row += [f"{100 * d['slo_attainment']:.1f}%", str(d["overloaded"]), str(d["slo_attainment"] >= share and not d["overloaded"])]
    row.append(f"{100 * (live['live_measured_s'] / live['live_model_s'] - 1):+.1f}%")
    print("{:7s} {:>10s}  {:>12s}  {:>10s}  {:5s}  {:>13s}  {:>10s}  {:5s}  steps {:>6s} against the model".format(*row))
PY
    (cd "$o" && tar -czf plan-runs.tgz live-plan-* sim-plan-* plan-capacity.json) && rm -f "$o"/live-plan-* "$o"/sim-plan-*
}

rc=0
for p in $parts; do
    case $p in
        check) "${mk[@]}" check-gpu 2>&1 | tee "$out/check-gpu.txt" | grep -vE "  ok$" || rc=1 ;;
        bench) anchor=deps/anchors/torch_llada_step.py compile=deps/anchors/torch_compile_step.py
               [ -f $anchor ] || anchor=
               [ -f $compile ] || compile=
               "${mk[@]}" BENCH_OUT="$out" bench-engine ${anchor:+ANCHOR=$anchor} ${compile:+COMPILE=$compile} \
                   >"$out/bench.txt" 2>&1 || rc=1
               tail -40 "$out/bench.txt" ;;
        sanitize|memcheck) sanitize_tool memcheck "ERROR SUMMARY: 0 errors" || rc=1
               tail -4 "$out/sanitizer-memcheck.txt" ;;&
        sanitize|racecheck)
               # the whole of `check_engine` under racecheck takes about 25 minutes: SANITIZE_S
               # bounds each run, and a run cut short has no summary; SANITIZE_ONLY="steps:1/6 ..."
               # runs parts one after another. Racecheck restricted to some kernels (--kernel-name)
               # is no way out: compute-sanitizer fails on the first cluster launch it leaves
               # uninstrumented (engine/BENCHMARKS.md)
               sanitize_tool racecheck "RACECHECK SUMMARY: 0 hazards displayed (0 errors" || rc=1
               echo "racecheck: $(grep -c '  ok$' "$out/sanitizer-racecheck.txt") checks ok"
               tail -2 "$out/sanitizer-racecheck.txt" ;;
        sparse) sparse_part "$out" || rc=1 ;;
        select) select_part "$out" || rc=1 ;;
        fc) fc_part "$out" || rc=1 ;;
        focus) focus_part "$out" || rc=1 ;;
        elastic) elastic_part "$out" || rc=1 ;;
        moe) moe_part "$out" || rc=1 ;;
        tp) tp_part "$out" || rc=1 ;;
        generate) generate_part "$out" || rc=1 ;;
        disagg) disagg_part "$out" || rc=1 ;;
        herald) herald_part "$out" || rc=1 ;;
        sparsed) sparsed_part "$out" || rc=1 ;;
        linear-spec) linear_spec_part "$out" || rc=1 ;;
        dgemma) dgemma_part "$out" || rc=1 ;;
        plan) plan_part "$out" || rc=1 ;;
        memcheck) ;;
        *) echo "gpu_run.sh: unknown part '$p' (check, bench, memcheck, racecheck, sanitize, sparse, select, fc, focus, elastic, moe, tp, generate, disagg, herald, sparsed, linear-spec, dgemma, plan)" >&2
           exit 2 ;;
    esac
done
exit $rc
