#!/usr/bin/env bash
# experiments/focus-fig6.sh: FOCUS Figure 6, throughput against batch size (32 to 256): LMDeploy's
# block diffusion (preset lmdeploy) against FOCUS (preset focus), SDAR-8B and LLaDA2.0-mini on an
# A100-80GB, on ShareGPT, WildChat and MATH (their length profiles), the batch size capping the
# requests running at once (lib/focus.sh: the setting).
# Usage: tessera exp run focus-fig6 OUT [--force] [--quick] [--strict]
EXP=focus-fig6
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/focus.sh"
paper_init "$@"
batches="32 64 128 256" models="sdar-8b llada2.0-mini" datasets="sharegpt wildchat math"
[ "$QUICK" = 1 ] && batches="16 64" models="sdar-8b" datasets="sharegpt"
# the datasets' length profiles: ShareGPT's first rounds, WildChat's turns, MATH's problems
lengths_of() { case $1 in sharegpt) echo sharegpt-first ;; *) echo "$1" ;; esac; }
PANELS=
for d in $datasets; do
    for m in $models; do
        PANELS="$PANELS $d-$m"
        for b in $batches; do
            for sys in lmdeploy focus; do fc_point $sys "$d-$m" "$b" "$m" "$b" --lengths "$(lengths_of "$d")"; done
            derived speedup focus "$d-$m" "$b" "$(ratio_of throughput_tok_s focus lmdeploy "$d-$m" "$b")"
        done
    done
done
read -r -a bs <<<"$batches"
first=${bs[0]} last=${bs[-1]}
m0=${models%% *}
# the paper's numbers: "up to 2.32x throughput improvement" at blocks of 32 (its abstract and
# conclusion); every other value of the figure is withheld
paper speedup focus "sharegpt-$m0" "$last" 2.32
fc_speedup_range "sharegpt-$m0" "$last" "$m0" "$last" --lengths sharegpt-first
check "FOCUS's throughput is above LMDeploy's at every batch size" \
    "$(for b in $batches; do for w in $PANELS; do printf 'val("focus","%s","%s","throughput_tok_s") > val("lmdeploy","%s","%s","throughput_tok_s") && ' "$w" "$b" "$w" "$b"; done; done) 1"
check "LMDeploy's throughput plateaus: within 20% from the smallest batch size to the largest" \
    "val(\"lmdeploy\",\"sharegpt-$m0\",\"$last\",\"throughput_tok_s\") < 1.2 * val(\"lmdeploy\",\"sharegpt-$m0\",\"$first\",\"throughput_tok_s\")"
check "FOCUS gains more from larger batches than LMDeploy" \
    "val(\"focus\",\"sharegpt-$m0\",\"$last\",\"throughput_tok_s\") / val(\"focus\",\"sharegpt-$m0\",\"$first\",\"throughput_tok_s\") > val(\"lmdeploy\",\"sharegpt-$m0\",\"$last\",\"throughput_tok_s\") / val(\"lmdeploy\",\"sharegpt-$m0\",\"$first\",\"throughput_tok_s\")"
# "the relative speedup is more moderate [on LLaDA2.0] compared to dense SDAR" (§5.3)
[ "$models" != sdar-8b ] && check "FOCUS's speedup on LLaDA2.0-mini (MoE) is more moderate than on SDAR-8B" \
    "val(\"focus\",\"sharegpt-llada2.0-mini\",\"$last\",\"speedup\") < val(\"focus\",\"sharegpt-sdar-8b\",\"$last\",\"speedup\")"
# "This effect is particularly noticeable in ... MATH. Here, shorter prompt lengths limit the computational
# burden of attention, leaving less room for optimization" (§5.3, of LLaDA2.0's more moderate speedup)
[[ " $datasets " == *" math "* && " $models " == *" llada2.0-mini "* ]] &&
    check "On LLaDA2.0-mini FOCUS's speedup is smaller on MATH than on ShareGPT" \
        "val(\"focus\",\"math-llada2.0-mini\",\"$last\",\"speedup\") < val(\"focus\",\"sharegpt-llada2.0-mini\",\"$last\",\"speedup\")"
# why the batch helps neither on the first model: each system's rows a step at the smallest batch,
# against the rows from which the A100's GEMMs are compute-bound (its bf16 rate over its bandwidth:
# a weight's 2 bytes carry 2 FLOPs a row)
rows_step() { ratio "$(point_json rows_processed "$@")" "$(point_json num_steps "$@")"; }
ridge=$("$bin" list gpus | awk '$1 == "a100-80gb" { printf "%.0f", $3 * 1e3 / $4 }')
# what issuing a step from Python costs LMDeploy's eager backend (the benchmark's --eager-mode; FOCUS
# appendix F.1: CUDA graphs off in every throughput run): 12 kernels a layer in its SDAR model
# (lmdeploy/pytorch/models/sdar.py: the input and post-attention add-RMSNorms, the QKV, O, gate/up and
# down GEMMs, the q and k norms, RoPE, the K/V cache fill, the attention, SiLU-and-mul), each at what a
# PyTorch kernel takes the H200 calibration machine's host to issue (host profile h200-xeon's step over the
# PyTorch harness's kernels a step, records/host-h100/torch_kernels-h100.json, on sqlite3's stdin)
lmd_layers=$("$bin" list models | awk -v m="$m0" '$1 == m { print $2 }')
kj="$(dirname "$0")/records/host-h100/torch_kernels-h100.json"
harness_kernels=$(sqlite3 :memory: "SELECT json_extract(j, '\$.layers') * (SELECT sum(value) FROM
    json_each(j, '\$.kernels_per_layer_op') WHERE key NOT IN ('embed', 'lm_head', 'sample')) + (SELECT sum(value)
    FROM json_each(j, '\$.kernels_per_layer_op') WHERE key IN ('embed', 'lm_head', 'sample'))
    FROM (SELECT readfile('/dev/stdin') AS j)" <"$kj")
issue_us=$("$bin" list hosts | awk -v n="$harness_kernels" '$1 == "h200-xeon" { printf "%.1f", $2 * 1e3 / n }')
issue_ms=$(awk -v l="$lmd_layers" -v u="$issue_us" 'BEGIN { printf "%.1f", 12 * l * u / 1e3 }')
step_ms() { ratio "$(point_json makespan_ns "$@")" "$(awk -v n="$(point_json num_steps "$@")" 'BEGIN { print n * 1e6 }')"; }
why "FOCUS gains more from larger batches" "on $m0 over ShareGPT, from batch $first to $last FOCUS's throughput
changes $(fmt "$(ratio "$(value throughput_tok_s focus sharegpt-"$m0" "$last")" "$(value throughput_tok_s focus sharegpt-"$m0" "$first")")")x and LMDeploy's $(fmt "$(ratio "$(value throughput_tok_s lmdeploy sharegpt-"$m0" "$last")" "$(value throughput_tok_s lmdeploy sharegpt-"$m0" "$first")")")x. Its steps
process $(fmt "$(rows_step focus sharegpt-"$m0" "$first")") rows at batch $first (LMDeploy's $(fmt "$(rows_step lmdeploy sharegpt-"$m0" "$first")")), and the A100's GEMMs are
compute-bound from about $ridge rows (its bf16 rate over its bandwidth): past that a larger batch
adds time in proportion, for both. The benchmark ran LMDeploy's PyTorch backend eager (--eager-mode),
its host issuing every kernel of a step: 12 a layer in LMDeploy's SDAR model, $((12 * lmd_layers)) in its $lmd_layers layers, $issue_ms ms at
the H200 calibration machine's $issue_us µs a PyTorch kernel, under the $(fmt "$(step_ms focus sharegpt-"$m0" "$first")") ms FOCUS's steps take at batch
$first here, so issuing them does not bind even FOCUS's small batches. For the paper's FOCUS to gain
with the batch, each step must carry more host work than its kernels' issue (its Python scheduler,
which runs between steps), a larger share of its shorter steps; tessera models no scheduler time."
why "On LLaDA2.0-mini FOCUS's speedup is smaller on MATH" "its speedup at batch $last is $(fmt "$(value speedup focus math-llada2.0-mini "$last")")x on MATH
and $(fmt "$(value speedup focus sharegpt-llada2.0-mini "$last")")x on ShareGPT: tessera's MATH answers are the reference solutions (median 158
tokens), not LLaDA2.0's own long reasoning, and tessera models no scheduler time, so FOCUS's scheduler
overhead, which the paper finds outweighs the saved FLOPs there, is not modelled."
# shellcheck disable=SC2086 # fc_notes MODEL...: the models, a word each
NOTES="$(fc_notes $models)
The datasets: ShareGPT's first prompts (--lengths sharegpt-first), WildChat's turns (--lengths
wildchat: a lognormal of the mean and spread its paper's Table 1 prints, whose prompts likely fall
short of first prompts; traces/README.md) and MATH's problems with their reference solutions standing
in for the answers (--lengths math). Where the paper finds LLaDA2.0-mini's gain smallest on MATH
(short prompts leave attention little to cost, and at batch 64 its scheduler's overhead outweighs the
saved FLOPs in that long reasoning), tessera finds it largest: its MATH answers are the reference
solutions (median 158 tokens), not LLaDA2.0's own long reasoning, and tessera models no scheduler
time (only the eager launch of LMDeploy's kernels), so FOCUS's scheduler overhead is not modelled.
FOCUS's importance signal: --focus-snr at its default; the paper's decodable-token statistics are
withheld.

$(fc_range_notes) $FC_RANGE."
# the figure: a row a model, a column a dataset, throughput against the batch size
fig_cols "$(wc -w <<<"$datasets")"
for m in $models; do
    for d in $datasets; do
        fig_lines "$(fc_name "$m"), $(fc_name "$d")" "Batch size" "Throughput (tokens/s)" logx yfrom0
        for sys in lmdeploy focus; do fig_curve "$(fc_name $sys)" $sys "$d-$m" throughput_tok_s; done
    done
done
fig_note "FOCUS over LMDeploy at batch $last on ShareGPT, $(fc_name "$m0"): $(fmt "$(value speedup focus "sharegpt-$m0" "$last")")x in tessera; the paper: up to 2.32x."
paper_finish "FOCUS Fig. 6: throughput against batch size, A100-80GB" "batch size" throughput_tok_s logx
