#!/usr/bin/env bash
# experiments/mosaic-fig15-18.sh: Mosaic Figs. 15-18, its search and planning strategies: L_max
# with the bottleneck-driven (lazy) search against brute force and with first-fit against ILP
# (Fig. 16), the search's latency (Fig. 17) and the planner's (Fig. 18) at context lengths up to
# L_max, and the step latency these and the chunking add up to (Fig. 15, against Mosaic-FC: L_max's
# chunk counts at every length), LLaDA-8B on an A100 (40 GB), Mosaic's setting (lib/mosaic.sh).
# Usage: tessera exp run mosaic-fig15-18 OUT [--force] [--quick] [--strict]
EXP=mosaic-fig15-18
source "$(dirname "$0")/lib/paper.sh"
source "$(dirname "$0")/lib/mosaic.sh"
paper_init "$@"
m=llada-8b g=a100-40gb wl="llada-8b-a100-40gb"
fractions="0.25 0.5 0.75 1" ilp_s=2
[ "$QUICK" = 1 ] && fractions="0.5 1" ilp_s=0.5
base=(--planner first-fit --softmax-copy 8 --mask-ratio "$MO_MASK")
mo_budget $m $g
# Fig. 16: L_max, the lazy search and brute force over the first-fit planner
for sys in mosaic mosaic-bf; do
    how=lazy
    [ $sys = mosaic-bf ] && how=brute
    mo_run $sys "$wl" 1 $m $g mem lmax --model $m --gpu $g "${base[@]}" --chunking $how
    derived lmax $sys "$wl" 1 "$(mo_json "$MO_F" lmax)"
done
lmax=$(value lmax mosaic "$wl" 1)
# ILP can place no step in less memory than its graph's theoretical peak, which first-fit's plan at
# L_max already meets: Mosaic-ILP's L_max is Mosaic's (inflation 0 there says so)
mo_run mosaic "$wl" 1 $m $g mem plan --model $m --tokens "$lmax" "${base[@]}" --chunking lazy --budget-gib "$MO_BUDGET"
derived inflation mosaic "$wl" 1 "$(mo_json "$MO_F" inflation)"
# min_timings SYSTEM T OPTION...: the search's and the plan's times of the point just run (MO_F) into
# search and plan, the least of five runs: they are this machine's CPU time (micro- to
# milliseconds; a busy machine's other work does not count, its caches still do); ILP's run once,
# its seconds dwarf it
min_timings() {
    local sys=$1 T=$2 f rep
    shift 2
    search=$(mo_json "$MO_F" search_us) plan=$(mo_json "$MO_F" plan_us)
    [ "$sys" = mosaic-ilp ] && return 0
    for rep in 2 3 4 5; do
        f="$out/points/timing-$sys-$T-$rep.json"
        "$bin" mem plan --model $m --tokens "$T" "$@" --budget-gib "$MO_BUDGET" --json >"$f" 2>/dev/null ||
            { echo "$EXP: mem plan ($sys, $T tokens, timing run $rep) failed" >&2; exit 1; }
        search=$(awk -v a="${search:-0}" -v b="$(mo_json "$f" search_us)" 'BEGIN { print (b != "" && b + 0 < a + 0) ? b : a }')
        plan=$(awk -v a="$plan" -v b="$(mo_json "$f" plan_us)" 'BEGIN { print b + 0 < a + 0 ? b : a }')
    done
}
# Figs. 17 and 18 at fractions of L_max: the search's time (lazy, brute force) and the final plan's
# (first-fit, ILP over the whole step's graph within ilp_s seconds)
for f in $fractions; do
    T=$(awk -v l="$lmax" -v f="$f" 'BEGIN { printf "%d", l * f }')
    for sys in mosaic mosaic-bf mosaic-ilp; do
        args=("${base[@]}" --chunking lazy)
        [ $sys = mosaic-bf ] && args=("${base[@]}" --chunking brute)
        [ $sys = mosaic-ilp ] && args=(--planner ilp --ilp-tensors 100000 --ilp-seconds "$ilp_s" --softmax-copy 8 --mask-ratio "$MO_MASK" --chunking lazy)
        mo_run $sys "$wl" "$T" $m $g mem plan --model $m --tokens "$T" "${args[@]}" --budget-gib "$MO_BUDGET"
        min_timings "$sys" "$T" "${args[@]}"
        derived search_us $sys "$wl" "$T" "$search"
        derived plan_us $sys "$wl" "$T" "$plan"
        derived plans_tried $sys "$wl" "$T" "$(mo_json "$MO_F" plans_tried)"
        derived logit_chunk_rows $sys "$wl" "$T" "$(mo_json "$MO_F" logit_chunk_rows)"
        derived ffn_chunks $sys "$wl" "$T" "$(mo_json "$MO_F" ffn_chunks)"
        derived peak_gib $sys "$wl" "$T" "$(awk -v b="$(mo_json "$MO_F" peak_bytes)" 'BEGIN { print b / 1073741824 }')"
    done
    printf '%s T = %-8s search %s us (lazy) against %s us (brute force); plan %s us (first-fit) against %s us (ILP)\n' "$EXP" "$T" \
        "$(value search_us mosaic "$wl" "$T")" "$(value search_us mosaic-bf "$wl" "$T")" \
        "$(value plan_us mosaic "$wl" "$T")" "$(value plan_us mosaic-ilp "$wl" "$T")" >&2
done
read -r -a lengths <<<"$(for f in $fractions; do awk -v l="$lmax" -v f="$f" 'BEGIN { printf "%d ", l * f }'; done)"
# Fig. 15: a whole-sequence step's latency at lengths up to 32K (the paper's range), the step priced
# by the roofline (PyTorch eager's kernels) in the chunks each system runs it in, plus its search and
# planning time: mosaic (lazy search, chunking only where the length needs it), mosaic-fc (the chunk
# counts Mosaic's search finds at L_max, at every length, no search), mosaic-bf (brute-force search),
# mosaic-ilp (ILP planning)
short=(1024 4096 8192 16384 32768)
[ "$QUICK" = 1 ] && short=(1024 32768)
fc_logits=$(value logit_chunk_rows mosaic "$wl" "${lengths[-1]}")
fc_ffn=$(value ffn_chunks mosaic "$wl" "${lengths[-1]}")
for T in "${short[@]}"; do
    for sys in mosaic mosaic-fc mosaic-bf mosaic-ilp; do
        case $sys in
            mosaic) args=("${base[@]}" --chunking lazy) ;;
            mosaic-bf) args=("${base[@]}" --chunking brute) ;;
            mosaic-ilp) args=(--planner ilp --ilp-tensors 100000 --ilp-seconds "$ilp_s" --softmax-copy 8 --mask-ratio "$MO_MASK" --chunking lazy) ;;
            mosaic-fc) args=("${base[@]}" --chunking none --max-num-logits "$fc_logits" --ffn-chunks "$fc_ffn") ;;
        esac
        mo_run $sys "$wl" "$T" $m $g mem plan --model $m --tokens "$T" "${args[@]}" --budget-gib "$MO_BUDGET"
        chunk=$(mo_json "$MO_F" logit_chunk_rows) ffn=$(mo_json "$MO_F" ffn_chunks) rows=$(mo_json "$MO_F" logit_rows)
        min_timings "$sys" "$T" "${args[@]}"
        step=$("$bin" calib price --roofline --model $m --gpu $g --impl torch-eager --step "1,$T,0,$rows,$chunk,$ffn" |
            awk '$1 == "step" { print $2 }')
        derived latency_ms $sys "$wl" "$T" "$(awk -v s="$step" -v a="${search:-0}" -v b="$plan" 'BEGIN { print s + (a + b) / 1000 }')"
        derived ffn_chunks $sys "$wl" "$T" "$ffn"
    done
done
t0=${short[0]} t1=${short[-1]}
# (the searches' and plans' times are this machine's CPU time, the least of five runs: a tenth of a
# percent or a quarter of a millisecond either way is their noise, the latter under a sanitizer's
# build on a busy machine; below L_max the lazy and the brute-force searches are one plan each)
check "Mosaic's step is no slower than any of its variants' at every length (Fig. 15)" \
    "$(for T in "${short[@]}"; do for v in mosaic-fc mosaic-bf mosaic-ilp; do printf '(val("mosaic","%s","%s","latency_ms") <= 1.001 * val("%s","%s","%s","latency_ms") || val("mosaic","%s","%s","latency_ms") <= val("%s","%s","%s","latency_ms") + 0.25) && ' "$wl" "$T" $v "$wl" "$T" "$wl" "$T" $v "$wl" "$T"; done; done) 1"
check "lazy chunking gains most over L_max's fixed chunks at the shortest length (Fig. 15)" \
    "val(\"mosaic-fc\",\"$wl\",\"$t0\",\"latency_ms\") / val(\"mosaic\",\"$wl\",\"$t0\",\"latency_ms\") > val(\"mosaic-fc\",\"$wl\",\"$t1\",\"latency_ms\") / val(\"mosaic\",\"$wl\",\"$t1\",\"latency_ms\")"
check "brute-force search's cost fades with the length: its latency over Mosaic's is no larger at the longest length than at the shortest (Fig. 15)" \
    "(val(\"mosaic-bf\",\"$wl\",\"$t0\",\"latency_ms\") + 0.25) / val(\"mosaic\",\"$wl\",\"$t0\",\"latency_ms\") >= val(\"mosaic-bf\",\"$wl\",\"$t1\",\"latency_ms\") / val(\"mosaic\",\"$wl\",\"$t1\",\"latency_ms\") - 0.001"
check "brute force finds the same L_max as Mosaic's bottleneck-driven search (Fig. 16)" \
    "val(\"mosaic-bf\",\"$wl\",\"1\",\"lmax\") == val(\"mosaic\",\"$wl\",\"1\",\"lmax\")"
check "ILP cannot raise L_max: first-fit's plan at L_max meets the step's theoretical peak (Fig. 16)" \
    "val(\"mosaic\",\"$wl\",\"1\",\"inflation\") == 0"
check "the bottleneck-driven search takes less time than brute force at every length (Fig. 17)" \
    "$(for T in "${lengths[@]}"; do printf 'val("mosaic","%s","%s","search_us") < val("mosaic-bf","%s","%s","search_us") && ' "$wl" "$T" "$wl" "$T"; done) 1"
check "first-fit plans in less time than ILP at every length (Fig. 18)" \
    "$(for T in "${lengths[@]}"; do printf 'val("mosaic","%s","%s","plan_us") < val("mosaic-ilp","%s","%s","plan_us") && ' "$wl" "$T" "$wl" "$T"; done) 1"
check "ILP's plan is no smaller than first-fit's at any length (first-fit already meets the bound)" \
    "$(for T in "${lengths[@]}"; do printf 'val("mosaic-ilp","%s","%s","peak_gib") >= val("mosaic","%s","%s","peak_gib") && ' "$wl" "$T" "$wl" "$T"; done) 1"
NOTES="Mosaic's setting (lib/mosaic.sh): half the rows masked, PyTorch's fp32 logit copy, the card's
memory less the weights, a 1 GiB reserve and the 900 MiB Mosaic's chunk search keeps free
(every search here keeps it). mosaic: the bottleneck-driven (lazy) chunk search and
first-fit planning; mosaic-bf: brute-force search over every pair of chunk counts; mosaic-ilp: the lazy
search with tessera's GLPK planner over the step's whole op graph (about 200 tensors), each solve
given $ilp_s s (its note says when it stops at that limit with the best plan found, seeded by the
heuristics). Search and planning latencies are the CPU time of the machine tessera runs on, single-threaded; the paper's are
withheld. Fig. 15 (latency_ms, at 1K to 32K tokens): a whole-sequence step priced by the roofline
with PyTorch eager's kernels in the LM-head and FFN chunks each system runs (calib price --step
1,T,0,T/2,CHUNK,FFN), plus that system's search and planning time for the step, each step; mosaic-fc
takes the chunk counts Mosaic's search finds at L_max ($fc_ffn FFN chunks, $fc_logits logit rows a
chunk) at every length, without a search."
SHOW_METRICS="lmax inflation plan_us plans_tried latency_ms logit_chunk_rows ffn_chunks"
# the figure: Figs. 15-18 as four panels, each system one colour and marker throughout
# shellcheck disable=SC2034 # FIG_TITLE: read by lib/figure.sh
FIG_TITLE="Mosaic Figs. 15-18: latency, Lₘₐₓ, search and planning by strategy, LLaDA-8B, A100-40GB"
# shellcheck disable=SC2034 # FIG_DASHES: read by lib/figure.sh
FIG_DASHES=1
fig_cols 2
fig_lines "Fig. 15: step latency" "Context length (tokens)" "Step latency (ms)" logx logy
for sys in mosaic mosaic-fc mosaic-bf mosaic-ilp; do fig_curve "$(mo_name $sys)" $sys "$wl" latency_ms; done
fig_bars "Fig. 16: Lₘₐₓ by search strategy" "" "$MO_LMAX_LABEL" yfrom0 "yfmt=%.0s%c"
for sys in mosaic mosaic-bf; do fig_bar "LLaDA-8B, A100-40GB" "$(mo_name $sys)" $sys "$wl" 1 lmax; done
fig_lines "Fig. 17: search latency" "Context length (tokens)" "Search latency (ms)" logy scale=0.001 "xfmt=%.0s%c" \
    xtics=100000
for sys in mosaic mosaic-bf; do fig_curve "$(mo_name $sys)" $sys "$wl" search_us; done
fig_lines "Fig. 18: planning latency" "Context length (tokens)" "Planning latency (ms)" logy scale=0.001 "xfmt=%.0s%c" \
    xtics=100000
for sys in mosaic mosaic-ilp; do fig_curve "$(mo_name $sys)" $sys "$wl" plan_us; done
fig_note "Fig. 15: Mosaic, Mosaic-FC and Mosaic-BF lie within $(for T in "${short[@]}"; do for v in mosaic-fc mosaic-bf; do ratio "$(value latency_ms $v "$wl" "$T")" "$(value latency_ms mosaic "$wl" "$T")"; done; done |
    awk '{ d = $1 > 1 ? $1 - 1 : 1 - $1; if (d > m) m = d } END { printf "%.1f%%", 100 * m }') of each other at every length: their curves overlap (each its own marker and dashes)."
fig_note "Fig. 16: Mosaic-ILP, not drawn, reaches Mosaic's Lₘₐₓ: first-fit's plan at Lₘₐₓ already meets the step's theoretical peak. Search and planning: CPU time where tessera runs, single-threaded."
paper_finish "Mosaic Figs. 15-18: step latency, search latency by strategy, LLaDA-8B, A100-40GB" "context length (tokens)" latency_ms
