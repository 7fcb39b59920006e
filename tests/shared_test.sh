#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# shared_test.sh: the command-line checks that read the real traces of ../shared/traces/raw (which
# make check, hermetic, never reads): trace info and rescaling of real traces, a run on Azure's code
# trace, and exp run fleet over Mooncake's conversations. Part of make check-full; refuses to pass
# where ../shared is missing.
# Usage: shared_test.sh PATH/TO/tessera    Prints "shared: N passed, M failed".
set -u
bin=${1:?usage: shared_test.sh PATH/TO/tessera}
TEST=shared
source "$(dirname "$0")/lib_cli.sh"
is_png() { # is_png FILE "what wrote it": FILE is a non-empty PNG
    if [ -s "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = PNG ]; then ok; else bad "$2 wrote no PNG"; fi
}
cd "$(dirname "$0")/.." || exit 2
raw=../shared/traces/raw
[ -d "$raw" ] && ok || bad "no $raw beside the repository (check-full reads the real traces)"
if [ -d "$raw" ]; then
    expect 0 "trace info azure" -- "$bin" trace info "$raw/AzureLLMInferenceTrace_conv.csv"
    contains "azure" "azure trace, 19366 requests"
    expect 0 "rescale a real trace" -- "$bin" trace gen --rescale "$raw/mooncake_conversation_trace.jsonl" --rps 2 --requests 50 --out "$tmp/mc.csv"
    expect 0 "sim on Azure code" -- "$bin" sim --trace "$raw/AzureLLMInferenceTrace_code.csv" --requests 300 --rps 2 --clip-prompt --quiet
fi
expect 0 "exp run fleet" -- env REQUESTS=600 "$bin" exp run fleet "$tmp/fleet-exp"
[ "$(grep -c '| holds |' "$tmp/fleet-exp/report.md")" = 16 ] && ok || bad "exp run fleet: a check does not hold ($tmp/fleet-exp/report.md)"
[ "$(grep -c . "$tmp/fleet-exp/results.jsonl")" = 52 ] && ok || bad "exp run fleet: not 52 runs"
if command -v gnuplot >/dev/null; then
    for f in autoscale sizes disagg load-control affinity; do is_png "$tmp/fleet-exp/$f.png" "exp run fleet"; done
fi
finish
