#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# full_cli_test.sh: the command-line checks make check leaves to make check-full: those that read the
# real traces of ../shared/traces/raw (which make check, hermetic, never reads: trace info and
# rescaling of real traces, a run on Azure's code trace, exp run fleet over Mooncake's conversations),
# and the longest experiment run (exp run published-speeds). Refuses to pass where ../shared is
# missing.
# Usage: full_cli_test.sh PATH/TO/tessera    Prints "full-cli: N passed, M failed".
set -u
bin=${1:?usage: full_cli_test.sh PATH/TO/tessera}
TEST=full-cli
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
# (QUICK=1: LLaDA2.1's Table 3 on two benchmarks: more requests running give more tokens/s, and HumanEval+'s
# 12.32 tokens a forward more than IFEval's 1.83, setup by setup)
expect 0 "exp run published-speeds" -- env QUICK=1 "$bin" exp run published-speeds "$tmp/pubs"
got=$(python3 -c 'import json, sys
rows = list(map(json.loads, open(sys.argv[1])))
t = {(r["bench"], r["gpu"], r["quant"], r["running"], r["lengths"]): r["throughput_tok_s"] for r in rows if r["part"] == "table3"}
print(len(t), all(t[b, g, q, "1", l] < t[b, g, q, "2", l] < t[b, g, q, "4", l] and t["ifeval", g, q, c, l] < t["humaneval+", g, q, c, l]
                  for b, g, q, c, l in t))
rows = [r for r in rows if r["part"] != "table3"]
d = {(r["gpu"], r["weights"], r["gen"]): r["makespan_ns"] for r in rows if r["part"] == "dgemma"}
canvas = {k[:2]: d[k[0], k[1], "512"] - d[k[0], k[1], "256"] for k in d}
s = {(r["how"], r["mode"], r["concurrency"]): r["throughput_tok_s"] for r in rows if r["part"] == "sglang"}
print(len(rows), all(canvas[g, "fp8"] < canvas[g, "bf16"] for g in ("h100", "h200")), canvas["h200", "fp8"] < canvas["h100", "fp8"],
      all(s[h, "s", c] > s[h, "q", c] and s["b200-host", m, c] < s["b200", m, c] for h in ("b200", "b200-host", "h200")
          for m in ("q", "s") for c in ("1", "100")),
      all(r["num_finished"] == (10 if r.get("concurrency") == "1" else 500 if r["part"] == "sglang" else 1) for r in rows))' \
    "$tmp/pubs/results.jsonl" 2>&1)
[ "$got" = "$(printf '48 True\n24 True True True True')" ] && ok || bad "exp run published-speeds: '$got'"
contains "exp run published-speeds" "| h100 | fp8 |"
contains "exp run published-speeds" "| humaneval+ | 12.32 | **1496.67** |"
finish
