#!/usr/bin/env bash
# experiments/mechanisms.sh: every caching, sparsity and decoding mechanism in tessera's tables on one workload and card.
#
# One H100 serving 100 ShareGPT-shaped requests at 1 req/s (256 generated positions each, blocks of
# 32, request-level continuous batching), priced by the calibration of tessera's engine for each model
# on the H100 (LLaDA2.0-mini's carried from the H200). The mechanisms fall into model groups,
# since a block-causal mechanism needs a block-causal model; within a group the decode threshold, the
# knob the papers tie speed to, is held at one value:
#   LLaDA-8B (bidirectional), threshold decoding at 0.9 (Fast-dLLM's GSM8K profile, TPF 2.77):
#     vanilla (no cache), prefix, dual (Fast-dLLM), vicinity (dInfer), sparse (Sparse-dLLM, half the
#     cache kept), dllm-cache (dLLM-Cache), sparsed (SparseD: no cache, its attention sparse after the
#     first fifth of the steps), dpad (DPad, no cache and over the dual cache), d2cache
#     (d2Cache, its one block of 256: its rollout's own cost unpriced), elastic (Elastic-Cache, a
#     window of 16, refreshing every 32 steps past its first 16 layers: both assumptions), dkv-cache
#     (dKV-Cache-Decode, a refresh every 8 steps: its Table 1's), and the
#     dual cache with Prophet's early commit (--early-commit PROPHET: the share decoded when it fires,
#     an assumption), and d2f (D2F's pipelined blocks over the prefix cache, its paper's tau_add 0.1
#     and tau_act 0.95; the share of its count a semi-activated block decodes, an assumption, swept
#     over 0, 0.5 and 1)
#   SDAR-8B (block-causal), threshold decoding (SDAR's low profile, TPF 2.0): block (LMDeploy),
#     block+delayed and focus (FOCUS), fdllm-v2 (Fast-dLLM v2: sub-blocks of 8 in blocks of 32, with
#     and without its DualCache), block with Prophet's early commit, herald (HERALD: the K/V on
#     the host, a tenth of it fetched a block over PCIe, scored by the host: its defaults), and block
#     with Spiffy's drafts (3 draft blocks a forward, TPF 2.9: the low profile's 2.0 times 1.45, the
#     middle of the 1.3-1.6 its paper reports over threshold unmasking, an assumption), and
#     linear-spec (LinearSpec: a draft and a verify forward of 32 rows a round, 5.46 positions a
#     round: NLD-8B's acceptance, an assumption)
#   LLaDA2.0-mini (block-causal MoE), block: LLaDA2.0's threshold decoding (TPF 2.55) against
#     LLaDA2.1's token editing in its Quality and Speed modes (TPF 3.12, 5.34: their model card's); and
#     MBD-LMs' base one block at a time (TPF 3.47) against MBD-LLaDA2-Mini's multi-block decoding (Diffulex's
#     multi_bd as policy d2f: a buffer of 2 blocks, padded, tau_add 0.1, tau_semi 0.9, TPF 6.19 the step's:
#     SJTU-DENG-Lab/mbd-lms README at 030ddee8, the average of GSM8K, MATH-500, MBPP+ and HumanEval+)
#   Fast-dLLM v2 7B (its own model and H100 calibration), one token a step (its GSM8K setting):
#     block diffusion against fdllm-v2 with and without its DualCache
#   LLaDA-8B's shape decoding autoregressively: the AR baseline (policy ar) against it with a DFlash
#     drafter (policy dflash: 5 drafter layers of its shape, blocks of 16, 6.55 positions a cycle: DFlash's
#     published acceptance length on GSM8K for Qwen3-8B; lossless under greedy verification)
# Each mechanism runs twice: at the rate (its mean and p99 latency, the KV pool's peak in use, and
# the rows the decoding steps run for each token they decode: FOCUS's redundancy, the work a mechanism
# saves) and with every request there at once (its throughput: what the card serves flat out).
# HERALD also runs over the context, against block diffusion (SDAR-8B, prompts of 2k, 8k and 30k
# tokens, flat out), the table the abstract's claim stands beside; and DiffusionGemma on vLLM
# (--system diffusion-gemma) under each of its runner's self-conditioning buffers, flat out.
# Writes OUT/results.jsonl (a run a line), OUT/report.md (the table and the checks) and, with
# gnuplot, OUT/figure.png.
#
# Usage: tessera exp run mechanisms OUT [--force]   (REQUESTS=100; RPS=1; PROPHET=0.45; GPU=h100;
#        COST=calibrated|roofline; or experiments/mechanisms.sh OUT with TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run mechanisms OUT [--force]}
bin=${TESSERA:-build/tessera}
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
requests=${REQUESTS:-100} rps=${RPS:-1} prophet=${PROPHET:-0.45} gpu=${GPU:-h100}
case ${COST:-calibrated} in
    calibrated) cost=(--cost calibrated --extrapolate) ;;
    roofline) cost=(--cost roofline) ;;
    *) echo "mechanisms.sh: COST=$COST: calibrated or roofline" >&2; exit 2 ;;
esac
die() { echo "mechanisms.sh: $*" >&2; exit 1; }
# run GROUP NAME OPTIONS...: the mechanism at the rate and flat out, their summaries a line of results.jsonl
run() {
    local group=$1 name=$2
    shift 2
    local common=(--gpu "$gpu" --scheduler request --requests "$requests" --gen-len 256 --seed 3 "${cost[@]}" "$@"
                  --quiet --no-progress --json)
    "$bin" sim "${common[@]}" --rps "$rps" >"$out/$group-$name.json" || die "$group $name failed: tessera sim $*"
    "$bin" sim "${common[@]}" --rps 1e6 >"$out/$group-$name-flat.json" || die "$group $name flat out failed: tessera sim $*"
    python3 - "$group" "$name" "$out/$group-$name.json" "$out/$group-$name-flat.json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
group, name, path, flat = sys.argv[1:]
d, f = json.load(open(path)), json.load(open(flat))
print(json.dumps({"group": group, "name": name, "throughput_tok_s": f["throughput_tok_s"], "lat_mean_s": d["lat_mean_s"],
                  "lat_p99_s": d["lat_p99_s"], "peak_kv_gib": d["peak_kv_bytes"] / 2**30,
                  "rows_per_token": d["redundancy"], "num_finished": min(d["num_finished"], f["num_finished"]),
                  "cost": d["cost"]}))
PY
}
llada=(--model llada-8b --decode threshold:llada-gsm8k)
for p in vanilla prefix dual vicinity sparse dllm-cache; do
    run llada "$p" "${llada[@]}" --policy "$p"
done
run llada sparsed "${llada[@]}" --policy sparsed
run llada dpad "${llada[@]}" --policy dpad
run llada dpad-dual "${llada[@]}" --policy dpad --dpad-cache dual
run llada d2cache "${llada[@]}" --policy d2cache --block 256
run llada elastic "${llada[@]}" --policy elastic --ec-refresh-every 32
run llada dkv-cache "${llada[@]}" --policy dkv-cache
run llada dual-prophet "${llada[@]}" --policy dual --early-commit "$prophet"
for semi in 0 0.5 1; do # D2F: the share of its count a semi-activated block decodes, an assumption swept
    run llada "d2f-$semi" "${llada[@]}" --policy d2f --d2f-semi "$semi"
done
sdar=(--model sdar-8b --decode threshold:sdar-low)
for p in block block+delayed focus; do
    run sdar "$p" "${sdar[@]}" --policy "$p"
done
run sdar fdllm-v2 "${sdar[@]}" --policy fdllm-v2 --block 8
run sdar fdllm-v2-dual "${sdar[@]}" --policy fdllm-v2 --block 8 --v2-dual 1
run sdar block-prophet "${sdar[@]}" --policy block --early-commit "$prophet"
run sdar herald "${sdar[@]}" --policy herald
run sdar spiffy "${sdar[@]}" --policy block --decode spiffy:2.9
run sdar linear-spec --model sdar-8b --policy linear-spec # (its commits its own: no decoder)
mini=(--model llada2.0-mini --policy block --calib-from h200)
[ "${COST:-calibrated}" = roofline ] && mini=(--model llada2.0-mini --policy block)
run mini llada2.0 "${mini[@]}" --decode threshold:llada2-mini
run mini llada2.1-q "${mini[@]}" --decode threshold:llada2.1-mini-q
run mini llada2.1-s "${mini[@]}" --decode threshold:llada2.1-mini-s
# MBD-LMs: LLaDA2.0-mini one block at a time on Diffulex against MBD-LLaDA2-Mini's multi-block decoding
# (Diffulex's multi_bd: D2F's pipelined blocks in a buffer of 2, padded to it, the published TPF the step's)
run mini mbd-base "${mini[@]}" --decode threshold:mbd-llada2-mini-base
run mini mbd "${mini[@]/block/d2f}" --d2f-flight 2 --d2f-add 0.1 --d2f-act 0.9 --d2f-pad 1 --d2f-step-count 1 \
    --decode threshold:mbd-llada2-mini
fdv2=(--model fast-dllm-v2-7b --decode fixed:1)
run fdv2 block "${fdv2[@]}" --policy block
run fdv2 fdllm-v2 "${fdv2[@]}" --policy fdllm-v2 --block 8
run fdv2 fdllm-v2-dual "${fdv2[@]}" --policy fdllm-v2 --block 8 --v2-dual 1
run ar ar --model llada-8b --policy ar
run ar dflash --model llada-8b --policy dflash # (its commits its own: no decoder)

# HERALD over the context: SDAR-8B, 64 requests of P tokens and 256 generated, all there at once
for P in 2048 8192 30000; do
    for p in block herald; do
        "$bin" sim --model sdar-8b --decode threshold:sdar-low --gpu "$gpu" --scheduler request --requests 64 \
            --gen-len 256 --lengths "fixed:$P,256" --rps 1e6 --seed 3 "${cost[@]}" --policy "$p" --quiet --no-progress \
            --json >"$out/context-$p-$P.json" || die "context $P $p failed"
    done
done

# DiffusionGemma on vLLM: how many canvases run at once under each self-conditioning buffer, flat out
for im in vllm-dgemma vllm-dgemma-probs; do
    "$bin" sim --system diffusion-gemma --impl "$im" --gpu "$gpu" --requests 200 --lengths fixed:512,256 --rps 1e6 \
        --seed 3 --quiet --no-progress --json >"$out/dgemma-$im.json" || die "diffusion-gemma $im failed"
done

python3 - "$out" "$prophet" <<'PY' || exit 1
import json, os, sys
out, prophet = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
by = {(r["group"], r["name"]): r for r in rows}
TITLE = {"llada": "LLaDA-8B, threshold 0.9 (TPF 2.77)", "sdar": "SDAR-8B, threshold decoding (TPF 2.0)",
         "mini": "LLaDA2.0-mini, block diffusion", "fdv2": "Fast-dLLM v2 7B, one token a step",
         "ar": "LLaDA-8B's shape decoding autoregressively"}
LABEL = {"sparsed": "sparsed, no cache", "dpad": "dpad, no cache", "block": "block", "d2cache": "d2cache (one block)", "elastic": "elastic (refresh every 32)", "dkv-cache": "dkv-cache (refresh every 8)", "dpad-dual": "dpad over the dual cache",
         "dual-prophet": "dual + Prophet (F = %s)" % prophet, "d2f-0": "d2f, semi-activated none",
         "d2f-0.5": "d2f, semi-activated half", "d2f-1": "d2f, semi-activated all", "fdllm-v2": "fdllm-v2 (Fast-dLLM v2)",
         "fdllm-v2-dual": "fdllm-v2, DualCache", "herald": "herald (K/V on the host)", "spiffy": "block + Spiffy (3 drafts, TPF 2.9)",
         "linear-spec": "linear-spec (a draft and a verify, 5.46 a round)", "block-prophet": "block + Prophet (F = %s)" % prophet,
         "llada2.0": "LLaDA2.0 threshold (TPF 2.55)", "llada2.1-q": "LLaDA2.1 editing, Q mode (TPF 3.12)",
         "llada2.1-s": "LLaDA2.1 editing, S mode (TPF 5.34)", "ar": "ar (a token a step)",
         "mbd-base": "MBD's base, one block (TPF 3.47)", "mbd": "MBD multi-block, buffer 2 (TPF 6.19)",
         "dflash": "ar + DFlash drafter (tau 6.55; the target's rows)"}
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# The mechanisms on one card\n\n%d requests of ShareGPT's lengths, 256 positions each, request-level "
            "batching; %s. Latency, KV and rows at the experiment's rate; tokens/s with every request there at once."
            "\n" % (rows[0]["num_finished"], rows[0]["cost"]))
    for g in ("llada", "sdar", "mini", "fdv2", "ar"):
        f.write("\n## %s\n\n| mechanism | tokens/s flat out | mean (s) | p99 (s) | KV peak (GiB) | rows a decoded token |\n"
                "|---|---|---|---|---|---|\n" % TITLE[g])
        for r in rows:
            if r["group"] == g:
                f.write("| %s | %.0f | %.2f | %.2f | %.2f | %.1f |\n" % (LABEL.get(r["name"], r["name"]), r["throughput_tok_s"],
                        r["lat_mean_s"], r["lat_p99_s"], r["peak_kv_gib"], r["rows_per_token"]))
    L = lambda n: by[("llada", n)]
    S = lambda n: by[("sdar", n)]
    M = lambda n: by[("mini", n)]
    V = lambda n: by[("fdv2", n)]
    A = lambda n: by[("ar", n)]
    checks = [
        ("every run finishes every request", all(r["num_finished"] == rows[0]["num_finished"] for r in rows)),
        ("each cache runs fewer rows a token than no cache on LLaDA-8B",
         all(L(n)["rows_per_token"] < L("vanilla")["rows_per_token"] for n in ("prefix", "dual", "vicinity", "sparse", "dllm-cache"))),
        ("DPad's dropped suffix runs fewer rows a token than no cache, and over the dual cache fewer than the dual cache",
         L("dpad")["rows_per_token"] < L("vanilla")["rows_per_token"] and L("dpad-dual")["rows_per_token"] < L("dual")["rows_per_token"]),
        ("the sparse cache holds less KV at its peak than the dual cache", L("sparse")["peak_kv_gib"] < L("dual")["peak_kv_gib"]),
        ("Prophet's early commit shortens the mean latency on both models",
         L("dual-prophet")["lat_mean_s"] < L("dual")["lat_mean_s"] and S("block-prophet")["lat_mean_s"] < S("block")["lat_mean_s"]),
        ("FOCUS runs fewer rows a token than block diffusion", S("focus")["rows_per_token"] < S("block")["rows_per_token"]),
        ("Fast-dLLM v2 runs more rows a token than block diffusion (a block's rows to decode a sub-block), "
         "its DualCache fewer than without", S("fdllm-v2")["rows_per_token"] > S("block")["rows_per_token"] and
         S("fdllm-v2-dual")["rows_per_token"] < S("fdllm-v2")["rows_per_token"]),
        ("LLaDA2.1's editing modes serve more tokens/s than LLaDA2.0's threshold decoding, S more than Q",
         M("llada2.1-s")["throughput_tok_s"] > M("llada2.1-q")["throughput_tok_s"] > M("llada2.0")["throughput_tok_s"]),
        ("dKV-Cache's delayed cache runs fewer rows a token than no cache, and more than the dual cache (its masked "
         "suffix runs every step)", L("vanilla")["rows_per_token"] > L("dkv-cache")["rows_per_token"] > L("dual")["rows_per_token"]),
        ("d2Cache's and Elastic-Cache's chosen rows run fewer rows a token than the dual cache",
         L("d2cache")["rows_per_token"] < L("dual")["rows_per_token"] and L("elastic")["rows_per_token"] < L("dual")["rows_per_token"]),
        ("Elastic-Cache's pool holds more at its peak than the dual cache's (its queries and layer inputs too)",
         L("elastic")["peak_kv_gib"] > L("dual")["peak_kv_gib"]),
        ("flat out, the dual cache serves more tokens/s than no cache on LLaDA-8B",
         L("dual")["throughput_tok_s"] > L("vanilla")["throughput_tok_s"]),
        ("SparseD runs the rows of no cache (its sparsity is in the attention) in less time",
         L("sparsed")["rows_per_token"] == L("vanilla")["rows_per_token"] and L("sparsed")["lat_mean_s"] < L("vanilla")["lat_mean_s"]),
        ("D2F's pipelined blocks: the more a semi-activated block decodes, the shorter the mean latency",
         L("d2f-1")["lat_mean_s"] < L("d2f-0.5")["lat_mean_s"] < L("d2f-0")["lat_mean_s"]),
        ("D2F runs fewer rows a token than the dual cache (block-causal, it never runs the masked suffix)",
         all(L(n)["rows_per_token"] < L("dual")["rows_per_token"] for n in ("d2f-0", "d2f-0.5", "d2f-1"))),
        ("Spiffy's drafts shorten block diffusion's mean latency at the rate and cost it tokens/s flat out (3 blocks "
         "of rows more a forward)", S("spiffy")["lat_mean_s"] < S("block")["lat_mean_s"] and
         S("spiffy")["throughput_tok_s"] < S("block")["throughput_tok_s"]),
        ("HERALD's GPU holds less K/V at its peak than block diffusion's, and runs the same rows a token",
         S("herald")["peak_kv_gib"] < S("block")["peak_kv_gib"] and
         abs(S("herald")["rows_per_token"] - S("block")["rows_per_token"]) < 1e-9),
        ("LinearSpec's rounds (two forwards of 32 rows for 5.46 positions) run fewer rows a token than block "
         "diffusion at TPF 2.0", S("linear-spec")["rows_per_token"] < S("block")["rows_per_token"]),
        ("on its own model, Fast-dLLM v2's DualCache runs fewer rows a token than its plain path",
         V("fdllm-v2-dual")["rows_per_token"] < V("fdllm-v2")["rows_per_token"]),
        ("MBD-LLaDA2-Mini's multi-block decoding (TPF 6.19, 81.03 published) serves more tokens/s than its base one "
         "block at a time (TPF 3.47, 79.95), at a shorter mean latency", M("mbd")["throughput_tok_s"] >
         M("mbd-base")["throughput_tok_s"] and M("mbd")["lat_mean_s"] < M("mbd-base")["lat_mean_s"]),
        ("DFlash's drafter shortens the AR model's mean latency at the rate and serves more tokens/s flat out, its "
         "target running more rows a token (a block of 16 verified for 6.55)", A("dflash")["lat_mean_s"] < A("ar")["lat_mean_s"]
         and A("dflash")["throughput_tok_s"] > A("ar")["throughput_tok_s"] and A("dflash")["rows_per_token"] > A("ar")["rows_per_token"]),
    ]
    f.write("\n## HERALD over the context\n\nSDAR-8B, 64 requests of P prompt tokens and 256 generated, all there at "
            "once; the abstract reports up to 2.47x the throughput of GPU-only serving, growing with the context.\n\n"
            "| P | block tokens/s | herald tokens/s | herald / block | block KV peak (GiB) | herald KV peak (GiB) |\n"
            "|---|---|---|---|---|---|\n")
    ctx = {}
    for P in (2048, 8192, 30000):
        b, h = (json.load(open(os.path.join(out, "context-%s-%d.json" % (p, P)))) for p in ("block", "herald"))
        ctx[P] = h["throughput_tok_s"] / b["throughput_tok_s"]
        f.write("| %d | %.0f | %.0f | %.2fx | %.1f | %.1f |\n" % (P, b["throughput_tok_s"], h["throughput_tok_s"], ctx[P],
                b["peak_kv_bytes"] / 2**30, h["peak_kv_bytes"] / 2**30))
    checks.append(("HERALD serves more tokens/s than block diffusion at every context length",
                   all(v > 1 for v in ctx.values())))
    f.write("\n## DiffusionGemma on vLLM\n\n200 requests of 512 prompt tokens and one canvas of 256, all there at once; "
            "vLLM's recipe advises --max-num-seqs 4 for the buffer of probabilities.\n\n"
            "| self-conditioning buffer a request | canvases at once (mean) | tokens/s | KV pool peak (GiB) |\n"
            "|---|---|---|---|\n")
    dg = {}
    for im, what in (("vllm-dgemma", "256 x 2,816 fp32 soft embeddings (2.75 MiB)"),
                     ("vllm-dgemma-probs", "256 x 262,144 fp32 probabilities (256 MiB)")):
        d = dg[im] = json.load(open(os.path.join(out, "dgemma-%s.json" % im)))
        f.write("| %s | %.1f | %.0f | %.1f |\n" % (what, d["request_steps"] / d["num_steps"], d["throughput_tok_s"],
                                                 d["peak_kv_bytes"] / 2**30))
    checks.append(("DiffusionGemma's canvases of probabilities let fewer run at once than its soft embeddings",
                   dg["vllm-dgemma-probs"]["request_steps"] / dg["vllm-dgemma-probs"]["num_steps"] <
                   dg["vllm-dgemma"]["request_steps"] / dg["vllm-dgemma"]["num_steps"] and
                   dg["vllm-dgemma-probs"]["num_finished"] == dg["vllm-dgemma"]["num_finished"] == 200))
    f.write("\n| check | in tessera |\n|---|---|\n")
    for text, ok in checks:
        f.write("| %s | %s |\n" % (text, "holds" if ok else "does not hold"))
with open(os.path.join(out, "figure.dat"), "w") as d:
    for i, r in enumerate(rows):
        d.write('%d "%s" %g %g %s\n' % (i, LABEL.get(r["name"], r["name"]).split(" (")[0], r["rows_per_token"],
                                         r["lat_p99_s"], r["group"]))
PY
plot_png mechanisms.sh "$out/figure.png" 1400 1000 <<GP
set multiplot layout 2,1 title "The mechanisms on one H100: 256 positions a request, each model group under one decoder (Fast-dLLM v2: a token a step; LLaDA2.1: its Q and S modes)"
set style fill solid 0.8 border -1
set boxwidth 0.7
set grid ytics
set key off
set xtics rotate by 90 right font ",9"
set bmargin 11
set xrange [-0.7:$(($(wc -l <"$out/figure.dat") - 1)).7]
set ylabel "Rows the decoding steps run a decoded token"
set logscale y
set yrange [0.5:*]
set key top right
plot $(gp_file "$out/figure.dat") using 1:3:(strcol(5) eq "llada" ? 0x0072B2 : strcol(5) eq "sdar" ? 0xE69F00 : strcol(5) eq "mini" ? 0x009E73 : strcol(5) eq "ar" ? 0xD55E00 : 0xCC79A7):xtic(2) with boxes lc rgb variable notitle, \
     NaN with boxes lc rgb '#0072B2' title "LLaDA-8B", NaN with boxes lc rgb '#E69F00' title "SDAR-8B", \
     NaN with boxes lc rgb '#009E73' title "LLaDA2.0-mini", NaN with boxes lc rgb '#CC79A7' title "Fast-dLLM v2 7B", \
     NaN with boxes lc rgb '#D55E00' title "LLaDA-8B's shape, autoregressive"
set key off
set yrange [0.1:*]
set ylabel "p99 latency (s)"
plot $(gp_file "$out/figure.dat") using 1:4:(strcol(5) eq "llada" ? 0x0072B2 : strcol(5) eq "sdar" ? 0xE69F00 : strcol(5) eq "mini" ? 0x009E73 : strcol(5) eq "ar" ? 0xD55E00 : 0xCC79A7):xtic(2) with boxes lc rgb variable
unset multiplot
GP
echo "mechanisms: $out/report.md, $out/results.jsonl$([ -s "$out/figure.png" ] && echo ", $out/figure.png")"
