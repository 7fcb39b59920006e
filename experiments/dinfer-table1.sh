#!/usr/bin/env bash
# experiments/dinfer-table1.sh: dInfer Table 1, the tokens a second (TPS) of one request at a time
# (batch size 1) on LLaDA-MoE-7B-A1B: Fast-dLLM and dInfer, without and with a KV cache, each at the
# tokens a forward (TPF) the table gives for each benchmark (sim/data/decode_profiles.json), beside
# Qwen2.5-3B on vLLM (one token a forward), on H800s (dInfer's GPU): Fast-dLLM's experts split over
# four as dInfer's port runs it, the others on one.
#   vllm               --system vllm --model qwen2.5-3b (autoregressive: q = 1 a step)
#   fast-dllm-nocache  --system dinfer-fast-dllm --policy vanilla (no cache), threshold decoding
#   fast-dllm          --system dinfer-fast-dllm (dual cache), threshold decoding
# (the table's Fast-dLLM is dInfer's port of it: blocks of 64, its experts split over 4 GPUs)
#   dinfer-nocache     --system dinfer --policy vanilla, hierarchical decoding
#   dinfer             --system dinfer (vicinity refresh), hierarchical decoding
# x is the benchmark: 1 the average, 2 CRUX-O, 3 GSM8K, 4 HumanEval, 5 IFEval, 6 MBPP, 7 LCB V6.
# Cost (COST=roofline prices Fast-dLLM with the roofline too): Fast-dLLM, PyTorch eager, by the
# PyTorch harness's LLaDA-MoE-7B profile measured on an H100 (its ops and its host's issue), carried
# to the H800 by tessera calib transfer, a GPU's share of the experts and their all-reduces priced
# by --ep; dInfer and vLLM by the roofline of compiled kernels under
# CUDA graphs (dInfer's table ran on 8 H800s with tensor and expert parallelism, which a calibration
# of one GPU does not measure; no calibration measures vLLM's Qwen2.5-3B).
# Usage: tessera exp run dinfer-table1 OUT [--force] [--quick] [--strict]
EXP=dinfer-table1
source "$(dirname "$0")/lib/paper.sh"
paper_init "$@"
DI_COST=${COST:-calibrated}
case $DI_COST in calibrated | roofline) ;; *) echo "$EXP: COST=$DI_COST: calibrated or roofline" >&2; exit 2 ;; esac
benches="avg crux-o gsm8k humaneval ifeval mbpp lcb-v6"
[ "$QUICK" = 1 ] && benches="avg humaneval"
# the prompt's tokens, an assumption (PROMPT=P): the slides give no lengths; 512 here, plausible
# 128-1024 (the benchmarks' questions with a few-shot or chat preamble)
DI_P=${PROMPT:-512}
case $DI_P in '' | *[!0-9]*) false ;; *) [ "$DI_P" -ge 128 ] && [ "$DI_P" -le 1024 ] ;; esac ||
    { echo "$EXP: PROMPT=$DI_P: the prompt's tokens must be 128-1024 (dInfer's slides give no lengths; its benchmarks' questions with a preamble)" >&2; exit 2; }
wl=p$DI_P-g1024
# di_cost SYSTEM: the cost options of SYSTEM's points, in the array DI_COST_ARGS
di_cost() {
    DI_COST_ARGS=(--cost roofline)
    [ "$DI_COST" = roofline ] || [[ $1 != fast-dllm* ]] && return 0
    carry_calib h100 h800 llada-moe-7b torch-eager
    DI_COST_ARGS=(--cost calibrated --calib "$CARRIED" --extrapolate)
}
# sys_args SYSTEM BENCH: the options of SYSTEM on benchmark BENCH (its preset, model and decoder at the
# table's TPF)
sys_args() {
    case $1 in
        vllm) echo --system vllm --model qwen2.5-3b ;;
        fast-dllm-nocache) echo --system dinfer-fast-dllm --policy vanilla --decode "threshold:fastdllm-moe-nocache-$2" ;;
        fast-dllm) echo --system dinfer-fast-dllm --decode "threshold:fastdllm-moe-cache-$2" ;;
        dinfer-nocache) echo --system dinfer --policy vanilla --model llada-moe-7b --decode "hierarchical:dinfer-moe-nocache-$2" ;;
        dinfer) echo --system dinfer --model llada-moe-7b --decode "hierarchical:dinfer-moe-cache-$2" ;;
    esac
}
# run SYSTEM BENCH X [WORKLOAD ARGS...]: one request of DI_P prompt tokens and 1,024 generated, alone on
# an H800, as workload WORKLOAD (p512-g1024 unless given) with ARGS beside SYSTEM's own
run() {
    local sys=$1 b=$2 x=$3 w=${4:-$wl}
    shift $(($# < 4 ? $# : 4))
    di_cost "$sys"
    # shellcheck disable=SC2046
    point "$sys" "$w" "$x" $(sys_args "$sys" "$b") --gpu h800 --requests 1 --lengths "fixed:$DI_P,1024" --gen-len 1024 "$@" \
        --seed 1 "${DI_COST_ARGS[@]}"
    derived tps "$sys" "$w" "$x" "$(value throughput_tok_s "$sys" "$w" "$x")"
    # the time of one forward (the request's forwards are as many as the table's run took: the same
    # tokens at its TPF)
    local f="$out/points/$npoints.json"
    derived forward_ms "$sys" "$w" "$x" "$(awk -v t="$(json "$f" makespan_ns)" -v n="$(json "$f" num_steps)" 'BEGIN { print t / n / 1e6 }')"
}
# dInfer's Table 1, TPS: the average and each benchmark, in the order of $benches' full list
declare -A tps=(
    [vllm]="277.45 289.53 294.15 294.05 296.7 290.15 200.12"
    [fast-dllm-nocache]="63.61 59.79 56.19 90.8 60.25 70.2 44.4"
    [dinfer-nocache]="407.36 379.62 379.63 606.85 285.49 475.23 317.36"
    [fast-dllm]="110.98 120.57 97.5 143.9 95.23 112.9 95.8"
    [dinfer]="680.71 765.3 682.9 1011.12 444.51 757.55 422.88"
)
all="avg crux-o gsm8k humaneval ifeval mbpp lcb-v6"
for b in $benches; do
    x=$(tr ' ' '\n' <<<"$all" | grep -nx "$b" | cut -d: -f1)
    for s in vllm fast-dllm-nocache fast-dllm dinfer-nocache dinfer; do
        run $s "$b" "$x"
    done
    for s in vllm fast-dllm-nocache fast-dllm dinfer-nocache dinfer; do
        paper tps $s "$wl" "$x" "$(cut -d' ' -f"$x" <<<"${tps[$s]}")"
        derived forward_ms_table $s "$wl" "$x" "$(awk -v p="$(cut -d' ' -f"$x" <<<"${tps[$s]}")" -v t="$(value tps $s "$wl" "$x")" \
            -v f="$(value forward_ms $s "$wl" "$x")" 'BEGIN { printf "%.4g", f * t / p }')"
    done
done
# the host: Fast-dLLM's steps are issued by the host that measured its calibration (the H100
# machine's); on average, again with the H200 calibration machine's (workload p512-g1024-h200-xeon)
if [ "$DI_COST" = calibrated ]; then
    for s in fast-dllm-nocache fast-dllm; do
        run $s avg 1 "$wl"-h200-xeon --host h200-xeon
    done
fi
# the table's numbers over the setting's unknowns, one moved at a time: the prompt (128 and 1,024
# tokens), and for Fast-dLLM the host issuing its eager steps (the other measured machine's), its blocks
# (32, Fast-dLLM's own default, where dInfer's port runs 64: inclusionAI/dInfer
# benchmarks/benchmark_dataset_fastdllm.py at fce4e32, --block_length 64) and the GPUs its experts
# are split over (one, and the slides' eight, where the port's --gpu default is four); the derived
# metrics tps_lo and tps_hi hold each number's range, DI_RANGES the report's table
DI_RANGES="| framework | $(for b in $benches; do printf '%s | ' "$b"; done)
|---|$(for b in $benches; do printf -- '---|'; done)"
inside=0 ranged=0
for s in vllm fast-dllm-nocache fast-dllm dinfer-nocache dinfer; do
    line="| $s |"
    for b in $benches; do
        x=$(tr ' ' '\n' <<<"$all" | grep -nx "$b" | cut -d: -f1)
        vals=("$(value tps $s "$wl" "$x")")
        alts="P=128 P=1024"
        [[ $s == fast-dllm* ]] && alts+=" BLOCK=32 EP=1 EP=8"
        [[ $s == fast-dllm* ]] && [ "$DI_COST" = calibrated ] && alts+=" HOST=h200-xeon"
        [ "$QUICK" = 1 ] && alts="P=128"
        for av in $alts; do
            case $av in
                P=*) [ "${av#P=}" = "$DI_P" ] && continue
                     saved=$DI_P DI_P=${av#P=}
                     run $s "$b" "$x" "$wl~$av"
                     DI_P=$saved ;;
                BLOCK=*) run $s "$b" "$x" "$wl~$av" --block "${av#BLOCK=}" ;;
                EP=*) run $s "$b" "$x" "$wl~$av" --ep "${av#EP=}" ;;
                HOST=*) run $s "$b" "$x" "$wl~$av" --host "${av#HOST=}" ;;
            esac
            vals+=("$(value tps $s "$wl~$av" "$x")")
        done
        derived_range tps $s "$wl" "$x" "${vals[@]}"
        lo=$RANGE_LO hi=$RANGE_HI
        p=$(cut -d' ' -f"$x" <<<"${tps[$s]}")
        in=$(awk -v p="$p" -v l="$lo" -v h="$hi" 'BEGIN { print (p >= l && p <= h) ? 1 : 0 }')
        inside=$((inside + in)) ranged=$((ranged + 1))
        line+=" $(fmt "$lo")-$(fmt "$hi") ($(fmt "$p")$([ "$in" = 1 ] && echo ", inside")) |"
    done
    DI_RANGES+="
$line"
done
# hf_ms T [LAYERS]: Hugging Face's LLaDA-MoE block at T tokens as PyTorch eager ran it on an H100
# (records/torch-moe-h100), ms a layer, or a forward over LAYERS layers (the record on sqlite3's
# stdin, its path never SQL text; T and LAYERS are numbers or refused)
hf_ms() {
    local t=$1 n=${2:-1} f digits
    [[ $t =~ ^[0-9]+$ ]] || { echo "$EXP: hf_ms: T '$t' is not a number" >&2; exit 2; }
    [[ $n =~ ^[0-9]+$ ]] || { echo "$EXP: hf_ms: LAYERS '$n' is not a number" >&2; exit 2; }
    digits=$((n > 1 ? 0 : 1))
    f="$(dirname "$0")/records/torch-moe-h100/moe.jsonl"
    sqlite3 :memory: "SELECT printf('%.${digits}f', json_extract(value, '\$.ms') * $n)
        FROM json_each('[' || replace(trim(readfile('/dev/stdin'), char(10)), char(10), ',') || ']')
        WHERE json_extract(value, '\$.T') = $t" <"$f"
}
# tessera's roofline of one forward of vLLM's Qwen2.5-3B with no cache and no host time
vllm_floor=$(awk -v ms="$(roofline_ms h800 qwen2.5-3b 1,1,0,1)" 'BEGIN { printf "%.2f", ms }')
# fv SYSTEM [paper]: the average's forward time, tessera's or the table's, in ms
fv() {
    fmt "$(value forward_ms${2:+_table} "$1" "$wl" 1)"
}
# how far apart dInfer's forwards are, tessera's against the table's (%, the larger of the two)
dinfer_gap=$(for s in dinfer dinfer-nocache; do ratio "$(value forward_ms $s "$wl" 1)" "$(value forward_ms_table $s "$wl" 1)"; done |
    awk '{ d = $1 > 1 ? $1 - 1 : 1 / $1 - 1; if (d > m) m = d } END { printf "%.0f", 100 * m }')
check "dInfer with its cache is 2-3x vLLM's TPS on average (680.71 against 277.45)" \
    "val(\"dinfer\",\"$wl\",\"1\",\"tps\") / val(\"vllm\",\"$wl\",\"1\",\"tps\") >= 2 && val(\"dinfer\",\"$wl\",\"1\",\"tps\") / val(\"vllm\",\"$wl\",\"1\",\"tps\") <= 3"
check "dInfer is over ten times Fast-dLLM on average (680.71 against 63.61)" \
    "val(\"dinfer\",\"$wl\",\"1\",\"tps\") / val(\"fast-dllm-nocache\",\"$wl\",\"1\",\"tps\") > 10"
check "the KV cache raises both frameworks' TPS on average" \
    "val(\"dinfer\",\"$wl\",\"1\",\"tps\") > val(\"dinfer-nocache\",\"$wl\",\"1\",\"tps\") && val(\"fast-dllm\",\"$wl\",\"1\",\"tps\") > val(\"fast-dllm-nocache\",\"$wl\",\"1\",\"tps\")"
check "dInfer without a cache is still ahead of vLLM on average (407.36 against 277.45)" \
    "val(\"dinfer-nocache\",\"$wl\",\"1\",\"tps\") > val(\"vllm\",\"$wl\",\"1\",\"tps\")"
# tpf SYSTEM: tessera's tokens a forward on average (its TPS times its forward's time)
tpf() { awk -v t="$(value tps "$1" "$wl" 1)" -v f="$(value forward_ms "$1" "$wl" 1)" 'BEGIN { printf "%.2f", t * f / 1000 }'; }
# the PyTorch harness's CUDA kernels a forward of LLaDA-MoE-7B (records/torch-eager-moe-h100: its
# layer's ops times the layers, the embedding once), and its host's issue time a step on the H800
# (the H100 machine's, carried over unchanged); the record on sqlite3's stdin
moe_rec="$(dirname "$0")/records/torch-eager-moe-h100/torch_kernels-moe.json"
moe_kernels=$(sqlite3 :memory: "WITH f AS (SELECT readfile('/dev/stdin') AS j)
    SELECT sum(CASE WHEN key = 'embed' THEN value ELSE value * json_extract(f.j, '\$.layers') END)
    FROM f, json_each(json_extract(f.j, '\$.kernels_per_layer_op')) WHERE key NOT IN ('lm_head', 'sample')" <"$moe_rec")
if [ "$DI_COST" = calibrated ]; then
    carry_calib h100 h800 llada-moe-7b torch-eager
    host_ms=$("$bin" calib show --calib "$CARRIED" --gpu h800 --model llada-moe-7b --impl torch-eager |
        sed -n 's/^host: .*host issue (ms) = \([0-9.]*\) .*/\1/p')
    cost_note="Fast-dLLM's TPS is priced by the PyTorch harness's LLaDA-MoE-7B profile
(engine/bench/torch_profile.py, records/torch-eager-ops: its layer op by op, the experts a grouped
MoE as a port onto vLLM runs them, the host's issue apart from the GPU's work) measured on an H100
and carried to the H800 by tessera calib transfer (the same chip and memory: the band is nil); dInfer's
and vLLM's by the roofline of compiled kernels (the dInfer table's 8 H800s with tensor and expert
parallelism are not what a calibration of one GPU measures; no calibration measures Qwen2.5-3B)."
    host_note="Fast-dLLM's forwards are the host's: the harness's eager forward issues $moe_kernels CUDA kernels, $(printf '%.1f' "$host_ms") ms
a step on the host of the H100 machines its calibration was measured on, where its GPU work takes less with the cache and about as
much without it. So its cache saves little time a forward ($(fv fast-dllm) ms against $(fv fast-dllm-nocache)) while it decides fewer
tokens a forward ($(tpf fast-dllm) against $(tpf fast-dllm-nocache), the table's TPFs), and the cache lowers its TPS, where the table's
halves its forward ($(fv fast-dllm paper) ms against $(fv fast-dllm-nocache paper)): the table's Fast-dLLM issued its steps in at most $(fv fast-dllm paper) ms, on a
faster host or with fewer kernels (RoPE's tables once a forward rather than a layer, fused norms).
Issued by the host of the H200 machines its calibration was measured on instead (--host h200-xeon: the calibration's host line scaled
by the two machines' per-step issue times for LLaDA-8B), Fast-dLLM reaches $(fmt "$(value tps fast-dllm-nocache "$wl"-h200-xeon 1)") and $(fmt "$(value tps fast-dllm "$wl"-h200-xeon 1)") tokens/s on average
without and with its cache (workload $wl-h200-xeon): $(awk -v a="$(value tps fast-dllm "$wl"-h200-xeon 1)" \
    -v b="$(value tps fast-dllm-nocache "$wl"-h200-xeon 1)" 'BEGIN { print (a > b ? "there its cache raises its TPS, as the table'"'"'s does" : "its cache still lowers its TPS") }')."
else
    cost_note="Every TPS is priced by the roofline: the presets' implementations, PyTorch eager for Fast-dLLM,
compiled kernels for dInfer and vLLM."
    host_note=
fi
NOTES="One request at a time (batch size 1) of 512 prompt tokens and 1,024 generated, blocks of 32, on one
H800; Fast-dLLM as dInfer's port of it runs (--system dinfer-fast-dllm: blocks of 64, float64 sampling,
its experts split over four H800s with the rest of each step replicated, an all-reduce a MoE layer;
inclusionAI/dInfer benchmarks/benchmark_dataset_fastdllm.py at fce4e32). The slides name 8 x H800 with
tensor and expert parallelism and give neither the lengths nor each framework's split. The dLLMs' TPFs are inputs, taken from the same table (decode_profiles.json); their
TPS are tessera's prediction. $cost_note vLLM's Qwen2.5-3B commits one token a
forward (policy ar); its tied LM head is counted apart. x: 1 the average, 2 CRUX-O, 3 GSM8K,
4 HumanEval, 5 IFEval, 6 MBPP, 7 LCB V6.

Why trends do not hold (metrics forward_ms, one forward's time in tessera, and forward_ms_table,
what the table's TPS implies at the same TPF; on average): dInfer's forwards agree within $dinfer_gap% ($(fv dinfer) ms against $(fv dinfer paper) with its cache,
$(fv dinfer-nocache) against $(fv dinfer-nocache paper) without), the baselines' do not: the table's vLLM takes $(fv vllm paper) ms a token where tessera's
takes $(fv vllm) (its roofline with no host time $vllm_floor), and the table's Fast-dLLM $(fv fast-dllm-nocache paper) ms a
forward without its cache where tessera's takes $(fv fast-dllm-nocache) ($(fv fast-dllm paper) against $(fv fast-dllm) with it). $host_note
What the table's runs may have paid that tessera leaves out: the slides' 8 H800s for vLLM (a model split
over them pays all-reduces in every forward of its one request; the slides do not say how it ran). Not
Hugging Face's LLaDA-MoE block, whose Python loop over the 64 experts issues about 1,000 kernels a
layer: measured on an H100 (records/torch-moe-h100, engine/bench/torch_moe.py), it takes $(hf_ms 32) ms a
layer at 32 tokens and $(hf_ms 1536) at 1,536, $(hf_ms 32 16) and $(hf_ms 1536 16) ms a forward over 16 layers, several times the
table's Fast-dLLM forwards."
tps_ratio() { fmt "$(ratio_of tps "$1" "$2" "$wl" 1)"; }
why "dInfer with its cache is 2-3x vLLM's TPS" "tessera's dInfer is $(tps_ratio dinfer vllm)x its vLLM. dInfer's forwards agree
with the table's within $dinfer_gap%; vLLM's do not: the table's vLLM takes $(fv vllm paper) ms a token, tessera's $(fv vllm), its
roofline with no host time $vllm_floor. The table's vLLM paid more a token than one H800 with no host time
does: its 8 H800s' all-reduces in every forward or its host, which the slides do not detail."
why "dInfer is over ten times Fast-dLLM" "tessera's dInfer is $(tps_ratio dinfer fast-dllm-nocache)x its Fast-dLLM without a cache:
the table's Fast-dLLM takes $(fv fast-dllm-nocache paper) ms a forward, tessera's $(fv fast-dllm-nocache), $([ -n "$host_note" ] && echo "most of it its host's issue of
$moe_kernels kernels ($(printf '%.1f' "$host_ms") ms a step on the host of the H100 machine its calibration was measured on)" || echo "priced by the roofline"); the table's ran slower still (its 8 H800s or its host)."
why "the KV cache raises both frameworks' TPS" "Fast-dLLM's TPS is $(fmt "$(value tps fast-dllm "$wl" 1)") with its cache and $(fmt "$(value tps fast-dllm-nocache "$wl" 1)") without:
its forward takes $(fv fast-dllm) ms against $(fv fast-dllm-nocache) (the table's $(fv fast-dllm paper) against $(fv fast-dllm-nocache paper)) while it decides fewer tokens a
forward ($(tpf fast-dllm) against $(tpf fast-dllm-nocache), the table's TPFs). $([ -n "$host_note" ] && echo "Its forwards are its host's issue, which
the cache does not shorten; issued by the H200 calibration machine's host its cache $(awk -v a="$(value tps fast-dllm "$wl"-h200-xeon 1)" \
    -v b="$(value tps fast-dllm-nocache "$wl"-h200-xeon 1)" 'BEGIN { print (a > b ? "raises" : "still lowers") }') its TPS (the notes below).")"
NOTES+="

The table's TPS over the setting's unknowns (tessera's range a framework and benchmark, the table's
number in parentheses; workloads $wl~ASSUMPTION=VALUE, derived metrics tps_lo and tps_hi): the prompt
at 128 and 1,024 tokens (PROMPT=, $DI_P here); for Fast-dLLM blocks of 32 (its own code's, where dInfer's
port runs 64), its experts on one H800 or split over the slides' eight (EP=, four here: the port's --gpu
default)$([ "$DI_COST" = calibrated ] && echo " and the host of the H200 machine its calibration was measured on"). $inside of $ranged lie inside.

$DI_RANGES"
SHOW_METRICS="tps forward_ms forward_ms_table"
# the table: a row a framework and configuration, as the slides', a column a benchmark
declare -A bench_name=([avg]=Avg. [crux-o]=CRUX-O [gsm8k]=GSM8K [humaneval]=HumanEval [ifeval]=IFEval [mbpp]=MBPP [lcb-v6]="LCB V6")
fig_table "dInfer Table 1: TPS at batch size 1, LLaDA-MoE-7B-A1B and Qwen2.5-3B, H800"
row=(Config. Framework)
for b in $benches; do row+=("${bench_name[$b]}"); done
fig_row "${row[@]}"
for s in "vllm:Qwen2.5-3B:vLLM" "fast-dllm-nocache:Without KV cache:Fast-dLLM" "dinfer-nocache:Without KV cache:dInfer" \
         "fast-dllm:With KV cache:Fast-dLLM" "dinfer:With KV cache:dInfer"; do
    IFS=: read -r sys config frame <<<"$s"
    row=("$config" "$frame")
    for b in $benches; do
        x=$(tr ' ' '\n' <<<"$all" | grep -nx "$b" | cut -d: -f1)
        row+=("$(fmt "$(value tps "$sys" "$wl" "$x")") ($(fmt "$(cut -d' ' -f"$x" <<<"${tps[$sys]}")"))")
    done
    fig_row "${row[@]}"
done
fig_note "Each cell: tessera's TPS (tokens/s), the table's in parentheses. One request of 512 prompt tokens and 1,024 generated, one H800 (Fast-dLLM's experts over four)."
paper_finish "dInfer Table 1: TPS at batch size 1, LLaDA-MoE-7B-A1B and Qwen2.5-3B, H800" \
    "benchmark (1 avg, 2 CRUX-O, 3 GSM8K, 4 HumanEval, 5 IFEval, 6 MBPP, 7 LCB V6)" tps
