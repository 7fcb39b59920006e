#!/usr/bin/env bash
# experiments/focus-table5.sh: FOCUS Table 5, the computational redundancy of layers 2 and up
# (N_processed / N_decoded: rows the later layers run a token decoded), LMDeploy's block diffusion
# against FOCUS, SDAR-8B and LLaDA2.0-mini on an A100-80GB, batch 128 (lib/focus.sh), on the three
# datasets of its section 5.3 (ShareGPT's first prompts, WildChat, MATH); and the share of processed
# rows FOCUS saves.
# Usage: tessera exp run focus-table5 OUT [--force] [--quick] [--strict]
EXP=focus-table5
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/focus.sh"
paper_init "$@"
models="sdar-8b llada2.0-mini" datasets="sharegpt wildchat math" batch=128
[ "$QUICK" = 1 ] && models="sdar-8b" datasets="sharegpt" batch=32
lengths_of() { case $1 in sharegpt) echo sharegpt-first ;; *) echo "$1" ;; esac; }
workloads=""
for m in $models; do
    for d in $datasets; do
        w=$d-$m
        workloads+=" $w"
        for sys in lmdeploy focus; do
            fc_point $sys "$w" $batch "$m" $batch --lengths "$(lengths_of "$d")"
            # the decode profile swept: Fig. 2's high end (threshold:sdar-high, above either model's own)
            fc_point $sys "$w-tpf-high" $batch "$m" $batch --lengths "$(lengths_of "$d")" --decode threshold:sdar-high
        done
        derived processed_reduction focus "$w" $batch \
            "$(awk -v r="$(ratio_of redundancy focus lmdeploy "$w" $batch)" 'BEGIN { print 1 - r }')"
    done
done
# the paper prints the reduction only as a range ("approximately 65%-80%", its introduction); the
# table's values are withheld
check "FOCUS processes 65-80% fewer rows in its later layers than LMDeploy" \
    "$(for w in $workloads; do printf 'val("focus","%s","%s","processed_reduction") >= 0.65 && val("focus","%s","%s","processed_reduction") <= 0.80 && ' "$w" $batch "$w" $batch; done) 1"
check "FOCUS's redundancy is below LMDeploy's" \
    "$(for w in $workloads; do printf 'val("focus","%s","%s","redundancy") < val("lmdeploy","%s","%s","redundancy") && ' "$w" $batch "$w" $batch; done) 1"
# shellcheck disable=SC2086 # fc_notes MODEL...: the models, a word each
NOTES="$(fc_notes $models)
WildChat and MATH: --lengths wildchat and math (traces/README.md). Each model decodes at its own TPF:
FOCUS prints decoded tokens a step for SDAR-8B alone (Fig. 2: 2.00-4.05 at block 32; threshold:sdar-low
is its low end); its Appendix A gives LLaDA2.0-mini's as histograms (Fig. 10) with no mean printed, so
LLaDA2.0-mini decodes at the mean its makers publish over 12 benchmarks (2.55 tokens a forward, the
LLaDA2.0-mini-CAP model card: threshold:llada2-mini). A dataset's own TPF is an assumption either way:
rows a step and tokens a step do not depend on the model, only on the TPF, so the table gives each
model at Fig. 2's high end too (threshold:sdar-high, 4.05 tokens a step), the range the datasets'
unpublished TPFs span.
Redundancy counts the rows of every decoding step's later layers (layers 2 and up for FOCUS; all
layers' rows for LMDeploy, whose layers all run the same rows) over the tokens those steps decode.
The importance signal's quality is --focus-snr at its default."
# the table, in the paper's columns
fig_table "FOCUS Table 5: computational redundancy, rows processed / tokens decoded, layers 2 and up"
fig_row Model Dataset Baseline FOCUS Reduction "At TPF 4.05"
for m in $models; do
    for d in $datasets; do
        fig_row "$(fc_name "$m")" "$(fc_name "$d")" "$(fmt "$(value redundancy lmdeploy "$d-$m" $batch)")" \
            "$(fmt "$(value redundancy focus "$d-$m" $batch)")" \
            "$(awk -v r="$(value processed_reduction focus "$d-$m" $batch)" 'BEGIN { printf "%.0f%%", 100 * r }')" \
            "$(fmt "$(value redundancy lmdeploy "$d-$m-tpf-high" $batch)"), $(fmt "$(value redundancy focus "$d-$m-tpf-high" $batch)")"
    done
done
fig_note "Baseline: LMDeploy. Batch $batch, A100-80GB. Lower is more efficient; the paper: a reduction of about 65-80%. At TPF 4.05: baseline, FOCUS."
paper_finish "FOCUS Table 5: rows processed a decoded token, layers 2 and up" "batch size" redundancy
