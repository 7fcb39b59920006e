#!/usr/bin/env bash
# analysis/refresh_error.sh: how the shipped calibrations price one-sequence Refresh steps (a
# request's first forward under dual and block caching: one segment of more than 64 rows) in the
# recorded fidelity runs of each card, against every other step. Each record's runs are priced
# again by the card's own shipped calibration (experiments/fidelity.sh MEASURED=: their schedules
# simulated again, their measured step times attached; no GPU needed). Prints one line a card,
# implementation and model: how many such steps, the median and the 10th and 90th percentiles of
# their error (predicted over measured, less one), their share of the measured time, what they add
# to the runs' total-time error, and the median error of the other steps. The calibrated back end
# prices each step at the card's clock state (sim/data/clock.csv); CLOCK=off at its own steady
# state, as the calibration timed it.
#
# Usage: analysis/refresh_error.sh [OUT]   (tessera in build/ or TESSERA=path; OUT keeps each
#        evaluation's all-steps.csv, a temporary directory otherwise; about 15 s here)
set -euo pipefail
. "$(dirname "$0")/lib_records.sh"
records_setup refresh_error.sh "${1:-}"
printf '%-5s %-13s %-9s %6s %8s %17s %7s %12s %8s\n' gpu impl model steps median "p10..p90" share "total pts" others
while read -r gpu impl model record; do
    d=$out/$gpu-$impl-$model
    mkdir -p "$d/cal"
    cp "$root/sim/data/calib/$gpu-$model-$impl.csv" "$d/cal/calib-$model.csv"
    GPU=$gpu IMPL=$impl MEASURED="$rec/$record/all-steps.csv.gz" CALIB_DIR="$d/cal" TESSERA=$bin \
        SCRATCH="$tmp/scratch" bash "$root/experiments/fidelity.sh" "$d" "$model" >"$d/log" 2>&1 ||
        { echo "refresh_error.sh: $record ($model) failed: $d/log" >&2; exit 1; }
    rm -rf "$tmp/scratch"
    # all-steps.csv: run,step_id,segments,q_tokens,kv_tokens,logit_rows,measured_s,calibrated_s,roofline_s
    awk -F, -v m="$model" 'NR > 1 && index($1, m "-") == 1 {
            e = $8 / $7 - 1; all += $7
            if ($3 == 1 && $4 > 64) { print "r", e; rs += $7; rd += $8 - $7 } else print "o", e
        }
        END { printf "t %.9g %.9g %.9g\n", all, rs, rd }' "$d/all-steps.csv" | sort -k1,1 -k2,2g |
        awk -v g="$gpu" -v i="$impl" -v m="$model" '
            $1 == "r" { r[++nr] = $2 } $1 == "o" { o[++no] = $2 } $1 == "t" { all = $2; rs = $3; rd = $4 }
            function q(a, n, f) { return a[int(f * (n - 1)) + 1] }
            END {
                if (nr == 0 || all <= 0) { printf "%-5s %-13s %-9s %6d\n", g, i, m, nr; exit }
                printf "%-5s %-13s %-9s %6d %+7.1f%% %+7.1f..%+6.1f%% %6.1f%% %+11.2f %+7.1f%%\n", g, i, m, nr,
                    100 * q(r, nr, 0.5), 100 * q(r, nr, 0.1), 100 * q(r, nr, 0.9), 100 * rs / all, 100 * rd / all,
                    100 * q(o, no, 0.5)
            }'
done <<<"$runs"
