# focus.sh: the FOCUS evaluation's setting (sourced by experiments/focus-*.sh after lib/paper.sh): an
# A100-80GB, ShareGPT lengths, every request there at the start and the batch size capping the
# requests running at once (twice the batch size of requests), both systems decoding at SDAR-8B's
# TPF of FOCUS Fig. 2 (threshold:sdar-low), so they differ in what they compute, not in what they
# decode.
# fc_point SYSTEM WORKLOAD X MODEL BATCH [SIM-ARGS...]: one system's point
fc_point() {
    local sys=$1 wl=$2 x=$3 model=$4 batch=$5
    shift 5
    point "$sys" "$wl" "$x" --system "$sys" --model "$model" --gpu a100-80gb --decode threshold:sdar-low \
        --lengths sharegpt --requests $((2 * batch)) --rps 1000000 --max-batch "$batch" --seed 1 "$@"
}
