# dllm_serve.sh: the dLLM-Serve evaluation's setting (sourced by experiments/dllm-serve-*.sh after
# lib/paper.sh): LLaDA-8B, 256 tokens generated in 256 steps, blocks of 32 (its Table 3), the four
# systems as presets, and the workload: every request a 300-token prompt standing in for its three
# datasets (LiveBench coding, OSC, BurstGPT), with Poisson arrivals; of their length profiles only
# OSC's is built (--lengths osc), which Fig. 3 runs beside it.
DS_SYSTEMS="dllm-cache fast-dllm sparse-dllm dllm-serve"
DS_BASELINES="dllm-cache fast-dllm sparse-dllm"
DS_WORKLOAD=p300 DS_LENGTHS=fixed:300,256
# the host that issues the PyTorch steps (tessera list hosts; HOST=NAME picks another): the papers'
# hosts are unknown, and the torch-eager profile's launch costs are the lent H200 machine's
DS_HOST=${HOST:-lent-h200}
DS_NOTES="Workload: every prompt 300 tokens, standing in for LiveBench (coding), OSC and BurstGPT (of their
length profiles only OSC's is built: --lengths osc); 256 tokens generated (the paper's Table 3), Poisson arrivals. Cost model: roofline
on the GPU's table entry (the PyTorch baselines' torch-eager profile, dLLM-Serve's too); no calibration of
the RTX 4090 or L40S is measured. Host: $DS_HOST (--host; the papers' hosts are unknown)."
# ds_point SYSTEM GPU RPS N [HOST]: one system at one arrival rate, its steps issued by DS_HOST or HOST
# (the workload then named after that host)
ds_point() {
    local host=${5:-$DS_HOST} wl=$DS_WORKLOAD
    [ "$host" != "$DS_HOST" ] && wl="$DS_WORKLOAD-$host"
    point "$1" "$wl" "$3" --system "$1" --gpu "$2" --rps "$3" --requests "$4" --lengths "$DS_LENGTHS" \
        --gen-len 256 --block 32 --seed 1 --host "$host"
}
# ds_best_baseline METRIC X [min]: the strongest baseline's value, the largest (throughput) or with
# min the smallest (latency)
ds_best_baseline() {
    local s
    for s in $DS_BASELINES; do value "$1" "$s" "$DS_WORKLOAD" "$2"; done | sort -g | if [ "${3:-}" = min ]; then head -1; else tail -1; fi
}
# ds_speedup X: dLLM-Serve's throughput over the strongest baseline's at X in DS_WORKLOAD, recorded
# as the metric speedup
ds_speedup() {
    derived speedup dllm-serve "$DS_WORKLOAD" "$1" \
        "$(ratio "$(value throughput_tok_s dllm-serve "$DS_WORKLOAD" "$1")" "$(ds_best_baseline throughput_tok_s "$1")")"
}

# ds_sweep GPU N RATES...: every system at each arrival rate
ds_sweep() {
    local gpu=$1 n=$2 r s
    shift 2
    for r in "$@"; do
        for s in $DS_SYSTEMS; do ds_point $s "$gpu" "$r" "$n"; done
    done
}
