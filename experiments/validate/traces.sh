#!/usr/bin/env bash
# experiments/validate/traces.sh: the traces the validation runs (tessera CSV), written to DIR.
#   SYSTEM-low.csv, SYSTEM-high.csv  64 requests with the OSC length profile (seed 5, the same requests
#                     at both rates), Poisson arrivals at a rate below and one above what the system
#                     serves one request at a time (its smoke run's mean service time: about 1.5 s for
#                     native and sparse-dllm, 2.5 s for fast-dllm and dllm-cache, on an H100)
#   profile.csv       the held-out grid a system's own host line is fitted on: prompts of 128, 512,
#                     1,024 and 2,048 tokens, 64 positions each, twice, all arriving at once
# Usage: experiments/validate/traces.sh DIR   (TESSERA=path to the binary [build/tessera])
set -euo pipefail
dir=${1:?usage: traces.sh DIR}
bin=${TESSERA:-build/tessera}
mkdir -p "$dir"
rates() { case $1 in native|sparse-dllm) echo "0.55 1.25" ;; *) echo "0.33 0.7" ;; esac; }
for s in native fast-dllm dllm-cache sparse-dllm; do
    set -- $(rates "$s")
    "$bin" trace gen --lengths osc --requests 64 --seed 5 --rps "$1" --out "$dir/$s-low.csv" --force
    "$bin" trace gen --lengths osc --requests 64 --seed 5 --rps "$2" --out "$dir/$s-high.csv" --force
done
{
    echo "arrival_ns,prompt_tokens,output_tokens"
    for p in 128 512 1024 2048 128 512 1024 2048; do echo "0,$p,64"; done
} >"$dir/profile.csv"
