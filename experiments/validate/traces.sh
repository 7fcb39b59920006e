#!/usr/bin/env bash
# experiments/validate/traces.sh: the traces the validation runs (tessera CSV), written to DIR.
#   SYSTEM-low.csv, SYSTEM-high.csv  64 requests with the OSC length profile (seed 5, the same requests
#                     at both rates), Poisson arrivals at a rate below and one above what the system
#                     serves one request at a time (its smoke run's mean service time: about 1.5 s for
#                     native and sparse-dllm, 2.5 s for fast-dllm and dllm-cache, on an H100); for
#                     dllm-serve, whose runtime batches, one below that and one above what it serves
#                     in batches of its 16,384-token budget (about 5 req/s: 3.6 ms of host work a
#                     sequence in a step of about 30 ms, 45 steps a request)
#   profile.csv       the held-out grid a system's own host line is fitted on: prompts of 128, 512,
#                     1,024 and 2,048 tokens, 64 positions each, twice, all arriving at once
#   dllm-cache-bB.csv dLLM-Cache's loop in static batches of B = 4 and 16 (its generate takes several
#                     rows): 2B requests of 256 prompt tokens and 64 positions, arriving together
#   dpad-burst.csv    DPad's loops (dpad, dpad-prefix, dpad-dual) and D2F's (d2f; one copy each): 6 requests arriving at
#                     once, prompts of 128, 512 and 1,024 tokens twice, 256 positions each (its GSM8K
#                     generation length, where its suffix window spans the whole response)
#   sparsed-long.csv  SparseD's generate, sparse and dense: prompts of 2,048 to 16,384 tokens, 128
#                     positions each (its figure 4's T = 128), arriving together
#   lengths-fit-bB.csv, lengths-held-bB.csv  the length grid (block length B = 32, 64), all arriving at
#                     once: a loop's time a forward against its cached length is fitted on the fit grid
#                     (prompts of 128, 1,024 and 2,048 tokens with 64 positions in blocks of 32; 256 and
#                     1,536 with 256 in blocks of 64) and checked on the held-out one (512 with 512 in
#                     blocks of 32, 2,048 with 512 in blocks of 64, each after one of 128 with 64, which
#                     the driver runs first untimed)
#   serve-N.csv       dllm-serve's held-out grid (its runtime's host line is fitted on it): N = 1, 2,
#                     4, 8, 16, 32, 48 and 64 requests arriving together, prompts of 128, 256 and 512 tokens
#                     in turn, 64 positions each (N = 1: three requests 5 s apart)
# Usage: experiments/validate/traces.sh DIR   (TESSERA=path to the binary [build/tessera])
set -euo pipefail
dir=${1:?usage: traces.sh DIR}
bin=${TESSERA:-build/tessera}
mkdir -p "$dir"
rates() { case $1 in native|sparse-dllm) echo "0.55 1.25" ;; dllm-serve) echo "0.55 6" ;; *) echo "0.33 0.7" ;; esac; }
for s in native fast-dllm dllm-cache sparse-dllm dllm-serve; do
    read -r -a r <<<"$(rates "$s")" # the rates below and above saturation
    set -- "${r[@]}"
    "$bin" trace gen --lengths osc --requests 64 --seed 5 --rps "$1" --out "$dir/$s-low.csv" --force
    "$bin" trace gen --lengths osc --requests 64 --seed 5 --rps "$2" --out "$dir/$s-high.csv" --force
done
{
    echo "arrival_ns,prompt_tokens,output_tokens"
    for p in 128 512 1024 2048 128 512 1024 2048; do echo "0,$p,64"; done
} >"$dir/profile.csv"
grid() { # FILE PROMPT,GEN...
    local f=$1
    shift
    { echo "arrival_ns,prompt_tokens,output_tokens"; for pg in "$@"; do echo "0,$pg"; done; } >"$dir/$f"
}
grid lengths-fit-b32.csv 128,64 1024,64 2048,64
grid lengths-fit-b64.csv 256,256 1536,256
grid lengths-held-b32.csv 128,64 512,512
grid lengths-held-b64.csv 128,64 2048,512
for n in 1 2 4 8 16 32 48 64; do
    {
        echo "arrival_ns,prompt_tokens,output_tokens"
        k=$((n == 1 ? 3 : n))
        for i in $(seq 0 $((k - 1))); do
            echo "$((n == 1 ? i * 5000000000 : 0)),$((128 << (i % 3))),64"
        done
    } >"$dir/serve-$n.csv"
done
for s in dpad dpad-prefix dpad-dual d2f; do
    {
        echo "arrival_ns,prompt_tokens,output_tokens"
        for p in 128 512 1024 128 512 1024; do echo "0,$p,256"; done
    } >"$dir/$s-burst.csv"
done
{
    echo "arrival_ns,prompt_tokens,output_tokens"
    for p in 2048 4096 8192 16384; do echo "0,$p,128"; done
} >"$dir/sparsed-long.csv"
for b in 4 16; do
    {
        echo "arrival_ns,prompt_tokens,output_tokens"
        for i in $(seq 1 $((2 * b))); do echo "0,256,64"; done
    } >"$dir/dllm-cache-b$b.csv"
done
