#!/usr/bin/env bash
# experiments/dllm-serve-fig5.sh: dLLM-Serve Figure 5, jitter under high load: the latency's standard
# deviation and span (max - min) at 0.5 req/s on an RTX 4090, as gains over the best baseline (the
# baseline's value over dLLM-Serve's; lib/dllm_serve.sh).
# Usage: tessera exp run dllm-serve-fig5 OUT [--force] [--quick] [--strict]
EXP=dllm-serve-fig5
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/dllm_serve.sh"
paper_init "$@"
n=$DS_N
[ "$QUICK" = 1 ] && n=40 DS_N=40
for w in $DS_WORKLOADS; do
    ds_use "$w"
    ds_sweep rtx4090 "$n" 0.5
    for m in lat_std_s lat_span_s lat_p99_s; do
        derived "${m%_s}_gain" dllm-serve "$w" 0.5 \
            "$(ratio "$(ds_best_baseline $m 0.5 min)" "$(value $m dllm-serve "$w" 0.5)")"
    done
done
check "dLLM-Serve's latency spreads less than the best baseline's (standard deviation and span) on each workload" \
    "$(ds_each 'val("dllm-serve","@W","0.5","lat_std_gain") > 1 && val("dllm-serve","@W","0.5","lat_span_gain") > 1')"
# "reducing tail latency by nearly 4x under heavy contention" (its abstract)
check "the tail (p99) latency is nearly 4x lower than the best baseline's (3-5x) on some workload" \
    "$(for w in $DS_WORKLOADS; do printf '(val("dllm-serve","%s","0.5","lat_p99_gain") >= 3 && val("dllm-serve","%s","0.5","lat_p99_gain") <= 5) || ' "$w" "$w"; done) 0"
tails=""
for w in $DS_WORKLOADS; do
    ds_use "$w"
    tails+="$w $(fmt "$(value lat_p99_gain dllm-serve "$w" 0.5)")x (the best baseline's $(fmt "$(ds_best_baseline lat_p99_s 0.5 min)") s against $(fmt "$(value lat_p99_s dllm-serve "$w" 0.5)") s), "
done
why "the tail (p99) latency is nearly 4x lower than the best baseline's (3-5x) on some workload" \
    "dLLM-Serve's p99 latency gain over the best baseline at 0.5 req/s: ${tails%, }. The last requests'
latency sums the backlog each system builds over the run, so the tail ratio follows the throughputs'
(dllm-serve-fig3's report): the baselines' static batches ($DS_BATCH; BATCH=code runs them one request at
a time, as their public code does) set how far the best baseline falls behind the load."
behind=""
for w in $DS_WORKLOADS; do behind+="$w $(fmt "$(value throughput_tok_s dllm-serve "$w" 0.5)"), "; done
NOTES="$(ds_notes rtx4090)

dLLM-Serve's throughput at 0.5 req/s, in tok/s: ${behind%, }, where the load brings 128 (256 tokens a
request): where it falls behind, its queue and its latencies grow through the run, and spread with it
(dllm-serve-fig3's report says what bounds its throughput)."
# the figure: bars of the best baseline's jitter over dLLM-Serve's, a cluster a workload
fig_bars "" "" "Gain over the best baseline (×, higher is better)" "ref=1:best baseline = 1.0" yfrom0
for w in $DS_FIG_WORKLOADS; do
    fig_bar "$(ds_name "$w")" "Latency standard deviation σ" dllm-serve "$w" 0.5 lat_std_gain
    fig_bar "$(ds_name "$w")" "Latency span (max - min)" dllm-serve "$w" 0.5 lat_span_gain
done
paper_finish "dLLM-Serve Fig. 5: latency jitter at 0.5 req/s, RTX 4090, LLaDA-8B" "arrival rate (req/s)" lat_std_s
