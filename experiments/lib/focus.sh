# focus.sh: the FOCUS evaluation's setting (sourced by experiments/focus-*.sh after lib/paper.sh), as
# its benchmark runs it (sands-lab/FOCUS benchmark/profile_throughput.py, driven by
# run_baseline_throughput_evaluation.sh and run_focus_throughput_evaluation.sh): an A100-80GB,
# 5,000 ShareGPT prompts, each conversation's first (--lengths sharegpt-first), served by as many
# workers as the batch size, each request generated until EOS and at most 2,048 tokens. Every request
# is there at the start and the batch size caps the requests running at once, which keeps as many
# running as that closed loop of workers does. Both systems decode at SDAR-8B's TPF of FOCUS Fig. 2
# (threshold:sdar-low, measured at confidence 0.9, LMDeploy's threshold there; FOCUS's runs use 0.8,
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
# fc_args MODEL BATCH: the options of a point of MODEL at BATCH but its system, in the array FC_ARGS
fc_args() {
    fc_cost "$1"
    FC_ARGS=(--model "$1" --gpu a100-80gb --decode threshold:sdar-low --lengths sharegpt-first --gen-len 0
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
# fc_notes MODEL...: the setting and the cost model, said for the report
fc_notes() {
    local n="5,000 requests as the paper's"
    [ "$QUICK" = 1 ] && n="four times the batch size of requests (--quick; the paper's 5,000 otherwise)"
    echo "Workload: FOCUS's benchmark (benchmark/profile_throughput.py): ShareGPT's first prompts
(--lengths sharegpt-first: vLLM's paper artifact's lengths of each conversation's first round), $n,
each generated until EOS and at most 2,048 tokens (--gen-len 0 --max-new-tokens 2048), the batch size
capping the requests running at once. Both systems decode at SDAR-8B's TPF at confidence 0.9
(threshold:sdar-low); FOCUS's own runs decode at 0.8, whose TPF the paper does not print, so the
speedups here leave out what the lower threshold gains."
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
