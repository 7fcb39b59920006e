#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# records_test.sh: the records re-derived (make check-records). Each record under experiments/records
# that a shipped file or a documented figure comes from is evaluated again by this build and must give
# what was recorded: the fidelity matrices (per-step MAPE, p90 and total error within 0.15 points),
# the replays' calib eval texts, the live runs re-predicted, the clock fit, PyTorch's peaks, and the
# shipped calibrations byte for byte as the merges of their records' profiles. Run it when the cost
# model, the calibration fit or a shipped calibration changes, and re-record what it then reports.
# The records' data is packed (analysis/records.sh): it is unpacked into a scratch folder first.
# Its time: README.md. Prints a line a record as it goes.
# Usage: records_test.sh PATH/TO/tessera    Prints "records: N passed, M failed".
set -u
bin=${1:?usage: records_test.sh PATH/TO/tessera}
TEST=records
source "$(dirname "$0")/lib_cli.sh"
json_check() { # json_check FILE PYTHON-EXPR-ON-d
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert $2" "$1" 2>/dev/null; then ok; else bad "JSON check '$2' on $(head -c 200 "$1")"; fi
}
root=$(cd "$(dirname "$0")/.." && pwd)
# every record unpacked, for this script and the analysis scripts it runs (TESSERA_RECORDS)
echo "records: ... unpacking the records" >&2
rec_dir="$tmp/records"
bash "$root/analysis/records.sh" unpack "$rec_dir" || { echo "records: cannot unpack the records" >&2; exit 1; }
export TESSERA_RECORDS=$rec_dir
# fidelity regression: each record's calibrations (calib-MODEL.csv.gz, profiled with the engine it
# records) re-evaluated on its recorded H200 step times (deterministic simulations, each step
# checked against the recorded one) must give what was recorded, run by run (per-step MAPE, p90
# and total-time error within 0.15 points), in sample (the replays on a profiled machine) and out of
# sample (a machine none of whose profiles is merged), for each model and implementation whose
# calibration is shipped: fidelity-h200 (LLaDA-8B, and SDAR-8B as an engine of launch rules 3
# ran it), fidelity-h200-fused (LLaDA-8B, fused FFN), fidelity-h200-sdar and -fused-sdar (SDAR-8B),
# fidelity-h200-dream and -fused-dream (Dream-7B), fidelity-h200-sparse (LLaDA-8B with the sparse
# caches, the engine of launch rules 4), fidelity-h200-dllm-cache (LLaDA-8B's dLLM-Cache runs, the
# calibration with the fc grid, which is shipped), fidelity-h200-moe (LLaDA2.0-mini and LLaDA-MoE-7B,
# balanced routing, the experts on bf16 fragments), fidelity-h200-moe-wgmma (the same on the wgmma
# grouped GEMM, one whole profile each, kept as it is), fidelity-h100 (LLaDA-8B, SDAR-8B and Dream-7B on the H100), each with its -oos
# twin, and fidelity-h100-policies-oos (LLaDA-8B's dLLM-Cache and sparse runs on the H100, priced by
# fidelity-h100's calibration merged with an fc profile of another machine, kept as it is), and the
# sparse runs measured after the selection kernels changed: fidelity-h100-sparse-oos (on an H100
# start none of the select profiles ran on) and fidelity-h200-sparse-select (on the H200 start of
# the select profiles), each priced by the shipped calibration; fused-small-h200 (the three models'
# tessera-fused runs with the fused FFN's small-row forms) and its -oos (LLaDA-8B's on a third
# start), and fidelity-h200-dream-rules4 (Dream-7B under launch rules 4) with its -oos, each as it
# is (their calibrations' merges are checked after the loop). Each in-sample record's calibration
# is `calib merge` of the profiles it keeps in profiles/ (the mixtures' and the H100's: one profile
# each, merged with another machine's ladder, kept as they are), and the shipped calibrations are,
# byte for byte, the records' named by current below; those whose selecting steps were profiled
# again (select-h100, select-h200) are their record's calibration merged with those profiles over it;
# and every one's selecting steps were profiled again after the selection moved after the step's last
# layer (select-end-h100, select-end-h200: reselect).
# select_over PREFIX: over=(--over FILE ...), the select profiles PREFIX-N.csv.gz unpacked into $tmp
select_over() {
    local f
    over=()
    for f in "$1"-[0-9].csv.gz; do
        gzip -dc "$f" >"$tmp/$(basename "$f" .gz)" && over+=(--over "$tmp/$(basename "$f" .gz)")
    done
}
# reselect GPU MODEL IMPL FILE OUT: FILE with the selecting steps profiled again after the selection
# moved after the last layer (select-end-GPU's profiles of MODEL and IMPL, where it holds them)
# merged over it, into OUT: what the shipped calibration is
reselect() {
    local f o=()
    for f in "$rec_dir/select-end-$1/profiles/select-$2-$3"-[0-9].csv.gz; do
        [ -f "$f" ] || continue
        gzip -dc "$f" >"$tmp/rs-$(basename "$f" .gz)" && o+=(--over "$tmp/rs-$(basename "$f" .gz)")
    done
    if [ ${#o[@]} -eq 0 ]; then cp "$4" "$5"; return; fi
    $bin calib merge "$4" "${o[@]}" --gpu "$1" --out "$5" >/dev/null 2>&1 || bad "calib merge over select-end-$1's $2 $3 profiles"
}
current() { # current GPU-MODEL IMPL: the record whose calibration is shipped (reselect over it)
    case $1-$2 in
        h200-llada-8b-tessera) echo fidelity-h200-sparse-select ;; h200-*-tessera-fused) echo fused-small-h200 ;;
        h200-sdar-8b-tessera) echo fidelity-h200-sdar ;; h200-dream-7b-tessera) echo fidelity-h200-dream-rules4 ;;
        h100-llada-8b-tessera) echo fidelity-h100-sparse-oos ;;
        h200-llada2.0-mini-tessera | h200-llada-moe-7b-tessera) echo fidelity-h200-moe-wgmma ;;
    esac
}
if command -v python3 >/dev/null 2>&1; then
    for rec in fidelity-h200 fidelity-h200-oos fidelity-h200-fused fidelity-h200-fused-oos fidelity-h200-sdar \
        fidelity-h200-sdar-oos fidelity-h200-fused-sdar fidelity-h200-fused-sdar-oos fidelity-h200-dream \
        fidelity-h200-dream-oos fidelity-h200-fused-dream fidelity-h200-fused-dream-oos fidelity-h200-sparse \
        fidelity-h200-sparse-oos fidelity-h200-dllm-cache fidelity-h200-dllm-cache-oos fidelity-h200-moe \
        fidelity-h200-moe-oos fidelity-h100 fidelity-h100-oos fidelity-h100-policies-oos fidelity-h100-sparse-oos \
        fidelity-h200-sparse-select fidelity-h200-moe-wgmma fidelity-h200-moe-wgmma-oos fused-small-h200 \
        fused-small-h200-oos fidelity-h200-dream-rules4 fidelity-h200-dream-rules4-oos fidelity-h200-sparse-end \
        fidelity-h100-merged fidelity-h100-fused-merged fidelity-h100-fused-oos; do
        echo "records: ... re-evaluating $rec" >&2
        want="$rec_dir/$rec" cal="$tmp/$rec/cal" impl=tessera models="llada-8b sdar-8b" runs=16
        export POLICIES="dual block"
        case $rec in *fused*) impl=tessera-fused models=llada-8b runs=8 ;; esac
        case $rec in *sdar*) models=sdar-8b runs=8 ;; *dream*) models=dream-7b runs=8 ;; esac
        case $rec in *sparse*) models=llada-8b runs=16 POLICIES="dual block sparse sparse-head" ;; esac
        case $rec in *dllm-cache*) models=llada-8b runs=4 POLICIES=dllm-cache ;; esac
        case $rec in *moe*) models="llada2.0-mini llada-moe-7b" runs=16 ;; esac
        gpu=h200
        case $rec in *h100*) models="llada-8b sdar-8b dream-7b" runs=24 gpu=h100 ;; esac
        case $rec in *h100-policies*) models=llada-8b runs=12 POLICIES="dllm-cache sparse sparse-head" ;; esac
        case $rec in fidelity-h100-sparse-oos | fidelity-h200-sparse-select | fidelity-h200-sparse-end) models=llada-8b runs=8 POLICIES="sparse sparse-head" ;; esac
        case $rec in fused-small-h200) models="llada-8b sdar-8b dream-7b" runs=24 ;; esac
        case $rec in fidelity-h100-merged | fidelity-h100-fused-merged) models="sdar-8b dream-7b" runs=16 ;; esac
        mkdir -p "$cal"
        for m in $models; do
            gzip -dc "$want/calib-$m.csv.gz" >"$cal/calib-$m.csv" || bad "$rec: no calib-$m.csv.gz"
        done
        case $rec in
            *-oos | fidelity-h200-moe | fidelity-h200-moe-wgmma | fidelity-h100 | fidelity-h200-sparse-select | \
                fused-small-h200 | fidelity-h200-dream-rules4 | fidelity-h200-sparse-end | fidelity-h100-fused-merged) # (as they are)
                GPU=$gpu IMPL=$impl CLOCK=off MEASURED="$want/all-steps.csv.gz" CALIB_DIR="$cal" TESSERA=$bin \
                       SCRATCH="$tmp/$rec/scr" bash "$root/experiments/fidelity.sh" "$tmp/$rec" "$models" >"$tmp/out" 2>&1 ;;
            *) # in sample: the calibrations merged again from the record's profiles (PROFILES=)
                GPU=$gpu IMPL=$impl CLOCK=off MEASURED="$want/all-steps.csv.gz" PROFILES="$want/profiles" TESSERA=$bin \
                    SCRATCH="$tmp/$rec/scr" bash "$root/experiments/fidelity.sh" "$tmp/$rec" "$models" >"$tmp/out" 2>&1
                for m in $models; do
                    if cmp -s "$tmp/$rec/calib-$m.csv" "$cal/calib-$m.csv"; then ok
                    else bad "$rec: calib-$m.csv.gz is not calib merge of profiles/$m.*.csv.gz"; fi
                done ;;
        esac
        for m in $models; do
            [ "$(current $gpu-"$m" $impl)" = "$rec" ] || continue
            reselect $gpu "$m" $impl "$cal/calib-$m.csv" "$tmp/rs.csv"
            if cmp -s "$tmp/rs.csv" "$root/sim/data/calib/$gpu-$m-$impl.csv"; then ok
            else bad "sim/data/calib/$gpu-$m-$impl.csv is not the calibration $rec recorded with select-end-$gpu's over it"; fi
        done
        n=$(awk -F, '$5 == "calibrated"' "$tmp/$rec/fidelity.csv" | wc -l)
        differ=$(awk -F, 'NR == FNR { if ($5 == "calibrated") want[$1 FS $2 FS $3 FS $4] = $8 FS $9 FS $10; next }
            $5 == "calibrated" { k = $1 FS $2 FS $3 FS $4; split(want[k], w, FS)
                for (i = 1; i <= 3; i++) { d = $(7 + i) - w[i]; if (d < 0) d = -d; if (!(k in want) || d > 0.15) { print k; break } } }' \
            "$want/fidelity.csv" "$tmp/$rec/fidelity.csv" | head -3)
        if [ "$n" -eq $runs ] && [ -z "$differ" ]; then ok; else bad "$rec on recorded H200 steps: $n runs, differing from the record: $differ"; sed 's/^/    /' "$tmp/out" >&2; fi
    done
    unset POLICIES
    # each out-of-sample record priced by its in-sample sibling's calibrations; fidelity-h200-oos's
    # SDAR-8B (launch rules 3) keeps the calibration before the long-cache rows its sibling gained
    for o in "$rec_dir"/fidelity-h200*-oos; do
        for c in "$o"/calib-*.csv.gz; do
            [ "$(basename "$o")/$(basename "$c")" = fidelity-h200-oos/calib-sdar-8b.csv.gz ] && continue
            if cmp -s <(gzip -dc "$c") <(gzip -dc "${o%-oos}/$(basename "$c")"); then ok
            else bad "$(basename "$o"): $(basename "$c") is not its in-sample record's"; fi
        done
    done
    # fidelity-h200-dream-rules4's calibration: its whole profile with its long-cache part (profiled
    # after 150 ms of each step's own repetition) merged over it
    fd=$rec_dir/fidelity-h200-dream-rules4/profiles
    gzip -dc "$fd/dream-7b.csv.gz" >"$tmp/fd.csv" && gzip -dc "$fd/dream-7b.long.csv.gz" >"$tmp/fd-long.csv"
    expect 0 "calib merge of fidelity-h200-dream-rules4" -- "$bin" calib merge "$tmp/fd.csv" --over "$tmp/fd-long.csv" \
        --gpu h200 --out "$tmp/fd-cal.csv"
    cmp -s "$tmp/fd-cal.csv" <(gzip -dc "$rec_dir/fidelity-h200-dream-rules4/calib-dream-7b.csv.gz") && ok ||
        bad "fidelity-h200-dream-rules4: calib-dream-7b.csv.gz is not the merge of its profiles"
    # fused-small-h200's calibrations: LLaDA-8B's the merge of two machine starts' whole profiles,
    # SDAR-8B's and Dream-7B's their earlier record's with both starts' small steps merged over it
    fs=$rec_dir/fused-small-h200
    for m in llada-8b sdar-8b dream-7b; do
        for f in "$fs"/profiles/*"$m".[12].csv.gz; do gzip -dc "$f" >"$tmp/fs-$(basename "$f" .gz)"; done
        if [ $m = llada-8b ]; then
            expect 0 "calib merge of fused-small-h200, $m" -- "$bin" calib merge "$tmp"/fs-$m.[12].csv --gpu h200 --out "$tmp/fs.csv"
        else
            gzip -dc "$rec_dir/fidelity-h200-fused-${m%%-*}/calib-$m.csv.gz" >"$tmp/fs-base.csv"
            expect 0 "calib merge over fused-small-h200's small steps, $m" -- "$bin" calib merge "$tmp/fs-base.csv" \
                --over "$tmp/fs-small-$m.1.csv" --over "$tmp/fs-small-$m.2.csv" --gpu h200 --out "$tmp/fs.csv"
        fi
        cmp -s "$tmp/fs.csv" <(gzip -dc "$fs/calib-$m.csv.gz") && ok ||
            bad "fused-small-h200: calib-$m.csv.gz is not the merge of its profiles"
    done
    # the shipped calibrations whose selecting steps were profiled again (three profiles each, records
    # select-h100 and select-h200): each its record's calibration with those profiles merged over it
    # (GPU:MODEL:RECORD[:PROFILE]: a PROFILE of another machine start, under records/, merged with the
    # record's calibration first)
    for spec in h100:llada-8b:fidelity-h100-policies-oos:calibrate-h100/h100-llada-8b-tessera.csv.gz \
        h100:sdar-8b:fidelity-h100-merged h100:dream-7b:fidelity-h100-merged h200:llada-8b:fidelity-h200-dllm-cache; do
        IFS=: read -r g m r extra <<<"$spec"
        gzip -dc "$rec_dir/$r/calib-$m.csv.gz" >"$tmp/base-$g-$m.csv"
        if [ -n "$extra" ]; then
            gzip -dc "$rec_dir/$extra" >"$tmp/base-x.csv"
            expect 0 "calib merge of $r and $extra" -- "$bin" calib merge "$tmp/base-$g-$m.csv" "$tmp/base-x.csv" \
                --gpu "$g" --out "$tmp/base-xm.csv" && mv "$tmp/base-xm.csv" "$tmp/base-$g-$m.csv"
        fi
        select_over "$rec_dir/select-$g/profiles/select-$m-tessera"
        expect 0 "calib merge over select-$g's profiles, $m" -- "$bin" calib merge "$tmp/base-$g-$m.csv" "${over[@]}" \
            --gpu "$g" --out "$tmp/sel-$g-$m.csv"
        reselect "$g" "$m" tessera "$tmp/sel-$g-$m.csv" "$tmp/rs.csv"
        grep -q "3 --over profiles where they hold its step" "$tmp/out" && cmp -s "$tmp/rs.csv" \
            "$root/sim/data/calib/$g-$m-tessera.csv" && ok ||
            bad "sim/data/calib/$g-$m-tessera.csv is not $r's calibration with select-$g's and select-end-$g's profiles over it"
    done
    # calib transfer of the H200's calibration against the H100's measured one (make calibrate), its
    # selecting steps profiled again with the same selection kernels as the H200's (select-h100)
    gzip -dc "$rec_dir/calibrate-h100/h100-llada-8b-tessera.csv.gz" >"$tmp/c100.csv"
    select_over "$rec_dir/select-h100/profiles/select-llada-8b-tessera"
    expect 0 "calib merge of calibrate-h100 over select-h100" -- "$bin" calib merge "$tmp/c100.csv" "${over[@]}" \
        --gpu h100 --out "$tmp/c100s.csv"
    gzip -dc "$rec_dir/fidelity-h200-sparse-select/calib-llada-8b.csv.gz" >"$tmp/c200s.csv"
    expect 0 "transfer_check.sh" -- env TESSERA="$bin" bash "$root/analysis/transfer_check.sh" \
        "$tmp/c200s.csv" h200 "$tmp/c100s.csv" h100
    if cmp -s "$tmp/out" "$rec_dir/calibrate-h100/transfer-check.txt"; then ok
    else bad "transfer_check.sh is not what calibrate-h100/transfer-check.txt recorded"; fi
    # the H100's tessera-fused calibrations: each the merge of two machines' recorded profiles (LLaDA-8B's
    # in calibrate-h100-fused, SDAR-8B's and Dream-7B's one there and one in fidelity-h100-fused-merged)
    # and another machine's ladder, with the select part profiled again (select-h100) and then the small
    # steps (fused-small-h100) over them; each pricing its held-out replay, replayed again with the
    # fused FFN's small-row forms, as recorded
    fr="$rec_dir/calibrate-h100-fused" fh="$rec_dir/fused-small-h100" fm="$rec_dir/fidelity-h100-fused-merged"
    for m in llada-8b sdar-8b dream-7b; do
        for f in "$fr/calib-$m-"*.csv.gz; do gzip -dc "$f" >"$tmp/$(basename "$f" .gz)"; done
        [ -f "$fm/profile-$m.csv.gz" ] && gzip -dc "$fm/profile-$m.csv.gz" >"$tmp/calib-$m-merged.csv"
        select_over "$rec_dir/select-h100/profiles/select-$m-tessera-fused"
        expect 0 "calib merge of calibrate-h100-fused, $m" -- "$bin" calib merge "$tmp"/calib-$m-*.csv "${over[@]}" \
            --gpu h100 --out "$tmp/fused-sel-$m.csv"
        gzip -dc "$fh/small-$m.csv.gz" >"$tmp/small-$m.csv"
        expect 0 "calib merge over fused-small-h100, $m" -- "$bin" calib merge "$tmp/fused-sel-$m.csv" \
            --over "$tmp/small-$m.csv" --gpu h100 --out "$tmp/fused-$m.csv"
    done
    for mh in llada-8b:2 sdar-8b:3 dream-7b:3; do
        m=${mh%%:*} shipped="$root/sim/data/calib/h100-${mh%%:*}-tessera-fused.csv"
        reselect h100 "$m" tessera-fused "$tmp/fused-$m.csv" "$tmp/rs.csv"
        if cmp -s "$tmp/rs.csv" "$shipped"; then ok
        else bad "sim/data/calib/h100-$m-tessera-fused.csv is not the calibration calibrate-h100-fused, fidelity-h100-fused-merged, fused-small-h100 and select-end-h100 record"; fi
        for f in "$fm/calib-$m.csv.gz" "$rec_dir/fidelity-h100-fused-oos/calib-$m.csv.gz"; do
            [ -f "$f" ] || continue
            cmp -s "$shipped" <(gzip -dc "$f") && ok || bad "$f is not the shipped calibration"
        done
        gzip -dc "$fh/heldout-$m-${mh#*:}.db.gz" >"$tmp/heldout-$m.db"
        expect 0 "fused-small-h100 held out, $m" -- "$bin" calib eval --db "$tmp/heldout-$m.db" --calib "$tmp/fused-$m.csv" --extrapolate --clock off
        if diff <(grep MAPE "$tmp/out") <(grep MAPE "$fh/eval-$m.txt") >/dev/null; then ok
        else bad "fused-small-h100: $m's held-out replay is not priced as eval-$m.txt recorded"; fi
    done
    # the torch-eager calibrations (torch-eager-ops): on the H100, each model's the merge of two
    # machines' recorded profiles; on the H200, LLaDA-8B's three machines' and the select grid's
    te=$rec_dir/torch-eager-ops
    for m in llada-8b sdar-8b dream-7b llada-moe-7b; do
        for n in 1 2; do
            gzip -dc "$te/torch-$m-$n.csv.gz" >"$tmp/te-$n.csv"
            $bin calib import "$tmp/te-$n.csv" --gpu h100 --out "$tmp/te-cal-$n.csv" >/dev/null || bad "import of torch-$m-$n"
        done
        expect 0 "calib merge of torch-eager-ops, $m" -- "$bin" calib merge "$tmp/te-cal-1.csv" "$tmp/te-cal-2.csv" \
            --gpu h100 --out "$tmp/te-$m.csv"
        cmp -s "$tmp/te-$m.csv" "$root/sim/data/calib/h100-$m-torch-eager.csv" && ok ||
            bad "sim/data/calib/h100-$m-torch-eager.csv is not the merge torch-eager-ops records"
    done
    for n in 1 2 3; do
        gzip -dc "$te/torch-llada-8b-h200-$n.csv.gz" >"$tmp/te-$n.csv"
        $bin calib import "$tmp/te-$n.csv" --gpu h200 --out "$tmp/te-cal-$n.csv" >/dev/null || bad "import of torch-llada-8b-h200-$n"
    done
    gzip -dc "$te/select-llada-8b-h200-1.csv.gz" >"$tmp/te-select.csv"
    expect 0 "calib merge of torch-eager-ops, H200" -- "$bin" calib merge "$tmp"/te-cal-{1,2,3}.csv "$tmp/te-select.csv" \
        --gpu h200 --out "$tmp/te-h200.csv"
    cmp -s "$tmp/te-h200.csv" "$root/sim/data/calib/h200-llada-8b-torch-eager.csv" && ok ||
        bad "sim/data/calib/h200-llada-8b-torch-eager.csv is not the merge torch-eager-ops records"
    # Fast-dLLM v2's H100 calibration is the one live-mechanisms-h100's `make calibrate` fitted
    gzip -dc "$rec_dir/live-mechanisms-h100/calib-fast-dllm-v2-7b.csv.gz" |
        cmp -s - "$root/sim/data/calib/h100-fast-dllm-v2-7b-tessera.csv" && ok ||
        bad "sim/data/calib/h100-fast-dllm-v2-7b-tessera.csv is not the calibration live-mechanisms-h100 records"
    # the band calib show --gpu h100 gives the transferred H200 calibration (data without the H100's
    # own) holds what the H100's measured calibration prices, for each of its reference steps
    gzip -dc "$rec_dir/calibrate-h100/h100-llada-8b-tessera.csv.gz" >"$tmp/h100.csv"
    cp -r "$root/sim/data" "$tmp/data-no-h100" && rm -f "$tmp/data-no-h100"/calib/h100-*.csv
    TESSERA_DATA="$tmp/data-no-h100" $bin calib show --gpu h100 >"$tmp/band.txt" 2>&1
    for st in "Refresh 16 x 512|16,512,0,512" "Reuse 16 x 32|16,32,480,32" "Reuse 1 x 32|1,32,480,32"; do
        name=${st%%|*} shape=${st#*|}
        meas=$($bin calib price --step "$shape" --calib "$tmp/h100.csv" --gpu h100 2>/dev/null | awk '/^step/ { print $2 }')
        if awk -v m="$meas" -v name="$name" 'index($0, name) { gsub(/[\[\],]/, " "); for (i = 1; i <= NF; i++) if ($i == "ms") { lo = $(i + 1); hi = $(i + 2); break }
               found = 1 } END { exit !(found && m >= lo && m <= hi) }' "$tmp/band.txt"; then ok
        else bad "calib show --gpu h100: the band of '$name' misses the H100's measured $meas ms"; fi
    done
    # the fidelity matrix across the two cards: what records/transfer-fidelity recorded
    expect 0 "transfer_fidelity.sh" -- env TESSERA="$bin" bash "$root/analysis/transfer_fidelity.sh"
    if cmp -s "$tmp/out" "$rec_dir/transfer-fidelity/transfer-fidelity.txt"; then ok
    else bad "transfer_fidelity.sh is not what transfer-fidelity/transfer-fidelity.txt recorded"; fi
    # one-sequence Refresh steps as the shipped calibrations price them, each at its own steady state
    # (what clock-refresh-h200 recorded) and at the card's clock state (clock-ladder)
    expect 0 "refresh_error.sh CLOCK=off" -- env TESSERA="$bin" CLOCK=off bash "$root/analysis/refresh_error.sh"
    if cmp -s "$tmp/out" "$rec_dir/clock-refresh-h200/refresh-error.txt"; then ok
    else bad "refresh_error.sh CLOCK=off is not what clock-refresh-h200/refresh-error.txt recorded"; fi
    expect 0 "refresh_error.sh" -- env TESSERA="$bin" bash "$root/analysis/refresh_error.sh"
    if cmp -s "$tmp/out" "$rec_dir/clock-ladder/refresh-error.txt"; then ok
    else bad "refresh_error.sh is not what clock-ladder/refresh-error.txt recorded"; fi
    # the torch-eager calibration against the PyTorch anchor's recorded run (../shared/anchors)
    if [ -f "$root/../shared/anchors/torch_llada_step.h200.jsonl" ]; then
        expect 0 "anchor_compare.sh" -- env TESSERA="$bin" bash "$root/analysis/anchor_compare.sh"
        contains "anchor_compare.sh prices the anchor's 21 steps" "calibrated: MAPE 8.1% over 21 steps (max 26.3%)"
        expect 0 "anchor_compare.sh --host lent-h100" -- env TESSERA="$bin" bash "$root/analysis/anchor_compare.sh" "" --host lent-h100
        contains "anchor_compare.sh --host lent-h100" "calibrated: MAPE 3.4% over 21 steps (max 13.5%)"
        # host-h200-spread: six anchor runs of one H200 start beside the recorded one
        expect 0 "anchor_spread.sh of host-h200-spread" -- env TESSERA="$bin" HOSTS=lent-h100 \
            bash "$root/analysis/anchor_spread.sh" "$rec_dir/host-h200-spread"/anchor-{1..6}.jsonl \
            "$root/../shared/anchors/torch_llada_step.h200.jsonl" -- --gpu h200
        if cmp -s "$tmp/out" "$rec_dir/host-h200-spread/spread.txt"; then ok
        else bad "anchor_spread.sh is not what host-h200-spread/spread.txt recorded"; fi
    fi
    # the host apart from the GPU (host-h100): the H100 machine's anchor priced by the H200's calibration
    # carried over, with its own host and with the H100 machine's, as sim/docs/calibration.md says
    $bin calib transfer "$root/sim/data/calib/h200-llada-8b-torch-eager.csv" --from h200 --to h100 --impl torch-eager \
        --out "$tmp/t100.csv" >/dev/null
    for c in "|--gpu h100|MAPE 6.2%" "|--gpu h100 --calib $tmp/t100.csv|MAPE 7.7%" "|--gpu h100 --calib $tmp/t100.csv --host lent-h100|MAPE 7.0%"; do
        IFS='|' read -r _ args want <<<"$c"
        # shellcheck disable=SC2086
        expect 0 "anchor_compare.sh of host-h100 ($args)" -- env TESSERA=$bin bash "$root/analysis/anchor_compare.sh" \
            "$rec_dir/host-h100/anchor-h100.jsonl" $args
        contains "anchor_compare.sh of host-h100 ($args)" "calibrated: $want over 21 steps"
    done
    # host-h100-spread: seven anchor runs of one H100 start against each other and under each host;
    # its host profile is the one its own profile gives
    spread=$rec_dir/host-h100-spread
    gzip -dc "$spread/torch-llada-8b.csv.gz" >"$tmp/spread-prof.csv"
    $bin calib import "$tmp/spread-prof.csv" --gpu h100 --out "$tmp/spread-cal.csv" >/dev/null
    expect 0 "calib host of host-h100-spread's profile" -- "$bin" calib host "$tmp/spread-cal.csv" --out "$tmp/spread-host.csv"
    if cmp -s "$tmp/spread-host.csv" "$spread/host-start.csv"; then ok
    else bad "host-h100-spread's profile does not give its host-start.csv"; fi
    expect 0 "anchor_spread.sh of host-h100-spread" -- env TESSERA="$bin" HOSTS="lent-h100 $spread/host-start.csv" \
        bash "$root/analysis/anchor_spread.sh" "$spread"/anchor-{1..7}.jsonl "$rec_dir/host-h100/anchor-h100.jsonl" \
        -- --gpu h100 --calib "$tmp/t100.csv"
    if cmp -s "$tmp/out" "$spread/spread.txt"; then ok
    else bad "anchor_spread.sh is not what host-h100-spread/spread.txt recorded"; fi
    expect 2 "anchor_spread.sh with one run" -- bash "$root/analysis/anchor_spread.sh" "$spread/anchor-1.jsonl"
    contains "anchor_spread.sh with one run" "usage: analysis/anchor_spread.sh"
else
    echo "records: note: python3 not found; the recorded-fidelity checks are skipped" >&2
fi
# the ops-h200 records: the shipped calibration prices their replayed steps as eval-*.txt says
for w in def long; do
    gzip -dc "$rec_dir/ops-h200/$w.db.gz" >"$tmp/ops-$w.db"
    expect 0 "calib eval of ops-h200 $w" -- "$bin" calib eval --db "$tmp/ops-$w.db" --clock off
    if [ "$(tail -n +2 "$tmp/out")" = "$(tail -n +2 "$rec_dir/ops-h200/eval-$w.txt")" ]; then ok
    else bad "ops-h200/eval-$w.txt is not what the shipped calibration gives"; diff "$tmp/out" "$rec_dir/ops-h200/eval-$w.txt" | head >&2; fi
done
# batch-h100: FOCUS at a batch of 32 replayed on an H100, priced by the shipped calibration and by it
# with the profile grid's batch part merged in, as eval-shipped.txt and eval-batch.txt say; both
# models' batch profiles merge into the shipped H100 calibrations
b100=$rec_dir/batch-h100
for m in sdar-8b llada-8b; do
    gzip -dc "$b100/profiles/batch-$m-tessera.csv.gz" >"$tmp/batch-$m.csv"
    expect 0 "calib merge of batch-h100's $m profile" -- "$bin" calib merge "$root/sim/data/calib/h100-$m-tessera.csv" \
        "$tmp/batch-$m.csv" --gpu h100 --out "$tmp/batch-$m-cal.csv"
done
for w in shipped batch; do
    gzip -dc "$b100/focus32.db.gz" >"$tmp/focus32.db"
    cal=()
    [ $w = batch ] && cal=(--calib "$tmp/batch-sdar-8b-cal.csv")
    (cd "$tmp" && $bin calib eval --db focus32.db "${cal[@]}") >"$tmp/out" 2>&1
    if cmp -s "$tmp/out" "$b100/eval-$w.txt"; then ok
    else bad "batch-h100/eval-$w.txt is not what calib eval gives"; diff "$tmp/out" "$b100/eval-$w.txt" | head >&2; fi
done
# batch-mixed-h100: LMDeploy's and FOCUS's steps of 64 to 256 sequences of mixed lengths (SDAR-8B;
# LMDeploy's of 128 for LLaDA-8B and Dream-7B too) replayed on an H100, priced by the shipped
# calibrations as eval-*.txt says, each run's total within 7%
# batch_eval REC RUN [BOUND]: REC's RUN.db, unpacked into $tmp, priced by the shipped calibration as
# REC/eval-RUN.txt says, its total within BOUND% [7]
batch_eval() {
    local bound=${3:-7}
    gzip -dc "$rec_dir/$1/$2.db.gz" >"$tmp/$2.db"
    (cd "$tmp" && $bin calib eval --db "$2.db" --extrapolate) >"$tmp/out" 2>&1
    if cmp -s "$tmp/out" "$rec_dir/$1/eval-$2.txt"; then ok
    else bad "$1/eval-$2.txt is not what calib eval gives"; diff "$tmp/out" "$rec_dir/$1/eval-$2.txt" | head >&2; fi
    awk -v b="$bound" '/^  calibrated / { t = $NF; sub(/%/, "", t); exit !(t + 0 > -b && t + 0 < b) }' "$tmp/out" && ok ||
        bad "$1: $2 priced more than $bound% off in total"
}
# batch_evals_with REC CAL WANT: the SDAR-8B runs unpacked into $tmp by batch_eval, priced one after
# the other by $tmp/CAL, as REC/WANT says
batch_evals_with() {
    local r
    for r in $sdar_runs; do
        (cd "$tmp" && $bin calib eval --db "$r.db" --calib "$2" --extrapolate) 2>&1
    done >"$tmp/evals.txt"
    cmp -s "$tmp/evals.txt" "$rec_dir/$1/$3" && ok || bad "$1/$3 is not what calib eval gives"
}
bm=$rec_dir/batch-mixed-h100 sdar_runs="lmdeploy-64 lmdeploy-128 lmdeploy-256 focus-64 focus-128 focus-256"
for r in $sdar_runs lmdeploy-128-llada-8b lmdeploy-128-dream-7b; do batch_eval batch-mixed-h100 "$r"; done
# the SDAR-8B replays priced by the shipped H200 calibration carried to the H100
expect 0 "calib transfer of h200-sdar-8b" -- "$bin" calib transfer "$root/sim/data/calib/h200-sdar-8b-tessera.csv" \
    --from h200 --to h100 --out "$tmp/h200-sdar-8b-to-h100.csv"
batch_evals_with batch-mixed-h100 h200-sdar-8b-to-h100.csv eval-h200-transferred.txt
for r in $sdar_runs lmdeploy-128-llada-8b lmdeploy-128-dream-7b; do rm -f "$tmp/$r.db"; done
# batch-mixed-h200: the same schedules simulated for and replayed on an H200, priced by the shipped
# H200 calibration as eval-*.txt says (each run's total within 7%) and by it merged with the batch
# part and the small-q steps as eval-parts-merged.txt says; the small-q steps' attention against
# both calibrations, and the eviction's share of FOCUS's attention kernels, as recorded
bh=$rec_dir/batch-mixed-h200
gzip -dc "$bh/profiles/batch-sdar-8b-tessera.csv.gz" >"$tmp/bh-batch.csv"
gzip -dc "$bh/profiles/small-q-sdar-8b-tessera.csv.gz" >"$tmp/bh-small-q.csv"
expect 0 "calib merge of batch-mixed-h200's profiles" -- "$bin" calib merge "$root/sim/data/calib/h200-sdar-8b-tessera.csv" \
    "$tmp/bh-batch.csv" "$tmp/bh-small-q.csv" --gpu h200 --out "$tmp/cal-parts.csv"
for r in $sdar_runs; do batch_eval batch-mixed-h200 "$r"; done
batch_evals_with batch-mixed-h200 cal-parts.csv eval-parts-merged.txt
for r in $sdar_runs; do rm -f "$tmp/$r.db"; done
# batch-oos-h200: batches of sizes no other record holds, replayed on an H200 (SDAR-8B's totals within
# 7%, LLaDA2.0-mini's within 10%)
for r in focus-sdar-8b-96 focus-sdar-8b-192 lmdeploy-sdar-8b-192; do batch_eval batch-oos-h200 $r; rm -f "$tmp/$r.db"; done
batch_eval batch-oos-h200 focus-llada2.0-mini-128 10; rm -f "$tmp/focus-llada2.0-mini-128.db"
# batch-oos-h100: the same on an H100 (totals within 7%)
for r in focus-sdar-8b-96 lmdeploy-sdar-8b-192; do batch_eval batch-oos-h100 $r; rm -f "$tmp/$r.db"; done
# the small-q steps' attention (REC/profiles, a card's) against a calibration (CAL), as REC/WANT says:
# on the H200 by its shipped calibration and by the merged one, on the H100 by its shipped one
for spec in "batch-mixed-h200 h200 $root/sim/data/calib/h200-sdar-8b-tessera.csv small-q.txt" \
    "batch-mixed-h200 h200 $tmp/cal-parts.csv small-q-merged.txt" \
    "batch-mixed-h100 h100 $root/sim/data/calib/h100-sdar-8b-tessera.csv small-q.txt"; do
    read -r rec g cal want <<<"$spec"
    OP=attention TESSERA=$bin bash "$root/analysis/price_profile.sh" "$cal" \
        "$rec_dir/$rec/profiles/small-q-sdar-8b-tessera.csv.gz" "$g" sdar-8b tessera >"$tmp/out" 2>&1
    cmp -s "$tmp/out" "$rec_dir/$rec/$want" && ok || bad "$rec/$want is not what price_profile.sh gives"
done
# the shipped calibrations price every step of 128 or 256 sequences of 2 to 8 rows there short on both
# cards (the attention model's terms, fitted to steps of at most 16 sequences)
for f in "$bh/small-q.txt" "$bm/small-q.txt"; do
    awk '$1 + 0 >= 128 && $2 + 0 >= 2 && $2 + 0 <= 8 && $7 + 0 >= 0.85 { exit 1 }' "$f" && ok ||
        bad "$f: a step of 128 or more sequences of 2 to 8 rows priced within 15%"
done
for d in "$bh" "$bm"; do
    (cd "$d" && bash "$root/analysis/evict_share.sh" ncu-focus-128.csv.gz ncu-focus-256.csv.gz) >"$tmp/out" 2>&1
    cmp -s "$tmp/out" "$d/evict-share.txt" && ok || bad "$(basename "$d")/evict-share.txt is not what evict_share.sh gives"
done
# the long-context records (SDAR-8B, Dream-7B): the shipped calibrations price their replays (dual
# and block policies; SDAR-8B's block prefills block-causal) as eval-*.txt says; Dream-7B's ran an
# engine of launch rules 3, priced by the calibration of that engine (fidelity-h200-dream's)
echo "records: ... the ops and long-context records" >&2
gzip -dc "$rec_dir/fidelity-h200-dream/calib-dream-7b.csv.gz" >"$tmp/dream-rules3.csv"
for rec in long-sdar-h200 long-dream-h200; do
    for w in dual block; do
        gzip -dc "$rec_dir/$rec/$w.db.gz" >"$tmp/long-$w.db"
        cal=()
        [ $rec = long-dream-h200 ] && cal=(--calib "$tmp/dream-rules3.csv")
        expect 0 "calib eval of $rec $w" -- "$bin" calib eval --db "$tmp/long-$w.db" "${cal[@]}" --clock off
        if [ "$(tail -n +2 "$tmp/out")" = "$(tail -n +2 "$rec_dir/$rec/eval-$w.txt")" ]; then ok
        else bad "$rec/eval-$w.txt is not what the shipped calibration gives"; diff "$tmp/out" "$rec_dir/$rec/eval-$w.txt" | head >&2; fi
    done
done
# the live records: their recorded live runs re-predicted without a GPU (live.sh REUSE_LIVE=1, each
# step at its own steady state as then: CLOCK=off) give the errors live.csv records, row by row
# (within 0.15 points).
# live_check REC MODELS ROWS [CALIB_DIR [CLOCK WANT [GPU]]]: CALIB_DIR's calibrations, or the shipped
# ones; priced with --clock CLOCK [off], against WANT [REC/live.csv]; the runs on GPU [h200]
live_check() {
    local rec=$1 models=$2 rows=$3 want="$rec_dir/$1" dir="$tmp/$1-${5:-off}" differ n
    local csv=${6:-$want/live.csv}
    mkdir -p "$dir/runs"
    tar xzf "$want/live-runs.tgz" -C "$dir/runs"
    GPU=${7:-h200} CALIB_DIR=${4:-} CLOCK=${5:-off} SCRATCH="$dir/runs" REUSE_LIVE=1 TESSERA=$bin bash "$root/experiments/live.sh" \
        "$dir/out" "$models" >"$tmp/out" 2>&1
    differ=$(awk -F, 'NR == FNR { want[$1 FS $2 FS $3 FS $4 FS $5 FS $6] = $9; next }
        FNR > 1 { k = $1 FS $2 FS $3 FS $4 FS $5 FS $6; d = $9 - want[k]; if (!(k in want) || d * d > 0.0225) print k }' \
        "$csv" "$dir/out/live.csv" | head -3)
    n=$(tail -n +2 "$dir/out/live.csv" 2>/dev/null | wc -l)
    if [ "$n" -eq "$rows" ] && [ -z "$differ" ]; then ok; else bad "$rec re-predicted (clock ${5:-off}): $n rows, differing from $csv: $differ"; fi
}
# live-h200 (three models) by the shipped calibrations, Dream-7B's by the calibration of the engine
# its runs ran (launch rules 3: fidelity-h200-dream's)
echo "records: ... the live record" >&2
mkdir -p "$tmp/live-cal"
for m in llada-8b sdar-8b; do cp "$root/sim/data/calib/h200-$m-tessera.csv" "$tmp/live-cal/calib-$m.csv"; done
cp "$tmp/dream-rules3.csv" "$tmp/live-cal/calib-dream-7b.csv"
live_check live-h200 "llada-8b sdar-8b dream-7b" 240 "$tmp/live-cal"
# the same at the card's clock state (sim --clock auto): what clock-ladder recorded
live_check live-h200 "llada-8b sdar-8b dream-7b" 240 "$tmp/live-cal" auto "$rec_dir/clock-ladder/live-h200.csv"
# clock-live-h100: live runs on an H100, priced by its shipped calibrations at the card's clock state
# (as they ran) and at each step's own steady state
live_check clock-live-h100 "llada-8b sdar-8b dream-7b" 240 "" auto "$rec_dir/clock-live-h100/live.csv" h100
live_check clock-live-h100 "llada-8b sdar-8b dream-7b" 240 "" off "$rec_dir/clock-live-h100/live-clock-off.csv" h100

# linear-spec-live-h200: each live run's schedule (static batches, all arrivals at once: the same whatever
# the steps' times) priced again by the shipped calibration gives the run's steps, and its recorded
# prediction to 1e-6, but SDAR-8B's batches of 8 within 2% (the card's clock model follows a live run's
# measured times, and moves those steps: they differ by 1-1.4%)
echo "records: ... linear-spec-live-h200" >&2
for m in llada2.0-mini sdar-8b; do
    for n in 1 8; do
        for pol in linear-spec block; do
            args=(--model "$m" --gpu h200 --cost calibrated --scheduler static --max-batch "$n" --requests 16 --rps 1000
                  --lengths "fixed:256,256" --gen-len 256 --seed 3 --policy "$pol" --json --no-progress)
            [ "$pol" = block ] && args+=(--decode threshold:llada2-mini)
            expect 0 "linear-spec-live-h200 $m b$n $pol re-predicted" -- "$bin" sim "${args[@]}"
            want="$rec_dir/linear-spec-live-h200/live-$m-b$n-$pol.json" tol=1e-6
            [ "$m$n" = sdar-8b8 ] && tol=0.02
            if python3 -c 'import json, sys
d, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["num_steps"] == w["live_steps"] and abs(d["makespan_ns"] * 1e-9 / w["live_model_s"] - 1) < float(sys.argv[3])' \
                "$tmp/out" "$want" "$tol" 2>/dev/null
            then ok; else bad "linear-spec-live-h200: $m b$n $pol is not the recorded prediction"; fi
        done
    done
done

# dgemma-live-h200: the runs whose requests all arrive at once (the schedule the same whatever the steps'
# times) priced again by the shipped calibration give each run's steps and its recorded prediction
echo "records: ... dgemma-live-h200" >&2
for run in sglang-dgemma:fdfo-m4:"--fdfo 1 --max-running-requests 4" sglang-dgemma:sync-m4:"--fdfo 0 --max-running-requests 4" \
    sglang-dgemma:fdfo-m1:"--fdfo 1 --max-running-requests 1" diffusion-gemma:b4:"--max-batch 4" \
    diffusion-gemma:b8:"--max-batch 8"; do
    IFS=: read -r sys name knobs <<<"$run"
    read -r -a knobs <<<"$knobs"
    want="$rec_dir/dgemma-live-h200/live-dgemma-$name.json"
    [ "$sys" = diffusion-gemma ] && want="$rec_dir/dgemma-live-h200/live-vllm-$name.json"
    expect 0 "dgemma-live-h200 $sys $name re-predicted" -- "$bin" sim --system "$sys" --model llada2.0-mini \
        --impl tessera --cost calibrated --gpu h200 "${knobs[@]}" --trace "$rec_dir/dgemma-live-h200/burst.csv" \
        --gen-len 0 --seed 3 --json --no-progress --quiet
    if python3 -c 'import json, sys
d, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["num_steps"] == w["live_steps"] and abs(d["makespan_ns"] * 1e-9 / w["live_model_s"] - 1) < 1e-6' \
        "$tmp/out" "$want" 2>/dev/null
    then ok; else bad "dgemma-live-h200: $sys $name is not the recorded prediction"; fi
done

# key-rope-h200: the predicted time of the cached keys' work, 1,024 to 4,096 keys at batch 4, is RoPE's op
# under each loop's profile over torch-llada's, as its README's table gives it
echo "records: ... key-rope-h200" >&2
rope_ms() { "$bin" calib price --step "4,32,$2,32" --gpu h200 --model llada-8b --impl "$1" | awk '$1 == "rope" { print $2 }'; }
for loop in torch-fast-dllm:Fast-dLLM torch-dllm-cache:dLLM-Cache; do
    im=${loop%%:*} who=${loop#*:}
    want=$(python3 -c 'import sys; a, b, c, d = map(float, sys.argv[1:]); print("%.3f" % (((b - d) - (a - c)) / 32))' \
        "$(rope_ms "$im" 992)" "$(rope_ms "$im" 4064)" "$(rope_ms torch-llada 992)" "$(rope_ms torch-llada 4064)")
    grep -q "^| $who | 4 | 1,024 to 4,096 | [0-9.]* | $want |" "$rec_dir/key-rope-h200/README.md" && ok ||
        bad "key-rope-h200: $who's predicted $want ms is not its README's"
done

# the clock model (sim/data/clock.csv) is the fit of clock-ladder's warm traces, card by card
for g in h200 h100; do
    gzip -dc "$rec_dir/clock-ladder/$g-warm.csv.gz" >"$tmp/$g-warm.csv"
    expect 0 "calib clock of clock-ladder $g" -- "$bin" calib clock "$tmp/$g-warm.csv" --gpu $g
    line=$(awk -F': ' '/^clock.csv: / { print $2 }' "$tmp/out")
    if grep -qx "${line%,RECORD},experiments/records/clock-ladder" "$root/sim/data/clock.csv"; then ok
    else bad "sim/data/clock.csv's $g line is not calib clock of clock-ladder/$g-warm.csv.gz ($line)"; fi
done
# PyTorch's own peak allocation of a whole-sequence eager step (records/torch-lmax-h100) is the op
# graph's with its fp32 softmax (--softmax-copy 8), to the byte, for each model and length measured
while read -r m L want; do
    expect 0 "mem plan against PyTorch's $m at $L" -- "$bin" mem plan --model "$m" --tokens "$L" --planner caching --softmax-copy 8 --json
    json_check "$tmp/out" "d['allocated_peak_bytes'] == $want"
done < <(sed -n 's/.*"model": "\([a-z0-9.-]*\)", "mode": "eager", "L": \([0-9]*\), "peak_alloc_bytes": \([0-9]*\),.*/\1 \2 \3/p' \
    "$rec_dir/torch-lmax-h100/torch_lmax.jsonl")
[ "$(grep -c '"mode": "eager", "L"' "$rec_dir/torch-lmax-h100/torch_lmax.jsonl")" -ge 6 ] && ok ||
    bad "records/torch-lmax-h100: fewer than 6 eager peaks"
# sim/data/gpu_measured.csv: the ceilings measured on the H100 and H200 cards, each as its record's engine_bench
# printed it
while IFS=, read -r g tf held copy rec; do
    [ "$g" = gpu ] && continue
    if grep -q "bf16 GEMM 8192^3 $tf TFLOP/s, device copy $copy TB/s" "$root/$rec" &&
       grep -q "held back to back for 2 s: $held TFLOP/s" "$root/$rec"; then ok
    else bad "sim/data/gpu_measured.csv: $g's ceilings are not what $rec measured"; fi
done <"$root/sim/data/gpu_measured.csv"

# The live fleets' simulations re-predicted by this build (the Azure trace's first requests, from
# ../shared), each latency statistic and throughput as recorded: fleet-live-h100x2's two routers,
# fleet-disagg-live-h200x4's split and co-located fleets. same_fleet NAME RECORDED: the last run's
# fleet summary is the recorded one's.
same_fleet() {
    if python3 - "$tmp/out" "$2" <<'PY'; then ok; else bad "$1's simulation is no longer the recorded one"; fi
import json, sys
a, b = (d.get("fleet", d) for d in (json.load(open(p)) for p in sys.argv[1:]))  # (recorded: under "fleet")
keys = ("lat_mean_s", "lat_p50_s", "lat_p90_s", "lat_p99_s", "throughput_tok_s", "num_finished")
sys.exit(0 if all(abs(a[k] - b[k]) <= 1e-6 * abs(b[k]) for k in keys) else 1)
PY
}
az=$root/../shared/traces/raw/AzureLLMInferenceTrace_conv.csv
if [ -f "$az" ]; then
    head -401 "$az" >"$tmp/azure_conv_400.csv"
    for r in least-outstanding round-robin; do
        expect 0 "fleet-live-h100x2: $r re-predicted" -- "$bin" sim --fleet "$rec_dir/fleet-live-h100x2/fleet.txt" --gpu h100 \
            --cost calibrated --trace "$tmp/azure_conv_400.csv" --requests 120 --rps 2 --gen-len 256 --router "$r" \
            --no-progress --quiet --json
        same_fleet "fleet-live-h100x2: $r" "$rec_dir/fleet-live-h100x2/model-$r.json"
    done
    for f in "disagg:--disagg every,refresh=2,link=host" "colocated:"; do
        read -r -a mode <<<"${f#*:}" # the run's own options
        expect 0 "fleet-disagg-live-h200x4: ${f%%:*} re-predicted" -- "$bin" sim --replicas 4 --policy dual --gpu h200 \
            --cost calibrated --trace "$tmp/azure_conv_400.csv" --requests 160 --rps 4 --gen-len 256 "${mode[@]}" \
            --no-progress --quiet --json
        same_fleet "fleet-disagg-live-h200x4: ${f%%:*}" "$rec_dir/fleet-disagg-live-h200x4/model-${f%%:*}.json"
    done
fi

# validate-mechanisms-h100: the validation against the newer mechanisms' own code still gives the recorded tables
expect 0 "exp run validate-mechanisms" -- "$bin" exp run validate-mechanisms "$tmp/validate-mech"
for f in validate.csv rows.csv kept.csv sparsed.csv; do
    cmp -s "$tmp/validate-mech/$f" "$rec_dir/validate-mechanisms-h100/$f" && ok ||
        bad "exp run validate-mechanisms no longer gives validate-mechanisms-h100/$f: $(diff "$tmp/validate-mech/$f" "$rec_dir/validate-mechanisms-h100/$f" | head -4 | tr '\n' ' ')"
done

# the live records' coverage by their intervals: at least 85% of their figures inside
expect 0 "exp run live-coverage" -- "$bin" exp run live-coverage "$tmp/live-coverage"
grep -q "^goal met: at least 85% of the live measurements" "$tmp/live-coverage/coverage.md" && ok ||
    bad "exp run live-coverage: fewer than 85% of the live figures inside their intervals: $(grep '^All' "$tmp/live-coverage/coverage.md")"

# loops-h200: the four loops on two unseen H200 machines still give the recorded tables
expect 0 "exp run validate-lengths" -- "$bin" exp run validate-lengths "$tmp/validate-lengths"
for f in lengths.csv forwards.csv lengths.md host.txt; do
    cmp -s "$tmp/validate-lengths/$f" "$rec_dir/loops-h200/$f" && ok ||
        bad "exp run validate-lengths no longer gives loops-h200/$f: $(diff "$tmp/validate-lengths/$f" "$rec_dir/loops-h200/$f" | head -4 | tr '\n' ' ')"
done

# sglang-h200: SGLang's own runs still give the recorded tables beside tessera's predictions
expect 0 "exp run validate-sglang" -- "$bin" exp run validate-sglang "$tmp/validate-sglang"
for f in sglang.md fdfo-sglang/sglang.csv fdfo-sglang/rounds.csv fdfo-tessera/sglang.csv fdfo-tessera/rounds.csv \
    sync-sglang/sglang.csv sync-tessera/sglang.csv; do
    cmp -s "$tmp/validate-sglang/$f" "$rec_dir/sglang-h200/$f" && ok ||
        bad "exp run validate-sglang no longer gives sglang-h200/$f: $(diff "$tmp/validate-sglang/$f" "$rec_dir/sglang-h200/$f" | head -4 | tr '\n' ' ')"
done

# dkv-, elastic-, d2cache- and fdllm-v2-own-code-h100 (fdllm-v2-dual: the latter's dual/): tessera's side of
# each comparison still gives the recorded table
for system in dkv elastic d2cache fdllm-v2 fdllm-v2-dual; do
    rec=${system%-dual}-own-code-h100
    [ "${system%-dual}" = "$system" ] || rec=$rec/dual
    own=$tmp/$system-own
    mkdir -p "$own" && cp -r "$rec_dir/$rec/." "$own/"
    if TESSERA=$bin bash "$root/experiments/validate/own.sh" "$system" "$own" >/dev/null 2>&1 &&
        cmp -s "$own/$system.csv" "$rec_dir/$rec/$system.csv"; then ok
    else bad "experiments/validate/own.sh $system no longer gives $rec/$system.csv"; fi
done

# elastic-own-code-h100/drift: its comparison is what compare.py makes of its two sides' outputs
if python3 "$root/experiments/validate/compare.py" elastic-drift "$rec_dir/elastic-own-code-h100/drift" |
    cmp -s - "$rec_dir/elastic-own-code-h100/drift/drift.csv"; then ok
else bad "compare.py elastic-drift no longer gives elastic-own-code-h100/drift/drift.csv"; fi

# d2cache-own-code-h100/rollout: its comparison is what compare.py makes of its two sides' outputs
if python3 "$root/experiments/validate/compare.py" d2cache-rollout "$rec_dir/d2cache-own-code-h100/rollout" |
    cmp -s - "$rec_dir/d2cache-own-code-h100/rollout/rollout.csv"; then ok
else bad "compare.py d2cache-rollout no longer gives d2cache-own-code-h100/rollout/rollout.csv"; fi

# prophet-own-code-h100: its comparison is what compare.py makes of its two sides' outputs
if python3 "$root/experiments/validate/compare.py" prophet "$rec_dir/prophet-own-code-h100" "0.5,0.4,0.3;0.3,0.25,0.2;1,0.5,0.25" \
    >"$tmp/prophet.csv" && cmp -s "$tmp/prophet.csv" "$rec_dir/prophet-own-code-h100/prophet.csv"; then ok
else bad "compare.py prophet no longer gives prophet-own-code-h100/prophet.csv"; fi

# validate-h100: the validation against the seed systems' own code still gives the recorded table
expect 0 "exp run validate" -- "$bin" exp run validate "$tmp/validate"
cmp -s "$tmp/validate/validate.csv" "$rec_dir/validate-h100/validate.csv" && ok ||
    bad "exp run validate no longer gives validate-h100/validate.csv: $(diff "$tmp/validate/validate.csv" "$rec_dir/validate-h100/validate.csv" | head -4 | tr '\n' ' ')"

# README's scoreboard of the papers' trends: a fresh exp run papers' per-paper rows
expect 0 "exp run papers" -- "$bin" exp run papers "$tmp/papers"
scores() { # scores FILE HEADER: the rows of the table under HEADER as "paper,trends,points,within"
    python3 - "$1" "$2" <<'PY'
import sys
rows, on = [], False
for line in open(sys.argv[1]):
    if line.startswith(sys.argv[2]):
        on = True
    elif on and line.startswith("|") and not line.startswith("|---"):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        rows.append(",".join([c[0].lower(), c[-1], c[1], c[2]] if len(c) == 6 else [c[0].lower(), c[1], c[2], c[3]]))
    elif on and not line.strip():
        break
print("\n".join(sorted(rows)))
PY
}
got=$(scores "$tmp/papers/report.md" "| paper |")
want=$(scores "$root/README.md" "| paper | trends holding |")
[ -n "$got" ] && [ "$got" = "$want" ] && ok || bad "README's scoreboard of the papers' trends is not a fresh run's: $(echo "$got" | tr '\n' ';')"

# dgemma-sampler-h200: vLLM's DiffusionGemma sampler step as tessera mem sampler prices it: the whole
# step's transient SAMPLER_COPIES (3) times its fp32 logits, the tiled loop's groups by the PR's rule
# from what was free
python3 - "$root/experiments/records/dgemma-sampler-h200" <<'PY' && ok || bad "dgemma-sampler-h200: a row off the sampler's model"
import csv, glob, sys
rows = [r for f in sorted(glob.glob(sys.argv[1] + "/*.csv")) for r in csv.DictReader(open(f))]
assert len(rows) >= 10
for r in rows:
    n, g, lb, tb = int(r["canvases"]), int(r["group"]), int(r["logit_bytes"]), int(r["transient_bytes"])
    canvas = lb // n
    if r["mode"] == "whole":
        assert g == n and abs(tb / lb - 3) < 0.01, r
    else:
        assert g == max(1, min(n, int(int(r["free_bytes"]) * 0.5) // (canvas * 10))), r
        assert abs(tb / (canvas * g) - 3) < 0.01, r
PY

# the papers' figures README shows (papers-figures): a fresh run's report and figure are the shipped ones,
# byte for byte (the figure as this machine's gnuplot draws it)
for e in dllm-serve-fig3 focus-fig7; do
    expect 0 "papers-figures: $e" -- "$bin" exp run "$e" "$tmp/pf-$e"
    cmp -s "$tmp/pf-$e/report.md" "$root/experiments/records/papers-figures/$e.md" && ok ||
        bad "papers-figures: a fresh $e's report.md is not the shipped $e.md (re-record: copy OUT/report.md and OUT/figure.png there)"
    cmp -s "$tmp/pf-$e/figure.png" "$root/experiments/records/papers-figures/$e.png" && ok ||
        bad "papers-figures: a fresh $e's figure.png is not the shipped $e.png (or this gnuplot draws it otherwise)"
done

# experiments/RESULTS.md: the results page is what analysis/results_page.sh makes of the records now
# (a record re-recorded, or the generator changed, without the page regenerated fails here)
if bash "$root/analysis/results_page.sh" "$tmp/RESULTS.md" 2>"$tmp/out" && cmp -s "$tmp/RESULTS.md" "$root/experiments/RESULTS.md"; then ok
else bad "experiments/RESULTS.md is not what analysis/results_page.sh makes of the records (run it and commit the page)"; sed 's/^/    /' "$tmp/out" >&2; fi

finish
