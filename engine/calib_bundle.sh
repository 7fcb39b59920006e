#!/usr/bin/env bash
# calib_bundle.sh OUT GPU MODEL: packs what make calibrate left in OUT into one file to send to the
# project, OUT/tessera-calibration-GPU-MODEL.tar.gz: the report, the calibrations (GPU-MODEL-*.csv),
# the GPU's --gpu-file entry where the card is not in tessera's table, the held-out schedule's
# pricing, the card's clock (clock.csv, its fit and warm traces), the stages' logs, the raw profile (profile.db, which calib merge combines with other
# machines' profiles) and a description of the machine (the GPU as the driver reports it, its power
# limit and clocks, the CPU, tessera's version). Prints the bundle's path; exit 1 when OUT holds no
# calibration.
set -uo pipefail
out=${1:?usage: calib_bundle.sh OUT GPU MODEL} gpu=${2:?GPU} model=${3:?MODEL}
bin=${TESSERA:-build/tessera}
case $bin in /*) ;; */*) bin=$PWD/$bin ;; esac
cd "$out" || exit 1
shopt -s nullglob
calibs=("$gpu-$model"-*.csv)
shopt -u nullglob
[ ${#calibs[@]} -gt 0 ] || { echo "calib_bundle: no calibration $gpu-$model-*.csv in $out" >&2; exit 1; }
{
    "$bin" --version 2>/dev/null | head -1
    command -v nvidia-smi >/dev/null &&
        nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm,clocks.max.mem --format=csv
    lscpu 2>/dev/null | grep -E "^Model name|^CPU\(s\)|^CPU max MHz"
} >machine.txt
files=(machine.txt "${calibs[@]}")
for f in report.txt gpu.json eval.txt replay.txt profile.txt import.txt torch.txt ceilings.txt clock.csv clock-fit.txt \
    clock-bench.txt warm.csv profile.db; do
    [ -f "$f" ] && files+=("$f")
done
bundle="tessera-calibration-$gpu-$model.tar.gz"
tar czf "$bundle" "${files[@]}" || { echo "calib_bundle: cannot write $out/$bundle" >&2; exit 1; }
echo "$out/$bundle"
