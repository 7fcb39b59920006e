#!/usr/bin/env bash
# analysis/results_page.sh: experiments/RESULTS.md, the one page of tessera's measured figures,
# generated from the records under experiments/records/ (their fidelity.csv, live.csv, eval-*.txt,
# bench and check outputs). Each figure is set beside the command that produced it and a link to
# its record; the page ends with an index of every record and its command. Nothing here runs
# tessera or a GPU: the page is a function of the records alone, so it changes exactly when a
# record does (make check-records regenerates it and compares it with the committed page).
# Usage: results_page.sh [OUT.md]   (default: experiments/RESULTS.md)   Needs python3.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/experiments/RESULTS.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The records' index: record(s), what each holds, the command that made it (GPU machines unless
# said). Records with several names share one line.
cat >"$tmp/catalog.tsv" <<'CATALOG'
fidelity-h200	LLaDA-8B and SDAR-8B, `tessera`, 16 runs in sample; `profiles/` the three merged profiles, `gemm-algos.db` the replays' GEMM algorithms	`PROFILES=profiles MEASURED=all-steps.csv.gz experiments/fidelity.sh OUT`
fidelity-h200-oos	the same 16 runs on a machine none of whose profiles is merged	`CALIB_DIR=DIR experiments/fidelity.sh OUT`
fidelity-h200-sparse fidelity-h200-sparse-oos	LLaDA-8B, `tessera` (sparse selection), the shipped calibration: dual, block and the sparse caches (uniform, per head), 16 runs each; `profiles/` the two merged profiles of the whole grid, select part included	`POLICIES="dual block sparse sparse-head" PROFILES=profiles ... experiments/fidelity.sh OUT llada-8b`
fidelity-h200-dllm-cache fidelity-h200-dllm-cache-oos	LLaDA-8B, `tessera`, dLLM-Cache's runs (4 each), priced by the calibration the shipped one is: the two profiles of `fidelity-h200-sparse`, the fc part (`profiles/llada-8b.3.csv.gz`, `profile-fc.txt`), another machine's fc part with the partial updates' logits over every row (`profiles/llada-8b.fc.csv.gz`, `profile-fc-logits.txt`, `gpu-fc-logits.txt`) and another machine's ladder (`profiles/llada-8b.ladder.csv.gz`, record `ladder`) merged, the runs repriced by it from their recorded measured times (`MEASURED=`); the out-of-sample twin also keeps that machine's `make check-gpu`	`engine profile --grid fc`, `calib merge`, `POLICIES=dllm-cache OPS=1 CALIB_DIR=... experiments/fidelity.sh OUT llada-8b`
dllm-cache-h200	dLLM-Cache on the engine: `engine check --only fc` on both kernel paths, memcheck and racecheck over it (`sanitizer-*.txt`), a live run priced by the shipped calibration (its fc part with the carried-logit steps) and its schedule replayed with per-op times (`fc-fidelity.txt` by kind of step, `eval.txt` by op; `sim-fc.db.gz`)	`DEPS=deps/root SANITIZE_ONLY=fc bash engine/gpu_run.sh OUT fc sanitize`; `tessera calib eval --db sim-fc.db`
dllm-cache-h100	dLLM-Cache on an H100: `engine check --only fc` on both kernel paths (26 passed each), a live run (16 requests of 300 + 256 tokens, 4 req/s) priced by the shipped H100 calibration, whose fc part holds the carried-logit steps, and its schedule replayed with per-op times (`fc-fidelity.txt` by kind of step, `eval.txt` by op; `sim-fc.db.gz`)	`FC_ARGS="--gpu h100 --requests 16 --rps 4 --gen-len 256 --lengths fixed:300,256" DEPS=deps/root bash engine/gpu_run.sh OUT fc`; `tessera calib eval --db sim-fc.db`
focus-h200	FOCUS's eviction on the engine: `engine check --only focus` on both kernel paths (memcheck over it: 0 errors; racecheck: 0 hazards), `engine bench --only focus` on SDAR-8B (`bench-focus.txt`), a live `focus` run priced by the shipped SDAR-8B calibration and its schedule replayed (`focus-fidelity.txt`; `sim-focus.db.gz`)	`DEPS=deps/root bash engine/gpu_run.sh OUT focus`
focus-bound-h200	what bounds FOCUS's K = 8 on SDAR-8B: `engine bench --only focus` again (`bench-focus.txt`) beside plain steps of 16 × K rows over the cache (`bench-steps.txt`: each step's linear layers and LM head alone against their floor)	`./build/engine_bench --model sdar-8b --only focus`; `./build/engine_bench --model sdar-8b --only steps --step 16,2,482,2 --step 16,4,484,4 --step 16,8,488,8 --step 16,16,496,16 --step 16,32,480,32`
focus-h100	FOCUS's evicting steps on an H100, the split and the fused FFN side by side (`bench-focus-split-N.txt`, `bench-focus-auto-N.txt`): the floor beyond layer 1 is 0.42 there, above the goals of K <= 8	`./build/engine_bench --only focus --model sdar-8b --ffn split\|auto`, alternating, twice
focus-batch-h100	FOCUS's evicting steps at 16, 32 and 64 sequences (`bench-focus-N.txt`): from 32 sequences, FOCUS's smallest batch, K = 8 and 16 meet their goals (0.34, 0.53), and at 64 every K does; `check-gpu.txt`: `make check-gpu`'s parts at that engine	`./build/engine_bench --only focus --model sdar-8b`, twice
batch-h100	the calibrated model past the 16 sequences a step its profiles hold: FOCUS at a batch of 32 on SDAR-8B live and replayed with `--ops` (replayed 4.4% per step, the attention op 12.5% short), the profile grid's batch part and what merging it changes (4.5%, the attention 5.9% short; plain 24- and 32-sequence steps' attention −7 … −17% → 0 … −12%)	`tessera sim --system focus ... --max-batch 32 --executor gpu`, `engine replay --ops`, `engine profile --grid batch`, `calib merge`, `calib eval` (its README)
batch-mixed-h100	serving batches of 64, 128 and 256 ShareGPT sequences of mixed lengths (LMDeploy's and FOCUS's schedules on SDAR-8B, LMDeploy's on LLaDA-8B and Dream-7B at 128) replayed with `--ops` and priced by the shipped calibrations: LMDeploy 1.8–3.2% per step (total within 1.8%), FOCUS 2.5–7.0% (total within 3.8%, its attention 3–12% short); `small-q.txt`: the attention model prices plain steps of 64 to 256 sequences of 2 to 8 rows at 0.67–0.82; `evict-share.txt`: the eviction's kernels 2.8–3.0% of FOCUS's attention op	`tessera sim --system lmdeploy\|focus ... --max-batch B --db`, `engine replay --ops --steps N`, `calib eval --extrapolate` (its README)
batch-mixed-h200	the same SDAR-8B schedules simulated for and replayed on an H200: LMDeploy 1.0–3.1% per step, FOCUS 3.2–7.4% (total within 2.9%, its attention −5 … +1%); Nsight Compute's kernel times of FOCUS's replays (`evict-share.txt`: the eviction's kernels 2.8–3.4% of the attention op); 18 plain steps of 64 to 256 sequences of 2 to 32 rows (`small-q.txt`: the attention model prices 2 to 8 rows at 0.63–0.92, 0.78–1.14 with them in its fit); the profile grid's batch part for SDAR-8B, LLaDA-8B and Dream-7B	`tessera sim ... --gpu h200 --db`, `engine replay --ops`, `ncu ... engine replay`, `analysis/evict_share.sh`, `engine profile --step`, `engine profile --grid batch`, `OP=attention analysis/price_profile.sh` (its README)
batch-oos-h200	serving batches no other record holds, replayed on an H200 and priced by the shipped calibrations: FOCUS on SDAR-8B at 96 and 192 sequences 5.9% and 4.3% per step (totals +1.3%, +1.8%; its attention −0.7%, +0.6% in sum, 12–19% short over the prefill steps and 1–2% long over the decoding ones), LMDeploy at 192 1.8% (+1.2%), FOCUS on LLaDA2.0-mini at 128 9.1% (−9.0%, its attention 22% short)	`tessera sim ... --gpu h200 --db`, `engine replay --ops`, `calib eval --extrapolate` (its README)
batch-oos-h100	the same on an H100: FOCUS on SDAR-8B at 96 sequences 5.2% per step (total +0.3%, its attention −4.6%), LMDeploy at 192 1.4% (−0.1%, its attention −6.6%)	as `batch-oos-h200` (its README)
focus-ffn-h200	the same steps with the split, fused and auto FFN: K = 8 at 0.430-0.434 with each; the fused gate/up slower at K = 16	`./build/engine_bench --only focus --model sdar-8b --ffn split\|fused\|auto`, alternating, twice
focus-algos-h200	the same steps with 16 and with 64 of cuBLASLt's candidates timed a GEMM shape, each its own algorithm cache: K = 8 at 0.432-0.436 either way	`./build/engine_bench --only focus --model sdar-8b --gemm-algos N --gemm-cache F`, alternating, twice
moe-h200	mixtures of experts on the engine: `engine check --only moe` on both kernel paths, memcheck over it (0 errors) and racecheck (cut off after 34 of 58 checks, no hazard), Reuse and Refresh steps of LLaDA2.0-mini and LLaDA-MoE-7B against their floors (`bench-moe.txt`), live runs of both and a replay (the engine before balanced routing and the step-sized grouped-GEMM grid)	`DEPS=deps/root bash engine/gpu_run.sh OUT moe`
moe-wgmma-h100	the experts' grouped GEMMs on wgmma against the bf16 fragment kernels, built side by side in one call: `engine check --only moe` (both kernel paths), memcheck over it (0 errors), its racecheck (another machine, all 155 checks, 0 hazards), `make check-gpu` (a third machine: `engine check` 658 and 602 portable passed, every live test; `check-gpu.txt`), Reuse and Refresh steps of LLaDA2.0-mini and LLaDA-MoE-7B benched by each build (`bench-M-old.txt`: fragments, `bench-M-new.txt`: wgmma)	`./build/tests/gpu/check_engine --only moe`; `compute-sanitizer --tool memcheck` and `--tool racecheck` over it (its `--gemm-cache` file filled by a plain run first); `./build/engine_bench --model M --only steps --step 16,32,480,32 --step 1,32,544,32 --step 16,512,0,512`
fidelity-h200-moe	the mixtures' calibrations with the experts on bf16 fragments (LLaDA2.0-mini, LLaDA-MoE-7B: one profile each and another machine's ladder; shipped before the wgmma grouped GEMM) and their fidelity matrix in sample (`fidelity.csv`, `all-steps.csv.gz`); `engine check --only moe` on both kernel paths; Reuse and Refresh steps of both against their floors (`bench-*.txt`)	`./build/tests/gpu/check_engine --only moe`; `./build/engine_bench --model M --only steps --step 16,32,480,32 --step 1,32,544,32 --step 16,512,0,512`; `engine profile --model M --reps 2`, `calib import`; `experiments/fidelity.sh OUT M`
fidelity-h100	LLaDA-8B, SDAR-8B and Dream-7B on the H100, `tessera`: each model profiled on one machine and merged with another's ladder and a third's select and fc parts (`part-*.csv.gz`, `profile-*.txt`, `gpu-parts.txt`) (shipped as `sim/data/calib/h100-MODEL-tessera.csv`) and its fidelity matrix replayed there (8 runs a model); `memcheck-moe.txt`: memcheck over `engine check --only moe` (0 errors); `racecheck-moe.txt`: racecheck over it (no hazard in the 67 of 87 checks its 480 s allowed)	`engine profile --model M --reps 2`, `calib import --gpu h100`; `GPU=h100 CALIB_DIR=DIR experiments/fidelity.sh OUT M`
fidelity-h100-oos	the same calibrations' matrices on other machines (LLaDA-8B's on SDAR-8B's profiling machine, SDAR-8B's on Dream-7B's, Dream-7B's on a fourth)	`GPU=h100 CALIB_DIR=DIR experiments/fidelity.sh OUT M`
fidelity-h100-merged	SDAR-8B's and Dream-7B's shipped H100 `tessera` calibrations merged from two machines (`fidelity-h100`'s and this machine's whole grid, `profiles/`), and this machine's fidelity matrix priced by the merge (1.5–2.8% and 1.2–2.1%; `fidelity-h100-oos`'s runs, out of sample for both machines: 1.0–2.0% and 0.5–1.3%)	`GPU=h100 experiments/fidelity.sh OUT M`; `GPU=h100 CLOCK=off MEASURED=... PROFILES=profiles experiments/fidelity.sh OUT M`
fidelity-h100-fused-merged	the `tessera-fused` engine on the same machine: SDAR-8B's and Dream-7B's whole grid (`profile-M.csv.gz`, merged into the shipped H100 `tessera-fused` calibrations, `calib-M.csv.gz`) and their fidelity matrix (1.4–2.7% and 1.5–1.7%)	`GPU=h100 IMPL=tessera-fused experiments/fidelity.sh OUT M`
fidelity-h100-fused-oos	the `tessera-fused` fidelity matrices of LLaDA-8B, SDAR-8B and Dream-7B on an H100 machine none of the shipped calibrations' profiles ran on, priced by them (`calib-M.csv.gz`): 0.7–1.5%, 1.8–2.3%, 0.5–1.3% per step	`GPU=h100 IMPL=tessera-fused CALIB_DIR=DIR experiments/fidelity.sh OUT "M ..."`
fidelity-h100-policies-oos	LLaDA-8B's `dllm-cache`, `sparse` and per-head `sparse` runs on an H100 (4 each, `OPS=1`: `fidelity.log` holds each op's error as replayed, under `fidelity-h100`'s calibration before the merge), repriced (`MEASURED=`) by the H100 `tessera` calibration of `fidelity-h100` merged with another machine's fc part, whose partial updates also take logits over every row (`profiles/llada-8b.fc.csv.gz`, `profile-fc-logits.txt`) (shipped as `sim/data/calib/h100-llada-8b-tessera.csv`)	`GPU=h100 OPS=1 CALIB_DIR=DIR POLICIES="dllm-cache sparse sparse-head" experiments/fidelity.sh OUT llada-8b`; `engine profile --grid fc`, `calib merge`
fidelity-h200-moe-oos	the same calibrations on another machine (out of sample), and its `make check-gpu` (all passed)	`CALIB_DIR=DIR experiments/fidelity.sh OUT M`; `make check-gpu`
fidelity-h200-moe-wgmma	the mixtures' shipped calibrations, the experts on the wgmma grouped GEMM (one whole profile each, `calib-*.csv.gz`, the profiles' logs), their fidelity matrix on the profiles' machine (`fidelity.csv`, `all-steps.csv.gz`), `engine check --only moe`, Reuse and Refresh steps of both against their floors (`bench-*.txt`)	`./build/tests/gpu/check_engine --only moe`; `./build/engine_bench --model M --only steps --step 16,32,480,32 --step 1,32,544,32 --step 16,512,0,512`; `engine profile --model M --reps 2`, `calib import`; `CALIB_DIR=DIR experiments/fidelity.sh OUT M`
fidelity-h200-moe-wgmma-oos	the same calibrations' fidelity matrix on another machine (out of sample)	`CALIB_DIR=DIR experiments/fidelity.sh OUT M`
check-gpu-h200	`make check-gpu` on an H200: `engine check` with the device's kernels (677 checks) and portable (617), the selection's after each layer (74), every live test (FOCUS's, a mixture of experts', both sparse selections and dLLM-Cache among them), L_max, profile and anchor tests	`make check-gpu`
check-gpu-h100	`make check-gpu` on an H100: `engine check` with the device's kernels (677 checks) and portable (617), the selection's after each layer (74), every live test (the presets, the sparse caches, dLLM-Cache, FOCUS, a mixture of experts), L_max, profile and anchor tests	`make check-gpu`
select-beside-h200	the selection on a stream of its own beside the layer's O-projection and FFN (commit 5e0beb0's `TESSERA_SELECT=beside`) against the shipped inline selection: each selecting step of the select grid, its ops and its whole time (`share.txt`, `ops.txt`): no shorter (1 × 256: 7.005 ms against 6.989)	at commit 5e0beb0 (the engine has no such switch): `TESSERA_SELECT=inline\|beside tessera engine profile --model llada-8b --grid select --reps 2`, alternating, five runs
sparse-h200	the sparse caches on the engine: the selection's share of each selecting profile step (`select-share.txt`), live runs of both selections, sparse Reuse steps benched beside the dense one (`bench-sparse.txt`), the profile (`profile.db.gz`)	`DEPS=deps/root bash engine/gpu_run.sh OUT sparse`
fidelity-h200-fused fidelity-h200-fused-oos	LLaDA-8B, `tessera-fused`, 8 runs each	`IMPL=tessera-fused ... experiments/fidelity.sh OUT llada-8b`
fidelity-h200-sdar fidelity-h200-sdar-oos	SDAR-8B, `tessera`, GQA head packing (); profiles of the base grid and the long-cache part (`--grid long --warm-ms 150`), and another machine's ladder (`profiles/sdar-8b.ladder.csv.gz`)	`PROFILES=profiles ... experiments/fidelity.sh OUT sdar-8b`
fidelity-h200-fused-sdar fidelity-h200-fused-sdar-oos	the same with `IMPL=tessera-fused` (its ladder too)	as above
fidelity-h200-dream fidelity-h200-dream-oos	Dream-7B, `tessera`, an engine of 	`PROFILES=profiles ... experiments/fidelity.sh OUT dream-7b`
fidelity-h200-dream-rules4 fidelity-h200-dream-rules4-oos	Dream-7B, `tessera`, the engine of : its whole grid profiled on one machine and its long-cache part after 150 ms of each step's own repetition merged over it (`profiles/`; shipped as `sim/data/calib/h200-dream-7b-tessera.csv`), and its fidelity matrix on that machine (in sample) and on another (out of sample)	`engine profile --model dream-7b --reps 2`, `--grid long --warm-ms 150`, `calib merge A --over B`; `CALIB_DIR=DIR experiments/fidelity.sh OUT dream-7b`
fidelity-h200-fused-dream fidelity-h200-fused-dream-oos	Dream-7B, `tessera-fused`; the calibration merges the fc part too (`profiles/dream-7b.fc.csv.gz`, `profile-fc.txt`: `engine profile --grid fc --ffn fused`) and another machine's ladder (`profiles/dream-7b.ladder.csv.gz`)	as above with `IMPL=tessera-fused`
live-h200	24 schedules of LLaDA-8B, SDAR-8B and Dream-7B run live and predicted	`experiments/live.sh OUT "llada-8b sdar-8b dream-7b"`, its live runs sharing one GEMM algorithm cache (at commit 8e11014: `TESSERA_GEMM_CACHE=...`; live.sh passes no `--gemm-cache`)
live-mechanisms-h100	DPad (`dpad` over no cache, the prefix and the dual cache), Fast-dLLM v2 (`fdllm-v2`, with and without its DualCache), d2Cache (`d2cache`), Prophet's early commit, LLaDA2.1's S-mode profile, D2F's pipelined blocks (`d2f`, LLaDA-8B and Dream-7B) and dKV-Cache (`dkv-cache`) live on an H100 and priced beside it: 0.3–5.0% total, per-step MAPE 1.7–5.1% calibrated (Fast-dLLM v2 7B roofline −19.7%); `engine check --only generate` with DPad over each cache against the CPU reference (73 passed); `make calibrate` of `fast-dllm-v2-7b` (held out 2.4% a step; shipped as `sim/data/calib/h100-fast-dllm-v2-7b-tessera.csv`)	`check_engine --only generate`; `make calibrate MODEL=fast-dllm-v2-7b`; `tessera sim --policy dpad\|fdllm-v2\|d2f ... --executor gpu` (its README)
sglang-live-h200	SGLang's dLLM schedule (`--system sglang`, `sglang-sync`: first done first out and sync over LLaDA2.0-mini, sync over SDAR-8B in blocks of 4) and vLLM's dllm-plugin's (`--system vllm-dllm-plugin`) run on the engine on an H200 and priced beside it: −0.6%, +0.3%, +3.6% and −0.3% total, per-step MAPE 0.5–3.6%; neither system itself run	`tessera sim --system sglang\|sglang-sync\|vllm-dllm-plugin ... --impl tessera --executor gpu` (its README)
sglang-h200	SGLang 0.5.17 itself serving LLaDA2.0-mini on an H200 (`--max-running-requests 8`), first done first out and sync over five traces each, run for run beside `tessera sim --system sglang` priced by SGLang's own rounds (`--impl sglang`, fitted on the record's bursts of 1–32 requests): throughput within 1%, mean latency +1.9% to +14.5% first done first out and −1.4% to +14.5% sync (the engine's forwards alone: −16.2% to +17.3% and +35.9% to +54.6%); 90% intervals hold 10 of 10 (±14.6% in the median below saturation); three runs on two H200 hosts spread one trace's mean latency from 1.032 to 1.293 s	`tessera exp run validate-sglang OUT` (its README)
live-policies-h200	the new policies run live and predicted by the calibrated model: the `dinfer` preset (vicinity refresh, threshold decoding; 8 requests, 175 steps, 0.988 s measured vs 1.022 s, +3.4%, per-step MAPE 2.9%) and `block+delayed` on SDAR-8B (8 requests, 228 steps, 1.231 s vs 1.273 s, +3.4%, MAPE 3.4%); `live.txt` the live tests of `make check-gpu`	`tessera sim --system dinfer --requests 8 --rps 8 --gen-len 64 --lengths fixed:300,64 --executor gpu --cost calibrated --db dinfer.db`; `tessera sim --model sdar-8b --policy block+delayed --scheduler request` with the same options `--db delayed.db`; `bash tests/live_gpu_test.sh build/gpu/tessera`
long-sdar-h200 long-dream-h200	long-context workloads (prompts of 5–10K tokens), dual and block policies, replayed with `--ops` and priced (`eval-*.txt`)	`tessera sim --model M --policy dual\|block --scheduler phase --rps 1 --requests 16 --lengths lognormal:9.0,0.35,5.0,0.6 --gen-len 128 --seed 7 --db D.db`, `tessera engine replay --db D.db --ops`, `tessera calib eval --db D.db`
ops-h200	the default and a long-prompt workload replayed with per-op times, priced per op	`tessera sim --requests 16 --rps 4 --gen-len 128 [--lengths lognormal:7.5,0.5,5.0,0.6] --db D.db`, then `engine replay --ops`, `calib eval`
lmax-h200	L_max by planner under 24 and 40 GB, simulated and live	`LIVE=1 experiments/lmax.sh OUT`
engine-h200	`make check-gpu`; `make bench-engine` with the PyTorch anchor (eager) and torch.compile side by side, warm-up trace; compute-sanitizer's racecheck over `engine check` (cut by its time limit)	`DEPS=deps/root bash engine/gpu_run.sh OUT check bench`
host-h100	the host apart from the GPU: the PyTorch anchor and the PyTorch harness on one H100 machine; the H100 torch-eager calibration (two machines merged) and the host profiles `h100-xeon`, `h200-xeon` it and the H200 calibration gave; the anchor priced with each host (`anchor-compare.txt`: 7.7% with the H100's own calibration, 10.2% carried over from the H200 with the H200 machine's host, 7.8% with `--host h100-xeon`)	`torch_llada_step.py`, `engine/bench/torch_profile.py`, `tessera calib merge`, `calib host`, `analysis/anchor_compare.sh ANCHOR --host NAME` (`README.md` there)
host-h100-spread	how far the PyTorch anchor reproduces itself: seven runs on one H100 machine and the harness's profile between them; the host-bound steps take 26–59 ms for the same work (a fast and a slow host state, minutes each), one run prices another at 3.7–29.7% per step; the H200's calibration carried over prices each run under `h100-xeon` and under that machine's own host line (`spread.txt`)	`torch_llada_step.py`, `engine/bench/torch_profile.py`, `tessera calib host`, `analysis/anchor_spread.sh` (`README.md` there)
host-h200-spread	the same question on an H200 machine: six anchor runs in a row; the host kept one state (Reuse medians 26–31 ms) and the runs price each other at 2.2–11.5% per step; the shipped H200 calibration prices each under its own host and `h100-xeon` (`spread.txt`)	`torch_llada_step.py`, `analysis/anchor_spread.sh` (`README.md` there)
host-probe-h200	the host probe (`tessera calib host --probe`) three times on one H200 machine, a minute each: 19.8–24.7 ms a step, the host's own run-to-run spread, beside the shipped `h200-xeon` (24.0 ms); a quicker grid's two probes (20.4, 28.2 ms) too few host-bound steps for a line	`tessera calib host --probe --out host-N.csv` (its README)
host-machines-h200	the host from machine to machine: the harness probe and the four batch-1 loops' own host lines on three more H200 machines, beside loops-h200's two: the loops' lines pooled over the five spread 0.238 in the log (native 0.115 to Sparse-dLLM 0.360), the interval's `host-machine` source on the H200; the three new machines within 9.5% of each other	`python3 engine/bench/torch_profile.py --host-probe`, `tessera calib host`, `tessera calib host --probe --loop SYSTEM --code baselines` (its README)
loops-h200	the four batch-1 loops (LLaDA, Fast-dLLM's dual cache, dLLM-Cache, Sparse-dLLM) on two unseen H200 machines at prompts up to 2,048 and generations up to 512: after the harness probe 20.4% median error (4 of 28 within 10%), after the loop probe (`calib host --probe --loop`) 8.2% (17 of 28); the loops' time a forward grows 5-9% from 192 to 2,560 cached tokens; 22 of 28 inside their 90% intervals (11 of 12 on the machine that did not set the host's spread)	`tessera exp run validate-lengths OUT` (its README)
calibrate-h100-fused	the H100's `tessera-fused` calibrations: `make calibrate` on three machines (LLaDA-8B on two, SDAR-8B and Dream-7B on a third; reports, profiles as `calib-M-N.csv.gz`, held-out replays and their pricing `eval-M.txt`), each shipped as `calib merge` of its machines' profiles (SDAR-8B's and Dream-7B's with `fidelity-h100-fused-merged`'s) and another machine's ladder (`calib-M-ladder.csv.gz`)	`IMPL=tessera-fused TORCH=0 make calibrate CALIB_OUT=OUT MODEL=M`; `calib merge`
clock-refresh-h200	one-sequence Refresh steps from a cool card: every replay's time (warm trace) beside the SM clock and power, and the same steps as the profile times them; the fidelity matrices' one-sequence Refresh steps priced 10–14% long by every shipped calibration at each step's own steady state (`refresh-error.txt`, `CLOCK=off`)	`./build/engine_bench --only steps --step 1,311,0,311 --step 1,384,0,384 --step 1,32,480,32 --warm-trace F`; `nvidia-smi -lms 50`; `engine profile --step`; `CLOCK=off analysis/refresh_error.sh`
clock-ladder	eight Refresh and Reuse steps of LLaDA-8B on each card, each from a card idle for 3 s, every replay's time (warm traces) beside the SM clock and power; the clock model fitted to them (`GPU-fit.txt`, the lines of `sim/data/clock.csv`); the recorded fidelity matrices' one-sequence Refresh steps (`refresh-error.txt`) and `live-h200`'s runs (`live-h200.csv`) priced at the card's clock state	`./build/engine_bench --only steps --warm-s 1.5 --idle-s 3 --warm-trace F --step ...` (×8); `tessera calib clock F --gpu G`; `analysis/refresh_error.sh`; `CLOCK=auto REUSE_LIVE=1 experiments/live.sh`
clock-live-h100	24 live runs on an H100 (three models × 8 schedules), predicted by the shipped H100 calibrations at the card's clock state (`live.csv`: 1.31% mean latency error) and at each step's own (`live-clock-off.csv`: 1.78%)	`GPU=h100 experiments/live.sh OUT MODEL`; `CLOCK=off REUSE_LIVE=1 ...`
clock-calibrate-h100 clock-calibrate-h200	`make calibrate` with its clock stage (231 s and 228 s, PyTorch skipped; held-out replays at 2.3% and 2.9% per step) and `make check-gpu` on each card; each machine's clock fit beside the shipped one, and what it gives the live runs	`TORCH=0 make calibrate CALIB_OUT=...`; `make check-gpu`
fused-small-h200	the fused FFN's small-row forms (its input's box fitted to a single row tile's rows, idle warpgroups' MMAs skipped): the kernel beside cuBLAS and each form alone (`gemm-bench.txt`), `engine check --only kernels`, small Reuse steps split/fused/auto; the shipped H200 `tessera-fused` calibrations profiled with them (LLaDA-8B's whole grid on two machines; SDAR-8B's and Dream-7B's steps of up to 64 rows over their earlier calibrations) and each model's fidelity matrix (8 runs) replayed; `make check-gpu` and memcheck over the kernels' checks on another machine	`gemm_bench K F ROWS...`; `tessera engine profile --model M --reps 2 --ffn fused [--max-rows 64]`, `calib merge [--over]`; `GPU=h200 IMPL=tessera-fused CALIB_DIR=DIR experiments/fidelity.sh OUT M`; `./build/engine_bench --only steps --step ...`
fused-small-h200-oos	LLaDA-8B's `tessera-fused` fidelity matrix on a machine none of the shipped calibration's profiles ran on: 1.4–2.2% per step	`GPU=h200 IMPL=tessera-fused CALIB_DIR=DIR experiments/fidelity.sh OUT llada-8b`
fused-small-h100	the same forms on an H100 (`gemm-bench.txt`, `engine check --only kernels`), each model's steps of up to 64 rows profiled with them and merged over the H100's `tessera-fused` calibrations (shipped), `calibrate-h100-fused`'s held-out schedules replayed again and priced by them (2.2%, 3.0%, 2.2%) and by the H200's carried (2.8%, 3.0%, 2.9%); `make check-gpu` and memcheck over the kernels' checks on another machine	`tessera engine profile --model M --reps 2 --max-rows 64 --ffn fused`, `calib merge --over`; `engine replay --db heldout-M-N.db`, `calib eval --extrapolate`
gemm-choice-h100	LLaDA-8B's Reuse steps of 1-8 sequences of 32 rows under three machines' GEMM algorithm caches and a fresh tuning: at most 1.4% apart	`./build/engine_bench --model llada-8b --only steps --gemm-cache CACHE --step ...` (`run.sh`)
ladder	the profile grid's ladder part (`engine profile --grid ladder`: every block count to 16, single sequences of every multiple of 64 rows to 2,048, Refresh steps beside blocks) on an H100 and an H200, each model and implementation whose calibration is shipped (`GPU-M-IMPL.ladder.csv.gz`, merged into them); held-out `make calibrate` schedules replayed with `--ops` on each (`heldout-GPU-M.db.gz`); README: their pricing before and after	`engine profile --grid ladder`; `engine replay --ops`; `calib merge`; `calib eval --csv`
torch-eager-h100	the `torch-eager` calibrations of SDAR-8B and Dream-7B on the H100: the PyTorch harness with each model's shape on two machines (`torch-M-N.csv.gz`), merged and shipped; `price.txt`: each machine's calibration against the other's steps (`analysis/price_profile.sh`)	`engine/bench/torch_profile.py --model M ...` (README there); `calib import`, `calib merge`
torch-eager-moe-h100	the `torch-eager` calibration of LLaDA-MoE-7B on the H100, its experts a grouped MoE (`torch_model.py`): the PyTorch harness on two machines, merged and shipped (1,569 CUDA kernels a forward, 31.4 ms a step of host issue); `price.txt`: each machine's calibration against the other's steps, 6.5% and 13.1% per step; Fast-dLLM's cost in `dinfer-table1`, LLaDA-MoE's step in `mosaic-fig10`	`engine/bench/torch_profile.py --model llada-moe-7b ... --experts 64 --top-k 8 --expert-ffn 1024` (README there); `calib import`, `calib merge`
torch-eager-ops	the shipped `torch-eager` calibrations and host profiles, each op timed from a CUDA graph of its own (events around an eager op also hold the host's gaps between its kernels; their fit priced LLaDA-8B's gate/up GEMM above the cards' GEMM rate): LLaDA-8B, SDAR-8B, Dream-7B and LLaDA-MoE-7B on two H100 machines, LLaDA-8B on three H200 machines and the select grid on one; `price.txt` out of sample; the transfer between the cards with the GEMM rates they reach and with those they hold (LLaDA-8B's GPU time 1.7%/1.8% per step against 3.4%/3.7%)	`engine/bench/torch_profile.py --model M ...`, `--grid select`; `calib import`, `calib merge`, `calib host`; `analysis/price_profile.sh`, `analysis/transfer_check.sh` (README there)
torch-lmax-h100	PyTorch's own peak allocated and reserved memory, L_max under an RTX 3090's and an A100 40 GB's memory, and step times of a whole-sequence step, eager and under torch.compile, LLaDA-8B and Dream-7B (Mosaic-Compile in `mosaic-fig10`, measured inflation in `mosaic-fig13`)	`python3 engine/bench/torch_lmax.py --out torch_lmax.jsonl`
torch-lmax-h200	`torch_lmax.py`'s eager and compiled whole-sequence steps again on an H200 (LLaDA-8B, Dream-7B, 2k-32k tokens): the compile saving 0.86–0.95× against the H100's 0.79–0.94×, and again on another H100 machine (0.80–0.93×); `mosaic-fig10`'s way of carrying it checked across the two kinds	`engine/bench/torch_lmax.py --modes eager,compile --limits-mib ""` (`README.md` there)
torch-lmax-moe-h100	the same for LLaDA-MoE-7B, its experts a grouped MoE (`torch._grouped_mm`): eager, the layers compiled, all compiled; compiling the layers leaves L_max (6144 / 16976 → 6144 / 17072) and the step (1.00-1.04x) where eager has them	`python3 engine/bench/torch_lmax.py --models llada-moe-7b --out torch_lmax.jsonl`
torch-moe-h100	Hugging Face's LLaDA-MoE block as PyTorch eager runs it (a Python loop over the 64 experts): 11.5-28.3 ms a layer at 32-1,536 tokens, 953-1,035 CUDA kernels a call, 43-103× its floor	`python3 engine/bench/torch_moe.py --tokens 32,64,256,544,1536 --out moe.jsonl`
transfer-fidelity	the two Hopper cards' shipped calibrations carried to each other (`calib transfer`) and pricing the other card's recorded out-of-sample fidelity runs, beside its own	`analysis/transfer_fidelity.sh OUT` (no GPU)
calibrate-time-h100	how long `make calibrate` takes on an H100, with and without PyTorch eager's profile, and the held-out schedules' pricing	`make calibrate`; `TORCH=1 make calibrate`
calibrate-h100	`make calibrate` on an H100: its report, the held-out schedule's pricing (`eval.txt`), the LLaDA-8B calibrations it installed (`tessera`, `torch-eager`; the first merged with `fidelity-h100-policies-oos`'s into the shipped H100 `tessera` calibration); `transfer-check.txt`, the shipped H200 calibration carried to the H100 against this one	`TESSERA_CALIB_DIR=DIR make calibrate CALIB_OUT=OUT`; `analysis/transfer_check.sh`
engine-h100-portable	the fat binary's images; `engine check` with the device's kernels and with `--kernels portable`; the live tests and three steps benched on the portable path beside the Hopper kernels; memcheck and racecheck over `engine check --only select`	`make check-gpu`; the live tests on the portable kernels (at commit 6e6e278: `TESSERA_KERNELS=portable bash tests/live_gpu_test.sh`; live_gpu_test.sh takes no `--kernels`); `./build/engine_bench --only steps --step ...` with and without `--kernels portable`
allreduce-h200x2	NCCL all-reduce times of 4 KiB to 512 MiB bf16 buffers on two H200s, through torch.distributed (what a PyTorch tensor-parallel step pays; the simulator carries the engine's, `tp-h200x2`)	`NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 2 engine/bench/allreduce_bench.py allreduce-tp2.csv`
papers-figures	FOCUS Fig. 7 and dLLM-Serve Fig. 3 as tessera reproduces them (the figures README.md shows), with their reports	`tessera exp run focus-fig7 OUT`, `tessera exp run dllm-serve-fig3 OUT`
tp-h200x2	tensor parallelism over two H200s: `engine check --tp 2` (30 of 30 steps of three models against one GPU, a per-head sparse cache among them), the scaling of Refresh 16 × 512 (0.581 of one GPU's time) and Reuse 16 × 32 (0.656); `make check-gpu-tp` (`gpu-run-tp.txt`), the all-reduce alone 4 KiB–256 MiB (`sim/data/allreduce.csv` carries it), and three schedules simulated with `--tp 2` and replayed on the two GPUs: calibrated per-step MAPE 2.3%, 2.4%, 4.9% (roofline 25.8–28.6%); the share's calibration `calib-llada-8b-tp2.csv.gz` (shipped)	`./build/tests/gpu/check_engine --tp 2`; `./build/engine_bench --tp 2 --json bench-tp.jsonl`; `tessera engine profile --model llada-8b-tp2 --grid base --reps 3`, `calib import`; `tessera sim --tp 2 --cost calibrated ...`, `tessera engine replay --tp 2 --db ...` (`README.md` there)
tp-h200x4	tensor parallelism over four H200s: `engine check --tp 4` (30 of 30), Refresh 16 × 512 at 0.350 of one GPU's time and Reuse 16 × 32 at 0.466, the all-reduce over four from 4 KiB to 256 MiB (`sim/data/allreduce.csv` carries it); three schedules simulated with `--tp 4` and replayed: calibrated from the split engine's profile 1.6–4.1% per step (shipped, `calib-llada-8b-tp4.csv.gz`), from the share profiled on one GPU plus the all-reduces 5.6–6.5% (roofline 29–37%)	`./build/tests/gpu/check_engine --tp 4`; `./build/engine_bench --tp 4 --reps 10 --json bench-tp4.jsonl`; `tessera engine profile --tp 4 --model llada-8b --grid base --reps 3` (and `--model llada-8b-tp4` on one GPU), `calib import`; `tessera sim --tp 4 ...`, `tessera engine replay --tp 4 --db ...`
sanitizers-h100	compute-sanitizer over the whole of `engine check` (643 checks): memcheck (0 errors); racecheck over the kernel half (227 checks, 0 hazards) and over the steps half in six parts (416 checks, 0 hazards; `steps/coverage.py` counts them), each run's GEMM algorithms from a cache a plain run filled	`compute-sanitizer --tool memcheck\|racecheck ./build/tests/gpu/check_engine --gemm-cache C [--only kernels\|steps:K/6]` (`README.md` there)
select-h100	the sparse selection's share of each selecting Refresh step, the earlier four kernels profiled beside the two that replace them (`select-share.txt`), each kernel's time by ncu (`kernels.txt`), `engine check` (643 passed; `--only select` on both kernel paths), memcheck over `--only select` (0 errors), racecheck over `--only select` and over `--only kernels` (0 hazards); `profiles/`: the select grid profiled three times (two machines) per dense model and engine (`tessera`, `tessera-fused`) with the shipped kernels, merged over the shipped H100 calibrations (`calib merge CALIB --over PROFILE ...`)	`tessera engine profile --model llada-8b --grid select --reps 2`; `ncu ... engine profile` (`README.md` there); `tessera engine profile --model M --grid select --reps 2 [--ffn fused]`
fidelity-h200-sparse-end	LLaDA-8B's `sparse` runs (both selections, 4 each) replayed by the engine that selects after the last layer, priced out of sample by the shipped H200 calibration: 2.1–2.8% per step at each step's own steady state, 1.9–3.3% at the card's clock state	`GPU=h200 CALIB_DIR=DIR POLICIES="sparse sparse-head" experiments/fidelity.sh OUT llada-8b`
select-end-h100	the selection after the step's last layer: the select grid of every H100 calibration profiled again (`profiles/select-*`), merged over the shipped calibrations, and once with `--select-at layer` (`profiles/layer-*`); `check-select*.txt` 74 passed on three paths (1 x 256: 3.9% of the step for LLaDA-8B, 6.7% after each layer)	`tessera engine profile --model M [--impl tessera-fused] --grid select`, with and without `--select-at layer`; `tessera calib merge CALIB --over P ... --gpu h100`
select-end-h200	the same on the H200 for all five models (`profiles/`), merged over the shipped calibrations; and side by side on another machine (`pair/`: LLaDA-8B 1 x 256 4.4% against 7.8%, the step 0.952 of its time; memcheck 0 errors, racecheck 0 hazards)	as `select-end-h100`; `pair/`: `DEPS=deps/root SELECT_RUNS=2 bash engine/gpu_run.sh OUT select`
select-fused-h100	one kernel a K/V head for a short sequence's selection profiled beside the two kernels: slower (7.8% of a 1 x 256 step against 7.2%); `check-select*.txt` 65 passed on three paths, memcheck 0 errors	at commit d2b51e9 (the engine has neither the kernel nor the switch): `tessera engine profile --model llada-8b --grid select --reps 2`, with and without `TESSERA_SELECT=split`, alternating, twice
select-h200	the select grid profiled three times (one machine) for LLaDA-8B, LLaDA-MoE-7B and LLaDA2.0-mini (`tessera`) with the shipped selection kernels (`profiles/`), merged over the shipped H200 calibrations	`tessera engine profile --model M --grid select --reps 2`; `tessera calib merge CALIB --over P1 --over P2 --over P3 --gpu h200`
fidelity-h100-sparse-oos	LLaDA-8B's `sparse` and per-head `sparse` runs (4 each) on an H100 machine none of the select profiles ran on, the shipped selection kernels, priced by the shipped H100 `tessera` calibration (`calib-llada-8b.csv.gz`, re-evaluated from the measured steps with `MEASURED=`): 1.6–2.4% per step (its base two machines' whole profiles merged: `fidelity-h100-policies-oos`'s calibration and `calibrate-h100`'s)	`GPU=h100 CALIB_DIR=DIR POLICIES="sparse sparse-head" experiments/fidelity.sh OUT llada-8b`
fidelity-h200-sparse-select	the same on the H200, on the machine of `select-h200`'s profiles, priced by the shipped H200 `tessera` calibration: 2.1–2.7% per step	`GPU=h200 CALIB_DIR=DIR POLICIES="sparse sparse-head" experiments/fidelity.sh OUT llada-8b`
engine-h100	`make check-gpu` and compute-sanitizer's memcheck over `engine check`	`DEPS=deps/root bash engine/gpu_run.sh OUT check sanitize`
torch-eager-h200	the PyTorch harness's kernel counts and log behind the `torch-eager` profile	`python3 engine/bench/torch_profile.py --out P.csv --kernels K.json`
torch-select-h200	dLLM-Serve's own KV selection code (one kept set, and one a K/V head) timed by the PyTorch harness in the select grid's Refresh steps, LLaDA-8B; merged into the shipped `h200-llada-8b-torch-eager` calibration, which the dLLM-Serve experiments carry to their cards (its selecting steps: 1 x 256 tokens 69 ms for 12 ms of GPU work; a selecting segment adds 21.3 ms)	`python3 engine/bench/torch_profile.py --grid select --out P.csv`, `tessera calib merge`
torch-select-h100	the same selection grid on an H100 machine: the selection's GPU work 4% slower than the H200's, its steps 18% slower (the loop is the host's); a selecting segment adds 30.7 ms beyond max(host, GPU) here against the H200 machine's 21.3, where `--host h100-xeon` scales the latter to 26.4 (14% short); not merged	`python3 engine/bench/torch_profile.py --grid select --reps 3 --out select-llada-8b.csv`; `tessera calib merge sim/data/calib/h100-llada-8b-torch-eager.csv select-llada-8b.csv --gpu h100 --out M.csv`, `tessera calib show M.csv --gpu h100`
generate-h100	`tessera engine generate` on an H100: ten generations of LLaDA-8B and SDAR-8B under each decoder and cache (TPF, redundancy, GPU time), IterSmooth benched (`bench-smooth.txt`), its checks	`SANITIZE_S=300 DEPS=deps/root bash engine/gpu_run.sh OUT generate`; `./build/tests/gpu/check_engine --only focus` (its README)
validate-mechanisms-h100	the newer mechanisms' own public code run on H100s with random weights, each over a burst of 6 requests of 256 positions, every forward's rows and time, and held-out grids: DPad's three loops (Crys-Chen/DPad at 461b36e: no cache, the prefix and the dual cache) D2F's pipelined blocks (Discrete-Diffusion-Forcing at 771f745) and SparseD's generate with and without its sparsity (INV-WZQ/SparseD at 52155b4, prompts of 2k to 16k); `validate.csv`, `rows.csv`, `kept.csv` and `sparsed.csv` what tessera predicts of them: every forward count exact, every D2F forward's rows exact, DPad's kept suffix within its draws in every block, DPad's cached loops within 3.4%, D2F's latency 15% short, SparseD's speedup at 16k 1.20x predicted against 1.055x measured (its pattern built in a PyTorch loop, its FlexAttention steps)	`experiments/validate/measure.sh dpad\|dpad-prefix\|dpad-dual\|d2f\|sparsed\|sparsed-dense OUT`; `tessera exp run validate-mechanisms OUT`
validate-h100	the seed systems' own public code (LLaDA's reference loop, Fast-dLLM's dual cache, dLLM-Cache, Sparse-dLLM, dLLM-Serve's runtime) run on an H100 with random weights over 64 OSC-length requests at two rates, every request's times and every forward's, and held-out grids; `validate.csv` what tessera predicts of them	`experiments/validate/measure.sh SYSTEM OUT`; `tessera exp run validate OUT`
torch-dllm-serve-h100	tessera's rebuild of dLLM-Serve's PyTorch runtime profiled by the PyTorch harness on an H100 (its calibration `sim/data/calib/h100-llada-8b-torch-dllm-serve.csv`), and how far its host line lies from the runtime's own	`python3 engine/bench/torch_profile.py --runtime dllm-serve --reps 3 --out dllm-serve-base.csv`, `--grid select` (its README)
torch-dllm-serve-h200	dLLM-Serve's own PyTorch runtime profiled by the PyTorch harness (its calibration `sim/data/calib/h200-llada-8b-torch-dllm-serve.csv`)	`python3 engine/bench/torch_profile.py --runtime dllm-serve --reps 3 --out dllm-serve-base.csv`, `--grid select` (its README)
power-h100	the energy model against an H100's own draw: idle 71 W, four live workloads sampled by nvidia-smi every 50 ms, twice; with the memory-bound share fitted on the first run's small-batch decoding (0.83), the second run's steps within 0.1–1.8% of the card's mean draw (`power.png`); the host's gaps between live steps drawn at the limit	`TESSERA=build/gpu/tessera experiments/power.sh OUT h100`
dkv-own-code-h100	dKV-Cache-Decode's own loop (horseee/dKV-Cache 49a76fc, LLaDA-8B random weights, six requests one at a time) against tessera's dkv-cache policy: 128 forwards each on both sides, all 768 forwards' rows exact; its loop's issue time from a held-out grid (torch-dkv: 1.52 of LLaDA's); time -15.7% over the six, request by request +17% to -43% as the host's issue time moves between requests of one shape	`MEASURE=1 experiments/validate/own.sh dkv OUT`
elastic-own-code-h100	Elastic-Cache's own loop (yxu-dev/Elastic-Cache 46c0bc3, LLaDA-8B random weights, its GSM8K settings, six requests one at a time) against tessera's elastic policy given the decisions its loop took (29 tracked tokens a step, its drift test refreshing 63% of the steps from layer 4): 128 forwards each on both sides, rows within 7% on average; its issue time from a held-out grid (torch-elastic: 1.117 of LLaDA's); time -9.2% over the six, +4.5% to -22.6% each (its eager attention with kept weights at 1,024 tokens); its drift test on the engine (`engine generate --elastic-drift`) on the same weights and prompts: as many tracked tokens (within 0.6 a step), as many refreshes at 128 tokens (108 of 254 steps against 109), half as many at 512 (77 against 175)	`MEASURE=1 experiments/validate/own.sh elastic OUT`; `MEASURE=1 experiments/validate/elastic_drift.sh OUT`
fdllm-v2-own-code-h100	Fast-dLLM v2's own loop (NVlabs/Fast-dLLM v2/generation_functions.py af42f51 over the model's remote code, 7B shape, random weights, as its eval.py runs it, without and with its DualCache) against tessera's fdllm-v2 policy: every forward's rows equal without the DualCache (774 of 774); with it, 4.25 whole-block steps a later sub-block measured (`--v2-full-steps`), 354 whole-block forwards against 348; issue time 0.802 of LLaDA's loop (`torch-fdllm-v2`); time −18.4% and +8.1%, bounded by the loop's own spread (×1.8 between identical requests); the changed policy live on the engine: +0.8% (1.1% a step) without the DualCache, +1.1% (1.7%) with it at `--v2-full-steps 4.25`, +2.6% (2.7%) at 1	`MEASURE=1 experiments/validate/own.sh fdllm-v2 OUT` and `fdllm-v2-dual` (its README)
elastic-live-h100	Elastic-Cache's steps on the engine over its input cache (each layer's inputs kept; a refresh runs the chosen rows through its first layers, then every row from the cached inputs): `check_engine --only elastic` against the CPU reference (26 passed on both kernel paths); live on LLaDA-8B with its loop's decisions (29 tracked tokens, 63% of the steps refreshing, from layer 4 or 16), priced by the shipped calibration: −4.3% to +2.7% total, per-step MAPE 3.4–5.3%	`engine/gpu_run.sh OUT elastic` (its README)
d2cache-own-code-h100	d2Cache's own loop (Kamichanw/d2Cache 72feb60, LLaDA-8B random weights, its LLaDA-Instruct settings, six requests one at a time) against tessera's d2cache policy given the rollout's nucleus its loop chose (0.0876 of the other positions): 128 forwards each, rows within 3% on average; its issue time from a held-out grid (torch-d2cache: 1.679 of LLaDA's); time -0.6% over the six, +5.2% to -5.3% each; its rollout rule on the engine (`engine generate --d2-rollout`) on the same weights and prompts: a nucleus of 0.084 of the other positions at 128 tokens against its 0.086, 0.092 at 512 against 0.086	`MEASURE=1 experiments/validate/own.sh d2cache OUT`; `MEASURE=1 experiments/validate/d2cache_rollout.sh OUT`
prophet-own-code-h100	Prophet's own generate_earlyexit.py (pixeli99/Prophet 460afe4) against tessera's engine generate --prophet on the same random LLaDA-8B weights, 4 prompts, 3 sets of thresholds: 6 of 12 requests exit at the same step (4 at the first); bf16 argmax flips on nearly flat logits (5.5-7.8% of the first step's rows) part the rest	`experiments/validate/prophet.sh OUT`
prophet-engine-h100	Prophet's early commit run on the engine (engine generate --prophet, LLaDA-8B random weights, vanilla, topk:2): the LM head's top-2 gap exact against the CPU reference, 0.06% on a step; Prophet's thresholds never fire on random weights' gaps, lowered ones exit every request at decoded shares of 0.018 to 0.223	`engine generate --policy vanilla --decoder topk:2 --prophet 200[,E,M,L]`
host-link-h100	the host link and the host's memory as offloaded K/V (the policy herald) use them: pinned copies of 4 KiB to 1 GiB each way, pageable, and the host's read rate over 1-16 threads, three times; 54.7 GB/s host to device for 1 GiB (the table's pcie5 gives 50), 8.1 from pageable memory, 83 GB/s read by 16 threads (herald's scan default)	`engine_bench --only host --reps 20`
link-h100x2	the link between two H100s of a host (NVLink, NV18) as a disaggregated fleet's moves take it: peer copies of 4 KiB to 1 GiB, twice; 397 GB/s for 1 GiB (88% of the 450 the link table gives) and 10 us for 4 KiB (the table's latency)	`engine_bench --only peer --reps 20`
fleet-live-h100x2	a live fleet of two engine replicas (dual and prefix cache, one H100 each) behind least outstanding and round robin over the Azure conversation trace at 2 req/s, against its simulation: round robin within 3.5% in every latency statistic and throughput, least outstanding within 4% in mean, p50 and throughput and 12-15% short in the tail (the prefix cache's steps priced 2.5% fast)	`tessera sim --fleet fleet.txt --gpu h100 --cost calibrated --trace azure_conv_400.csv --requests 120 --rps 2 --gen-len 256 --router R [--executor gpu]`
fleet-disagg-live-h200x4	a live Refresh/Reuse split (2 + 2 of four H200s, K/V copied between the engines over NVLink) and four co-located replicas, dual cache, over the Azure conversation trace at 4 req/s, against their simulations: every latency statistic and throughput within 8% (split) and 2.5% (co-located); the split's p99 22% below co-located live, 17% simulated; a move's copy 1.57 ms measured (322 GB/s) against the link model's 1.14 ms	`tessera sim --replicas 4 --policy dual --gpu h200 --cost calibrated --trace azure_conv_400.csv --requests 160 --rps 4 --gen-len 256 [--disagg every,refresh=2,link=host] [--executor gpu]`
herald-live-h100	HERALD's host-offloaded K/V run live on an H100, SDAR-8B, 8 requests of 8,000 prompt tokens: the host's scoring and the kept K/V's read over PCIe run for real beside the engine. Whole runs within 6% of the calibrated model; the host steps 14-31% short at the default scan rate (scoring runs at 51 GB/s, not the plain read's 76-83), within 1.2% serial at the measured rate, 14% short overlapped (the overlap rule misses the scoring threads' and the gather's interference with the step)	`tessera sim --model sdar-8b --gpu h100 --cost calibrated --requests 8 --rps 1 --lengths fixed:8000,256 --executor gpu --policy herald --herald-overlap 0|1 [--herald-scan-gbs 51.0]`
sparsed-live-h200	SparseD's patterns on the engine (k_sparsed_pattern; the wgmma and mma.sync attention kernels walking each query tile's kept key blocks): against the CPU reference the pattern's sums within 3.2e-7, its kept blocks exact, attention by it within 2.3e-3 on both kernels, whole steps of three tiny models within 6.6e-3 and a whole generation step by step (check_engine --only sparsed 43 passed); live on LLaDA-8B, one request at a time, 128 positions: -0.9% in all and 1.2% a step at 3,968 prompt tokens, its sparse steps 10% faster than dense; -10.1% at 2,048 (the calibration prices the dense steps -9.4% too); the pattern's build 17-40 ms beyond a dense step, priced 3-10 ms; engine generate --policy sparsed: pass 1's top blocks in the prompt 0.962 and 0.977 (random weights)	`engine/gpu_run.sh OUT sparsed`
dgemma-live-h200	DiffusionGemma's serving schedules run on the engine with LLaDA2.0-mini in its place, 16 requests of 512 + 512 on an H200: SGLang's (`--system sglang-dgemma`: prompts and finished canvases encoded by EXTEND forwards of their own, prefill first, canvases of 256 a forward a round) first done first out and sync at 4 running, one at a time, and arriving at 2 a second; vLLM's (`--system diffusion-gemma`: a commit pass a canvas) at 4 and 8 running; then `--system sglang` with its rounds' graph padding run live: whole runs within 0.5-2.4% of the calibrated model, 0.6-2.4% a step; neither engine itself serves DiffusionGemma on PyTorch 2.11	`engine/gpu_run.sh OUT dgemma`
dgemma-sampler-h200	vLLM's DiffusionGemma sampler step (`_compiled_sample_step` at 00c25c8) run compiled on an H200 over 1-48 canvases of random logits: 3.00 fp32 copies of its logits beyond them at every count (24.00 GiB at 32, where PR #45672 reports 23.9), and the request-tiled loop's groups (2 at utilization 0.9, 6 at 0.75) by the PR's rule; `tessera mem sampler` prices a step's peak and whether it runs out of memory from them	`experiments/validate/dgemma_sampler.py`
key-rope-h200	The GPU work Fast-dLLM's and dLLM-Cache's model code does over every cached key (fp32 RoPE over the whole cache, and dLLM-Cache's concatenation), timed with their own code on an H200 at batch 4 from 1,024 to 4,096 keys: 1.10 and 0.99 times tessera's price from the bytes read in the code (52 and 60 a key element); hidden by the host at batch 1, it moves dLLM-Cache's static batches of 16 from +4.8% to +2.9% in throughput (validate-h100)	`python3 experiments/validate/key_rope.py --code baselines` (its README)
linear-spec-live-h200	LinearSpec (Nemotron-Labs-Diffusion's self-speculation: a draft and a verify forward of a 32-position window a round, 5.46 positions a round, an assumption) live on an H200 beside block diffusion, LLaDA2.0-mini and SDAR-8B, 16 requests of 256 + 256 in static batches of 1 and 8: whole runs within 0.0-4.4% of the calibrated model, 0.6-4.8% a step (block diffusion 0.0-3.2%, 0.3-3.3%); one request at a time LinearSpec's throughput 12-17% higher (95 forwards a request against 105), in batches of 8 7-8% lower (a batch runs until its slowest request, and its commits vary more)	`engine/gpu_run.sh OUT linear-spec`
CATALOG
# the records with their data unpacked (analysis/records.sh): TESSERA_RECORDS, or unpacked here
recs=${TESSERA_RECORDS:-}
if [ -z "$recs" ]; then
    recs=$tmp/records
    bash "$root/analysis/records.sh" unpack "$recs"
fi
python3 - "$root" "$out" "$tmp/catalog.tsv" "$recs" <<'PY'
import csv, glob, gzip, json, math, os, re, sys

root, out, catalog, R = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
L = []  # the page's lines


def w(s=""):
    L.append(s)


def rec(name, f=None):
    """A link to a record (or a file in it, where it is not in the record's packed data), relative to
    experiments/."""
    there = f and os.path.exists(os.path.join(root, "experiments", "records", name, f))
    return f"[{name}{'/' + f if f else ''}](records/{name}{'/' + f if there else ''})"


def rng(vals, fmt="{:.1f}", unit="%"):
    vals = sorted(vals)
    if not vals:
        return "-"
    a, b = fmt.format(vals[0]), fmt.format(vals[-1])
    return f"{a}{unit}" if a == b else f"{a}–{b}{unit}"


def srng(vals):
    """A signed range: −1.2 … +3.4%."""
    vals = sorted(vals)
    f = lambda v: ("+" if v > 0 else "−" if v < 0 else "") + f"{abs(v):.1f}"
    return f"{f(vals[0])}%" if len(vals) == 1 or f(vals[0]) == f(vals[-1]) else f"{f(vals[0])} … {f(vals[-1])}%"


def card(name):
    return "H100" if "h100" in name else "H200"


def read(path):
    with open(path, errors="replace") as fh:
        return fh.read()


commands = {}
whats = []
for line in read(catalog).splitlines():
    if not line.strip():
        continue
    names, what, cmd = line.split("\t")
    whats.append((names.split(), what, cmd))
    for n in names.split():
        commands[n] = cmd

# ---------------------------------------------------------------- fidelity matrices
fid = []
for f in sorted(glob.glob(os.path.join(R, "*", "fidelity.csv"))):
    name = os.path.basename(os.path.dirname(f))
    rows = list(csv.DictReader(open(f)))
    cal = [r for r in rows if r["backend"] == "calibrated"]
    roof = [r for r in rows if r["backend"] == "roofline"]
    if not cal:
        continue
    models = sorted({r["model"] for r in cal}, key=lambda m: [r["model"] for r in cal].index(m))
    pols = sorted({r["policy"] for r in cal}, key=lambda p: [r["policy"] for r in cal].index(p))
    fid.append(dict(name=name, card=card(name), impl="tessera-fused" if "fused" in name else "tessera",
                    models=models, pols=pols, runs=len(cal),
                    oos=name.endswith("-oos") or name in ("fidelity-h200-sparse-end", "fidelity-h200-sparse-select"),
                    mape=[float(r["mape_pct"]) for r in cal], total=[float(r["total_pct"]) for r in cal],
                    roof=[float(r["mape_pct"]) for r in roof]))


def fid_cmd(d):
    env = f"GPU={d['card'].lower()}"
    if d["impl"] != "tessera":
        env += f" IMPL={d['impl']}"
    if d["pols"] != ["dual", "block"]:
        env += ' POLICIES="' + " ".join("sparse-head" if p == "sparse" and False else p for p in d["pols"]) + '"'
    if d["oos"]:
        env += " CALIB_DIR=DIR"
    m = " ".join(d["models"])
    return f"`{env} experiments/fidelity.sh OUT {m if len(d['models']) == 1 else chr(34) + m + chr(34)}`"


live = []
for f in sorted(glob.glob(os.path.join(R, "*", "live*.csv"))):
    name = os.path.basename(os.path.dirname(f))
    rows = list(csv.DictReader(open(f)))
    if not rows or "metric" not in rows[0]:
        continue
    runs = {(r["model"], r["policy"], r["scheduler"], r["rps"]) for r in rows}
    get = lambda b, m: [float(r["error_pct"]) for r in rows if r["backend"] == b and r["metric"] == m]
    live.append(dict(name=name, file=os.path.basename(f), runs=len(runs),
                     models=sorted({r["model"] for r in rows}),
                     thr=get("calibrated", "throughput_tok_s"), lat=get("calibrated", "lat_mean_s"),
                     p99=get("calibrated", "lat_p99_s"), roof=get("roofline", "throughput_tok_s")))

# ---------------------------------------------------------------- headline
h200 = [v for d in fid if d["card"] == "H200" for v in d["mape"]]
h100 = [v for d in fid if d["card"] == "H100" for v in d["mape"]]
h200r = [v for d in fid if d["card"] == "H200" for v in d["roof"]]
h100r = [v for d in fid if d["card"] == "H100" for v in d["roof"]]
anchor = [json.loads(l) for l in open(os.path.join(R, "engine-h200", "engine_anchor.jsonl")) if "anchor_step" in l]
speed = [a["torch_ms"] / a["ms"] for a in anchor]
geo = math.exp(sum(map(math.log, speed)) / len(speed))
lmax_rows = [l for l in read(os.path.join(R, "lmax-h200", "lmax.md")).splitlines() if l.startswith("| 24 GB")]
best_lmax = max(lmax_rows, key=lambda l: int(l.split("|")[7]))
bl = [c.strip() for c in best_lmax.strip("|").split("|")]
lcur = [d for d in live if d["file"] == "live.csv"]  # the live runs priced as sim prices them
lthr = [v for d in lcur for v in d["thr"]]

w("# Results")
w()
w("Every figure tessera's documentation quotes, generated from the records under")
w("[records/](records) by `bash analysis/results_page.sh` (do not edit by hand; `make check-records`")
w("regenerates it and fails where it differs). Each figure names the record that holds its outputs and")
w("the command that made them; commands marked GPU run on a GPU machine with the engine built")
w("([engine/README.md](../engine/README.md)), the rest anywhere. `make check-records` re-derives the")
w("records' figures from the current build on a CPU: the fidelity matrices from their recorded step")
w("times, the replays' pricing, the live runs' predictions.")
w()
w("## Headline figures")
w()
w("| figure | value | record |")
w("|---|---|---|")
w(f"| calibrated cost model, per-step MAPE against the engine, H200 ({sum(d['runs'] for d in fid if d['card'] == 'H200')} runs over {sum(1 for d in fid if d['card'] == 'H200')} matrices) | {rng(h200)} (roofline {rng(h200r)}) | [below](#the-cost-model-against-the-engine) |")
w(f"| the same on the H100 ({sum(d['runs'] for d in fid if d['card'] == 'H100')} runs over {sum(1 for d in fid if d['card'] == 'H100')} matrices) | {rng(h100)} (roofline {rng(h100r)}) | [below](#the-cost-model-against-the-engine) |")
w(f"| live mode: throughput error of the calibrated prediction ({sum(d['runs'] for d in lcur)} live runs, H200 and H100) | {srng(lthr)} | [below](#live-runs) |")
w(f"| engine over PyTorch eager on the anchor's {len(speed)} LLaDA-8B steps, H200 (geometric mean) | {geo:.2f}× ({min(speed):.2f}–{max(speed):.2f}×) | {rec('engine-h200')} |")
w(f"| longest context under 24 GB, Mosaic's planner with lazy chunking against PyTorch's caching allocator (live, H200) | {int(bl[6]):,} tokens, {bl[8]} | {rec('lmax-h200')} |")
w()

# ---------------------------------------------------------------- fidelity
w("## The cost model against the engine")
w()
w("Each matrix simulates a schedule per policy, scheduler and load, replays its steps on the engine and")
w("prices them with both back ends (`experiments/fidelity.sh`; [experiments/README.md](README.md#fidelity-and-live)).")
w("Per-step MAPE and total-time error are over the matrix's runs; a record named `-oos` is priced by a")
w("calibration profiled on another machine than the one it ran on (out of sample). On a CPU,")
w("`MEASURED=RECORD/all-steps.csv.gz CALIB_DIR=DIR experiments/fidelity.sh OUT MODELS` re-prices a")
w("record's runs from its measured steps (DIR holding its `calib-MODEL.csv`, unpacked).")
w()
w("| record | card | engine | models | policies | runs | calibrated per-step MAPE | total time | roofline per-step MAPE | command (GPU) |")
w("|---|---|---|---|---|---|---|---|---|---|")
for d in sorted(fid, key=lambda d: (d["card"], d["name"])):
    w(f"| {rec(d['name'])} | {d['card']} | `{d['impl']}` | {', '.join(d['models'])} | {', '.join(d['pols'])} | {d['runs']} | {rng(d['mape'])} | {srng(d['total'])} | {rng(d['roof'])} | {fid_cmd(d)} |")
w()

# ---------------------------------------------------------------- live
w("## Live runs")
w()
w("The simulator's scheduler driving the engine (`--executor gpu`), each run also predicted by both back")
w("ends from the same configuration (`experiments/live.sh`; `REUSE_LIVE=1` re-predicts recorded runs on a CPU).")
w()
w("| record | file | models | runs | calibrated: throughput | mean latency | p99 latency | roofline: throughput | command (GPU) |")
w("|---|---|---|---|---|---|---|---|---|")
for d in live:
    w(f"| {rec(d['name'])} | `{d['file']}` | {', '.join(d['models'])} | {d['runs']} | {srng(d['thr'])} | {srng(d['lat'])} | {srng(d['p99'])} | {srng(d['roof'])} | {commands.get(d['name'], '')} |")
w()
# ---------------------------------------------------------------- replayed schedules
run_re = re.compile(r"^run \d+ of (\S+): (\d+) replayed steps \(([^,]+), (\w+)\), measured ([\d.]+) s")
back_re = re.compile(r"^\s+(calibrated|roofline)\s+per-step MAPE\s+([\d.]+)%.*total time\s+([+-]?[\d.]+)%")
att_re = re.compile(r"^\s+attention\s+[\d.]+\s+[\d.]+%\s+([+-][\d.]+)%")
evals = []
for f in sorted(glob.glob(os.path.join(R, "*", "eval*.txt"))):
    name = os.path.basename(os.path.dirname(f))
    cur = None
    for line in read(f).splitlines():
        m = run_re.match(line)
        if m:
            cur = dict(name=name, file=os.path.basename(f), db=os.path.basename(m.group(1)), steps=int(m.group(2)),
                       model=m.group(3), gpu=m.group(4).upper(), s=float(m.group(5)), att="")
            evals.append(cur)
            continue
        if cur is None:
            continue
        m = back_re.match(line)
        if m:
            cur[m.group(1)] = (float(m.group(2)), float(m.group(3)))
        m = att_re.match(line)
        if m and not cur["att"]:
            cur["att"] = srng([float(m.group(1))])
w("## Replayed schedules")
w()
w("A simulated schedule (`tessera sim ... --db D.db`) replayed on the engine (`tessera engine replay --db D.db")
w("[--ops]`, GPU) and priced by the calibrated model (`tessera calib eval --db D.db`, any machine; the")
w("record's README gives each schedule's options): serving batches past the profiled ones, long contexts,")
w("other policies, held-out `make calibrate` schedules. The attention column is the calibrated attention")
w("op's error over the run where the replay timed each op.")
w()
w("| record | file | schedule | model, card | steps | calibrated per-step MAPE | total time | attention op | roofline per-step MAPE |")
w("|---|---|---|---|---|---|---|---|---|")
for e in evals:
    c, r = e.get("calibrated"), e.get("roofline")
    w(f"| {rec(e['name'])} | `{e['file']}` | `{e['db']}` | {e['model']}, {e['gpu']} | {e['steps']} | "
      f"{f'{c[0]:.1f}%' if c else '-'} | {srng([c[1]]) if c else '-'} | {e['att'] or '-'} | {f'{r[0]:.1f}%' if r else '-'} |")
w()
seen = []
for e in evals:
    if e["name"] not in seen:
        seen.append(e["name"])
w("Commands: " + "; ".join(f"{rec(n)}: {commands[n]}" for n in seen if n in commands) + ".")
w()

# ---------------------------------------------------------------- transfer
tf = os.path.join(R, "transfer-fidelity", "transfer-fidelity.txt")
w("## A calibration carried to another card")
w()
w("Each Hopper card's shipped calibration carried to the other (`tessera calib transfer`) and pricing that")
w(f"card's recorded out-of-sample fidelity runs, beside its own: {rec('transfer-fidelity')}, made by")
w(f"{commands['transfer-fidelity']}.")
w()
w("| priced on | engine | model | calibration | per-step MAPE (clock off) | at the card's clock state |")
w("|---|---|---|---|---|---|")
for line in read(tf).splitlines()[1:]:
    m = re.match(r"(\S+)\s+(\S+)\s+(\S+)\s+(.+?)\s{2,}(\d+ runs, .+?)\s{2,}(\d+ runs, .+)$", line)
    if m:
        w(f"| {m.group(1).upper()} | `{m.group(2)}` | {m.group(3)} | {m.group(4)} | {m.group(5)} | {m.group(6)} |")
w()

# ---------------------------------------------------------------- tensor parallelism
w("## Tensor parallelism")
w()
w("| record | GPUs | step | split (ms) | one GPU (ms) | ratio | all-reduces' share |")
w("|---|---|---|---|---|---|---|")
tpfid = []
for name, n, bench in (("tp-h200x2", 2, "bench-tp.txt"), ("tp-h200x4", 4, "bench-tp4.txt")):
    p = os.path.join(R, name, bench)
    if os.path.exists(p):
        for line in read(p).splitlines():
            m = re.match(r"^(\d+x\d+ over \d+ cached, \d+ logits)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)", line)
            if m:
                w(f"| {rec(name, bench)} | {n} × H200 | {m.group(1)} | {m.group(2)} | {m.group(3)} | {m.group(4)} | {m.group(5)}% |")
    for line in read(os.path.join(R, name, "fidelity.txt")).splitlines():
        m = re.match(r"^(?:(.*?), )?(\S+?)\.txt: \d+ steps: .*per-step MAPE ([\d.]+)%", line)
        if m:
            label = m.group(1) or ("roofline" if "roofline" in m.group(2) else "calibrated")
            tpfid.append((name, label, float(m.group(3))))
w()
for name in ("tp-h200x2", "tp-h200x4"):
    labels = []
    for n, lab, _ in tpfid:
        if n == name and lab not in labels:
            labels.append(lab)
    parts = [f"{lab} {rng([v for n, l, v in tpfid if n == name and l == lab])}" for lab in labels]
    if parts:
        w(f"- {rec(name, 'fidelity.txt')}: three schedules simulated with `--tp` and replayed on the split engine, "
          "per-step MAPE: " + "; ".join(parts) + ".")
w(f"- Commands: {rec('tp-h200x2')}: {commands['tp-h200x2']}; {rec('tp-h200x4')}: {commands['tp-h200x4']}.")
w()

# ---------------------------------------------------------------- engine speed
step_re = re.compile(r"^((?:refresh|reuse|step) .+?)\s{2,}([\d.]+)\s+([\d.]+)\s+(compute|memory)\s+([\d.]+)\s+([\d.]+|-)")
held_re = re.compile(r"^\s+floor at the held GEMM rate ([\d.]+) ms: ([\d.]+) x")


def bench_steps(path):
    steps = []
    for line in read(path).splitlines():
        m = step_re.match(line)
        if m:
            steps.append(dict(step=m.group(1).replace("step ", ""), ms=m.group(2), floor=m.group(3), bound=m.group(4),
                              x=m.group(5), torch=m.group(6), held=""))
        m = held_re.match(line)
        if m and steps:
            steps[-1]["held"] = m.group(2)
    return steps


compile_ms = {}
for l in open(os.path.join(R, "engine-h200", "torch_compile.jsonl")):
    j = json.loads(l)
    compile_ms[(j["step"], j["B"], j["T"], j["cached"])] = j["ms"]


def compiled(step):
    if "masked" in step:
        return ""
    m = re.match(r"(refresh|reuse) (\d+) ?x ?(\d+)(?: over (\d+) cached)?", step)
    if not m:
        return ""
    k = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))
    return f"{compile_ms[k]:.2f}" if k in compile_ms else ""


w("## Engine speed")
w()
w("Each step a median of CUDA-event timings of the step replayed as a CUDA graph, against its floor: the")
w("step's FLOPs over the bf16 GEMM rate measured in the same call, or its bytes over the measured copy")
w("bandwidth, whichever is larger (`./build/engine_bench`; [engine/BENCHMARKS.md](../engine/BENCHMARKS.md)")
w("says how to read them). PyTorch eager is the anchor script's recorded run on the same card.")
w()
w(f"LLaDA-8B on an H200 ({rec('engine-h200', 'bench.txt')}; {commands['engine-h200']}; torch.compile from")
w(f"{rec('engine-h200', 'torch_compile.jsonl')}):")
w()
w("| step | ms | × floor | × held floor | bound | PyTorch eager ms | torch.compile ms |")
w("|---|---|---|---|---|---|---|")
for s in bench_steps(os.path.join(R, "engine-h200", "bench.txt")):
    w(f"| {s['step']} | {s['ms']} | {s['x']} | {s['held']} | {s['bound']} | {s['torch']} | {compiled(s['step'])} |")
w()
xf = [a["ms"] / a["floor_ms"] for a in anchor]
lo, hi = min(anchor, key=lambda a: a["torch_ms"] / a["ms"]), max(anchor, key=lambda a: a["torch_ms"] / a["ms"])
desc = lambda a: f"{a['anchor_step']} {a['B']} × {a['T']:,}"
w(f"The anchor's {len(anchor)} steps ({rec('engine-h200', 'engine_anchor.jsonl')}, `make bench-engine ANCHOR=...`): "
  f"over PyTorch eager {geo:.2f}× in geometric mean, {min(speed):.2f}× ({desc(lo)}) to {max(speed):.2f}× ({desc(hi)}); "
  f"the engine at {min(xf):.2f}–{max(xf):.2f}× its floor.")
w()
more = [("engine-h100-portable", "bench-hopper.txt", "LLaDA-8B, H100, Hopper kernels"),
        ("engine-h100-portable", "bench-portable.txt", "LLaDA-8B, H100, `--kernels portable`"),
        ("sparse-h200", "bench-sparse.txt", "LLaDA-8B, H200, dense and sparse Reuse"),
        ("fidelity-h200-moe-wgmma", "bench-llada2.0-mini.txt", "LLaDA2.0-mini, H200"),
        ("fidelity-h200-moe-wgmma", "bench-llada-moe-7b.txt", "LLaDA-MoE-7B, H200"),
        ("moe-wgmma-h100", "bench-llada2.0-mini-new.txt", "LLaDA2.0-mini, H100"),
        ("moe-wgmma-h100", "bench-llada-moe-7b-new.txt", "LLaDA-MoE-7B, H100")]
w("| steps | record | step | ms | × floor | bound |")
w("|---|---|---|---|---|---|")
for name, f, what in more:
    p = os.path.join(R, name, f)
    if os.path.exists(p):
        for s in bench_steps(p):
            w(f"| {what} | {rec(name, f)} | {s['step']} | {s['ms']} | {s['x']} | {s['bound']} |")
w()
w("Commands: " + "; ".join(f"{rec(n)}: {commands[n]}" for n in ("engine-h100-portable", "sparse-h200", "fidelity-h200-moe-wgmma", "moe-wgmma-h100")) + ".")
w()

# FOCUS's evicting steps
fb = os.path.join(R, "focus-h200", "bench-focus.txt")
w(f"FOCUS's evicting steps, SDAR-8B, 16 × 32 over 480 cached keys, H200 ({rec('focus-h200', 'bench-focus.txt')}; "
  f"`./build/engine_bench --only focus --model sdar-8b`): K of the block's 32 rows kept after layer 1.")
w()
w("| kept | ms | of the whole block | beyond layer 1 | floor there | goal |")
w("|---|---|---|---|---|---|")
for line in read(fb).splitlines():
    m = re.match(r"^(all 32|\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+(\S+)", line)
    if m:
        w(f"| {m.group(1)} | {m.group(2)} | {m.group(3)} | {m.group(4)} | {m.group(5)} | {m.group(6)} |")
w()
# ---------------------------------------------------------------- generation on the GPU
gen = {}
for f in sorted(glob.glob(os.path.join(R, "generate-h100", "generate-*.txt"))):
    t = read(f)
    m = re.search(r"GPU time\s+([\d.]+) s in steps \(median step ([\d.]+) ms\)", t)
    r = re.search(r"redundancy\s+([\d.]+)", t)
    if m:
        gen[os.path.basename(f)[len("generate-"):-4]] = (float(m.group(1)), m.group(2), r.group(1) if r else "")
w("## Generation on the GPU")
w()
w(f"`tessera engine generate` with random weights, H100 ({rec('generate-h100')}; {commands['generate-h100']}): timing")
w("runs of the decode loop (random weights commit about one position a step, so TPF is 1), each cache's")
w("GPU time and redundancy (block rows computed per position decided).")
w()
w("| model, decoder, cache | GPU time in steps | median step | redundancy |")
w("|---|---|---|---|")
for k, (s, med, red) in gen.items():
    w(f"| {k} | {s:.3f} s | {med} ms | {red} |")
if "sdar-8b-threshold-focus" in gen and "sdar-8b-threshold-prefix" in gen:
    w()
    w(f"FOCUS's eviction against the prefix cache on SDAR-8B: "
      f"{gen['sdar-8b-threshold-prefix'][0] / gen['sdar-8b-threshold-focus'][0]:.2f}× less GPU time.")
w()

# ---------------------------------------------------------------- memory
w("## Longest context that fits (L_max)")
w()
w(f"LLaDA-8B on an H200 under hard memory limits, simulated (`tessera mem lmax`) and live (`mem lmax --live`):")
w(f"{rec('lmax-h200', 'lmax.md')}, made by {commands['lmax-h200']} (without `LIVE=1`, the simulated column on any machine).")
w()
w("| limit | planner | logits | chunking | L_max simulated | L_max live | live / simulated | against caching (live) |")
w("|---|---|---|---|---|---|---|---|")
for l in read(os.path.join(R, "lmax-h200", "lmax.md")).splitlines():
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    if len(c) > 9 and c[0].endswith("GB"):
        w(f"| {c[0]} | {c[1]} | {c[2]} | {c[3]} | {int(c[5]):,} | {int(c[6]):,} | {c[7]} | {c[8]} |")
w()

# ---------------------------------------------------------------- checks
w("## The engine against its CPU reference")
w()
w("| record | checks | command (GPU) |")
w("|---|---|---|")
for name in ("check-gpu-h200", "check-gpu-h100"):
    t = read(os.path.join(R, name, "check-gpu.txt"))
    counts = re.findall(r"engine check: (\d+) passed, (\d+) failed", t)
    w(f"| {rec(name, 'check-gpu.txt')} | " + "; ".join(f"`engine check` {p} passed, {f} failed" for p, f in counts) + f" | {commands[name]} |")
w()

# ---------------------------------------------------------------- make calibrate
w("## `make calibrate`")
w()
w("| record | held-out schedule: calibrated per-step MAPE | total time | roofline | command (GPU) |")
w("|---|---|---|---|---|")
for name in ("clock-calibrate-h100", "clock-calibrate-h200"):
    t = read(os.path.join(R, name, "report.txt"))
    c = re.search(r"calibrated\s+per-step MAPE\s+([\d.]+)%.*total time\s+([+-]?[\d.]+)%", t)
    r = re.search(r"roofline\s+per-step MAPE\s+([\d.]+)%", t)
    w(f"| {rec(name, 'report.txt')} | {c.group(1)}% | {srng([float(c.group(2))])} | {r.group(1)}% | {commands[name]} |")
w()
t = read(os.path.join(R, "calibrate-time-h100", "time.txt"))
plain = re.search(r"^make calibrate\s+(\d+) s", t, re.M).group(1)
torch = re.search(r"^TORCH=1 make calibrate\s+(\d+) s", t, re.M).group(1)
w(f"How long it takes ({rec('calibrate-time-h100', 'time.txt')}): {plain} s on an H100, {torch} s with "
  f"PyTorch eager's profile (`TORCH=1`); {commands['calibrate-time-h100']}.")
w()

# ---------------------------------------------------------------- PyTorch eager's host
w("## PyTorch eager's host")
w()
w("PyTorch eager's small steps wait for the CPU that issues their kernels, so they move with the machine.")
for name in ("host-h100-spread", "host-h200-spread"):
    t = read(os.path.join(R, name, "spread.txt"))
    reuse = [float(m.group(1)) for m in re.finditer(r"^anchor-\S+\s+([\d.]+)\s+[\d.]+%", t, re.M)]
    if reuse:
        w(f"- {rec(name, 'spread.txt')}: the anchor's Reuse step over {len(reuse)} runs, {min(reuse):.1f}–{max(reuse):.1f} ms "
          f"({max(reuse) / min(reuse):.2f}× apart); {commands[name]}.")
w()

# ---------------------------------------------------------------- papers
w("## The papers' figures")
w()
w("`tessera exp run NAME OUT` on any machine; `tessera exp run papers OUT` runs them all and writes the")
w(f"summary (how many of each paper's printed numbers tessera lands within 15% of, and the trends that hold).")
w(f"Recorded: {rec('papers-figures')} ({commands['papers-figures']}).")
w()
pts = []
for l in read(os.path.join(R, "papers-figures", "focus-fig7.md")).splitlines():
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    if len(c) == 7 and c[3] == "speedup" and c[5]:
        pts.append(f"block {c[2]}: {c[4]}× (paper {c[5]}×, ratio {c[6]})")
w(f"- FOCUS Fig. 7, FOCUS's speedup over LMDeploy by block size ({rec('papers-figures', 'focus-fig7.md')}): " + "; ".join(pts) + ".")
thr = {}
for l in read(os.path.join(R, "papers-figures", "dllm-serve-fig3.md")).splitlines():
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    if len(c) == 7 and c[3] == "throughput_tok_s":
        thr[(c[0], c[1], c[2])] = float(c[4])
wl = []
for wk in [k for k in ("livebench", "osc", "burst") if ("dllm-serve", k, "0.5") in thr]:
    ds = thr.get(("dllm-serve", wk, "0.5"))
    base = max(v for (s, k, x), v in thr.items() if k == wk and x == "0.5" and s != "dllm-serve")
    wl.append(f"{wk} {ds / base:.2f}×")
w(f"- dLLM-Serve Fig. 3, dLLM-Serve's throughput over the strongest baseline's at 0.5 req/s, RTX 4090 "
  f"({rec('papers-figures', 'dllm-serve-fig3.md')}): " + ", ".join(wl) + " (the paper: 1.61–1.81×).")
w()

# ---------------------------------------------------------------- validation
w("## Against the seed systems' own code")
w()
w(f"`tessera exp run validate OUT` on any machine, from {rec('validate-h100')}: each system's public generate")
w("loop on an H100, one request at a time, and dLLM-Serve's runtime batching as it does, predicted from the")
w("same arrivals (throughput, mean and p99 latency, forward count: predicted / measured / error).")
w()
for l in read(os.path.join(R, "validate-h100", "validate.md")).splitlines():
    if l.startswith("|"):
        w(l)
w()

# ---------------------------------------------------------------- index
w("## Every record")
w()
w("Each folder holds what its command wrote and `gpu.txt` (the machine it ran on); its README, where")
w("there is one, gives the details.")
w()
w("| record | what it holds | command |")
w("|---|---|---|")
have = set(os.listdir(R))
for names, what, cmd in whats:
    w(f"| {', '.join(rec(n) for n in names if n in have)} | {what} | {cmd} |")
w()

with open(out, "w") as fh:
    fh.write("\n".join(L))
PY
