#!/usr/bin/env bash
# experiments/lookahead.sh: the lookahead scheduler against dLLM-Serve's phase scheduler, stalls and latency by load.
#
# Beyond the papers (dLLM-Serve section 7 names admission by projection as future work): dLLM-Serve
# as the `dllm-serve` preset runs it (LLaDA-8B, RTX 4090, its sparse cache and runtime, LiveBench's
# lengths), once with its phase scheduler and once with `--scheduler lookahead`, over arrival rates,
# under the preset's fixed:1 decoding (where lookahead's projections are exact) and under threshold
# decoding (llada-gsm8k's TPF, drawn: projections at the mean). For each run: the stalls (request-steps
# a running request sat out for the step's token budget) per thousand request-steps, throughput,
# mean and p99 latency. The KV pool is what the whole card leaves (GPU_UTIL=0, tessera's rule), so
# that the token budget, not the pool, bounds admission: with dLLM-Serve's own rule (GPU_UTIL=0.8,
# the preset's) the RTX 4090's pool is 3.3 GiB, which admits too few requests at once for their
# Refresh steps to collide, and neither scheduler stalls under fixed:1.
# Writes OUT/results.jsonl (one object a run: scheduler, decode, rps and the summary's figures),
# OUT/report.md (the table) and, with gnuplot, OUT/figure.png (stalls and p99 latency by rate).
#
# Usage: tessera exp run lookahead OUT [--force]   (RPS="0.1 0.2 0.3 0.5 1.0"; REQUESTS=200; GPU=rtx4090;
#        LENGTHS=livebench; SEED=1; GPU_UTIL=0; or experiments/lookahead.sh OUT with TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run lookahead OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
decodes="fixed:1 threshold:llada-gsm8k"
for decode in $decodes; do
    for rps in ${RPS:-0.1 0.2 0.3 0.5 1.0}; do
        for sched in phase lookahead; do
            json=$("$bin" sim --system dllm-serve --scheduler "$sched" --decode "$decode" --gpu "${GPU:-rtx4090}" \
                --lengths "${LENGTHS:-livebench}" --rps "$rps" --requests "${REQUESTS:-200}" --seed "${SEED:-1}" \
                --gpu-memory-utilization "${GPU_UTIL:-0}" \
                --quiet --no-progress --json) || { echo "lookahead.sh: $sched, $decode at $rps req/s failed" >&2; exit 1; }
            python3 - "$sched" "$decode" "$rps" "$json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
sched, decode, rps, m = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4])
print(json.dumps({"scheduler": sched, "decode": decode, "rps": rps,
                  "stalls_per_1000": 1000.0 * m["num_stalls"] / max(m["request_steps"], 1),
                  "num_stalls": m["num_stalls"], "num_preemptions": m["num_preemptions"],
                  "throughput_tok_s": m["throughput_tok_s"], "lat_mean_s": m["lat_mean_s"],
                  "lat_p99_s": m["lat_p99_s"], "num_finished": m["num_finished"]}))
PY
        done
    done
done
python3 - "$out" <<'PY' || exit 1
import json, os, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# The lookahead scheduler against phase (dLLM-Serve's setting)\n\n")
    f.write("| decode | req/s | scheduler | stalls / 1000 request-steps | preemptions | tok/s | mean latency s | p99 latency s |\n")
    f.write("|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write("| %s | %g | %s | %.2f | %d | %.1f | %.1f | %.1f |\n" % (
            r["decode"], r["rps"], r["scheduler"], r["stalls_per_1000"], r["num_preemptions"],
            r["throughput_tok_s"], r["lat_mean_s"], r["lat_p99_s"]))
    # per decode model, lookahead against phase over the rates
    for dec in sorted({r["decode"] for r in rows}):
        p = {r["rps"]: r for r in rows if r["decode"] == dec and r["scheduler"] == "phase"}
        l = {r["rps"]: r for r in rows if r["decode"] == dec and r["scheduler"] == "lookahead"}
        rates = sorted(set(p) & set(l))
        if not rates:
            continue
        tput = [l[x]["throughput_tok_s"] / p[x]["throughput_tok_s"] for x in rates]
        f.write("\n%s: stalls %d under phase, %d under lookahead, over %d rates; lookahead's throughput "
                "%.3f-%.3fx phase's, its p99 latency %.3f-%.3fx.\n" % (
                    dec, sum(p[x]["num_stalls"] for x in rates), sum(l[x]["num_stalls"] for x in rates), len(rates),
                    min(tput), max(tput), min(l[x]["lat_p99_s"] / p[x]["lat_p99_s"] for x in rates),
                    max(l[x]["lat_p99_s"] / p[x]["lat_p99_s"] for x in rates)))
    # the gnuplot data: one block a (decode, scheduler)
    with open(os.path.join(out, "figure.dat"), "w") as d:
        for dec in sorted({r["decode"] for r in rows}):
            for sch in ("phase", "lookahead"):
                d.write("# %s %s\n" % (dec, sch))
                for r in sorted((r for r in rows if r["decode"] == dec and r["scheduler"] == sch), key=lambda r: r["rps"]):
                    d.write("%g %g %g\n" % (r["rps"], r["stalls_per_1000"], r["lat_p99_s"]))
                d.write("\n\n")
PY
# curves COLUMN: the four runs' curves of figure.dat's column COLUMN, as a gnuplot plot's arguments
# (a colour and marker a decoder and scheduler, phase's dashed)
curves() {
    echo "$(gp_file "$out/figure.dat") index 0 using 1:$1 with linespoints lc rgb '#0072B2' pt 7 dt 2 title \"fixed:1, phase\", \
          \"\" index 1 using 1:$1 with linespoints lc rgb '#D55E00' pt 5 title \"fixed:1, lookahead\", \
          \"\" index 2 using 1:$1 with linespoints lc rgb '#009E73' pt 9 dt 2 title \"threshold, phase\", \
          \"\" index 3 using 1:$1 with linespoints lc rgb '#CC79A7' pt 13 title \"threshold, lookahead\""
}
plot_png lookahead.sh "$out/figure.png" 1100 480 <<EOF
set bmargin 7
set multiplot layout 1,2 title $(gp_str "The lookahead scheduler against phase: dLLM-Serve on ${GPU:-rtx4090}, ${LENGTHS:-livebench} lengths") font ",12"
set xrange [0:*]
set yrange [0:*]
set grid lc rgb "#dddddd"
set pointsize 1.4
set xlabel "Request rate (req/s)"
set key outside below center horizontal maxcols 2
set ylabel "Stalls per 1,000 request-steps"
set title "Running requests held back by the token budget"
plot $(curves 2)
unset key
set ylabel "p99 latency (s)"
set title "p99 request latency"
plot $(curves 3)
unset multiplot
EOF
cat "$out/report.md"
