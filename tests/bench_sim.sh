#!/usr/bin/env bash
# bench_sim.sh: simulator speed. 10,000 requests (G = 256, block 32, dual, phase, --no-steps) on
# LLaDA-8B / H200, arriving at 200 req/s so that the phase scheduler packs hundreds of requests per
# step. Three runs; the median wall time is reported as request-steps per second.
# Usage: bench_sim.sh PATH/TO/tessera
set -euo pipefail
bin=${1:?usage: bench_sim.sh PATH/TO/tessera}
args=(sim --requests 10000 --rps 200 --gen-len 256 --block 32 --policy dual --scheduler phase
      --no-steps --quiet --no-progress --json)
times=()
steps=0
for i in 1 2 3; do
    start=$(date +%s.%N)
    out=$("$bin" "${args[@]}")
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc -l)")
    steps=$(echo "$out" | sed -n 's/.*"request_steps":\([0-9]*\).*/\1/p')
done
med=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 2p)
echo "runs: ${times[*]} s (median of 3)"
awk -v n="$steps" -v t="$med" 'BEGIN { printf "sim: %d request-steps in %.3f s (%.2f M request-steps/s)\n", n, t, n / t / 1e6 }'
