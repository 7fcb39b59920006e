#!/usr/bin/env bash
# experiments/dllm-serve-fig8.sh: dLLM-Serve Fig. 8, its ablation: from the standalone Sparse-dLLM
# baseline, dLLM-Serve's parts added one at a time, and the throughput each stage reaches relative to
# the baseline (lib/dllm_serve.sh's setting and workload, an RTX 4090 at 0.5 req/s: the contention
# the paper's latency figures single out; its text gives neither for the ablation):
#   1 baseline   Sparse-dLLM (static batches as large as fit, or one request as its code runs with
#                BATCH=code; one kept set, bf16 sampling, its loop's host work, PyTorch's allocator,
#                every logit at once)
#   2 engine     + dLLM-Serve's inference engine: continuous batching of flattened requests (the
#                request scheduler), the head-centric sparse cache, its runtime's host work
#   3 scheduler  + the phase-multiplexed scheduler (its KV pool as its code sizes it: 0.8 of the card)
#   4 budgeting  + logit-aware activation budgeting (the logits of each sequence's block rows alone,
#                in chunks of 2,048 rows, the profiled planner): dLLM-Serve as its preset runs it
# Usage: tessera exp run dllm-serve-fig8 OUT [--force] [--quick] [--strict]
EXP=dllm-serve-fig8
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/dllm_serve.sh"
paper_init "$@"
n=$DS_N
[ "$QUICK" = 1 ] && n=40 DS_N=40
stage() { # stage NAME X IMPL OPTIONS...: one stage's point in DS_WORKLOAD, priced as IMPL runs it
    local name=$1 x=$2
    ds_cost rtx4090 "$3"
    shift 3
    point "$name" "$DS_WORKLOAD" "$x" "$@" --gpu rtx4090 --rps 0.5 --requests "$n" --lengths "$DS_LENGTHS" \
        --arrivals "$DS_ARRIVALS" --gen-len 256 --block 32 --seed 1 --host "$DS_HOST" "${DS_COST_ARGS[@]}"
}
for w in $DS_WORKLOADS; do
    ds_use "$w"
    # shellcheck disable=SC2046 # ds_batch_opts: its options, a word each (none where the batch fits)
    stage baseline 1 torch-eager --system sparse-dllm $(ds_batch_opts sparse-dllm)
    stage engine 2 torch-dllm-serve --policy sparse --sparse-select head --scheduler request --impl torch-dllm-serve \
        --max-num-logits 0 --planner caching
    stage scheduler 3 torch-dllm-serve --policy sparse --sparse-select head --scheduler phase --impl torch-dllm-serve \
        --max-num-logits 0 --planner caching --gpu-memory-utilization 0.8
    stage budgeting 4 torch-dllm-serve --system dllm-serve
    base=$(value throughput_tok_s baseline "$w" 1)
    prev=$base x=0
    for s in baseline engine scheduler budgeting; do
        x=$((x + 1))
        t=$(value throughput_tok_s $s "$w" $x)
        derived relative_throughput $s "$w" $x "$(ratio "$t" "$base")"
        [ $x -gt 1 ] && derived gain $s "$w" $x "$(ratio "$t" "$prev")"
        prev=$t
    done
done
check "the inference engine gives the largest jump of the three parts on each workload" \
    "$(ds_each 'val("engine","@W","2","gain") > val("scheduler","@W","3","gain") && val("engine","@W","2","gain") > val("budgeting","@W","4","gain")')"
check "the scheduler adds to the engine's throughput on each workload" "$(ds_each 'val("scheduler","@W","3","gain") > 1')"
check "logit-aware budgeting adds the final boost on each workload" "$(ds_each 'val("budgeting","@W","4","gain") > 1')"
# why budgeting adds little: per workload, the requests a step with and without it, the time a
# request-step takes (the run's span over its request-steps: the GPU is busy throughout at this
# load), and the KV pool each leaves
request_step_ms() { awk -v a="$(point_json makespan_ns "$@")" -v b="$(point_json request_steps "$@")" 'BEGIN { printf "%.1f", a / b / 1e6 }'; }
kv_gb() { awk -v a="$(point_json kv_pool_bytes "$@")" 'BEGIN { printf "%.2f", a / 1e9 }'; }
parts=""
for w in $DS_WORKLOADS; do
    parts+="$w $(fmt "$(mean_batch scheduler "$w" 3)") and $(fmt "$(mean_batch budgeting "$w" 4)") requests a step, $(request_step_ms scheduler "$w" 3) and $(request_step_ms budgeting "$w" 4) ms a request-step, KV pools of $(kv_gb scheduler "$w" 3) and $(kv_gb budgeting "$w" 4) GB; "
done
sched=""
for w in $DS_WORKLOADS; do
    sched+="$w $(fmt "$(mean_batch engine "$w" 2)") and $(fmt "$(mean_batch scheduler "$w" 3)") requests a step, $(request_step_ms engine "$w" 2) and $(request_step_ms scheduler "$w" 3) ms a request-step, gain $(fmt "$(value gain scheduler "$w" 3)")x; "
done
why "the scheduler adds to the engine's throughput" "with the request scheduler and with the phase-multiplexed one: ${sched%; }.
The phase scheduler gains where grouping the requests' Refresh and Reuse steps runs more of them a step
for no more time a request; where the queue seldom holds more than a batch (a short run, a light
load), there is little to group."
why "logit-aware budgeting adds the final boost" "with the scheduler alone and with budgeting added: ${parts%; }.
The KV pool is the same in both (0.8 of the card less the weights and the reserve, as dLLM-Serve's
allocate_kv_cache sizes it), so budgeting admits no more requests; it drops the LM head and softmax
of every row outside a sequence's block in its full-sequence steps (two of a block's 32), which is
all it removes from a request-step, and shrinks the activations those steps need. Budgeting pays
where prompts are long."
NOTES="x is the stage (1 the baseline, 2 with dLLM-Serve's inference engine, 3 with its scheduler, 4 with
logit budgeting: dLLM-Serve); relative_throughput is each stage's throughput over the baseline's, gain
over the stage before. The paper's per-stage speedups are withheld, and it does not say at which load or
on which card it ran the ablation: an RTX 4090 at 0.5 req/s here.
$(ds_notes rtx4090)"
# the figure: a cluster a workload, a bar a stage
fig_bars "" "" "Throughput relative to Sparse-dLLM (×)" yfrom0
for w in $DS_FIG_WORKLOADS; do
    x=0
    for s in "baseline:Sparse-dLLM" "engine:+ inference engine" "scheduler:+ phase scheduler" "budgeting:+ logit budgeting"; do
        x=$((x + 1))
        fig_bar "$(ds_name "$w")" "${s#*:}" "${s%%:*}" "$w" $x relative_throughput
    done
done
paper_finish "dLLM-Serve Fig. 8: throughput as dLLM-Serve's parts are added" "stage" relative_throughput
