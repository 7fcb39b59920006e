#!/usr/bin/env bash
# experiments/dgemma-engines.sh: DiffusionGemma served by SGLang and by vLLM, throughput and latency by load.
#
# Beyond the papers: the two engines' DiffusionGemma presets at the same arrival rates and lengths, each
# at its own defaults and at a common concurrency, like for like in all else (the roofline on GPU; the two
# runtimes price a forward alike, tessera's engine under CUDA graphs with the samplers' copies and a
# self-conditioning canvas a request):
#   vllm       --system diffusion-gemma --max-batch 8: vLLM's runner (0.33.0), continuous batching, a
#              canvas's K/V written by a commit pass of its own; 8 is what vLLM sets where
#              --max-num-seqs is not given
#   vllm-4     the same at 4, the value vLLM's recipe passes
#   sglang-1   --system sglang-dgemma: SGLang's (0.5.23) first done, first out at its dLLM default of one
#              request at a time
#   sglang-8   the same at --max-running-requests 8
#   sync-8     SGLang's sync mode (--fdfo 0) at 8
# SGLang's finished canvases are encoded again by EXTEND forwards of their own, which run as prefill rounds
# (prefill first: the canvases in flight wait), where vLLM's commit pass rides in a step beside the others.
# A canvas takes 48 forwards in both (TPF 256 / 48, the presets' assumption); outputs are rounded up to
# whole canvases (--gen-len 0), as both engines denoise a whole canvas.
# Writes OUT/results.jsonl (one object a run), OUT/report.md (the table and the ratios) and, with gnuplot,
# OUT/figure.png (throughput and mean latency by rate).
#
# Usage: tessera exp run dgemma-engines OUT [--force]   (RPS="0.25 0.5 1 2 4"; REQUESTS=200; GPU=h200;
#        LENGTHS=lognormal:6,0.7,5,0.6; SEED=1; or experiments/dgemma-engines.sh OUT with TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run dgemma-engines OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
configs=("vllm:--system diffusion-gemma --max-batch 8" "vllm-4:--system diffusion-gemma --max-batch 4"
         "sglang-1:--system sglang-dgemma" "sglang-8:--system sglang-dgemma --max-running-requests 8"
         "sync-8:--system sglang-dgemma --max-running-requests 8 --fdfo 0")
: >"$out/results.jsonl"
for rps in ${RPS:-0.25 0.5 1 2 4}; do
    for c in "${configs[@]}"; do
        name=${c%%:*}
        read -r -a opts <<<"${c#*:}"
        json=$("$bin" sim "${opts[@]}" --gpu "${GPU:-h200}" --lengths "${LENGTHS:-lognormal:6,0.7,5,0.6}" --gen-len 0 \
            --rps "$rps" --requests "${REQUESTS:-200}" --seed "${SEED:-1}" --quiet --no-progress --json) ||
            { echo "dgemma-engines.sh: $name at $rps req/s failed" >&2; exit 1; }
        python3 - "$name" "$rps" "$json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
name, rps, m = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
print(json.dumps({"config": name, "rps": rps, "throughput_tok_s": m["throughput_tok_s"], "lat_mean_s": m["lat_mean_s"],
                  "lat_p99_s": m["lat_p99_s"], "num_steps": m["num_steps"], "num_stalls": m["num_stalls"],
                  "req_s": m["req_s"], "num_finished": m["num_finished"], "num_rejected": m["num_rejected"],
                  "impl": m["impl"], "cost": m["cost"]}))
PY
    done
done
python3 - "$out" "${GPU:-h200}" "${LENGTHS:-lognormal:6,0.7,5,0.6}" <<'PY' || exit 1
import json, os, sys
out, gpu, lengths = sys.argv[1:4]
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
names = ["vllm", "vllm-4", "sglang-1", "sglang-8", "sync-8"]
what = {"vllm": "vLLM, 8 running", "vllm-4": "vLLM, 4 running", "sglang-1": "SGLang first done first out, 1 running",
        "sglang-8": "SGLang first done first out, 8 running", "sync-8": "SGLang sync, 8 running"}
by = {(r["config"], r["rps"]): r for r in rows}
rates = sorted({r["rps"] for r in rows})
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# DiffusionGemma served by SGLang and by vLLM\n\n")
    f.write("DiffusionGemma 26B-A4B on %s, %s lengths, outputs rounded up to canvases of 256, 48 forwards a canvas "
            "(an assumption), cost %s. The arrivals are drawn (Poisson at the rate), and a configuration that keeps up "
            "finishes them at the drawn rate; one that finishes fewer a second is past what it serves, and its "
            "latency grows with the run's length.\n\n" % (gpu, lengths, rows[0]["cost"]))
    f.write("| req/s | engine | finished req/s | tok/s | mean latency s | p99 latency s | forwards | stalls |\n"
            "|---|---|---|---|---|---|---|---|\n")
    for x in rates:
        for n in names:
            r = by[(n, x)]
            f.write("| %g | %s | %.2f | %.1f | %.2f | %.2f | %d | %d |\n" % (
                x, what[n], r["req_s"], r["throughput_tok_s"], r["lat_mean_s"], r["lat_p99_s"], r["num_steps"],
                r["num_stalls"]))
    f.write("\nEach engine at its default (SGLang one request at a time, vLLM 8) and at the same 8, rate by rate:\n\n"
            "| req/s | SGLang's default over vLLM's: mean latency | SGLang over vLLM at 8: throughput | mean latency |\n"
            "|---|---|---|---|\n")
    for x in rates:
        v, s1, s8 = by[("vllm", x)], by[("sglang-1", x)], by[("sglang-8", x)]
        f.write("| %g | %.2fx | %.3fx | %.3fx |\n" % (x, s1["lat_mean_s"] / v["lat_mean_s"],
                                                     s8["throughput_tok_s"] / v["throughput_tok_s"],
                                                     s8["lat_mean_s"] / v["lat_mean_s"]))
with open(os.path.join(out, "figure.dat"), "w") as d:
    for n in names:
        d.write("# %s\n" % n)
        for x in rates:
            r = by[(n, x)]
            d.write("%g %g %g %g\n" % (x, r["throughput_tok_s"], r["lat_mean_s"], r["lat_p99_s"]))
        d.write("\n\n")
PY
# curves COLUMN: the five configurations' curves of figure.dat's column COLUMN, as a gnuplot plot's arguments
curves() {
    local f
    f=$(gp_file "$out/figure.dat")
    echo "$f index 0 using 1:$1 with linespoints lc rgb '#0072B2' pt 5 title \"vLLM, 8 (its default)\", \
          \"\" index 1 using 1:$1 with linespoints lc rgb '#56B4E9' pt 4 dt 2 title \"vLLM, 4 (its recipe)\", \
          \"\" index 2 using 1:$1 with linespoints lc rgb '#D55E00' pt 7 title \"SGLang first done first out, 1 (its default)\", \
          \"\" index 3 using 1:$1 with linespoints lc rgb '#E69F00' pt 6 dt 2 title \"SGLang first done first out, 8\", \
          \"\" index 4 using 1:$1 with linespoints lc rgb '#009E73' pt 9 dt 3 title \"SGLang sync, 8\""
}
rate_panels "DiffusionGemma on ${GPU:-h200}, SGLang and vLLM at N requests running: ${LENGTHS:-lognormal:6,0.7,5,0.6} lengths, 48 forwards a canvas" \
    'set key inside top left Left reverse font ",9"' | plot_png dgemma-engines.sh "$out/figure.png" 1100 480
cat "$out/report.md"
