# shellcheck shell=bash
# mosaic.sh: the Mosaic evaluation's setting (sourced by experiments/mosaic-*.sh after lib/paper.sh):
# one forward of a whole sequence (Mosaic's workload has no KV cache: its activations are recomputed
# at every step) on an RTX 3090 (24 GB) and an A100 (40 GB), LLaDA-8B, Dream-7B and LLaDA-MoE, a
# prompt to output ratio r_p of 1 (half the rows masked). The memory figures come from the op graph
# of the step laid out by a planner (tessera mem plan / mem lmax), not from tessera sim.
#
# The systems, as memory configurations of that op graph:
#   torch   the baselines (Native, Mosaic-Torch and Mosaic-Compile all allocate through PyTorch's
#           caching allocator): the caching planner, logits for every row and PyTorch's fp32
#           softmax of them for sampling (its cast and its output, 8 bytes a logit: with them the op
#           graph holds PyTorch's own peak allocation to the byte, records/torch-lmax-h100)
#   compile Mosaic-Compile: torch.compile over the model's layers, the LM head and the sampling
#           eager (a port onto vLLM compiles the model's forward, not its sampler), so the same
#           memory configuration as torch; what compiling changes is measured
#           (records/torch-lmax-h100 and torch-lmax-moe-h100, engine/bench/torch_lmax.py on an H100
#           under each card's memory, LLaDA-8B, Dream-7B and LLaDA-MoE-7B) and carried over as
#           ratios to torch (mo_compile)
#   mosaic  the global memory manager (first-fit over the whole step in virtual memory, each layer's
#           activations as Mosaic's own plan lays them out: mem --act-layout mosaic, from
#           flashserve/Mosaic vllm/v1/worker/graph_builder.py), mask-only
#           logits, lazy chunking within what the card leaves after the weights and a 1 GiB
#           reserve, less what Mosaic's chunk search keeps free of it (900 MiB, 1,600 for an MoE
#           model: tessera's chunk searches keep it by default, mem --search-margin-mib)
# Its ablation (Fig. 14) adds Mosaic's parts one at a time: the manager, then mask-only logits, then
# lazy chunking.

MO_MASK=0.5

# mo_name MODEL | GPU | MODEL-GPU: its name in the figures, as the paper writes it
mo_name() {
    case $1 in
        llada-8b) echo LLaDA-8B ;; dream-7b) echo Dream-7B ;; llada-moe-7b) echo LLaDA-MoE ;;
        rtx3090) echo "RTX 3090" ;; a100-40gb) echo A100-40GB ;;
        *-rtx3090|*-a100-40gb) echo "$(mo_name "${1%-*-*}"), $(mo_name "${1#"${1%-*-*}"-}")" ;;
        mosaic) echo Mosaic ;; mosaic-fc) echo Mosaic-FC ;; mosaic-bf) echo Mosaic-BF ;; mosaic-ilp) echo Mosaic-ILP ;;
        *) echo "$1" ;;
    esac
}
# the L_max axis: L_max in tokens, thousands written k
# shellcheck disable=SC2034 # MO_LMAX_LABEL: the experiments' figures read it
MO_LMAX_LABEL="Longest context Lₘₐₓ (tokens)"

# mo_json FILE KEY: a number from mem plan's or mem lmax's JSON (empty where FILE is missing; the
# file reaches sqlite3 on stdin, its path never SQL text; KEY is a name or refused)
mo_json() {
    [[ $2 =~ ^[A-Za-z][A-Za-z0-9_]*$ ]] || { echo "$EXP: mo_json: '$2' is not a key's name" >&2; exit 2; }
    if [ -r "$1" ]; then sqlite3 :memory: "SELECT json_extract(readfile('/dev/stdin'), '\$.$2')" <"$1"; else echo; fi
}

# mo_run SYSTEM WORKLOAD X MODEL GPU ARGS...: one `tessera ARGS... --json` run (mem plan or mem lmax),
# its JSON in OUT/points/ (its path in MO_F), its model and GPU in the index
mo_run() {
    local sys=$1 wl=$2 x=$3 model=$4 gpu=$5
    shift 5
    npoints=$((npoints + 1))
    # shellcheck disable=SC2154 # out: the experiment's folder, set by paper_init (lib/paper.sh)
    MO_F="$out/points/$npoints.json"
    # shellcheck disable=SC2154 # bin: the binary, set by lib/paper.sh
    if ! "$bin" "$@" --json >"$MO_F" 2>"$out/points/$npoints.log"; then
        echo "$EXP: point $npoints ($sys, $wl, x = $x) failed: $(head -3 "$out/points/$npoints.log")" >&2
        exit 1
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$wl" "$x" "$model" "$gpu" "$npoints" >>"$out/points.idx"
}

# mo_budget MODEL GPU: the activation budget the card leaves (GiB, into MO_BUDGET), as mem lmax
# computes it (the card's memory less the weights and a 1 GiB reserve)
mo_budget() {
    local f="$out/points/budget-$1-$2.json"
    "$bin" mem lmax --model "$1" --gpu "$2" --planner first-fit --json >"$f" 2>&1 ||
        { echo "$EXP: mem lmax --model $1 --gpu $2 failed: $(head -3 "$f")" >&2; exit 1; }
    # shellcheck disable=SC2034 # MO_BUDGET: the experiments read it
    MO_BUDGET=$(awk -v b="$(mo_json "$f" activation_budget_bytes)" 'BEGIN { printf "%.6f", b / 1073741824 }')
}

# mo_args SYSTEM: the mem options of a system or ablation stage
mo_args() {
    case $1 in
        torch) echo "--planner caching --softmax-copy 8" ;;
        manager) echo "--planner first-fit --softmax-copy 8 --act-layout mosaic" ;;
        mask-only) echo "--planner first-fit --softmax-copy 8 --act-layout mosaic --mask-ratio $MO_MASK" ;;
        mosaic) echo "--planner first-fit --softmax-copy 8 --act-layout mosaic --mask-ratio $MO_MASK --chunking lazy" ;;
    esac
}

# mo_plan SYSTEM WORKLOAD TOKENS MODEL GPU [BUDGET_GIB]: one step of TOKENS rows planned; records its
# peak-to-average ratio, inflation (reserved over the theoretical peak, minus 1) and reserved peak
mo_plan() {
    local sys=$1 wl=$2 T=$3 model=$4 gpu=$5 budget=${6:-} sys_opts
    read -r -a sys_opts <<<"$(mo_args "$sys")"
    mo_run "$sys" "$wl" "$T" "$model" "$gpu" mem plan --model "$model" --tokens "$T" "${sys_opts[@]}" \
        ${budget:+--budget-gib "$budget"}
    local f=$MO_F
    derived peak_to_average "$sys" "$wl" "$T" "$(mo_json "$f" peak_to_average)"
    derived inflation "$sys" "$wl" "$T" "$(mo_json "$f" inflation)"
    derived reserved_gib "$sys" "$wl" "$T" "$(awk -v b="$(mo_json "$f" peak_bytes)" 'BEGIN { print b / 1073741824 }')"
    printf '%s %-10s %-22s x = %-6s PAR %s\n' "$EXP" "$sys" "$wl" "$T" "$(mo_json "$f" peak_to_average)" >&2
}

# mo_lmax SYSTEM WORKLOAD X MODEL GPU: the longest sequence that fits; records lmax
mo_lmax() {
    local sys=$1 wl=$2 x=$3 model=$4 gpu=$5 sys_opts
    read -r -a sys_opts <<<"$(mo_args "$sys")"
    mo_run "$sys" "$wl" "$x" "$model" "$gpu" mem lmax --model "$model" --gpu "$gpu" "${sys_opts[@]}"
    local f=$MO_F
    derived lmax "$sys" "$wl" "$x" "$(mo_json "$f" lmax)"
    printf '%s %-10s %-22s L_max %s\n' "$EXP" "$sys" "$wl" "$(mo_json "$f" lmax)" >&2
}

# the PyTorch harness's measurements of eager and torch.compile (engine/bench/torch_lmax.py): the
# dense models' and LLaDA-MoE-7B's (a grouped MoE), each model measured once
MO_TORCH=("$(dirname "${BASH_SOURCE[0]}")/../records/torch-lmax-h100/torch_lmax.jsonl"
    "$(dirname "${BASH_SOURCE[0]}")/../records/torch-lmax-moe-h100/torch_lmax.jsonl")

# mo_line MODEL MODE KEY VALUE: the harness's line for MODEL and MODE whose KEY (limit_mib or L) is
# VALUE; empty when the harness did not measure it
mo_line() { cat "${MO_TORCH[@]}" | grep -F "\"model\": \"$1\", \"mode\": \"$2\", \"$3\": $4," || true; }

# mo_measured MODEL MODE KEY VALUE FIELD: FIELD of that line (empty without one); the line reaches
# sqlite3 on stdin, imported as a table's one value (--ascii: no comma or quote splits it), never
# SQL text; FIELD is a name or refused
mo_measured() {
    local line
    [[ $5 =~ ^[A-Za-z][A-Za-z0-9_]*$ ]] || { echo "$EXP: mo_measured: '$5' is not a field's name" >&2; exit 2; }
    line=$(mo_line "$1" "$2" "$3" "$4")
    [ -n "$line" ] && sqlite3 :memory: "CREATE TABLE l(j)" ".import --ascii /dev/stdin l" \
        "SELECT json_extract(j, '\$.$5') FROM l" <<<"$line"
}

# mo_card_mib GPU: the card's memory in MiB, the limit the harness ran under for it
mo_card_mib() {
    case $1 in
        rtx3090) echo 24576 ;;
        a100-40gb) echo 40960 ;;
        *) echo "$EXP: no torch.compile measurement under the memory of '$1'" >&2; exit 1 ;;
    esac
}

# mo_full_ms MODEL MODE L: the harness's step at L tokens over every layer, from its layers' time
# (measured over layers_run of them) and the head's (the step's time less the layers'); the line
# reaches sqlite3 on stdin, as mo_measured's does
mo_full_ms() {
    local line
    line=$(mo_line "$1" "$2" L "$3")
    [ -n "$line" ] && sqlite3 :memory: "CREATE TABLE l(j)" ".import --ascii /dev/stdin l" \
        "SELECT json_extract(j, '\$.layers') * 1.0 / json_extract(j, '\$.layers_run') *
        json_extract(j, '\$.layers_ms') + json_extract(j, '\$.step_ms') - json_extract(j, '\$.layers_ms') FROM l" <<<"$line"
}

# mo_compile lmax MODEL GPU | mo_compile time MODEL L: Mosaic-Compile over the baselines' torch
# configuration, as measured: its L_max over eager's under the card's memory, or its whole-model
# step over eager's at L tokens (log-linear between the measured lengths, the nearest beyond
# them); empty where the harness did not run the model
mo_compile() {
    local what=$1 m=$2 a b x lens
    if [ "$what" = lmax ]; then
        a=$(mo_measured "$m" compile limit_mib "$(mo_card_mib "$3")" lmax)
        b=$(mo_measured "$m" eager limit_mib "$(mo_card_mib "$3")" lmax)
        [ -n "$a" ] && [ -n "$b" ] && ratio "$a" "$b"
        return 0
    fi
    lens=$(cat "${MO_TORCH[@]}" | grep -F "\"model\": \"$m\", \"mode\": \"eager\", \"L\": " | sed 's/.*"L": \([0-9]*\),.*/\1/')
    [ -n "$lens" ] || return 0
    for x in $lens; do
        printf '%s %s\n' "$x" "$(ratio "$(mo_full_ms "$m" compile "$x")" "$(mo_full_ms "$m" eager "$x")")"
    done | awk -v L="$3" '
        { n++; l[n] = log($1); r[n] = $2 }
        END {
            t = log(L)
            if (t <= l[1]) { print r[1]; exit }
            for (i = 2; i <= n; i++)
                if (t <= l[i]) { print r[i - 1] + (r[i] - r[i - 1]) * (t - l[i - 1]) / (l[i] - l[i - 1]); exit }
            print r[n]
        }'
}
