#!/usr/bin/env bash
# analysis/transfer_fidelity.sh: the fidelity matrix across GPUs. Each shipped calibration of one
# measured GPU is carried to the other (`tessera calib transfer`) and prices the other GPU's recorded
# fidelity runs (experiments/records/fidelity-*-oos, and fused-small-h200 for the tessera-fused
# engine: their schedules simulated again, their measured step times attached; no GPU needed),
# beside that GPU's own shipped calibration.
# Prints one line a direction, implementation and model: the runs' per-step MAPE, range and median,
# priced without the card's clock state (calib eval --clock off) and with it (sim/data/clock.csv).
#
# Usage: analysis/transfer_fidelity.sh [OUT]   (tessera in build/ or TESSERA=path; OUT keeps each
#        evaluation's fidelity.csv, a temporary directory otherwise; about 80 s here)
set -euo pipefail
. "$(dirname "$0")/lib_records.sh"
records_setup transfer_fidelity.sh "${1:-}"
cal=$root/sim/data/calib
printf '%-12s %-13s %-9s %-26s %-32s %s\n' "priced on" impl model calibration "per-step MAPE, clock off" \
    "at the card's clock state"
while read -r gpu impl model record; do
    other=h200
    [ "$gpu" = h200 ] && other=h100
    for from in "$gpu" "$other"; do
        src=$cal/$from-$model-$impl.csv
        [ -f "$src" ] || continue
        d=$out/$gpu-$impl-$model-from-$from
        mkdir -p "$d/cal"
        if [ "$from" = "$gpu" ]; then
            cp "$src" "$d/cal/calib-$model.csv"
            what="$gpu's own"
        else
            "$bin" calib transfer "$src" --from "$from" --to "$gpu" --impl "$impl" --out "$d/cal/calib-$model.csv" >/dev/null
            what="$from's, transferred"
        fi
        line=
        for clock in off auto; do
            GPU=$gpu IMPL=$impl CLOCK=$clock MEASURED="$rec/$record/all-steps.csv.gz" CALIB_DIR="$d/cal" TESSERA=$bin \
                SCRATCH="$tmp/scratch" bash "$root/experiments/fidelity.sh" "$d/$clock" "$model" >"$d/log" 2>&1 ||
                { echo "transfer_fidelity.sh: $record ($model, $what, clock $clock) failed: $d/log" >&2; exit 1; }
            rm -rf "$tmp/scratch"
            line="$line$(printf '%-33s' "$(awk -F, -v m="$model" 'NR > 1 && $1 == m && $5 == "calibrated" { print $8 }' \
                "$d/$clock/fidelity.csv" | sort -g | awk '{ v[++n] = $1 }
                END { printf "%d runs, %.1f-%.1f%%, median %.1f%%", n, v[1], v[n], n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')")"
        done
        # shellcheck disable=SC2001 # the trailing spaces, however many: sed's anchored pattern
        printf '%-12s %-13s %-9s %-26s %s\n' "$gpu" "$impl" "$model" "$what" "$(sed 's/ *$//' <<<"$line")"
    done
done <<<"$runs"
