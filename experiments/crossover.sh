#!/usr/bin/env bash
# experiments/crossover.sh: a dLLM against autoregressive serving of the same transformer by batch size: where the AR model overtakes.
#
# The characterisation studies of dLLM serving (arXiv 2510.04146, 2510.18480) find that the dual cache
# and parallel decoding help mainly at small batches, and that at large batches autoregressive serving
# wins throughput: a dLLM step runs a block's rows for each request to commit a few tokens, an AR step
# one row for one token, so once the batch makes the steps compute-bound the AR model does less work a
# token. Here one transformer (LLaDA-8B's shape) is served four ways, each with request-level
# continuous batching capped at a batch size, every request there at the start (a closed loop of as
# many clients as the cap):
#   vanilla        no cache, one token a step (fixed:1): every step runs the whole sequence
#   dual           Fast-dLLM's dual cache, one token a step: a block's rows over the cached rest
#   dual-parallel  the dual cache with threshold decoding (DECODE: llada-gsm8k's TPF, 2.77 tokens a
#                  forward, drawn a step)
#   dpad-parallel  DPad's suffix dropout over the dual cache, with the same threshold decoding (policy
#                  dpad, its defaults)
#   d2f-parallel   D2F's pipelined blocks over the prefix cache, block-causal, the same threshold
#                  decoding (policy d2f, its paper's thresholds; a semi-activated block decoding half its
#                  count, an assumption): the newer mechanism that runs the fewest rows a token in
#                  `tessera exp run mechanisms`
#   ar             the same weights decoding autoregressively (policy ar: the prompt once, then one
#                  row a step over the K/V cache), as vLLM serves a model (--system vllm)
#   ar-dflash      the same AR model with a DFlash drafter (policy dflash: 5 layers of its shape, blocks of
#                  16, DFLASH_ACCEPT positions committed a cycle, 6.55 by default: DFlash's published
#                  acceptance length on GSM8K for Qwen3-8B at temperature 0; lossless under greedy
#                  decoding): the question a dLLM meets, as the model or as the drafter
# and then each at the card's limit: the request scheduler admitting as many as the card's memory holds
# (LIMIT requests, 1,024 by default; LIMIT=0 leaves it out). Priced by the calibration of tessera's
# engine for LLaDA-8B on the GPU (its decode steps of one row
# are profiled too); steps past the profiled 16,384 packed tokens, the largest batches' prefills, are
# extrapolated (--extrapolate), and COST=roofline prices everything with the roofline instead.
# Writes OUT/results.jsonl (a run: system, batch, the summary's figures), OUT/report.md (the throughput
# table, the crossover batch of each dLLM variant against AR, the energy a generated token, the checks)
# and, with gnuplot, OUT/figure.png.
#
# Usage: tessera exp run crossover OUT [--force]   (BATCHES="1 2 4 8 16 32 64 128"; LIMIT=1024; GPU=h200;
#        MODEL=llada-8b; LENGTHS=fixed:512,256; DECODE=threshold:llada-gsm8k; COST=calibrated;
#        DFLASH_ACCEPT=6.55; or
#        experiments/crossover.sh OUT with TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run crossover OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
batches=${BATCHES:-1 2 4 8 16 32 64 128}
gpu=${GPU:-h200} model=${MODEL:-llada-8b} lengths=${LENGTHS:-fixed:512,256} decode=${DECODE:-threshold:llada-gsm8k}
case ${COST:-calibrated} in
    calibrated) cost=(--cost calibrated --extrapolate) ;;
    roofline) cost=(--cost roofline) ;;
    *) echo "crossover.sh: COST=$COST: calibrated or roofline" >&2; exit 2 ;;
esac
gen=${lengths##*,}
# args SYSTEM: its options
args() {
    case $1 in
        vanilla) echo --policy vanilla --decode fixed:1 ;;
        dual) echo --policy dual --decode fixed:1 ;;
        dual-parallel) echo --policy dual --decode "$decode" ;;
        dpad-parallel) echo --policy dpad --dpad-cache dual --decode "$decode" ;;
        d2f-parallel) echo --policy d2f --decode "$decode" ;;
        ar) echo --system vllm ;;
        ar-dflash) echo --system vllm --policy dflash --dflash-accept "${DFLASH_ACCEPT:-6.55}" ;;
    esac
}
limit=${LIMIT:-1024}
# batch 0: the card's limit (--max-batch 0, the largest that fits), over LIMIT requests
for b in $batches $([ "$limit" -gt 0 ] && echo 0); do
    n=$((4 * b > 8 ? 4 * b : 8))
    [ "$b" = 0 ] && n=$limit
    for sys in vanilla dual dual-parallel dpad-parallel d2f-parallel ar ar-dflash; do
        # shellcheck disable=SC2046
        json=$("$bin" sim $(args $sys) --model "$model" --gpu "$gpu" --scheduler request --max-batch "$b" \
            --lengths "$lengths" --gen-len "$gen" --requests "$n" --rps 1000000 --seed 1 "${cost[@]}" \
            --quiet --no-progress --json) || { echo "crossover.sh: $sys at batch $b failed" >&2; exit 1; }
        python3 - "$sys" "$b" "$json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
sys_, b, m = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
print(json.dumps({"system": sys_, "batch": b, "mean_batch": m["request_steps"] / max(m["num_steps"], 1), "throughput_tok_s": m["throughput_tok_s"],
                  "lat_mean_s": m["lat_mean_s"], "num_steps": m["num_steps"], "num_finished": m["num_finished"],
                  "tokens_per_step": m["tokens_decoded"] / max(m["num_steps"], 1),
                  "energy_per_token_j": m["energy_per_token_j"]}))
PY
    done
done
python3 - "$out" "$model" "$gpu" "$lengths" "$decode" "${COST:-calibrated}" "${DFLASH_ACCEPT:-6.55}" <<'PY' || exit 1
import json, os, sys
out, model, gpu, lengths, decode, cost, tau = sys.argv[1:]
every = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
rows = [r for r in every if r["batch"] > 0]
limit = {r["system"]: r for r in every if r["batch"] == 0}
systems = ["vanilla", "dual", "dual-parallel", "dpad-parallel", "d2f-parallel", "ar", "ar-dflash"]
dllm = systems[:-2]
tput = {(r["system"], r["batch"]): r["throughput_tok_s"] for r in rows}
jtok = {(r["system"], r["batch"]): r["energy_per_token_j"] for r in rows}
batches = sorted({r["batch"] for r in rows})
def crossover(s, ar="ar"):
    """the smallest batch from which the AR model's (ar's) throughput is at least s's at every larger one"""
    for b in batches:
        if all(tput[(ar, c)] >= tput[(s, c)] for c in batches if c >= b):
            return b
    return None
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# A dLLM against AR serving of the same transformer, by batch size\n\n")
    f.write("%s on %s, prompts and answers %s, every request there at the start, request-level continuous "
            "batching capped at the batch size; cost %s. Throughput in generated tokens/s; the AR model "
            "over each dLLM variant in parentheses.\n\n" % (model, gpu, lengths, cost))
    f.write("| batch | vanilla | dual | dual-parallel (%s) | dpad-parallel | d2f-parallel | ar |\n|---|---|---|---|---|---|---|\n"
            % decode)
    for b in batches:
        cells = ["%.0f (%.2fx)" % (tput[(s, b)], tput[("ar", b)] / tput[(s, b)]) for s in dllm]
        f.write("| %d | %s | %.0f |\n" % (b, " | ".join(cells), tput[("ar", b)]))
    f.write("\n")
    for s in dllm:
        c = crossover(s)
        f.write("- %s: %s\n" % (s, "the AR model is ahead from batch %d on" % c if c else "ahead of the AR model at every batch"))
    lo, hi = batches[0], batches[-1]
    best = max(dllm, key=lambda s: tput[(s, lo)])
    f.write("\n## The dLLM as the model, or as the drafter\n\n"
            "The AR model with a DFlash drafter (5 layers of the model's shape, blocks of 16, %s positions "
            "committed a cycle on average: tau), against the AR model alone and the fastest dLLM variant at "
            "batch %d (%s). A cycle is the drafter's forward and the target's verify of the block, priced "
            "by the same cost model.\n\n| batch | ar | ar-dflash | DFlash over AR | %s | ar-dflash over it |\n"
            "|---|---|---|---|---|---|\n" % (tau, lo, best, best))
    for b in batches:
        f.write("| %d | %.0f | %.0f | %.2fx | %.0f | %.2fx |\n" % (b, tput[("ar", b)], tput[("ar-dflash", b)],
                tput[("ar-dflash", b)] / tput[("ar", b)], tput[(best, b)], tput[("ar-dflash", b)] / tput[(best, b)]))
    stop = next((b for b in batches if all(tput[("ar", c)] >= tput[("ar-dflash", c)] for c in batches if c >= b)), None)
    f.write("\n- the drafter %s\n" % ("stops paying from batch %d on: AR alone serves as many tokens/s or more" % stop
                                      if stop else "pays at every batch here: its speedup over AR at batch %d is %.2fx"
                                      % (hi, tput[("ar-dflash", hi)] / tput[("ar", hi)])))
    over = [b for b in batches if tput[("ar-dflash", b)] > tput[(best, b)]]
    f.write("- the AR model with the drafter is ahead of the fastest dLLM variant at %s\n"
            % ("batches " + ", ".join(map(str, over)) if over else "no batch"))
    checks = [
        ("at batch %d the dLLM with its cache and parallel decoding is ahead of AR" % lo,
         tput[("dual-parallel", lo)] > tput[("ar", lo)]),
        ("at batch %d AR is ahead of every dLLM variant" % hi, all(tput[("ar", hi)] > tput[(s, hi)] for s in dllm)),
        ("the newer mechanism (DPad over the dual cache) is ahead of the dual cache at batch %d, and AR still overtakes it"
         % lo, tput[("dpad-parallel", lo)] > tput[("dual-parallel", lo)] and crossover("dpad-parallel") is not None),
        ("D2F's pipelined blocks move the crossover to a larger batch than the dual cache's parallel decoding, "
         "and AR still overtakes them", crossover("d2f-parallel") is not None and crossover("dual-parallel") is not None
         and crossover("d2f-parallel") > crossover("dual-parallel")),
        ("the dLLM's lead shrinks with the batch: AR over dual-parallel grows from batch %d to %d" % (lo, hi),
         tput[("ar", hi)] / tput[("dual-parallel", hi)] > tput[("ar", lo)] / tput[("dual-parallel", lo)]),
        ("DFlash's speedup over AR shrinks as the batch grows, from batch %d to %d" % (lo, hi),
         tput[("ar-dflash", hi)] / tput[("ar", hi)] < tput[("ar-dflash", lo)] / tput[("ar", lo)]),
    ]
    if limit:
        f.write("\nAt the card's limit (the request scheduler admitting as many as its memory holds), tokens/s "
                "at the batch it ran on average:\n\n| system | tokens/s | mean batch |\n|---|---|---|\n")
        for s in systems:
            f.write("| %s | %.0f | %.1f |\n" % (s, limit[s]["throughput_tok_s"], limit[s]["mean_batch"]))
        checks.append(("at the card's limit AR serves more tokens/s than every dLLM variant",
                       all(limit["ar"]["throughput_tok_s"] > limit[s]["throughput_tok_s"] for s in dllm)))
    f.write("\nEnergy, joules a generated token (sim/docs/cost-model.md, \"Energy\"):\n\n")
    f.write("| batch | vanilla | dual | dual-parallel | dpad-parallel | d2f-parallel | ar | ar-dflash |\n|---|---|---|---|---|---|---|---|\n")
    for b in batches:
        f.write("| %d | %s |\n" % (b, " | ".join("%.3f" % jtok[(s, b)] for s in systems)))
    f.write("\n| trend the studies report | in tessera |\n|---|---|\n")
    for text, ok in checks:
        f.write("| %s | %s |\n" % (text, "holds" if ok else "does not hold"))
    with open(os.path.join(out, "figure.dat"), "w") as d:
        for s in systems:
            d.write("# %s\n" % s)
            for b in batches:
                d.write("%d %g\n" % (b, tput[(s, b)]))
            d.write("\n\n")
PY
plot_png crossover.sh "$out/figure.png" 800 640 <<EOF
set title $(gp_str "$model on $gpu: a dLLM against AR serving by batch size")
set xlabel "Batch size (requests running at once)"
set ylabel "Throughput (generated tokens/s)"
set logscale x 2
set logscale y
set key below maxcols 2
set grid
plot $(gp_file "$out/figure.dat") index 0 using 1:2 with linespoints lc rgb '#999999' pt 6 title "dLLM, no cache, one token a step", \
     "" index 1 using 1:2 with linespoints lc rgb '#0072B2' pt 5 title "dLLM, dual cache, one token a step", \
     "" index 2 using 1:2 with linespoints lc rgb '#009E73' pt 7 title "dLLM, dual cache, parallel decoding", \
     "" index 3 using 1:2 with linespoints lc rgb '#CC79A7' pt 13 title "dLLM, DPad over the dual cache, parallel decoding", \
     "" index 4 using 1:2 with linespoints lc rgb '#E69F00' pt 11 title "dLLM, D2F's pipelined blocks, parallel decoding", \
     "" index 5 using 1:2 with linespoints lc rgb '#D55E00' pt 9 lw 2 title "AR (the same transformer)", \
     "" index 6 using 1:2 with linespoints lc rgb '#000000' pt 15 lw 2 dt 2 title "AR with a DFlash drafter (lossless)"
EOF
echo "crossover: $out/report.md, $out/results.jsonl$([ -s "$out/figure.png" ] && echo ", $out/figure.png")"
