#!/usr/bin/env bash
# experiments/focus-fig8.sh: FOCUS Figure 8, where the speedup comes from: LMDeploy's block diffusion,
# the delayed intra-block cache alone (DC+, policy block+delayed) and FOCUS (the cache and token
# eviction), SDAR-8B on an A100-80GB, ShareGPT's first prompts, batch 128 (lib/focus.sh).
# Usage: tessera exp run focus-fig8 OUT [--force] [--quick] [--strict]
EXP=focus-fig8
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/focus.sh"
paper_init "$@"
batch=128
[ "$QUICK" = 1 ] && batch=32
fc_point lmdeploy sharegpt-sdar-8b $batch sdar-8b $batch
fc_point focus sharegpt-sdar-8b $batch sdar-8b $batch
# DC+: LMDeploy with the delayed intra-block cache alone
fc_args sdar-8b $batch
point dc+ sharegpt-sdar-8b $batch --system lmdeploy --policy block+delayed "${FC_ARGS[@]}"
for sys in dc+ focus; do
    derived speedup $sys sharegpt-sdar-8b $batch "$(ratio_of throughput_tok_s $sys lmdeploy sharegpt-sdar-8b $batch)"
done
check "the delayed cache alone gains something over LMDeploy" 'val("dc+","sharegpt-sdar-8b","'$batch'","speedup") > 1'
check "token eviction gains more than the delayed cache alone" \
    'val("focus","sharegpt-sdar-8b","'$batch'","speedup") > val("dc+","sharegpt-sdar-8b","'$batch'","speedup")'
NOTES="$(fc_notes sdar-8b)
The figure's values are withheld; only its ordering is checked."
# the figure: a bar a system
fig_bars "" "" "Throughput (tokens/s)" yfrom0
for sys in lmdeploy dc+ focus; do fig_bar "SDAR-8B, ShareGPT, batch $batch" "$(fc_name $sys)" $sys sharegpt-sdar-8b $batch throughput_tok_s; done
fig_note "Speedup over LMDeploy: DC+ $(fmt "$(value speedup dc+ sharegpt-sdar-8b $batch)")x, FOCUS $(fmt "$(value speedup focus sharegpt-sdar-8b $batch)")x (the paper's values are withheld)."
paper_finish "FOCUS Fig. 8: LMDeploy, DC+ and FOCUS, A100-80GB" "batch size" speedup
