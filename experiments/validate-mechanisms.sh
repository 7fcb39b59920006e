#!/usr/bin/env bash
# validate-mechanisms.sh: tessera's predictions of the newer mechanisms against their own public code running on the GPU.
#
# The record experiments/records/validate-mechanisms-h100 holds, each in its own folder with the
# machine's host line (LLaDA's reference loop over the held-out grid, native.tgz):
#   dpad/  DPad's three generate loops (Crys-Chen/DPad llada/generate_dropout.py at 461b36e: no cache,
#          Fast-dLLM's prefix cache, its dual cache), its GSM8K setting (blocks of 32, window 256, k 4,
#          scale 2, one position a step); profile/: the held-out grid of all four loops on a second
#          H100, which gives each DPad loop's issue time (the torch-dpad and torch-dpad-cache
#          implementations)
#   d2f/   D2F's pipelined blocks (zhijie-group/Discrete-Diffusion-Forcing D2F-eval/eval_llada.py at
#          771f745, its paper's thresholds); its held-out grid (in d2f.tgz) gives its issue time
#          (torch-d2f). With random weights no confidence passes D2F's threshold, so each fully
#          activated block decodes one position a step and a semi-activated one none: tessera predicts
#          it with --decode fixed:1 --d2f-semi 0
#   sparsed/  SparseD's generate (INV-WZQ/SparseD models/LLaDA/generate.py at 52155b4, its FlexAttention
#          path: skip 0.2, select 0.3, blocks of 128) and the same generate without its sparsity
#          (sparsed-dense: its --origin, dense SDPA), over sparsed-long.csv: prompts of 2,048 to 16,384
#          tokens, 128 positions each, one position a step (its figure 4's T = 128); the forwards are
#          GPU-bound, priced without a host line, LLaDA-8B run past its config's 4,096 positions
#          (--max-pos 32768, as SparseD runs LLaDA-1.5)
# dpad/ and d2f/ each over one burst (SYSTEM-burst.csv: 6 requests arriving together, prompts of 128, 512 and 1,024
# tokens, 256 positions each), run one request at a time by experiments/validate/driver.py (random
# weights in LLaDA-8B-Instruct's shape): every request's times, every forward's rows and time.
#
# tessera predicts every run with the loop's preset (dpad, dpad-prefix, dpad-dual, d2f, sparsed), the H100's
# torch-eager calibration and the machine's host line, and compares:
#   OUT/validate.csv   system,rate,metric,predicted,measured,error_pct: throughput, mean and p99
#                      latency, forwards, per-forward means and MAPE (compare.py run)
#   OUT/rows.csv       every forward's rows against its step's: how many equal, the mean difference
#   OUT/sparsed.csv    SparseD, request by request: the time with its sparsity and without, the speedup,
#                      and the mean step before its pattern, the step building it, the steps after
#   OUT/kept.csv       DPad: the suffix positions each block keeps past it, predicted (the expected
#                      count) against DPad's draws (mean, least and most over the requests)
#   OUT/own-SYSTEM.csv dKV-Cache's, Elastic-Cache's, d2Cache's and Fast-dLLM v2's own loops against their
#                      policies, request by request, with the decisions their loops took (experiments/validate/own.sh
#                      over the records dkv-, elastic-, d2cache- and fdllm-v2-own-code-h100)
#   OUT/validate.md    the tables; OUT/host.txt the host lines and the loops' issue times
#   OUT/mechanisms.png where gnuplot is found: DPad's kept suffix a block, and latency a request
# and checks, each a PASS or FAIL line: every run's forward count is predicted exactly; every
# forward's rows are for D2F, and for DPad's dual cache all but a block's first (DPad's random draw);
# every block's predicted kept suffix lies within DPad's draws; DPad's cached loops' throughput is
# within 10%; SparseD's dense steps within 15% and its sparse steps within 20% at every length, and its
# speedup growing with the prompt on both sides; dKV-Cache's rows exact; Elastic-Cache's and d2Cache's
# forward counts exact, their rows within 10% on average at every prompt and their totals within 10%;
# Fast-dLLM v2's forward counts exact, its rows exact without its DualCache and its whole-block forwards
# within 10% with it.
#
# MEASURE=1 measures the runs again first, on this machine's GPU (experiments/validate/measure.sh with
# the checkouts in CODE, default baselines/, as experiments/validate/README.md makes them), into
# OUT/record, and compares those instead.
#
# Usage: tessera exp run validate-mechanisms OUT [--force]   (or experiments/validate-mechanisms.sh OUT with TESSERA=path)
# Needs: GPU with MEASURE
set -euo pipefail
out=${1:?usage: validate-mechanisms.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/experiments/lib/record.sh"
source "$root/analysis/lib_gnuplot.sh"
bin=${TESSERA:-$root/build/tessera}
[ -x "$bin" ] || { echo "validate-mechanisms.sh: $bin not found: make first, or set TESSERA" >&2; exit 2; }
cmp=$root/experiments/validate/compare.py
groups="dpad d2f"
own="dkv elastic d2cache fdllm-v2 fdllm-v2-dual"
members() { case $1 in dpad) echo "dpad dpad-prefix dpad-dual" ;; d2f) echo d2f ;; esac; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rec=$out/record
if [ "${MEASURE:-0}" = 1 ]; then
    mkdir -p "$rec/sparsed/traces"
    TESSERA=$bin "$root/experiments/validate/traces.sh" "$tmp/traces"
    cp "$tmp/traces/sparsed-long.csv" "$rec/sparsed/traces/"
    for s in sparsed sparsed-dense; do TRACES=$rec/sparsed/traces "$root/experiments/validate/measure.sh" "$s" "$rec/sparsed"; done
    for g in $groups; do
        mkdir -p "$rec/$g/traces"
        cp "$tmp/traces/profile.csv" "$rec/$g/traces/"
        for s in $(members "$g"); do
            cp "$tmp/traces/$s-burst.csv" "$rec/$g/traces/"
            TRACES=$rec/$g/traces "$root/experiments/validate/measure.sh" "$s" "$rec/$g"
        done
        PROFILE_ONLY=1 TRACES=$rec/$g/traces "$root/experiments/validate/measure.sh" native "$rec/$g"
    done
else
    rec=$(record_path validate-mechanisms.sh validate-mechanisms-h100 "$tmp" "the mechanisms' own loops on an H100" \
        "MEASURE=1 tessera exp run validate-mechanisms OUT") || exit 2
fi

echo "system,rate,metric,predicted,measured,error_pct" >"$tmp/validate.csv"
echo "system,rate,id,predicted_s,measured_s" >"$tmp/latency.csv"
echo "system,block,predicted,measured_mean,measured_min,measured_max,requests" >"$tmp/kept.csv"
echo "system,forwards,rows_equal,mean_abs_diff" >"$tmp/rows.csv"
: >"$out/host.txt"
for g in $groups; do
    runs=$tmp/$g/runs grid=$tmp/$g/grid
    mkdir -p "$runs" "$grid"
    for s in $(members "$g") native; do
        [ -f "$rec/$g/$s.tgz" ] || { echo "validate-mechanisms.sh: $rec/$g/$s.tgz missing: measure it (MEASURE=1)" >&2; exit 2; }
        tar -xzf "$rec/$g/$s.tgz" -C "$runs"
    done
    [ -d "$rec/$g/profile" ] || grid=$runs # the loops' issue times: a second machine's grid where there is one
    [ "$grid" = "$runs" ] || for s in $(members "$g") native; do tar -xzf "$rec/$g/profile/$s.tgz" -C "$grid"; done
    {
        echo "$g:"
        python3 "$cmp" host "$runs" "$tmp/$g/host.csv" | sed -n 1p
        echo "the loops' issue times on the held-out grid$([ "$grid" = "$runs" ] || echo " (a second H100)"):"
        python3 "$cmp" host "$grid" "$tmp/$g/grid-host.csv" | sed -n '3,$p'
    } | tee -a "$out/host.txt"
    for s in $(members "$g"); do
        opts=()
        [ "$s" = d2f ] && opts=(--decode fixed:1 --d2f-semi 0) # random weights: no confidence passes
        "$bin" sim --system "$s" "${opts[@]}" --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" \
            --host "$tmp/$g/host.csv" --gpu h100 --cost calibrated --extrapolate --trace "$rec/$g/traces/$s-burst.csv" \
            --block 32 --seed 1 --db "$tmp/$s.db" --quiet --no-progress >/dev/null
        python3 "$cmp" run "$s" burst "$runs" "$tmp/$s.db" >>"$tmp/validate.csv" 2>>"$tmp/latency.csv"
        python3 "$cmp" rows "$s" "$runs" "$tmp/$s.db" | tail -n +2 >>"$tmp/rows.csv"
        [ "$g" = dpad ] && python3 "$cmp" kept "$s" "$runs" "$tmp/$s.db" | tail -n +2 >>"$tmp/kept.csv"
    done
done
# SparseD: its generate with its sparsity and without, each request priced as the loop ran it
runs=$tmp/sparsed/runs
mkdir -p "$runs"
for s in sparsed sparsed-dense; do
    [ -f "$rec/sparsed/$s.tgz" ] || { echo "validate-mechanisms.sh: $rec/sparsed/$s.tgz missing: measure it (MEASURE=1)" >&2; exit 2; }
    tar -xzf "$rec/sparsed/$s.tgz" -C "$runs"
done
for p in sparsed vanilla; do # its preset, and its preset without the sparsity (--policy vanilla)
    "$bin" sim --system sparsed --policy "$p" --max-pos 32768 \
        --calib "$root/sim/data/calib/h100-llada-8b-torch-eager.csv" --gpu h100 --cost calibrated --extrapolate \
        --trace "$rec/sparsed/traces/sparsed-long.csv" --block 32 --seed 1 --db "$tmp/$p-long.db" --quiet --no-progress \
        >/dev/null
done
python3 "$cmp" sparsed "$runs" "$tmp/sparsed-long.db" "$tmp/vanilla-long.db" >"$tmp/sparsed.csv"
for s in sparsed sparsed-dense; do
    p=sparsed
    [ "$s" = sparsed-dense ] && p=vanilla
    n=$(awk -F, 'NR > 1 { n += $7 } END { print n }' "$runs/$s/sparsed-long/requests.csv")
    k=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM steps").fetchone()[0])' \
        "$tmp/$p-long.db")
    echo "$s,long,forwards,$k,$n,$(awk -v k="$k" -v n="$n" 'BEGIN { printf "%+.1f", 100 * (k - n) / n }')" >>"$tmp/validate.csv"
done
mv "$tmp/validate.csv" "$tmp/latency.csv" "$tmp/kept.csv" "$tmp/rows.csv" "$tmp/sparsed.csv" "$out/"
# the cache policies checked against their own loops, each from its record (experiments/validate/own.sh)
for s in $own; do # (fdllm-v2-dual: the dual/ folder of fdllm-v2's record)
    sub=
    [ "${s%-dual}" = "$s" ] || sub=dual
    src=$(record_path validate-mechanisms.sh "${s%-dual}-own-code-h100" "$tmp" "$s's own loop on an H100" \
        "MEASURE=1 experiments/validate/own.sh $s OUT") || exit 2
    mkdir -p "$tmp/own-$s" && cp -r "$src${sub:+/$sub}/." "$tmp/own-$s/"
    TESSERA=$bin bash "$root/experiments/validate/own.sh" "$s" "$tmp/own-$s" >/dev/null
    cp "$tmp/own-$s/$s.csv" "$out/own-$s.csv"
done

{
    echo "# tessera against the mechanisms' own code (H100)"
    echo
    echo "Each loop served 6 requests arriving together, one at a time (prompts of 128, 512 and 1,024 tokens, 256"
    echo "positions each, blocks of 32); predicted with its preset from the same trace."
    echo
    echo "| loop | throughput tok/s (pred / meas / err) | mean latency s | p99 latency s | forwards | rows equal | per-forward MAPE |"
    echo "|---|---|---|---|---|---|---|"
    awk -F, 'FNR == 1 { f++; next }
        f == 1 { rows[$1] = $3 " of " $2 }
        f == 2 && $2 != "long" { v[$1 "," $3] = $4 " / " $5 " / " $6 "%"; m[$1 "," $3] = $4; if (!seen[$1]++) order[++n] = $1 }
        END { for (i = 1; i <= n; i++) { s = order[i]
              printf "| %s | %s | %s | %s | %s | %s | %s%% |\n", s, v[s ",throughput_tok_s"], v[s ",lat_mean_s"],
                  v[s ",lat_p99_s"], v[s ",forwards"], rows[s], m[s ",forward_mape_all"] } }' \
        "$out/rows.csv" "$out/validate.csv"
    echo
    echo "DPad's suffix positions kept past each block (its three loops draw the same sets: one seed):"
    echo
    echo "| block | predicted (expected count) | measured mean | least | most |"
    echo "|---|---|---|---|---|"
    awk -F, '$1 == "dpad" { printf "| %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6 }' "$out/kept.csv"
    echo
    echo "SparseD's generate with its sparsity and without (seconds a request of 128 positions; mean step ms before its"
    echo "pattern, the step building it, after; predicted / measured):"
    echo
    echo "| prompt | dense s | SparseD s | speedup | dense step | pattern step | sparse step |"
    echo "|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 { printf "| %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n",
                      $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' "$out/sparsed.csv"
    echo
    echo "dKV-Cache, Elastic-Cache, d2Cache and Fast-dLLM v2 (without and with its DualCache), each loop serving 6"
    echo "requests one at a time (prompts of 128, 512 and 1,024 tokens, twice, 128 positions each), predicted with the"
    echo "decisions its loop took (own-SYSTEM.csv):"
    echo
    echo "| loop | prompt | forwards (pred / meas) | rows equal | seconds (pred / meas / err) |"
    echo "|---|---|---|---|---|"
    for s in $own; do
        awk -F, -v s="$s" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            { p = $c["time_pred_s"]; m = $c["time_meas_s"]
              printf "| %s | %s | %s / %s | %s | %s / %s / %+.1f%% |\n", s, $c["prompt_tokens"], $c["forwards_pred"],
                     $c["forwards_meas"], $c["rows_equal"], p, m, 100 * (p / m - 1) }' "$out/own-$s.csv"
    done
} >"$out/validate.md"
cat "$out/validate.md"

echo
fails=0
check() { # NAME TEXT RESULT(0 pass)
    if [ "$3" = 0 ]; then echo "PASS  $1: $2"; else echo "FAIL  $1: $2"; fails=$((fails + 1)); fi
}
r=$(awk -F, '$3 == "forwards" && $4 != $5 { bad = 1 } END { print bad + 0 }' "$out/validate.csv")
check forwards "every run's forward count predicted exactly" "$r"
# (DPad's dual cache: all but each block's first forward, which runs the suffix DPad draws at random:
# 6 requests of 8 blocks)
r=$(awk -F, '($1 == "d2f" && $3 != $2) || ($1 == "dpad-dual" && $3 < $2 - 48) { bad = 1 } END { print bad + 0 }' \
    "$out/rows.csv")
check rows "every forward's rows predicted exactly for D2F, and for DPad's dual cache but a block's first" "$r"
r=$(awk -F, 'NR > 1 && ($3 < $5 || $3 > $6) { bad = 1 } END { print bad + 0 }' "$out/kept.csv")
check kept "every block's predicted kept suffix within DPad's draws for it" "$r"
r=$(awk -F, '($1 == "dpad-prefix" || $1 == "dpad-dual") && $3 == "throughput_tok_s" && ($6 > 10 || $6 < -10) { bad = 1 }
             END { print bad + 0 }' "$out/validate.csv")
check cached-throughput "DPad's prefix and dual loops' throughput within 10%" "$r"

r=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             $c["forwards_pred"] != $c["forwards_meas"] || $c["rows_equal"] != $c["forwards_meas"] { bad = 1 }
             END { print bad + 0 }' "$out/own-dkv.csv")
check own-dkv "dKV-Cache: every forward's rows predicted exactly" "$r"
r=$(awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             { d = $c["rows_mean_pred"] / $c["rows_mean_meas"] - 1; t[FILENAME] += $c["time_pred_s"]
               m[FILENAME] += $c["time_meas_s"]
               if (d > 0.1 || d < -0.1 || $c["forwards_pred"] != $c["forwards_meas"]) bad = 1 }
             END { for (f in t) if (t[f] / m[f] > 1.1 || t[f] / m[f] < 0.9) bad = 1; print bad + 0 }' \
    "$out/own-elastic.csv" "$out/own-d2cache.csv")
check own-decisions "Elastic-Cache and d2Cache, given the decisions their loops took: every forward count exact, the rows a forward within 10% on average at every prompt, the time of their six requests within 10%" "$r"
r=$(awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             { bp[FILENAME] += $c["block_rows_pred"]; bm[FILENAME] += $c["block_rows_meas"]
               if ($c["forwards_pred"] != $c["forwards_meas"]) bad = 1
               if (FILENAME ~ /own-fdllm-v2.csv$/ && $c["rows_equal"] != $c["forwards_meas"]) bad = 1 }
             END { for (f in bp) if (bp[f] / bm[f] > 1.1 || bp[f] / bm[f] < 0.9) bad = 1; print bad + 0 }' \
    "$out/own-fdllm-v2.csv" "$out/own-fdllm-v2-dual.csv")
check own-fdllm-v2 "Fast-dLLM v2: every forward count exact; without its DualCache every forward's rows exact; with it, given the whole-block steps its loop took, its whole-block forwards within 10% over the six requests" "$r"

r=$(awk -F, 'NR > 1 { d = $8 / $9 - 1; s = $12 / $13 - 1; if (d > 0.15 || d < -0.15 || s > 0.2 || s < -0.2) bad = 1
                     if (NR > 2 && ($6 <= p || $7 <= m)) bad = 1; p = $6; m = $7 } END { print bad + 0 }' "$out/sparsed.csv")
check sparsed "SparseD's dense steps within 15%, its sparse steps within 20%, its speedup growing with the prompt on both sides" "$r"

if command -v gnuplot >/dev/null; then
    awk -F, '$1 == "dpad" { print $2, $3, $4, $5, $6 }' "$out/kept.csv" >"$tmp/kept.dat"
    for s in dpad dpad-prefix dpad-dual d2f; do awk -F, -v s="$s" '$1 == s { print $5, $4 }' "$out/latency.csv" >"$tmp/$s.dat"; done
    top=$(awk -F, 'NR > 1 { m = $4 > m ? $4 : m; m = $5 > m ? $5 : m } END { print m * 1.05 }' "$out/latency.csv")
    awk -F, 'NR > 1 { print $1, $6, $7 }' "$out/sparsed.csv" >"$tmp/speedup.dat"
    gnuplot <<EOF
set terminal pngcairo size 1900,520 font ',11'
set output $(gp_file "$out/mechanisms.png")
set multiplot layout 1,3 title "The mechanisms' own code on an H100 (DPad 461b36e, D2F 771f745, SparseD 52155b4) against tessera's prediction"
set title "DPad: suffix positions kept past each block (window 256, k 4, scale 2)"
set xlabel 'block'; set ylabel 'suffix positions kept'; set grid; set key bottom left opaque box
set xrange [-0.5:7.5]; set yrange [0:*]
plot $(gp_file "$tmp/kept.dat") using 1:3:4:5 with yerrorbars pt 7 lc rgb '#D55E00' title 'DPad: mean, least and most of 6 draws', \
     '' using 1:2 with linespoints pt 5 lc rgb '#0072B2' title 'tessera: the expected count'
set title 'Latency a request (6 arriving together, served one at a time)'
set xlabel 'measured (s)'; set ylabel 'predicted (s)'; set size square; set key top left opaque box
set xrange [0:$top]; set yrange [0:$top]
plot x with lines dt 2 lc rgb '#7F7F7F' title 'predicted = measured', \
     $(gp_file "$tmp/dpad.dat") with points pt 7 ps 1.2 lc rgb '#0072B2' title 'DPad, no cache', \
     $(gp_file "$tmp/dpad-prefix.dat") with points pt 5 ps 1.2 lc rgb '#D55E00' title 'DPad, prefix cache', \
     $(gp_file "$tmp/dpad-dual.dat") with points pt 9 ps 1.5 lc rgb '#009E73' title 'DPad, dual cache', \
     $(gp_file "$tmp/d2f.dat") with points pt 11 ps 1.5 lc rgb '#CC79A7' title 'D2F, pipelined blocks'
set title "SparseD: speedup over its own dense path (T = 128)"
set size nosquare; set logscale x 2; set xrange [1500:22000]; set yrange [0.9:1.3]
set xlabel 'prompt (tokens)'; set ylabel 'dense time / SparseD time'; set key top left opaque box
plot 1 with lines dt 2 lc rgb '#7F7F7F' notitle, \
     $(gp_file "$tmp/speedup.dat") using 1:3 with linespoints pt 7 lc rgb '#D55E00' title 'measured (its FlexAttention path)', \
     '' using 1:2 with linespoints pt 5 lc rgb '#0072B2' title 'tessera (its pattern as half pairs of a fused kernel)'
unset multiplot
EOF
fi
[ "$fails" = 0 ] || { echo "validate-mechanisms.sh: $fails check(s) failed" >&2; exit 1; }
