# shellcheck shell=bash
# focus.sh: the FOCUS evaluation's setting (sourced by experiments/focus-*.sh after lib/paper.sh), as
# its benchmark runs it (sands-lab/FOCUS benchmark/profile_throughput.py, driven by
# run_baseline_throughput_evaluation.sh and run_focus_throughput_evaluation.sh): an A100-80GB,
# 5,000 ShareGPT prompts, each conversation's first (--lengths sharegpt-first), served by as many
# workers as the batch size, each request generated until EOS and at most 2,048 tokens. Every request
# is there at the start and the batch size caps the requests running at once, which keeps as many
# running as that closed loop of workers does. Both systems decode at the model's own TPF (fc_decode:
# SDAR-8B's of FOCUS Fig. 2, threshold:sdar-low, measured at confidence 0.9, LMDeploy's threshold
# there; LLaDA2.0-mini's from its makers' model card, threshold:llada2-mini; FOCUS's runs use 0.8,
# whose TPF is not published), so they differ in what they compute, not in what they decode.
# Cost: LMDeploy's PyTorch engine runs fused kernels, launched eagerly in the benchmark (--eager-mode;
# their issue does not bind at these batch sizes: focus-fig6's report); tessera prices both systems
# with its own engine's calibration of the model measured on an H200 (sim/data/calib), carried to the
# A100 by tessera calib transfer (COST=roofline prices with the roofline instead).
FC_COST=${COST:-calibrated}
case $FC_COST in calibrated | roofline) ;; *) echo "$EXP: COST=$FC_COST: calibrated or roofline" >&2; exit 2 ;; esac
# fc_name SYSTEM | MODEL | DATASET: its name in the figures, as the paper writes it
fc_name() {
    case $1 in
        lmdeploy) echo LMDeploy ;; focus) echo FOCUS ;; dc+) echo "DC+ (delayed cache)" ;;
        sdar-8b) echo SDAR-8B ;; llada2.0-mini) echo LLaDA2.0-mini ;;
        sharegpt) echo ShareGPT ;; wildchat) echo WildChat ;; math) echo MATH ;;
        *) echo "$1" ;;
    esac
}
# fc_requests BATCH: the requests of a point (the benchmark's 5,000; --quick: four times the batch)
fc_requests() { if [ "$QUICK" = 1 ]; then echo $((4 * $1)); else echo 5000; fi; }
# fc_cost MODEL: the cost options of a point of MODEL, in the array FC_COST_ARGS
fc_cost() {
    FC_COST_ARGS=(--cost "$FC_COST")
    [ "$FC_COST" = roofline ] && return 0
    carry_calib h200 a100-80gb "$1" tessera
    FC_COST_ARGS+=(--calib "$CARRIED" --extrapolate)
}
# fc_decode MODEL: the decode model of MODEL's points (sim/data/decode_profiles.json names the sources)
fc_decode() { case $1 in llada2.0-mini) echo threshold:llada2-mini ;; *) echo threshold:sdar-low ;; esac; }
# fc_args MODEL BATCH: the options of a point of MODEL at BATCH but its system, in the array FC_ARGS
fc_args() {
    fc_cost "$1"
    FC_ARGS=(--model "$1" --gpu a100-80gb --decode "$(fc_decode "$1")" --lengths sharegpt-first --gen-len 0
        --max-new-tokens 2048 --requests "$(fc_requests "$2")" --rps 1000000 --max-batch "$2" --seed 1
        "${FC_COST_ARGS[@]}")
}
# fc_point SYSTEM WORKLOAD X MODEL BATCH [SIM-ARGS...]: one system's point
fc_point() {
    local sys=$1 wl=$2 x=$3
    fc_args "$4" "$5"
    shift 5
    point "$sys" "$wl" "$x" --system "$sys" "${FC_ARGS[@]}" "$@"
}
# fc_gemm_band MODEL: the low and high ends of the A100's transfer band for a Refresh step of MODEL
# (the carried calibration's band file: "(-25% / +2%)" gives 0.75 1.02), as GEMM-time factors
fc_gemm_band() {
    fc_cost "$1"
    if [ "$FC_COST" = roofline ]; then echo "1.00 1.00"; else carried_gemm_band; fi
}
# fc_speedup_range WORKLOAD X MODEL BATCH [SIM-ARGS...]: FOCUS's speedup over LMDeploy at (WORKLOAD, X),
# whose points are run, over the setting's unknowns, one at a time (--quick: the TPF alone):
#   TPF=high   FOCUS's TPF at its own confidence of 0.8, which the paper does not print: at most Fig. 2's
#              high end (threshold:sdar-high), where LMDeploy decodes at 0.9's
#   SNR=1.5, 6 the importance signal's separation (--focus-snr, 3 by default) a factor of two either
#              way: the paper withholds its decodable tokens' statistics
#   GEMM=F     the GEMMs' time at the ends of the A100's transfer band (both systems)
# Points WORKLOAD~NAME=VALUE; the derived speedup_lo and speedup_hi; FC_RANGE a line for the report,
# naming the assumption that moves the speedup most.
fc_speedup_range() {
    local w=$1 x=$2 m=$3 b=$4 band av f d v vals worst="" worst_d=0 cells="" dv
    shift 4
    d=$(value speedup focus "$w" "$x")
    band=$(fc_gemm_band "$m")
    vals=("$d")
    for av in TPF=high SNR=1.5 SNR=6 GEMM=${band% *} GEMM=${band#* }; do
        [ "$QUICK" = 1 ] && [ "$av" != TPF=high ] && continue
        f=${av#*=}
        case $av in
            TPF=*) fc_point focus "$w~$av" "$x" "$m" "$b" "$@" --decode threshold:sdar-high ;;
            SNR=*) fc_point focus "$w~$av" "$x" "$m" "$b" "$@" --focus-snr "$f" ;;
            GEMM=*) # shellcheck disable=SC2046
                    fc_point lmdeploy "$w~$av" "$x" "$m" "$b" "$@" $(gemm_scale_opts "$f")
                    # shellcheck disable=SC2046
                    fc_point focus "$w~$av" "$x" "$m" "$b" "$@" $(gemm_scale_opts "$f") ;;
        esac
        v=$(ratio "$(value throughput_tok_s focus "$w~$av" "$x")" \
            "$(value throughput_tok_s lmdeploy "$([[ $av == GEMM=* ]] && echo "$w~$av" || echo "$w")" "$x")")
        derived speedup focus "$w~$av" "$x" "$v"
        vals+=("$v") cells+="${cells:+, }$av $(fmt "$v")x"
        dv=$(awk -v a="$v" -v d="$d" 'BEGIN { print (a > d ? a - d : d - a) }')
        awk -v a="$dv" -v m="$worst_d" 'BEGIN { exit !(a > m) }' && worst=${av%%=*} worst_d=$dv
    done
    derived_range speedup focus "$w" "$x" "${vals[@]}"
    # shellcheck disable=SC2034 # FC_RANGE: the experiments' reports read it
    FC_RANGE="$w at $x: $(fmt "$d")x at the defaults; $cells; range $(fmt "$RANGE_LO")-$(fmt "$RANGE_HI")x, most sensitive to $worst"
}
# fc_range_notes: what fc_speedup_range sweeps, said for the report
fc_range_notes() {
    echo "The paper's speedups over the setting's unknowns (derived metrics speedup_lo and speedup_hi), one
moved at a time (workloads W~NAME=VALUE): FOCUS's TPF at its own confidence of 0.8, which the paper
does not print (TPF=high: at most Fig. 2's high end, 4.05 tokens a step; LMDeploy stays at 0.9's);
the importance signal's separation a factor of two either way from its default 3 (SNR=1.5 and 6,
--focus-snr: the paper withholds its decodable tokens' statistics); the GEMMs' time at the ends of
the A100's transfer band for a Refresh step (GEMM=F, both systems; --op-scale on the QKV, O, FFN and
LM-head GEMMs)."
}
# fc_notes MODEL...: the setting and the cost model, said for the report
fc_notes() {
    local n="5,000 requests as the paper's"
    [ "$QUICK" = 1 ] && n="four times the batch size of requests (--quick; the paper's 5,000 otherwise)"
    echo "Workload: FOCUS's benchmark (benchmark/profile_throughput.py): ShareGPT's first prompts
(--lengths sharegpt-first: vLLM's paper artifact's lengths of each conversation's first round), $n,
each generated until EOS and at most 2,048 tokens (--gen-len 0 --max-new-tokens 2048), the batch size
capping the requests running at once. Both systems decode at the model's TPF: SDAR-8B's at
confidence 0.9 (threshold:sdar-low, 2.00 tokens a step, the low end of FOCUS Fig. 2), LLaDA2.0-mini's
mean over 12 benchmarks from its makers' LLaDA2.0-mini-CAP model card (threshold:llada2-mini, 2.55;
FOCUS's Fig. 10 gives it as histograms without means). FOCUS's own runs decode at 0.8, whose TPF the
paper does not print, so the speedups here leave out what the lower threshold gains."
    if [ "$FC_COST" = roofline ]; then
        echo "Cost model: roofline on the A100-80GB's table entry."
        return
    fi
    echo "Cost model: calibrated. LMDeploy's PyTorch engine runs fused kernels (launched eagerly: the
benchmark's --eager-mode); both systems are priced by
tessera's own engine's calibration measured on an H200 (sim/data/calib), carried to the A100-80GB by
tessera calib transfer, as no A100 calibration is measured. The transfer's band there (tessera calib
show --gpu a100-80gb --from h200):"
    local m
    for m in "$@"; do
        fc_cost "$m"
        echo "  $m:"
        sed -n '/^  /p' "$CARRIED_BAND"
    done
    echo "The calibrated model on batches like these (64 to 256 ShareGPT sequences of SDAR-8B replayed on
an H100 and an H200, experiments/records/batch-mixed-h100 and batch-mixed-h200): LMDeploy's steps
within 1.0-3.2% per step, FOCUS's within 2.5-7.4%, every run's total within 3.8%. FOCUS's attention
comes out -5 ... +1% on the H200 and 3-12% short on the H100; about 3 points of it are its eviction
kernels, which the calibration does not price. The H200's calibration carried to the H100 prices
them within 3.2-6.6% per step."
}
