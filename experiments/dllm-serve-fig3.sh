#!/usr/bin/env bash
# experiments/dllm-serve-fig3.sh: dLLM-Serve Figure 3, throughput against arrival rate (0.1 to 0.5
# req/s) on an RTX 4090: dLLM-Cache, Fast-dLLM, Sparse-dLLM and dLLM-Serve on its three workloads
# (lib/dllm_serve.sh: the setting and the workloads).
# Usage: tessera exp run dllm-serve-fig3 OUT [--force] [--quick] [--strict]
EXP=dllm-serve-fig3
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/dllm_serve.sh"
paper_init "$@"
rates=(0.1 0.2 0.3 0.4 0.5) n=$DS_N
[ "$QUICK" = 1 ] && rates=(0.1 0.5) n=40 DS_N=40
r0=${rates[0]} r1=${rates[-1]}
for w in $DS_WORKLOADS; do
    ds_use "$w"
    ds_sweep rtx4090 "$n" "${rates[@]}"
    for r in "${rates[@]}"; do ds_speedup "$r"; done
    # "improves throughput by 1.61x-1.81x on the consumer-grade RTX 4090" (its abstract): over the
    # strongest baseline, across its three datasets, which gets which withheld; the range's middle
    # beside each workload's peak-rate point
    paper speedup dllm-serve "$w" "$r1" 1.71
done
# how far the result moves with the host: LiveBench's peak rate again, issued by the other measured
# machine's host
ds_use livebench
alt=h100-xeon
[ "$DS_HOST" = h100-xeon ] && alt=h200-xeon
for s in $DS_SYSTEMS; do ds_point "$s" rtx4090 "$r1" "$n" $alt; done
DS_WORKLOAD="livebench-$alt" ds_speedup "$r1"
check "dLLM-Serve's throughput over the strongest baseline's at ${r1} req/s is within the paper's 1.61-1.81x on each workload" \
    "$(ds_each "val(\"dllm-serve\",\"@W\",\"$r1\",\"speedup\") >= 1.61 && val(\"dllm-serve\",\"@W\",\"$r1\",\"speedup\") <= 1.81")"
check "the baselines hit a throughput wall on each workload: each gains under half of the load's rise from ${r0} to ${r1} req/s" \
    "$(for s in $DS_BASELINES; do ds_each "val(\"$s\",\"@W\",\"$r1\",\"throughput_tok_s\") / val(\"$s\",\"@W\",\"$r0\",\"throughput_tok_s\") < 1 + 0.5 * ($r1 / $r0 - 1)"; printf ' && '; done) 1"
check "dLLM-Serve keeps scaling on each workload: its throughput rises with the load to ${r1} req/s at least 80% as fast as the load" \
    "$(ds_each "val(\"dllm-serve\",\"@W\",\"$r1\",\"throughput_tok_s\") / val(\"dllm-serve\",\"@W\",\"$r0\",\"throughput_tok_s\") >= 1 + 0.8 * ($r1 / $r0 - 1)")"
ds_assumptions rtx4090 "$r1" 1.61 1.81
ds_why rtx4090 "$r1"
ds_why_rows rtx4090 "$r1" "$n"
ds_why_band "$r1" 1.61 1.81
ds_why_scaling "$r0" "$r1"
ds_why_wall "$r0" "$r1"
# the paper's own claims bound its strongest baseline from below: dLLM-Serve scaling linearly to 0.4
# req/s (256 tokens a request) at 1.61-1.81x of it at 0.5 req/s
implied=$(awk 'BEGIN { printf "%.1f", 0.4 * 256 / 1.81 }')
share=$(awk -v i="$implied" -v b="$(value single_request_bound fast-dllm livebench "$r1")" 'BEGIN { printf "%.0f", 100 * i / b }')
NOTES="$(ds_notes rtx4090)

$DS_WHY The paper's own claims, dLLM-Serve scaling linearly to 0.4 req/s and 1.61-1.81x the strongest
baseline at 0.5 req/s, put that baseline at $implied tok/s or more (0.4 x 256 / 1.81): one request a
batch would have to run at $share% of what nothing lost allows, with its Refresh steps and PyTorch's
host time on top, where tessera's Fast-dLLM reaches $(fmt "$(value throughput_tok_s fast-dllm livebench "$r1")") tok/s on LiveBench. So the paper's baselines most
likely held more than one request a batch on every workload, as tessera's do on OSC alone: its prompts
or its profiling left more room than the longest LiveBench and BurstGPT prompts do here. Where
tessera's baselines batch several requests (OSC), dLLM-Serve's speedup at $r1 req/s is
$(fmt "$(value speedup dllm-serve osc "$r1")")x (the paper: 1.61-1.81x).

$DS_WHY_ROWS

The paper's 1.61-1.81x against tessera's speedup at $r1 req/s over the setting's unknowns (workloads
W~ASSUMPTION=VALUE; derived metrics speedup_lo and speedup_hi):

$DS_ASSUMPTIONS

The workload livebench-$alt reruns LiveBench's peak rate with the $alt machine's host: the speedup
there against livebench's is how far the host moves the result."
ds_figure throughput_tok_s "Throughput (tokens/s)"
paper_finish "dLLM-Serve Fig. 3: throughput against arrival rate, RTX 4090, LLaDA-8B" "arrival rate (req/s)" \
    throughput_tok_s
