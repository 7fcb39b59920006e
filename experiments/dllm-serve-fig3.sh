#!/usr/bin/env bash
# experiments/dllm-serve-fig3.sh: dLLM-Serve Figure 3, throughput against arrival rate (0.1 to 0.5
# req/s) on an RTX 4090: dLLM-Cache, Fast-dLLM, Sparse-dLLM and dLLM-Serve (lib/dllm_serve.sh: the
# setting, and the workload standing in for the paper's datasets).
# Usage: tessera exp run dllm-serve-fig3 OUT [--force] [--quick] [--strict]
EXP=dllm-serve-fig3
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/dllm_serve.sh"
paper_init "$@"
rates="0.1 0.2 0.3 0.4 0.5" n=200
[ "$QUICK" = 1 ] && rates="0.1 0.5" n=40
ds_sweep rtx4090 $n $rates
for r in $rates; do ds_speedup $r; done
# OSC, the one of its three datasets whose length profile is built, beside the 300-token stand-in
DS_WORKLOAD=osc DS_LENGTHS=osc ds_sweep rtx4090 $n $rates
for r in $rates; do DS_WORKLOAD=osc ds_speedup $r; done
set -- $rates; r0=$1 r1=${@: -1}
# how far the result moves with the host: the peak rate again, issued by the other lent machine's host
alt=lent-h100
[ "$DS_HOST" = lent-h100 ] && alt=lent-h200
for s in $DS_SYSTEMS; do ds_point $s rtx4090 $r1 $n $alt; done
DS_WORKLOAD="$DS_WORKLOAD-$alt" ds_speedup $r1
# "improves throughput by 1.61x-1.81x on the consumer-grade RTX 4090" (its abstract): over the
# strongest baseline, across its three datasets; the range's middle beside the peak-rate point
paper speedup dllm-serve $DS_WORKLOAD $r1 1.71
check "dLLM-Serve's throughput over the strongest baseline's at ${r1} req/s is within the paper's 1.61-1.81x" \
    "val(\"dllm-serve\",\"$DS_WORKLOAD\",\"$r1\",\"speedup\") >= 1.61 && val(\"dllm-serve\",\"$DS_WORKLOAD\",\"$r1\",\"speedup\") <= 1.81"
check "the baselines hit a throughput wall: each gains under half of the load's rise from ${r0} to ${r1} req/s" \
    "$(for s in $DS_BASELINES; do printf 'val("%s","%s","%s","throughput_tok_s") / val("%s","%s","%s","throughput_tok_s") < 1 + 0.5 * (%s / %s - 1) && ' $s $DS_WORKLOAD $r1 $s $DS_WORKLOAD $r0 $r1 $r0; done) 1"
check "dLLM-Serve keeps scaling: its throughput rises with the load to ${r1} req/s at least 80% as fast as the load" \
    "val(\"dllm-serve\",\"$DS_WORKLOAD\",\"$r1\",\"throughput_tok_s\") / val(\"dllm-serve\",\"$DS_WORKLOAD\",\"$r0\",\"throughput_tok_s\") >= 1 + 0.8 * ($r1 / $r0 - 1)"
NOTES="$DS_NOTES The workload osc is OSC's length profile (--lengths osc). The workload $DS_WORKLOAD-$alt reruns the peak rate with the $alt machine's host: the speedup
there against the one above is how far the host moves the result."
paper_finish "dLLM-Serve Fig. 3: throughput against arrival rate, RTX 4090, LLaDA-8B" "arrival rate (req/s)" \
    throughput_tok_s
