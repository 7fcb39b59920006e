#!/usr/bin/env bash
# experiments/mosaic-fig10.sh: Mosaic Fig. 10, per-step latency and L_max over the prompt to output
# ratio r_p, LLaDA-8B, Dream-7B and LLaDA-MoE on an RTX 3090 and an A100 (40 GB), Mosaic against
# its baselines. lib/mosaic.sh has the setting; r_p = P / G leaves a share 1 / (1 + r_p) of the
# rows masked at the first step, which Mosaic's mask-only logits take alone.
#   mosaic-torch  the baselines' configuration (PyTorch's caching allocator, logits for every row in
#                 one piece, their fp32 softmax; PyTorch eager's kernels). Native, the unmodified
#                 code on one request, runs the same step under the same allocator: its points are
#                 these.
#   mosaic-compile  Mosaic-Compile, where the PyTorch harness measured torch.compile on the model
#                 (lib/mosaic.sh, mo_compile: all three models): mosaic-torch's L_max times the
#                 measured compile / eager ratio; its step mosaic-torch's less what compiling saved
#                 on the H100, as a share of the ops Inductor fuses there, taken off those ops on
#                 the card
#   mosaic        first-fit over the step, mask-only logits, lazy chunking (lib/mosaic.sh); PyTorch
#                 eager's GEMMs and attention, its runtime's fused norm, RoPE and sampling kernels
#                 (priced as the tessera engine's), its logits for the masked rows only
# L_max from tessera mem lmax; the per-step latency of one whole-sequence step at the longest
# context every system fits (the baselines' L_max), priced by the PyTorch harness's torch-eager
# calibration of the model measured on an H100 (its ops and host; LLaDA-MoE-7B's experts a grouped
# MoE) and, for Mosaic's fused kernels, the tessera engine's, each carried to the card by tessera
# calib transfer (COST=roofline prices by the roofline instead).
# Usage: tessera exp run mosaic-fig10 OUT [--force] [--quick] [--strict]
EXP=mosaic-fig10
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/mosaic.sh"
paper_init "$@"
models="llada-8b dream-7b llada-moe-7b" gpus="rtx3090 a100-40gb" ratios="0.1 0.3 0.5 0.7 0.9"
[ "$QUICK" = 1 ] && models="llada-8b" gpus="a100-40gb" ratios="0.1 0.9"
MO_COST=${COST:-calibrated}
case $MO_COST in calibrated | roofline) ;; *) echo "$EXP: COST=$MO_COST: calibrated or roofline" >&2; exit 2 ;; esac
# step_ops MODEL GPU ROWS LOGIT_ROWS IMPL [FROM]: one whole-sequence step's price and the ops that
# the fused kernels of Mosaic's runtime and of torch.compile change, "step norm rope sample fusible"
# (ms; fusible: the layers' ops Inductor fuses, norm + rope + resid + act): IMPL's calibration
# measured on FROM (h100) carried to GPU, or priced on GPU itself where GPU is FROM; the roofline
# with COST=roofline
step_ops() {
    local cost=(--roofline)
    if [ "$MO_COST" = calibrated ]; then
        cost=(--extrapolate)
        if [ "$2" != "${6:-h100}" ]; then
            carry_calib "${6:-h100}" "$2" "$1" "$5"
            cost+=(--calib "$CARRIED")
        fi
    fi
    "$bin" calib price "${cost[@]}" --model "$1" --gpu "$2" --impl "$5" --step "1,$3,0,$4,0" |
        awk '$3 == "ms" { t[$1] = $2 }
            END { printf "%s %s %s %s %s\n", t["step"], t["norm"] + 0, t["rope"] + 0, t["sample"] + 0,
                  t["norm"] + t["rope"] + t["resid"] + t["act"] }'
}
# fused_from MODEL: the card whose tessera calibration of MODEL prices the fused kernels (the H100's,
# else the H200's: LLaDA-MoE-7B's engine was calibrated on the H200 alone)
fused_from() {
    if [ -f "$(shipped_calib_dir)/h100-$1-tessera.csv" ]; then echo h100; else echo h200; fi
}
# cost_notes: the cost model, said for the report (with each carried calibration's band)
cost_notes() {
    if [ "$MO_COST" = roofline ]; then
        echo "Latency is priced by the roofline with PyTorch eager's kernels."
        return
    fi
    echo "Latency is priced by the PyTorch harness's torch-eager calibration of each model measured on an H100
(engine/bench/torch_profile.py: records/torch-eager-ops, LLaDA-MoE-7B's experts a grouped MoE, each op
timed from a CUDA graph of its own), carried to each card by tessera calib
transfer, as no calibration of those cards is measured; steps past the profiled 16,384 tokens are
extrapolated. The transfer's band (tessera calib show --gpu GPU --from h100):"
    local g m
    for g in $gpus; do for m in $models; do
        carry_calib h100 "$g" "$m" torch-eager
        echo "  $m on $g:"
        sed -n '/^  /p' "$CARRIED_BAND"
    done; done
}
compiled=() # the workloads with a Mosaic-Compile point
read -r -a torch_opts <<<"$(mo_args torch)" # PyTorch eager's mem options
for g in $gpus; do
    for m in $models; do
        wl="$m-$g" fused=$(fused_from "$m")
        for rp in $ratios; do
            mask=$(awk -v r="$rp" 'BEGIN { printf "%.4f", 1 / (1 + r) }')
            mo_run mosaic-torch "$wl" "$rp" "$m" "$g" mem lmax --model "$m" --gpu "$g" "${torch_opts[@]}"
            derived lmax mosaic-torch "$wl" "$rp" "$(mo_json "$MO_F" lmax)"
            mo_run mosaic "$wl" "$rp" "$m" "$g" mem lmax --model "$m" --gpu "$g" --planner first-fit --softmax-copy 8 \
                --act-layout mosaic --mask-ratio "$mask" --chunking lazy
            derived lmax mosaic "$wl" "$rp" "$(mo_json "$MO_F" lmax)"
            L=$(value lmax mosaic-torch "$wl" "$rp")
            rows=$(awk -v l="$L" -v f="$mask" 'BEGIN { r = int(l * f + 0.5); print (r < 1 ? 1 : r) }')
            # mosaic-torch: PyTorch eager's step, every row's logits. Mosaic: its masked rows' logits,
            # and its runtime's fused kernels (vLLM's RMSNorm, the norm with its residual add and RoPE,
            # its flash sampling) in place of eager's norm, RoPE and sampling, priced as the tessera
            # engine's own single-pass kernels; its GEMMs, attention and SwiGLU as eager runs them
            read -r e_step _ _ _ e_fused <<<"$(step_ops "$m" "$g" "$L" "$L" torch-eager)"
            read -r k_step k_norm k_rope k_sample _ <<<"$(step_ops "$m" "$g" "$L" "$rows" torch-eager)"
            read -r _ f_norm f_rope f_sample _ <<<"$(step_ops "$m" "$g" "$L" "$rows" tessera "$fused")"
            { [ -n "$e_step" ] && [ -n "$k_step" ] && [ -n "$f_norm" ]; } ||
                { echo "$EXP: calib price failed for $m on $g at $L rows" >&2; exit 1; }
            derived latency_ms mosaic-torch "$wl" "$rp" "$e_step"
            derived latency_ms mosaic "$wl" "$rp" "$(awk -v s="$k_step" -v a="$k_norm" -v b="$k_rope" -v c="$k_sample" \
                -v x="$f_norm" -v y="$f_rope" -v z="$f_sample" 'BEGIN { print s - (a - x) - (b - y) - (c - z) }')"
            derived reduction mosaic "$wl" "$rp" \
                "$(awk -v a="$(value latency_ms mosaic "$wl" "$rp")" -v b="$(value latency_ms mosaic-torch "$wl" "$rp")" \
                    'BEGIN { print 1 - a / b }')"
            cl=$(mo_compile lmax "$m" "$g") ct=$(mo_compile time "$m" "$L")
            if [ -n "$cl" ] && [ -n "$ct" ]; then
                derived lmax mosaic-compile "$wl" "$rp" "$(awk -v l="$L" -v r="$cl" 'BEGIN { printf "%d", l * r + 0.5 }')"
                # Mosaic-Compile: what torch.compile saved PyTorch on the H100 at this length, as a share
                # of the layers' ops it fuses (Inductor's pointwise and reduction kernels: the norms,
                # RoPE, the residual adds, SwiGLU's product; it calls the GEMMs and attention as eager
                # does, and the head and sampling stay eager), taken off the same ops on this card
                read -r h_step _ _ _ h_fused <<<"$(step_ops "$m" h100 "$L" "$L" torch-eager)"
                fz=$(awk -v r="$ct" -v s="$h_step" -v e="$h_fused" 'BEGIN { printf "%.4f", (e > 0) ? (1 - r) * s / e : 0 }')
                derived compile_share mosaic-compile "$wl" "$rp" "$fz"
                derived latency_ms mosaic-compile "$wl" "$rp" "$(awk -v s="$e_step" -v z="$fz" -v e="$e_fused" 'BEGIN { print s - z * e }')"
                derived reduction_compile mosaic "$wl" "$rp" \
                    "$(awk -v a="$(value latency_ms mosaic "$wl" "$rp")" -v b="$(value latency_ms mosaic-compile "$wl" "$rp")" \
                        'BEGIN { print 1 - a / b }')"
                compiled+=("$m-$g")
            fi
            printf '%s %-22s r_p %s: L_max %s (baselines) and %s (Mosaic); step at %s rows %s ms and %s ms\n' \
                "$EXP" "$wl" "$rp" "$L" "$(value lmax mosaic "$wl" "$rp")" "$L" \
                "$(value latency_ms mosaic-torch "$wl" "$rp")" "$(value latency_ms mosaic "$wl" "$rp")" >&2
        done
    done
done
first=${ratios%% *} last=${ratios##* }
each() { # each FORMAT: FORMAT (with %s for the workload and %s for r_p) for every point, joined by &&
    for g in $gpus; do for m in $models; do for rp in $ratios; do
        # shellcheck disable=SC2059 # FORMAT: the caller's, its %s the workload and r_p
        printf "$1"' && ' "$m-$g" "$rp" "$m-$g" "$rp"
    done; done; done
    echo 1
}
check "Mosaic's L_max is above the baselines' at every r_p" \
    "$(each 'val("mosaic","%s","%s","lmax") > val("mosaic-torch","%s","%s","lmax")')"
check "Mosaic does not compromise latency: its step is no slower than the baselines' at every r_p" \
    "$(each 'val("mosaic","%s","%s","latency_ms") <= val("mosaic-torch","%s","%s","latency_ms")')"
check "Mosaic's latency reduction is least at the smallest r_p and most at the largest (Fig. 11)" \
    "$(for g in $gpus; do for m in $models; do
        printf 'val("mosaic","%s","%s","reduction") < val("mosaic","%s","%s","reduction") && ' "$m-$g" "$first" "$m-$g" "$last"
    done; done) 1"
# Fig. 11: its largest reduction is LLaDA-MoE's at r_p = 0.9, its smallest Dream's at r_p = 0.1
# (the three models' runs only)
extreme() { # extreme MODEL R_P OP: that model's reduction at R_P OP every other point's, on each card
    for g in $gpus; do for m in $models; do for rp in $ratios; do
        printf 'val("mosaic","%s-%s","%s","reduction") %s val("mosaic","%s","%s","reduction") && ' "$1" "$g" "$2" "$3" "$m-$g" "$rp"
    done; done; done
    echo 1
}
each_compiled() { # each_compiled FORMAT: as each, over the workloads with Mosaic-Compile points
    local w rp
    for w in $(printf '%s\n' "${compiled[@]}" | sort -u); do for rp in $ratios; do
        # shellcheck disable=SC2059 # FORMAT: the caller's, its %s the workload and r_p
        printf "$1"' && ' "$w" "$rp" "$w" "$rp"
    done; done
    echo 1
}
check "Mosaic's L_max is above Mosaic-Compile's at every r_p" \
    "$(each_compiled 'val("mosaic","%s","%s","lmax") > val("mosaic-compile","%s","%s","lmax")')"
check "Mosaic does not compromise latency against Mosaic-Compile: its step is no slower at every r_p" \
    "$(each_compiled 'val("mosaic","%s","%s","latency_ms") <= val("mosaic-compile","%s","%s","latency_ms")')"
if [[ " $models " == *" llada-moe-7b "* && " $models " == *" dream-7b "* ]]; then
    check "the largest latency reduction is LLaDA-MoE's at r_p = 0.9, on each card (Fig. 11b)" "$(extreme llada-moe-7b 0.9 '>=')"
    check "the smallest latency reduction is Dream's at r_p = 0.1, on each card (Fig. 11a)" "$(extreme dream-7b 0.1 '<=')"
fi
# why the two trends that tessera's kernels decide can fail: the points where Mosaic's step is slower
# than Mosaic-Compile's, and each model's smallest reduction on each card
slower=$(for w in $(printf '%s\n' "${compiled[@]}" | sort -u); do for rp in $ratios; do
    printf '%s %s\n' "$w" "$(ratio "$(value latency_ms mosaic "$w" "$rp")" "$(value latency_ms mosaic-compile "$w" "$rp")")"
done; done | awk '$2 > 1 { n[$1]++; lo[$1] = (n[$1] == 1 || $2 < lo[$1]) ? $2 : lo[$1]; hi[$1] = $2 > hi[$1] ? $2 : hi[$1] }
    END { for (w in n) printf "%s %.2f-%.2fx (%d r_p)\n", w, lo[w], hi[w], n[w] }' | sort | paste -sd';' | sed 's/;/; /g')
why "Mosaic does not compromise latency against Mosaic-Compile" "Mosaic's step over Mosaic-Compile's where it is slower: $slower.
Mosaic's step is PyTorch eager's with its runtime's fused norm, RoPE and sampling kernels and its
masked rows' logits; Mosaic-Compile's is eager's less what torch.compile saved PyTorch on the H100
as a share of the ops it fuses (the notes below). Where compile's fusions save more than Mosaic's
kernels and logits do, Mosaic's step is the slower."
least=$(for g in $gpus; do
    for m in $models; do for rp in $ratios; do printf '%s %s %s\n' "$(value reduction mosaic "$m-$g" "$rp")" "$m" "$rp"; done; done |
        sort -g | awk -v g="$g" 'NR == 1 { printf "on the %s %s at r_p %s (%.1f%%), ", g, $2, $3, 100 * $1 }'
done)
why "the smallest latency reduction is Dream's" "tessera's smallest reduction is ${least%, }: the reduction is what
mask-only logits save of the LM head and what the fused kernels save of eager's norm, RoPE and
sampling, each a share of the step that differs by model and card."
NOTES="x is r_p, the prompt to output ratio: a share 1 / (1 + r_p) of the rows masked. mosaic-torch is
the baselines' configuration (PyTorch's caching allocator, every row's logits in one piece, their
fp32 softmax: its cast and its output), and Native's too: one request runs the same step under the
same allocator. PyTorch's own L_max under the cards' memory (records/torch-lmax-h100) is 6832 and
20256 for LLaDA-8B, 5056 and 14304 for Dream-7B: mosaic-torch's is 6% below the first and 13% above
the second. mosaic-compile is Mosaic-Compile: torch.compile over the layers, the head and sampling
eager; its L_max is mosaic-torch's times the compile / eager ratio PyTorch itself gave under the
card's memory on an H100 (1.01x and 0.93x eager's for LLaDA-8B on the two cards, 1.21x for
Dream-7B; LLaDA-MoE-7B's, its experts a grouped MoE as a port onto vLLM runs them
(records/torch-lmax-moe-h100), 1.00x and 1.01x). Its step is mosaic-torch's less what torch.compile
saved PyTorch on the H100 at the nearest lengths (the whole-model step 0.79-0.92x and 0.86-0.94x
eager's from 2k to 32k tokens; LLaDA-MoE-7B's 1.00-1.04x: its layers' time is the grouped GEMMs',
which Inductor calls as they are), taken as a share of the layers' ops Inductor fuses (the norms,
RoPE, the residual adds, SwiGLU's product; it calls the GEMMs and attention as eager does), priced
by the H100's torch-eager calibration (compile_share: 0.40-0.49 of them for the dense models, -0.03
to -0.06 for LLaDA-MoE-7B), and that share taken off the same ops on the card: a card whose GEMMs
are a larger share of the step (the RTX 3090's and the A100's against the H100's) gains less from
compiling than the H100 did. The same harness on an H200 measured compile ratios 0.86-0.95
(records/torch-lmax-h200): the saving moves between machines by up to 7 points of the step, more
than Mosaic's lead over Mosaic-Compile for the dense models here. Mosaic's step is PyTorch eager's GEMMs, attention and
SwiGLU, its logits for the masked rows only, and its runtime's fused kernels in place of eager's
norm, RoPE and sampling (flashserve/Mosaic vllm_add_llada/llada_blocks.py and its Dream and
LLaDA-MoE counterparts: vLLM's rms_norm and fused_add_rms_norm_out, vLLM's rotary kernel in place,
flash_attn_varlen into a planned buffer; flash_sample's confidence kernels), each priced as the
tessera engine's own single-pass kernel of that op (its calibration measured on the H100, LLaDA-MoE-7B's
on the H200, carried to the card). Latency is one whole-sequence step at the baselines' L_max, where
no system chunks; reduction is 1 - Mosaic's over mosaic-torch's, reduction_compile over
mosaic-compile's. The paper's numbers are withheld. Mosaic's graph registrar, which plans memory,
changes no kernel and is not priced."
NOTES="$NOTES
$(cost_notes)"
SHOW_METRICS="lmax latency_ms reduction reduction_compile compile_share"
# shellcheck disable=SC2034 # FIG_TITLE: read by lib/figure.sh
FIG_TITLE="Mosaic Fig. 10: Lₘₐₓ and per-step latency over rₚ"
# the figure: a column a model, a row a metric on each card (L_max, then the step's latency)
fig_cols "$(wc -w <<<"$models")"
for g in $gpus; do
    for metric in lmax latency_ms; do
        for m in $models; do
            if [ $metric = lmax ]; then
                fig_lines "$(mo_name "$m"), $(mo_name "$g")" "Prompt-to-output ratio rₚ" "$MO_LMAX_LABEL" logy "yfmt=%.0s%c"
            else
                fig_lines "$(mo_name "$m"), $(mo_name "$g")" "Prompt-to-output ratio rₚ" "Per-step latency at the baselines' Lₘₐₓ (ms)" yfrom0
            fi
            fig_curve "Native / Mosaic-Torch" mosaic-torch "$m-$g" $metric
            fig_curve "Mosaic-Compile" mosaic-compile "$m-$g" $metric
            fig_curve "Mosaic" mosaic "$m-$g" $metric
        done
    done
done
fig_note "Where Mosaic-Compile's value is Native / Mosaic-Torch's (torch.compile measured at 1.00-1.01x eager's Lₘₐₓ on LLaDA-MoE), its squares hide their circles."
paper_finish "Mosaic Fig. 10: L_max and per-step latency over r_p" "r_p (prompt / output)" lmax
