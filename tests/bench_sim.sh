#!/usr/bin/env bash
# bench_sim.sh: simulator speed. 10,000 requests (G = 256, block 32, dual, phase, --no-steps) on
# LLaDA-8B / H200, arriving at 200 req/s so that the phase scheduler packs hundreds of requests per
# step. Three runs; the median of the simulation's own wall time (run_wall_s: the event loop, from
# the first arrival to the last finish) gives request-steps per second. The process's start-up
# (loading the CUDA libraries when the engine is built in, ~0.1 s) is reported beside it.
# Usage: bench_sim.sh PATH/TO/tessera
set -euo pipefail
bin=${1:?usage: bench_sim.sh PATH/TO/tessera}
args=(sim --requests 10000 --rps 200 --gen-len 256 --block 32 --policy dual --scheduler phase
      --no-steps --quiet --no-progress --json --json-wall)
runs=()
walls=()
steps=0
for _ in 1 2 3; do
    start=$(date +%s.%N)
    out=$("$bin" "${args[@]}")
    end=$(date +%s.%N)
    walls+=("$(echo "$end - $start" | bc -l)")
    runs+=("$(echo "$out" | sed -n 's/.*"run_wall_s":\([0-9.e-]*\).*/\1/p')")
    steps=$(echo "$out" | sed -n 's/.*"request_steps":\([0-9]*\).*/\1/p')
done
med=$(printf '%s\n' "${runs[@]}" | sort -g | sed -n 2p)
medw=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n 2p)
echo "simulation: ${runs[*]} s; whole process: ${walls[*]} s (medians of 3)"
awk -v n="$steps" -v t="$med" -v w="$medw" 'BEGIN { printf "sim: %d request-steps in %.3f s (%.2f M request-steps/s; %.3f s with process start-up)\n", n, t, n / t / 1e6, w }'
