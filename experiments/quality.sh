#!/usr/bin/env bash
# experiments/quality.sh: speed against accuracy, the decoders and caches whose source publishes both, each point with its source.
#
# The published pairs are dInfer's Tables 1 and 2 (LLaDA-MoE, one sequence at a time): Fast-dLLM's
# threshold decoding and dInfer's hierarchical decoding, without and with a KV cache, and dInfer on
# the trajectory-distilled model; each gives a benchmark's score beside its tokens per forward (the
# decode profiles of sim/data/decode_profiles.json). tessera runs each one like for like: the same
# model, GPU, runtime (the engine's calibration), cost model and load, one request at a time (static
# batches of one), its cache as the policy (none: vanilla; Fast-dLLM's: dual; dInfer's: vicinity), its
# decoder at the profile's TPF. The accuracy is the published one (the run's expected_accuracy), not
# simulated; the throughput is tessera's. The model's own score (Table 1's LLaDA-MoE row, decoded
# without parallel decoding) is drawn as a line.
# Writes OUT/results.jsonl (one object a run: its configuration, task, throughput, latency, the
# expected accuracy and the profile's source), OUT/report.md and, with gnuplot, OUT/figure.png (a
# panel a task: accuracy against generated tokens/s).
#
# Usage: tessera exp run quality OUT [--force]   (TASKS="avg gsm8k humaneval"; GPU=h200; COST=calibrated;
#        LENGTHS=fixed:256,256; REQUESTS=8; SEED=1; or experiments/quality.sh OUT with TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run quality OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
# a configuration: its label, its cache's policy, its decoder and profile stem
configs=("Fast-dLLM, no cache|vanilla|threshold:fastdllm-moe-nocache"
         "dInfer, no cache|vanilla|hierarchical:dinfer-moe-nocache"
         "Fast-dLLM, cache|dual|threshold:fastdllm-moe-cache"
         "dInfer, cache|vicinity|hierarchical:dinfer-moe-cache"
         "dInfer TD, cache|vicinity|hierarchical:dinfer-td-moe-cache")
tasks=${TASKS:-avg gsm8k humaneval}
for task in $tasks; do
    for c in "${configs[@]}"; do
        IFS='|' read -r label policy decode <<<"$c"
        json=$("$bin" sim --model llada-moe-7b --gpu "${GPU:-h200}" --cost "${COST:-calibrated}" --policy "$policy" \
            --scheduler static --max-batch 1 --decode "$decode-$task" --max-num-logits 0 \
            --lengths "${LENGTHS:-fixed:256,256}" --requests "${REQUESTS:-8}" --rps 100 --seed "${SEED:-1}" \
            --quiet --no-progress --json) || { echo "quality.sh: $label on $task failed" >&2; exit 1; }
        src=$("$bin" list decode | awk -v s="${decode%%:*}:${decode#*:}-$task" '$1 == s { sub(/^.*  /, ""); print }')
        python3 - "$label" "$policy" "$decode-$task" "$task" "$src" "$json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
label, policy, decode, task, src, m = sys.argv[1:6] + [json.loads(sys.argv[6])]
if m["expected_accuracy"] is None:
    sys.exit("quality.sh: %s publishes no accuracy" % decode)
print(json.dumps({"config": label, "policy": policy, "decode": decode, "task": task, "benchmark": m["accuracy_task"],
                  "accuracy": m["expected_accuracy"], "throughput_tok_s": m["throughput_tok_s"],
                  "lat_mean_s": m["lat_mean_s"], "source": src}))
PY
    done
done
python3 - "$out" "${GPU:-h200}" "${COST:-calibrated}" <<'PY' || exit 1
import json, os, sys
out, gpu, cost = sys.argv[1:4]
# the model's own score, decoded without parallel decoding: dInfer Table 1, its LLaDA-MoE row
own = {"avg": 54.83, "crux-o": 42.38, "gsm8k": 82.41, "humaneval": 61.59, "ifeval": 59.33, "mbpp": 70.02, "lcb-v6": 13.27}
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
tasks = list(dict.fromkeys(r["task"] for r in rows))
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# Speed against accuracy: dInfer's published pairs, run like for like\n\n")
    f.write("LLaDA-MoE on %s (cost model %s), one request at a time. Accuracy: the published score at the decoder's "
            "setting (not simulated); throughput: tessera's.\n\n" % (gpu, cost))
    f.write("| task | configuration | tok/s | mean latency s | accuracy % | the model's own % | source |\n"
            "|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write("| %s | %s | %.1f | %.2f | %.2f | %.2f | %s |\n" % (r["benchmark"], r["config"], r["throughput_tok_s"],
                                                              r["lat_mean_s"], r["accuracy"], own[r["task"]], r["source"]))
    for t in tasks:
        rs = [r for r in rows if r["task"] == t]
        fast = max(rs, key=lambda r: r["throughput_tok_s"])
        best = max(rs, key=lambda r: r["accuracy"])
        f.write("\n%s: the fastest (%s, %.0f tok/s) scores %.2f, %+.2f points from the most accurate (%s, %.2f at "
                "%.0f tok/s).\n" % (rs[0]["benchmark"], fast["config"], fast["throughput_tok_s"], fast["accuracy"],
                                    fast["accuracy"] - best["accuracy"], best["config"], best["accuracy"],
                                    best["throughput_tok_s"]))
with open(os.path.join(out, "figure.dat"), "w") as d:
    for t in tasks:
        d.write("# %s\n" % t)
        for r in (r for r in rows if r["task"] == t):
            d.write("%g %g \"%s\" %d\n" % (r["throughput_tok_s"], r["accuracy"], r["config"], "TD" in r["config"]))
        d.write("\n\n")
with open(os.path.join(out, "figure.own"), "w") as d:
    for i, t in enumerate(tasks):
        d.write("%d %g %s\n" % (i, own[t], t))
PY
ntasks=$(wc -w <<<"$tasks")
panels=""
i=0
for task in $tasks; do
    bench=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["task"] == sys.argv[2]:
        print(o["benchmark"]); break' "$out/results.jsonl" "$task")
    own=$(awk -v t="$task" '$3 == t { print $2 }' "$out/figure.own")
    panels+="set title $(gp_str "$bench")
set arrow 1 from graph 0, first $own to graph 1, first $own nohead dt 2 lc rgb '#777777'
set label 1 $(gp_str "the model's own") at graph 0.98, first $own right offset 0, 0.6 tc rgb '#777777'
plot $(gp_file "$out/figure.dat") index $i using 1:2 with points pt 7 ps 1.6 lc rgb '#0072B2' notitle, \
     '' index $i using 1:(\$4 > 0 ? NaN : \$2):3 with labels offset 0, -1.1 font ',8' notitle, \
     '' index $i using 1:(\$4 > 0 ? \$2 : NaN):3 with labels offset 0, 1.1 font ',8' notitle
"
    i=$((i + 1))
done
plot_png quality.sh "$out/figure.png" $((420 * ntasks)) 460 <<EOF
set multiplot layout 1,$ntasks title $(gp_str "Speed against accuracy: LLaDA-MoE on ${GPU:-h200}, one request at a time (accuracy: dInfer Tables 1-2; speed: tessera)") font ",11"
set grid lc rgb "#dddddd"
set xlabel "Generated tokens/s"
set ylabel "Accuracy (%)"
set xrange [0:*]
set offsets 0, graph 0.12, graph 0.15, graph 0.15
$panels
unset multiplot
EOF
cat "$out/report.md"
