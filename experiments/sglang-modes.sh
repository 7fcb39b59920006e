#!/usr/bin/env bash
# experiments/sglang-modes.sh: SGLang's dLLM path, first done first out against sync, throughput and latency by load.
#
# Beyond the papers: the `sglang` preset (LLaDA2.0-mini on SGLang's dLLM path, release 0.5.23) run
# once with --fdfo 1 (first done, first out, SGLang's default: a forward a round, a request leaving
# its block as soon as it resolves) and once with --fdfo 0 (sync: a round runs its requests' blocks
# to the end, those done early padded), at the same arrival rates, lengths and concurrency cap
# (--max-running-requests MRR; SGLang's dLLM default, 1, makes the two modes one). For each run: throughput,
# mean and p99 latency, forwards, padded rows and stalls (request-rounds a running request sat out
# while others prefilled, SGLang's prefill first). On an H200 (GPU's default) each step is SGLang's own
# round, measured whole (--impl sglang, sim/data/rounds/): its host work, which first done first out pays
# every forward and sync once a block, included; the default lengths (LENGTHS: prompts of 81-2,000
# tokens) are those SGLang itself ran with (experiments/records/sglang-h200), within the rounds'
# measured lengths. On another card the forwards are priced as tessera's engine runs them and SGLang's
# host work is not priced (sim/docs/steps.md).
# An editing decoder (SGLang's JointThreshold, LLaDA2.1; JointThresholdInDel, LLaDA2.2) runs forwards
# after a block's last commit, as many as the model edits, which no published table gives: the report
# sweeps them (--post-edit, POST_EDIT, at EDIT_RPS under first done, first out), an assumption.
# SGLang's open PR #33190 runs a first-done-first-out round's frozen batch for K forwards
# (SGLANG_DLLM_FDFO_STEPS_PER_ROUND; --steps-per-round): the report sweeps K (STEPS, at STEPS_RPS),
# its host work paid once a round against the rows that wait padded and the queue held to the round's
# end.
# Writes OUT/results.jsonl (one object a run), OUT/edits.jsonl (the sweep), OUT/report.md (the tables and
# the ratios) and, with gnuplot, OUT/figure.png (throughput and mean latency by rate, the two modes side by
# side).
#
# Usage: tessera exp run sglang-modes OUT [--force]   (RPS="0.5 1 2 4 8"; MRR=16; REQUESTS=300; GPU=h200;
#        LENGTHS=lognormal:6,0.7,5,0.6; SEED=1; POST_EDIT="0 2 4 8 16"; EDIT_RPS=1; STEPS="1 2 4 8"; STEPS_RPS="1 4";
#        or experiments/sglang-modes.sh OUT with
#        TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run sglang-modes OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
for rps in ${RPS:-0.5 1 2 4 8}; do
    for fdfo in 1 0; do
        json=$("$bin" sim --system sglang --fdfo "$fdfo" --max-running-requests "${MRR:-16}" --gpu "${GPU:-h200}" \
            --lengths "${LENGTHS:-lognormal:6,0.7,5,0.6}" --rps "$rps" --requests "${REQUESTS:-300}" --seed "${SEED:-1}" \
            --quiet --no-progress --json) || { echo "sglang-modes.sh: fdfo $fdfo at $rps req/s failed" >&2; exit 1; }
        python3 - "$fdfo" "$rps" "$json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
fdfo, rps, m = int(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
print(json.dumps({"mode": "fdfo" if fdfo else "sync", "rps": rps, "throughput_tok_s": m["throughput_tok_s"],
                  "lat_mean_s": m["lat_mean_s"], "lat_p99_s": m["lat_p99_s"], "num_steps": m["num_steps"],
                  "request_steps": m["request_steps"], "num_stalls": m["num_stalls"],
                  "num_finished": m["num_finished"], "num_rejected": m["num_rejected"]}))
PY
    done
done
: >"$out/edits.jsonl"
for edits in ${POST_EDIT:-0 2 4 8 16}; do
    "$bin" sim --system sglang --post-edit "$edits" --max-running-requests "${MRR:-16}" --gpu "${GPU:-h200}" \
        --lengths "${LENGTHS:-lognormal:6,0.7,5,0.6}" --rps "${EDIT_RPS:-1}" --requests "${REQUESTS:-300}" --seed "${SEED:-1}" \
        --quiet --no-progress --json | python3 -c 'import json, sys
m = json.load(sys.stdin)
print(json.dumps({"post_edit": int(sys.argv[1]), "throughput_tok_s": m["throughput_tok_s"], "lat_mean_s": m["lat_mean_s"],
                  "lat_p99_s": m["lat_p99_s"], "num_steps": m["num_steps"]}))' "$edits" >>"$out/edits.jsonl" ||
        { echo "sglang-modes.sh: --post-edit $edits failed" >&2; exit 1; }
done
: >"$out/steps.jsonl"
for rps in ${STEPS_RPS:-1 4}; do
    for k in ${STEPS:-1 2 4 8}; do
        "$bin" sim --system sglang --steps-per-round "$k" --max-running-requests "${MRR:-16}" --gpu "${GPU:-h200}" \
            --lengths "${LENGTHS:-lognormal:6,0.7,5,0.6}" --rps "$rps" --requests "${REQUESTS:-300}" --seed "${SEED:-1}" \
            --quiet --no-progress --json | python3 -c 'import json, sys
m = json.load(sys.stdin)
print(json.dumps({"steps_per_round": int(sys.argv[1]), "rps": float(sys.argv[2]), "throughput_tok_s": m["throughput_tok_s"],
                  "lat_mean_s": m["lat_mean_s"], "lat_p99_s": m["lat_p99_s"], "num_steps": m["num_steps"],
                  "host_s": m["op_seconds"]["host"]}))' "$k" "$rps" >>"$out/steps.jsonl" ||
            { echo "sglang-modes.sh: --steps-per-round $k at $rps req/s failed" >&2; exit 1; }
    done
done
python3 - "$out" "${MRR:-16}" "${GPU:-h200}" "${LENGTHS:-lognormal:6,0.7,5,0.6}" <<'PY' || exit 1
import json, os, sys
out, mrr, gpu, lengths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
by = {(r["mode"], r["rps"]): r for r in rows}
rates = sorted({r["rps"] for r in rows})
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# SGLang's dLLM path: first done, first out against sync\n\n")
    f.write("LLaDA2.0-mini on %s, %s lengths, at most %s running requests. %s\n\n" % (
        gpu, lengths, mrr, "Each step is SGLang's own round, measured whole (--impl sglang: its forward and its "
        "scheduler's host work between rounds)." if gpu == "h200" else "Each step is priced as tessera's engine runs "
        "the forward; SGLang's host work between rounds is not priced (its rounds were measured on an H200 only)."))
    f.write("| req/s | mode | tok/s | mean latency s | p99 latency s | forwards | stalls |\n|---|---|---|---|---|---|---|\n")
    for x in rates:
        for mode in ("fdfo", "sync"):
            r = by[(mode, x)]
            f.write("| %g | %s | %.1f | %.2f | %.2f | %d | %d |\n" % (x, mode, r["throughput_tok_s"], r["lat_mean_s"],
                                                               r["lat_p99_s"], r["num_steps"], r["num_stalls"]))
    f.write("\nfirst done, first out over sync, rate by rate:\n\n| req/s | throughput | mean latency | forwards |\n"
            "|---|---|---|---|\n")
    for x in rates:
        a, b = by[("fdfo", x)], by[("sync", x)]
        f.write("| %g | %.3fx | %.3fx | %.3fx |\n" % (x, a["throughput_tok_s"] / b["throughput_tok_s"],
                                                      a["lat_mean_s"] / b["lat_mean_s"], a["num_steps"] / b["num_steps"]))
    edits = [json.loads(l) for l in open(os.path.join(out, "edits.jsonl"))]
    base = edits[0]
    f.write("\nAn editing decoder's forwards after a block's last commit (--post-edit; first done, first out at "
            "%s req/s): how many the model runs is an assumption, swept here; SGLang caps JointThreshold's at 16.\n\n"
            "| post-edit forwards a block | tok/s | mean latency s | p99 latency s | forwards | throughput over none |\n"
            "|---|---|---|---|---|---|\n" % os.environ.get("EDIT_RPS", "1"))
    for r in edits:
        f.write("| %d | %.1f | %.2f | %.2f | %d | %.3fx |\n" % (r["post_edit"], r["throughput_tok_s"], r["lat_mean_s"],
                                                               r["lat_p99_s"], r["num_steps"],
                                                               r["throughput_tok_s"] / base["throughput_tok_s"]))
    steps = [json.loads(l) for l in open(os.path.join(out, "steps.jsonl"))]
    k0 = min(r["steps_per_round"] for r in steps)
    one = {r["rps"]: r for r in steps if r["steps_per_round"] == k0}
    f.write("\nForwards a first-done-first-out round (--steps-per-round K, SGLang's open PR #33190): the round's "
            "frozen batch runs up to K forwards, the host's work between rounds paid once, a resolved block's row "
            "waiting padded and the queue held to the round's end.\n\n| req/s | K | tok/s | mean latency s | p99 "
            "latency s | forwards | host s | throughput over K = %d |\n|---|---|---|---|---|---|---|---|\n" % k0)
    for r in steps:
        f.write("| %g | %d | %.1f | %.2f | %.2f | %d | %.1f | %.3fx |\n" % (r["rps"], r["steps_per_round"],
                r["throughput_tok_s"], r["lat_mean_s"], r["lat_p99_s"], r["num_steps"], r["host_s"],
                r["throughput_tok_s"] / one[r["rps"]]["throughput_tok_s"]))
with open(os.path.join(out, "figure.dat"), "w") as d:
    for mode in ("fdfo", "sync"):
        d.write("# %s\n" % mode)
        for x in rates:
            r = by[(mode, x)]
            d.write("%g %g %g %g\n" % (x, r["throughput_tok_s"], r["lat_mean_s"], r["lat_p99_s"]))
        d.write("\n\n")
PY
# curves COLUMN: the two modes' curves of figure.dat's column COLUMN, as a gnuplot plot's arguments
curves() {
    echo "$(gp_file "$out/figure.dat") index 0 using 1:$1 with linespoints lc rgb '#D55E00' pt 7 title \"first done, first out (--fdfo 1)\", \
          \"\" index 1 using 1:$1 with linespoints lc rgb '#0072B2' pt 5 dt 2 title \"sync (--fdfo 0)\""
}
{ echo "set bmargin 6"
  rate_panels "SGLang's dLLM path: LLaDA2.0-mini on ${GPU:-h200}, ${LENGTHS:-lognormal:6,0.7,5,0.6} lengths, at most ${MRR:-16} running" \
      "set key outside below center horizontal"; } | plot_png sglang-modes.sh "$out/figure.png" 1100 480
cat "$out/report.md"
