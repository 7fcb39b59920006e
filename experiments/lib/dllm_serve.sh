# shellcheck shell=bash
# dllm_serve.sh: the dLLM-Serve evaluation's setting (sourced by experiments/dllm-serve-*.sh after
# lib/paper.sh): LLaDA-8B, 256 tokens generated in 256 steps, blocks of 32 (its Table 3), the four
# systems as presets, and its three workloads (§6.1) as length profiles (traces/README.md says
# where each comes from): livebench (LiveBench's coding prompts) and osc (OpenAI's
# summarize-from-feedback comparisons) with Poisson arrivals, and burst (BurstGPT's lengths, with
# the bursty Gamma arrivals of BurstGPT's own workload generator).
DS_SYSTEMS="dllm-cache fast-dllm sparse-dllm dllm-serve"
DS_BASELINES="dllm-cache fast-dllm sparse-dllm"
DS_WORKLOADS="livebench osc burst"
# shellcheck disable=SC2034 # PANELS: read by lib/figure.sh
PANELS=$DS_WORKLOADS # the figures: a panel a workload, as the paper's
# ds_use WORKLOAD: DS_WORKLOAD, and its lengths and arrivals
ds_use() {
    DS_WORKLOAD=$1
    case $1 in
        livebench) DS_LENGTHS=livebench DS_ARRIVALS=poisson ;;
        osc) DS_LENGTHS=osc DS_ARRIVALS=poisson ;;
        burst) DS_LENGTHS=burstgpt DS_ARRIVALS=gamma:1.41 ;;
        *) echo "$EXP: unknown workload '$1'" >&2; exit 2 ;;
    esac
}
ds_use livebench
# ds_name SYSTEM | WORKLOAD: its name in the figures, as the paper writes it
ds_name() {
    case $1 in
        dllm-cache) echo dLLM-Cache ;; fast-dllm) echo Fast-dLLM ;; sparse-dllm) echo Sparse-dLLM ;;
        dllm-serve) echo dLLM-Serve ;; livebench) echo LiveBench ;; osc) echo OSC ;; burst) echo Burst ;;
        *) echo "$1" ;;
    esac
}
# the workloads in the order of the paper's figures
DS_FIG_WORKLOADS="livebench burst osc"
# ds_figure METRIC YLABEL: the figure of Figs. 3 and 4: a panel a workload, METRIC against the arrival
# rate, a curve a system
ds_figure() {
    local w s
    for w in $DS_FIG_WORKLOADS; do
        fig_lines "$(ds_name "$w")" "Request rate (req/s)" "$2" yfrom0
        for s in $DS_SYSTEMS; do fig_curve "$(ds_name "$s")" "$s" "$w" "$1"; done
    done
}
# the host that issues the PyTorch steps (tessera list hosts; HOST=NAME picks another): the papers'
# hosts are unknown, and the torch-eager profile's launch costs are the H200 machine's it was measured on
DS_HOST=${HOST:-h200-xeon}
# the cost model (COST=roofline prices with the roofline instead): every system here runs PyTorch, so
# the PyTorch harness's LLaDA-8B profiles measured on an H200, carried to the paper's GPU by tessera
# calib transfer (no calibration of an RTX 4090 or an L40S is measured): the baselines' Hugging Face
# style eager layer (sim/data/calib/h200-llada-8b-torch-eager.csv: its ops, its host's issue, and
# dLLM-Serve's KV selection code), dLLM-Serve's own runtime (h200-llada-8b-torch-dllm-serve.csv)
DS_COST=${COST:-calibrated}
case $DS_COST in calibrated | roofline) ;; *) echo "$EXP: COST=$DS_COST: calibrated or roofline" >&2; exit 2 ;; esac
# ds_impl SYSTEM: the calibration SYSTEM's runtime is priced with (tessera list systems: dLLM-Serve
# its own runtime's, the baselines PyTorch eager's, each loop's sampling and host work a derived profile
# of it)
ds_impl() {
    # shellcheck disable=SC2154 # bin: the binary, set by lib/paper.sh
    "$bin" list systems "$1" | awk '$1 == "=" {
        for (i = 2; i < NF; i++) if ($i == "--impl") print ($(i + 1) == "torch-dllm-serve" ? $(i + 1) : "torch-eager")
        exit }'
}
# the baselines' static batch, an assumption (BATCH=fit|code): dLLM-Serve section 6.1 ran them in static
# batches as large as fit, found by profiling (fit, the default); their public code runs one request at a
# time (code: Fast-dLLM at 24cc59e and Sparse-dLLM at 3fd8986 allocate a one-row canvas; dLLM-Cache's
# loop batches, left-padded, and keeps fit)
DS_BATCH=${BATCH:-fit}
case $DS_BATCH in fit | code) ;; *) echo "$EXP: BATCH=$DS_BATCH: fit (dLLM-Serve section 6.1) or code (the public code: one request at a time)" >&2; exit 2 ;; esac
# the requests a run, an assumption (N=COUNT): dLLM-Serve states none for any workload (LiveBench's
# coding section has 128 questions; OSC's and BurstGPT's counts are not given), and at the loads where the
# systems fall behind the mean latency grows with it; 200 here, plausible 64-400 (half LiveBench's 128
# to twice this default)
DS_N=${N:-200}
ds_check_n() {
    case $1 in '' | *[!0-9]*) false ;; *) [ "$1" -ge 64 ] && [ "$1" -le 400 ] ;; esac ||
        { echo "$EXP: N=$1: the requests a run must be 64-400 (dLLM-Serve states no count; LiveBench's coding section has 128 questions, 64-400 spans half that to twice the default 200)" >&2; exit 2; }
}
ds_check_n "$DS_N"
# the card's GEMM time over the one the calibration's transfer gives it, an assumption (GEMM=F): the
# RTX 4090's and L40S's achieved GEMM rates are not measured; plausible: the transfer's own band for a
# Refresh step on the card (tessera calib transfer: each op at the two cards' peak-FLOP or bandwidth
# ratio instead of its roofline ratio), 1 by default
DS_GEMM=${GEMM:-1}
# ds_gemm_opts: the options that scale the card's GEMMs by DS_GEMM (none at 1)
ds_gemm_opts() { gemm_scale_opts "$DS_GEMM"; }
# ds_batch_opts SYSTEM: the options that give SYSTEM's static batch as DS_BATCH says (none for dLLM-Serve)
ds_batch_opts() { if [ "$DS_BATCH" = fit ] && [ "$1" != dllm-serve ]; then echo --max-batch 0; fi; }
# ds_cost GPU [IMPL]: the cost options of a point on GPU priced with IMPL (torch-eager unless given), in
# the array DS_COST_ARGS (the H200 calibration carried to GPU once, lib/paper.sh's carry_calib)
ds_cost() {
    DS_COST_ARGS=(--cost "$DS_COST")
    [ "$DS_COST" = roofline ] && return 0
    carry_calib h200 "$1" llada-8b "${2:-torch-eager}"
    DS_COST_ARGS+=(--calib "$CARRIED" --extrapolate)
}
# ds_notes GPU: the setting (DS_NOTES) and the cost model on GPU, said for the report
ds_notes() { printf '%s\n%s\n' "${DS_NOTES//@N@/$DS_N}" "$(ds_cost_notes "$1")"; }
# ds_cost_notes GPU: the cost model, said for the report
ds_cost_notes() {
    if [ "$DS_COST" = roofline ]; then
        echo "Cost model: roofline on the GPU's table entry (the PyTorch baselines' torch-eager profile, dLLM-Serve's
too)."
        return
    fi
    ds_cost "$1"
    echo "Cost model: calibrated. Every system here runs PyTorch, each priced by the PyTorch harness's LLaDA-8B
profile of its runtime measured on an H200 (engine/bench/torch_profile.py: each op, the host's issue,
and dLLM-Serve's KV selection code, whose loop over the sequences waits for the GPU in every layer),
carried to the $1 by tessera calib transfer, as no calibration of that card is measured: the
baselines run Hugging Face style modules eager (torch-eager); dLLM-Serve its own runtime
(torch-dllm-serve: nano-vLLM's layers with torch.compile'd RMSNorm and RoPE, and in every layer a Python
loop over the sequences whose copy of their lengths to the GPU waits for it). The transfer's band there
(tessera calib show --gpu $1), torch-eager:"
    sed -n '/^  /p' "$CARRIED_BAND"
    ds_cost "$1" torch-dllm-serve
    echo "torch-dllm-serve:"
    sed -n '/^  /p' "$CARRIED_BAND"
}
DS_NOTES="Workloads (§6.1): livebench, LiveBench's coding prompts measured from the LiveCodeBench problems
it draws on (--lengths livebench); osc, OpenAI's summarize-from-feedback comparisons (--lengths osc); both
with Poisson arrivals; burst, BurstGPT's lengths from its trace's first rows (--lengths burstgpt) with
BurstGPT's Gamma arrivals (--arrivals gamma:1.41). 256 tokens generated (the paper's Table 3). Host:
$DS_HOST (--host; the papers' hosts are unknown). The baselines' static batches: $DS_BATCH (BATCH=fit: as
large as fit, as section 6.1 ran them; BATCH=code: one request at a time, as Fast-dLLM's and
Sparse-dLLM's public code runs). Requests a run: @N@ (N=, 64-400; the paper states none). The card's
GEMM time over the transfer's: $DS_GEMM (GEMM=, within the transfer's band).
Each baseline's loop as its public code runs it (tessera list systems): its sampling's dtype and its
host work a forward, measured with that code (experiments/records/validate-h100)."
# ds_point SYSTEM GPU RPS N [HOST [IMPL]]: one system at one arrival rate in DS_WORKLOAD, its steps
# issued by DS_HOST or HOST (the workload then named after that host), run by its own runtime or by
# IMPL's (the workload then named after that)
ds_point() {
    local host=${5:-$DS_HOST} impl=${6:-} wl=$DS_WORKLOAD
    local run=(--system "$1") batch
    [ "$host" != "$DS_HOST" ] && wl="$DS_WORKLOAD-$host"
    read -r -a batch <<<"$(ds_batch_opts "$1")"
    run+=("${batch[@]}")
    [ -n "$impl" ] && wl="$wl-$impl" run+=(--impl "$impl")
    ds_check_gemm "$2"
    ds_cost "$2" "${impl:-$(ds_impl "$1")}"
    # shellcheck disable=SC2046 # ds_gemm_opts: its options, a word each (none at 1)
    point "$1" "$wl" "$3" "${run[@]}" --gpu "$2" --rps "$3" --requests "$4" --lengths "$DS_LENGTHS" \
        --arrivals "$DS_ARRIVALS" --gen-len 256 --block 32 --seed 1 --host "$host" "${DS_COST_ARGS[@]}" $(ds_gemm_opts)
}

# ds_gemm_band GPU: the low and high ends of GPU's transfer band for a Refresh step, as GEMM-time
# factors (the carried torch-eager calibration's band file: "(-18% / +3%)" gives 0.82 1.03)
ds_gemm_band() {
    ds_cost "$1"
    if [ "$DS_COST" = roofline ]; then echo "1.00 1.00"; else carried_gemm_band; fi
}
# ds_check_gemm GPU: DS_GEMM inside GPU's transfer band, or the run refused
ds_check_gemm() {
    [ "$DS_GEMM" = 1 ] && return 0
    local band
    band=$(ds_gemm_band "$1")
    awk -v f="$DS_GEMM" -v l="${band% *}" -v h="${band#* }" 'BEGIN { exit !(f + 0 == f && f >= l - 1e-9 && f <= h + 1e-9) }' ||
        { echo "$EXP: GEMM=$DS_GEMM: the $1's GEMM time must lie in ${band% *}-${band#* }, the transfer's band for a Refresh step on it (tessera calib show --gpu $1)" >&2; exit 2; }
}
# ds_assumptions GPU X PAPER_LO PAPER_HI: the paper's speedup at X, tessera's at the defaults and over
# each assumption's plausible values, one assumption at a time, the others at their defaults, on
# each workload (--quick: N 64 and BATCH alone): N 64, 128 and 400 (from DS_N); BATCH code (from
# fit) or fit; HOST the other measured machine's; the arrivals Gamma CV 2 for the Poisson workloads and
# Poisson for Burst; GEMM the ends of the card's transfer band. Each run is the workload W~NAME=VALUE; the derived metrics speedup_lo and
# speedup_hi (W, X) hold the range, and DS_ASSUMPTIONS a table for the report: the value at the
# defaults, the range, whether the paper's range meets it, and the assumption that moves it most.
ds_assumptions() {
    local gpu=$1 x=$2 lo=$3 hi=$4 w av a v s d sp band n dev worst worst_d vals cells range_lo range_hi
    local save_batch save_host save_arr save_gemm alt_batch alt_host
    band=$(ds_gemm_band "$gpu")
    alt_batch=$([ "$DS_BATCH" = fit ] && echo code || echo fit)
    alt_host=$([ "$DS_HOST" = h100-xeon ] && echo h200-xeon || echo h100-xeon)
    DS_ASSUMPTIONS="| workload | at the defaults | N 64 / 128 / 400 | BATCH $alt_batch | HOST $alt_host | arrivals | GEMM ${band% *} / ${band#* } | range | the paper's $lo-${hi}x (its middle) | most sensitive to |
|---|---|---|---|---|---|---|---|---|---|"
    for w in $DS_WORKLOADS; do
        ds_use "$w"
        d=$(value speedup dllm-serve "$w" "$x")
        vals=("$d") worst="" worst_d=0 cells=""
        local k=0 sep
        for av in N=64 N=128 N=400 BATCH=$alt_batch HOST=$alt_host ARRIVALS=$([ "$w" = burst ] && echo poisson || echo gamma:2) \
                  GEMM=${band% *} GEMM=${band#* }; do
            a=${av%%=*} v=${av#*=} k=$((k + 1))
            case $k in 1 | 2 | 7) sep=" / " ;; *) sep=" | " ;; esac # the table's cells: N's three, GEMM's two
            if [ "$QUICK" = 1 ] && [ "$av" != N=64 ] && [ "$a" != BATCH ]; then # --quick: two of them
                cells+="-$sep"
                continue
            elif { [ "$a" = N ] && [ "$v" = "$DS_N" ]; } ||
                 { [ "$a" = GEMM ] && awk -v a="$v" -v b="$DS_GEMM" 'BEGIN { exit !(a + 0 == b + 0) }'; }; then
                sp=$d
            else
                save_batch=$DS_BATCH save_host=$DS_HOST save_arr=$DS_ARRIVALS save_gemm=$DS_GEMM
                n=$DS_N
                case $a in N) n=$v ;; BATCH) DS_BATCH=$v ;; HOST) DS_HOST=$v ;; ARRIVALS) DS_ARRIVALS=$v ;; GEMM) DS_GEMM=$v ;; esac
                DS_WORKLOAD="$w~$av"
                for s in $DS_SYSTEMS; do ds_point "$s" "$gpu" "$x" "$n"; done
                ds_speedup "$x"
                sp=$(value speedup dllm-serve "$w~$av" "$x")
                DS_BATCH=$save_batch DS_HOST=$save_host DS_ARRIVALS=$save_arr DS_GEMM=$save_gemm
                ds_use "$w"
            fi
            vals+=("$sp")
            case $a in ARRIVALS) cells+="$(fmt "$sp") (${v})$sep" ;; *) cells+="$(fmt "$sp")$sep" ;; esac
            dev=$(awk -v a="$sp" -v b="$d" 'BEGIN { r = log(a / b); print r < 0 ? -r : r }')
            if awk -v a="$dev" -v b="$worst_d" 'BEGIN { exit !(a > b) }'; then worst="$av ($(fmt "$sp")x)" worst_d=$dev; fi
        done
        derived_range speedup dllm-serve "$w" "$x" "${vals[@]}"
        # shellcheck disable=SC2153 # RANGE_LO, RANGE_HI: set by derived_range (lib/paper.sh)
        range_lo=$RANGE_LO range_hi=$RANGE_HI
        DS_ASSUMPTIONS+="
| $w | $(fmt "$d")x | $cells$(fmt "$range_lo")-$(fmt "$range_hi")x | $(awk -v a="$range_lo" -v b="$range_hi" -v m="$(awk -v l="$lo" -v h="$hi" 'BEGIN { print (l + h) / 2 }')" 'BEGIN { print (m >= a && m <= b) ? "inside" : (b < m ? "below it" : "above it") }') | ${worst:-none} |"
    done
    DS_ASSUMPTIONS+="

Assumptions (one moved at a time, the others at their defaults): N, the requests a run ($DS_N; swept
64, 128 and 400: dLLM-Serve states none, LiveBench's coding section has 128 questions); BATCH, the
baselines' static batch ($DS_BATCH; fit as section 6.1 ran them, code as their public code runs);
HOST, the host issuing the PyTorch steps ($DS_HOST, and the other measured machine's: the papers' hosts
are unknown); ARRIVALS, the arrival process (Poisson, and BurstGPT's Gamma CV 1.41 for Burst; swept
to Gamma CV 2, and Poisson for Burst); GEMM, the card's GEMM time over the transfer's ($DS_GEMM; swept
to the ends of the $gpu's transfer band for a Refresh step, ${band// /-}). Each can be
set for a whole run (N=, BATCH=, HOST=, GEMM=)."
}
# ds_best_baseline METRIC X [min]: the strongest baseline's value in DS_WORKLOAD, the largest
# (throughput) or with min the smallest (latency)
ds_best_baseline() {
    local s
    for s in $DS_BASELINES; do value "$1" "$s" "$DS_WORKLOAD" "$2"; done | sort -g | if [ "${3:-}" = min ]; then head -1; else tail -1; fi
}
# ds_speedup X: dLLM-Serve's throughput over the strongest baseline's at X in DS_WORKLOAD, recorded
# as the metric speedup
ds_speedup() {
    derived speedup dllm-serve "$DS_WORKLOAD" "$1" \
        "$(ratio "$(value throughput_tok_s dllm-serve "$DS_WORKLOAD" "$1")" "$(ds_best_baseline throughput_tok_s "$1")")"
}

# ds_sweep GPU N RATES...: every system at each arrival rate, in DS_WORKLOAD
ds_sweep() {
    local gpu=$1 n=$2 r s
    shift 2
    for r in "$@"; do
        for s in $DS_SYSTEMS; do ds_point "$s" "$gpu" "$r" "$n"; done
    done
}
# ds_each CONDITION: CONDITION for each workload (@W in it replaced by the workload), joined by &&:
# a check's condition that holds on every workload
ds_each() {
    local w
    for w in $DS_WORKLOADS; do printf '%s && ' "${1//@W/$w}"; done
    printf 1
}

# ds_ceiling GPU: the most generated tokens a second one request can get on GPU at one token a step:
# the roofline of its 32-row Reuse step with no cache and no host time (the weights over the bandwidth)
ds_ceiling() { awk -v ms="$(roofline_ms "$1" llada-8b 1,32,0,32)" 'BEGIN { printf "%.1f", 1000 / ms }'; }

# ds_step_weights GPU: the weight bytes a step reads: all but LLaDA-8B's embedding table (126,464 x
# 4,096 in bf16), from one simulated request on GPU (run once a GPU, kept in OUT/points)
ds_step_weights() {
    # shellcheck disable=SC2154 # out: the experiment's folder, set by paper_init (lib/paper.sh)
    local f="$out/points/weights-$1.json"
    [ -s "$f" ] || "$bin" sim --model llada-8b --gpu "$1" --requests 1 --quiet --no-progress --json >"$f" ||
        { echo "$EXP: tessera sim --gpu $1 failed" >&2; exit 1; }
    echo $(($(json "$f" weight_bytes) - 126464 * 4096 * 2))
}

# ds_gpu_column GPU N: column N of GPU's row in tessera list gpus (3 its bf16 TFLOPS, 4 its GB/s)
ds_gpu_column() { "$bin" list gpus | awk -v g="$1" -v n="$2" '$1 == g { print $n }'; }

# ds_bound GPU: the same with nothing lost: the weights a step reads over the GPU's bandwidth as its
# table gives it
ds_bound() {
    awk -v bw="$(ds_gpu_column "$1" 4)" -v w="$(ds_step_weights "$1")" 'BEGIN { printf "%.1f", bw * 1e9 / w }'
}

# ds_gemm_ceiling GPU SYSTEM X: the most generated tokens a second SYSTEM can get in DS_WORKLOAD at X
# were every row it processes (its redundancy: rows a decoded token) a pass over the weights at the
# GPU's whole bf16 GEMM rate as its table gives it (2 FLOPs a weight a row, the embedding table left
# out, attention's FLOPs too: a bound from above)
ds_gemm_ceiling() {
    awk -v f="$(ds_gpu_column "$1" 3)" -v w="$(ds_step_weights "$1")" -v r="$(value redundancy "$2" "$DS_WORKLOAD" "$3")" \
        'BEGIN { printf "%.1f", f * 1e12 / (r * w) }'
}

# ds_why_rows GPU X: the rows each of dLLM-Serve and Fast-dLLM processes a decoded token at X on each
# workload and the throughput the GPU's GEMM rate allows at that (derived metric gemm_ceiling_tok_s),
# and dLLM-Serve run by the baselines' eager layer instead of its own runtime (N requests, the
# workload W-torch-eager); DS_WHY_ROWS says what that means
ds_why_rows() {
    local gpu=$1 x=$2 n=$3 w s e o rows="" eager="" ratios="" was=$DS_WORKLOAD
    for w in $DS_WORKLOADS; do
        ds_use "$w"
        for s in dllm-serve fast-dllm; do derived gemm_ceiling_tok_s $s "$w" "$x" "$(ds_gemm_ceiling "$gpu" $s "$x")"; done
        rows+="$w $(fmt "$(value redundancy dllm-serve "$w" "$x")") and $(fmt "$(value redundancy fast-dllm "$w" "$x")") (at most $(fmt "$(value gemm_ceiling_tok_s dllm-serve "$w" "$x")") and $(fmt "$(value gemm_ceiling_tok_s fast-dllm "$w" "$x")") tok/s; reached $(fmt "$(value throughput_tok_s dllm-serve "$w" "$x")") and $(fmt "$(value throughput_tok_s fast-dllm "$w" "$x")")), "
        ds_point dllm-serve "$gpu" "$x" "$n" "$DS_HOST" torch-eager
        e=$(value throughput_tok_s dllm-serve "$w"-torch-eager "$x") o=$(value throughput_tok_s dllm-serve "$w" "$x")
        eager+="$w $(fmt "$e") against $(fmt "$o"), "
        ratios+="$e $o "
    done
    # what the runtime's measured parts come to on this card, from the counterfactual's ratios
    local what
    what=$(echo "$ratios" | awk '{ lo = hi = $1 / $2; for (i = 3; i < NF; i += 2) { r = $i / $(i + 1); lo = r < lo ? r : lo; hi = r > hi ? r : hi } }
        END { if (lo > 1.02) print "what its runtime costs it on this card, its host'"'"'s loop more than its compiled norms win back"
              else if (hi < 0.98) print "what its runtime wins it on this card, its compiled norms more than its host'"'"'s loop costs"
              else print "within 2% on every workload: on this card its GPU work is long enough to hide most of the host'"'"'s loop, and its compiled norms win back about what the rest costs" }')
    ds_use "$was"
    # shellcheck disable=SC2034 # DS_WHY_ROWS: the experiments' reports read it
    DS_WHY_ROWS="What bounds dLLM-Serve's lead where the baselines batch: it runs Sparse-dLLM's delayed
caching, two forwards over the whole sequence a block (chosen-ox/dLLM-Serve dllmserve/sparse/state.py
and engine/model_runner.py: cache states 0 and 1 both take every token), where Fast-dLLM's dual cache
runs one. Rows processed a decoded token (metric redundancy), dLLM-Serve's and Fast-dLLM's at $x req/s,
and what the $gpu's whole bf16 GEMM rate would allow at that (gemm_ceiling_tok_s): ${rows%, }.
The nearer a system runs to its ceiling, the less concurrency buys it, and dLLM-Serve's extra forward
a block costs it what its scheduler gains where the baselines batch too. Its own runtime, measured
(torch-dllm-serve, engine/bench/torch_dllm_serve.py), adds a bound of its own: in every layer its
attention loops over the sequences in Python (chosen-ox/dLLM-Serve dllmserve/layers/attention.py,
_mixed_sparse_dense_attention) and copies their lengths to the GPU, a copy that waits for the GPU, so
its host takes 27.2 ms a step and 3.57 ms more a sequence on the H200 machine the calibration was measured on (a Reuse step of 16
sequences 85-93 ms, where its GPU work is 30-42 ms there; compiled RMSNorm and RoPE make the GPU's part
of a Refresh 16 x 512 about 13% shorter than the eager layer's). Run by the baselines' eager layer
instead (workloads W-torch-eager), dLLM-Serve would reach at $x req/s, in tok/s: ${eager%, }: $what.
A host faster than the measured machines' shortens its loop, and the papers' hosts are unknown."
}

# ds_batch W X: the baselines' static batches at X in workload W, in requests ("1", or "3-4")
ds_batch() {
    local s
    for s in $DS_BASELINES; do value static_batch "$s" "$1" "$2"; done | sort -g | sed -n '1p;$p' | uniq | paste -sd-
}

# ds_why GPU X: what the baselines' static batches hold at X on each workload and what one request
# a batch can reach (derived metrics single_request_ceiling, single_request_bound); DS_WHY says what
# that means
ds_why() {
    local gpu=$1 x=$2 w ceiling bound batches=""
    ceiling=$(ds_ceiling "$gpu") bound=$(ds_bound "$gpu")
    for w in $DS_WORKLOADS; do
        derived single_request_ceiling fast-dllm "$w" "$x" "$ceiling"
        derived single_request_bound fast-dllm "$w" "$x" "$bound"
        batches+="$(ds_batch "$w" "$x") on $w, "
    done
    # shellcheck disable=SC2034 # DS_WHY: the experiments' reports read it
    DS_WHY="Why the results move with the workload: at $x req/s the baselines' static batches hold, in requests,
${batches%, } (metric static_batch: as many as fit when each is padded to the workload's longest request,
their sampling holding a softmax over every position's logits (Fast-dLLM's in float64: 18 bytes a
logit with the logits; dLLM-Cache's and Sparse-dLLM's in bf16: 4); a trial run of
the workload finds no more, since the batch that holds its longest request is padded to it). One request
a step reaches at most $ceiling tok/s on this GPU in tessera's roofline (single_request_ceiling: its 32-row
step with no cache and no host time) and $bound with nothing lost (single_request_bound: the weights a step
reads over the table's bandwidth): where a batch holds one request, dLLM-Serve's lead is all its
concurrency."
}

# ds_why_band X LO HI: why dLLM-Serve's speedup at X (metric speedup) leaves the paper's LO-HI band:
# where it lands on each workload, beside the baselines' static batches there
ds_why_band() {
    local x=$1 lo=$2 hi=$3 w v where parts=""
    for w in $DS_WORKLOADS; do
        v=$(value speedup dllm-serve "$w" "$x")
        where=$(awk -v v="$v" -v lo="$lo" -v hi="$hi" 'BEGIN { print (v > hi ? "above" : v < lo ? "below" : "within") }')
        parts+="$w $(fmt "$v")x, $where it (the baselines' static batch: $(ds_batch "$w" "$x")); "
    done
    why "dLLM-Serve's throughput over the strongest baseline's" "at $x req/s the speedup is ${parts%; }. Where a
baseline's batch holds one request, dLLM-Serve's lead is all its concurrency; where the baselines batch
several, its second forward over the whole sequence a block (rows a decoded token, metric redundancy)
and its runtime's per-sequence host loop cost it about what its scheduler wins. The notes below give
each part's numbers."
}

# ds_why_scaling R0 R1: why dLLM-Serve's throughput does not keep rising with the load to R1: the rate
# it keeps up to on each workload (80% of the offered tokens), and what it reaches at R1 against the
# GEMM ceiling of the rows it processes (ds_why_rows' gemm_ceiling_tok_s at R1)
ds_why_scaling() {
    local r0=$1 r1=$2 w keeps t c parts=""
    for w in $DS_WORKLOADS; do
        keeps=$(awk -F'\t' -v w="$w" '$1 == "dllm-serve" && $2 == w && $4 == "throughput_tok_s" { print $3, $5 }' "$out/points.tsv" |
            sort -g | awk '$2 >= 0.8 * $1 * 256 { k = $1 } END { print (k == "" ? "none of the rates" : k " req/s") }')
        t=$(value throughput_tok_s dllm-serve "$w" "$r1") c=$(value gemm_ceiling_tok_s dllm-serve "$w" "$r1")
        parts+="$w: $(fmt "$(ratio "$t" "$(value throughput_tok_s dllm-serve "$w" "$r0")")")x from $r0 to $r1 req/s, serving 80% of the offered tokens up to $keeps; at $r1 req/s $(fmt "$t") tok/s, $(awk -v t="$t" -v c="$c" 'BEGIN { printf "%.0f", 100 * t / c }')% of its GEMM ceiling of $(fmt "$c"); "
    done
    why "dLLM-Serve keeps scaling" "keeping up at $r1 req/s takes $(awk -v r="$r1" 'BEGIN { print r * 256 }') generated tok/s. ${parts%; }.
The ceiling is what the card's whole bf16 GEMM rate allows at the rows dLLM-Serve processes a decoded
token in tessera (Sparse-dLLM's delayed caching: two forwards over the whole sequence a block), so
dLLM-Serve saturates where its own steps fill the GPU and its host loop, not where memory stops it:
for the paper's dLLM-Serve to keep up it must process fewer rows a token than its code's delayed
caching does here, or run its steps nearer the card's GEMM rate."
}

# ds_why_latency X TREND: why dLLM-Serve's mean latency at X is not below every baseline's on each
# workload (the trend whose text starts with TREND): each baseline ahead of it there, with its static
# batch and both throughputs
ds_why_latency() {
    local x=$1 w s d parts=""
    for w in $DS_WORKLOADS; do
        d=$(value lat_mean_s dllm-serve "$w" "$x")
        for s in $DS_BASELINES; do
            awk -v a="$(value lat_mean_s "$s" "$w" "$x")" -v b="$d" 'BEGIN { exit !(a <= b) }' || continue
            parts+="on $w $s's $(fmt "$(value lat_mean_s "$s" "$w" "$x")") s against $(fmt "$d") s, $(fmt "$(value throughput_tok_s "$s" "$w" "$x")") tok/s against dLLM-Serve's $(fmt "$(value throughput_tok_s dllm-serve "$w" "$x")"), $(fmt "$(mean_batch "$s" "$w" "$x")") requests a step (static batch $(value static_batch "$s" "$w" "$x")) against $(fmt "$(mean_batch dllm-serve "$w" "$x")"); "
        done
    done
    why "$2" "${parts%; } (the load brings $(awk -v r="$x" 'BEGIN { print r * 256 }') generated tok/s). A static batch serves its requests
first come, first served; dLLM-Serve runs every request it admits at once, so each advances more
slowly, and at about the same throughput that gives it the longer mean latency, as processor sharing
gives against first come, first served for jobs of about one size."
}

# ds_why_wall R0 R1: why a baseline's throughput keeps rising with the load from R0 to R1 on some
# workload: each such baseline's rise, beside its static batch
ds_why_wall() {
    local r0=$1 r1=$2 w s g parts=""
    for w in $DS_WORKLOADS; do
        for s in $DS_BASELINES; do
            g=$(ratio "$(value throughput_tok_s "$s" "$w" "$r1")" "$(value throughput_tok_s "$s" "$w" "$r0")")
            awk -v g="$g" -v a="$r0" -v b="$r1" 'BEGIN { exit !(g >= 1 + 0.5 * (b / a - 1)) }' &&
                parts+="$s on $w $(fmt "$g")x (its static batch: $(value static_batch "$s" "$w" "$r1")), "
        done
    done
    why "the baselines hit a throughput wall" "from $r0 to $r1 req/s the load rises $(fmt "$(ratio "$r1" "$r0")")x and
these baselines' throughput with it: ${parts%, }. A static batch that holds several requests fills as
the load rises, and a run of few requests ends before the queue is long: its last requests' service
is a large share of its time at the lowest rate."
}
