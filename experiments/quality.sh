#!/usr/bin/env bash
# experiments/quality.sh: speed against accuracy, the decoders and caches whose source publishes both, each point with its source.
#
# The published pairs (the decode profiles of sim/data/decode_profiles.json), a panel a benchmark:
# - dInfer's Tables 1 and 2 (LLaDA-MoE): Fast-dLLM's threshold decoding and dInfer's hierarchical
#   decoding, without and with a KV cache, and dInfer on the trajectory-distilled model (TASKS);
# - d3LLM's leaderboard (LLaDA-8B-Instruct, GSM8K-CoT): Fast-dLLM, D2F, the distilled dParallel and
#   d3LLM, each at its tokens per forward;
# - WINO's Table 1 (LLaDA-8B-Instruct, GSM8K): its revokable decoding, a shadow block a forward;
# and in the last two, LLaDA itself, a token a forward without a cache, at its row's score;
# - LLaDA2.0's report (LLaDA2.0-mini, blocks of 32, a subset of its benchmarks): threshold 0.95 and
#   0.85, the ends of its published sweep (threshold:llada2-mini-sweep);
# - LLaDA2.1's Table 2 (the average of 33 benchmarks): LLaDA2.0-mini, and LLaDA2.1-mini in its Quality
#   and Speed modes, each at its tokens per forward (LLaDA2.1-mini shares LLaDA2.0-mini's architecture).
# tessera runs each one like for like within its panel: the same model, GPU, runtime (the engine's
# calibration), cost model and load, one request at a time (static batches of one), its cache as the
# policy (none: vanilla; Fast-dLLM's: dual; dInfer's: vicinity; d3LLM's: prefix), its decoder at the
# profile's TPF. D2F and dParallel run under d3LLM's prefix cache, an assumption (the leaderboard does
# not say theirs). The accuracy is the published one (the run's expected_accuracy), not simulated; the
# throughput is tessera's. The model's own score in each source (decoded a token a forward) is drawn as
# a line.
# Writes OUT/results.jsonl (one object a run: its configuration, task, throughput, latency, the
# expected accuracy and the profile's source), OUT/report.md and, with gnuplot, OUT/figure.png (a
# panel a benchmark: accuracy against generated tokens/s).
#
# Usage: tessera exp run quality OUT [--force]   (TASKS="avg gsm8k humaneval", dInfer's; GPU=h200;
#        COST=calibrated; LENGTHS=fixed:256,256; REQUESTS=8; SEED=1; or experiments/quality.sh OUT with
#        TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run quality OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
# a run: its panel (a benchmark of a source), its model, label, cache's policy and decoder with its profile
runs=()
for task in ${TASKS:-avg gsm8k humaneval}; do
    runs+=("$task|llada-moe-7b|Fast-dLLM, no cache|vanilla|threshold:fastdllm-moe-nocache-$task"
           "$task|llada-moe-7b|dInfer, no cache|vanilla|hierarchical:dinfer-moe-nocache-$task"
           "$task|llada-moe-7b|Fast-dLLM, cache|dual|threshold:fastdllm-moe-cache-$task"
           "$task|llada-moe-7b|dInfer, cache|vicinity|hierarchical:dinfer-moe-cache-$task"
           "$task|llada-moe-7b|dInfer TD, cache|vicinity|hierarchical:dinfer-td-moe-cache-$task")
done
# (the model itself, a token a forward without a cache, at its row's score in the same source)
runs+=("aup-gsm8k-cot|llada-8b|LLaDA|vanilla|fixed:1|72.55|d3LLM's leaderboard, LLaDA's row"
       "aup-gsm8k-cot|llada-8b|Fast-dLLM|dual|threshold:aup-fast-dllm-llada-gsm8k-cot"
       "aup-gsm8k-cot|llada-8b|D2F|prefix|threshold:aup-d2f-llada-gsm8k-cot"
       "aup-gsm8k-cot|llada-8b|dParallel|prefix|threshold:aup-dparallel-llada-gsm8k-cot"
       "aup-gsm8k-cot|llada-8b|d3LLM|prefix|threshold:d3llm-llada-gsm8k-cot"
       "wino-gsm8k|llada-8b|LLaDA|vanilla|fixed:1|73.24|WINO Table 1, LLaDA's row"
       "wino-gsm8k|llada-8b|WINO|vanilla|wino:wino-llada-gsm8k"
       "llada2-threshold|llada2.0-mini|LLaDA2.0-mini, 0.95|block|threshold:llada2-mini-sweep"
       "llada2-threshold|llada2.0-mini|LLaDA2.0-mini, 0.85|block|threshold:3.31|67.90|LLaDA2.0's report, section 6.3, at threshold 0.85"
       "llada2.1-avg|llada2.0-mini|LLaDA2.0-mini|block|threshold:2.60|63.39|LLaDA2.1's Table 2 (arXiv 2602.08676), LLaDA2.0-mini's row"
       "llada2.1-avg|llada2.0-mini|LLaDA2.1-mini Q|block|threshold:llada2.1-mini-q"
       "llada2.1-avg|llada2.0-mini|LLaDA2.1-mini S|block|threshold:llada2.1-mini-s")
for run in "${runs[@]}"; do
    IFS='|' read -r task model label policy decode own own_src <<<"$run"
    json=$("$bin" sim --model "$model" --gpu "${GPU:-h200}" --cost "${COST:-calibrated}" --policy "$policy" \
        --scheduler static --max-batch 1 --decode "$decode" --max-num-logits 0 \
        --lengths "${LENGTHS:-fixed:256,256}" --requests "${REQUESTS:-8}" --rps 100 --seed "${SEED:-1}" \
        --quiet --no-progress --json) || { echo "quality.sh: $label on $task failed" >&2; exit 1; }
    src=${own_src:-$("$bin" list decode | awk -v s="$decode" '$1 == s { sub(/^.*  /, ""); print }')}
    python3 - "$label" "$policy" "$decode" "$task" "$model" "$src" "$own" "$json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
label, policy, decode, task, model, src, own, m = sys.argv[1:8] + [json.loads(sys.argv[8])]
bench = {"aup-gsm8k-cot": "GSM8K-CoT", "wino-gsm8k": "GSM8K", "llada2-threshold": "a subset of LLaDA2.0's",
         "llada2.1-avg": "the average of 33"}
if own:  # a row the source prints that no profile holds (the model's own): its score as printed
    m["expected_accuracy"], m["accuracy_task"] = float(own), bench[task]
if m["expected_accuracy"] is None:
    sys.exit("quality.sh: %s publishes no accuracy" % decode)
print(json.dumps({"config": label, "policy": policy, "decode": decode, "task": task, "model": model,
                  "benchmark": m["accuracy_task"], "accuracy": m["expected_accuracy"],
                  "throughput_tok_s": m["throughput_tok_s"], "lat_mean_s": m["lat_mean_s"], "source": src}))
PY
done
python3 - "$out" "${GPU:-h200}" "${COST:-calibrated}" <<'PY' || exit 1
import json, os, sys
out, gpu, cost = sys.argv[1:4]
# the model's own score in each panel's source, decoded a token a forward: dInfer Table 1's LLaDA-MoE row,
# LLaDA's row of d3LLM's leaderboard, LLaDA's of WINO's Table 1
# (none for LLaDA2's panels: their sources decode a block model by threshold alone)
own = {"avg": 54.83, "crux-o": 42.38, "gsm8k": 82.41, "humaneval": 61.59, "ifeval": 59.33, "mbpp": 70.02, "lcb-v6": 13.27,
       "aup-gsm8k-cot": 72.55, "wino-gsm8k": 73.24}
source = {"aup-gsm8k-cot": "d3LLM's leaderboard", "wino-gsm8k": "WINO Table 1", "llada2-threshold": "LLaDA2.0's report",
          "llada2.1-avg": "LLaDA2.1's Table 2"}
models = {"llada-moe-7b": "LLaDA-MoE", "llada-8b": "LLaDA-8B", "llada2.0-mini": "LLaDA2.x-mini"}
show = lambda v: "%.2f" % v if v is not None else "-"
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
tasks = list(dict.fromkeys(r["task"] for r in rows))
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# Speed against accuracy: published pairs, run like for like\n\n")
    f.write("On %s (cost model %s), one request at a time. Accuracy: the published score at the decoder's setting "
            "(not simulated); throughput: tessera's. Within a panel (a model's benchmark in one source) the runs "
            "share model, runtime, cost model and load.\n\n" % (gpu, cost))
    f.write("| model | task | configuration | tok/s | mean latency s | accuracy % | the model's own % | source |\n"
            "|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write("| %s | %s | %s | %.1f | %.2f | %.2f | %s | %s |\n" % (
            models[r["model"]], r["benchmark"], r["config"], r["throughput_tok_s"], r["lat_mean_s"], r["accuracy"],
            show(own.get(r["task"])), r["source"]))
    for t in tasks:
        rs = [r for r in rows if r["task"] == t]
        fast = max(rs, key=lambda r: r["throughput_tok_s"])
        best = max(rs, key=lambda r: r["accuracy"])
        if fast is best:
            f.write("\n%s, %s: the fastest (%s, %.0f tok/s) is the most accurate too (%.2f).\n" % (
                models[rs[0]["model"]], rs[0]["benchmark"], fast["config"], fast["throughput_tok_s"], fast["accuracy"]))
            continue
        f.write("\n%s, %s: the fastest (%s, %.0f tok/s) scores %.2f, %+.2f points from the most accurate (%s, %.2f at "
                "%.0f tok/s).\n" % (models[rs[0]["model"]], rs[0]["benchmark"], fast["config"], fast["throughput_tok_s"], fast["accuracy"],
                                    fast["accuracy"] - best["accuracy"], best["config"], best["accuracy"],
                                    best["throughput_tok_s"]))
with open(os.path.join(out, "figure.dat"), "w") as d:
    for t in tasks:
        d.write("# %s\n" % t)
        for r in (r for r in rows if r["task"] == t):
            d.write("%g %g \"%s\" %d\n" % (r["throughput_tok_s"], r["accuracy"], r["config"],
                                            r["config"] in ("dInfer TD, cache", "Fast-dLLM")))
        d.write("\n\n")
with open(os.path.join(out, "figure.own"), "w") as d:
    for i, t in enumerate(tasks):
        r = next(r for r in rows if r["task"] == t)
        d.write("%d %s %s %s|%s\n" % (i, own.get(t, "none"), t, models[r["model"]], source.get(t, "dInfer Tables 1-2")))
PY
npanels=$(wc -l <"$out/figure.own")
rows=$(((npanels + 2) / 3))
panels=""
while read -r i own task title; do
    bench=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["task"] == sys.argv[2]:
        print(o["benchmark"]); break' "$out/results.jsonl" "$task")
    line="unset arrow 1; unset label 1"
    [ "$own" = none ] || line="set arrow 1 from graph 0, first $own to graph 1, first $own nohead dt 2 lc rgb '#777777'
set label 1 $(gp_str "the model's own") at graph 0.98, first $own right offset 0, 0.6 tc rgb '#777777'"
    panels+="set title $(gp_str "${title%%|*}, $bench (${title#*|})")
$line
plot $(gp_file "$out/figure.dat") index $i using 1:2 with points pt 7 ps 1.6 lc rgb '#0072B2' notitle, \
     '' index $i using 1:(\$4 > 0 ? NaN : \$2):3 with labels offset 0, -1.1 font ',8' notitle, \
     '' index $i using 1:(\$4 > 0 ? \$2 : NaN):3 with labels offset 0, 1.1 font ',8' notitle
"
done <"$out/figure.own"
plot_png quality.sh "$out/figure.png" 1260 $((440 * rows + 40)) <<EOF
set multiplot layout $rows,3 title $(gp_str "Speed against accuracy on ${GPU:-h200}, one request at a time (accuracy: published; speed: tessera)") font ",11"
set grid lc rgb "#dddddd"
set xlabel "Generated tokens/s"
set ylabel "Accuracy (%)"
set xrange [0:*]
set offsets 0, graph 0.12, graph 0.15, graph 0.15
$panels
unset multiplot
EOF
cat "$out/report.md"
