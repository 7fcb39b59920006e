#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# interval_test.sh: tessera sim --interval P checked from outside. Its sources are those the run's
# setup has, read from sim/data/variance.csv (the roofline's error where it prices the run, measured on
# another card where not on this one; a calibration carried from another card's; a source never
# measured named as not bounded); a 50% interval lies inside the 90% one of the same seed; a source
# widens the interval it joins; the run's rejections are logged once, not once a replicate.
# Usage: interval_test.sh PATH/TO/tessera   Prints "interval: N passed, M failed".
set -u
bin=${1:?usage: interval_test.sh PATH/TO/tessera}
TEST=interval
source "$(dirname "$0")/lib_cli.sh"
# sources RUN.json: the interval's sources, "NAME:SIGMA:CARRIED" a word each, then "unbounded:" and its names
sources() {
    python3 -c 'import json, sys
iv = json.load(open(sys.argv[1]))["interval"]
print(" ".join("%s:%g:%d" % (k, v["sigma"], v.get("carried", False)) for k, v in iv["sources"].items() if isinstance(v, dict)),
      "unbounded:" + ",".join(iv["unbounded"]))' "$1"
}
plain=(--requests 40 --rps 0.5 --gen-len 64 --interval-runs 20 --quiet --no-progress)
small=("${plain[@]}" --json)
run() { # run NAME OPTIONS...: tessera sim --interval into $tmp/NAME.json
    local name=$1
    shift
    "$bin" sim "${small[@]}" "$@" >"$tmp/$name.json" 2>"$tmp/$name.err" || bad "$name: $(head -2 "$tmp/$name.err")"
}
run h200-roofline --interval 90
[ "$(sources "$tmp/h200-roofline.json")" = "clock:0.015:0 roofline:0.292:0 unbounded:" ] && ok ||
    bad "an H200 roofline run's sources: $(sources "$tmp/h200-roofline.json")"
run h100-roofline --gpu h100 --interval 90
[ "$(sources "$tmp/h100-roofline.json")" = "clock:0.013:0 roofline:0.22:0 unbounded:" ] && ok ||
    bad "an H100 roofline run's sources: $(sources "$tmp/h100-roofline.json")"
run l40s-roofline --gpu l40s --interval 90
[ "$(sources "$tmp/l40s-roofline.json")" = "clock:0.015:1 roofline:0.292:1 unbounded:" ] && ok ||
    bad "an L40S roofline run's sources (both carried from another card): $(sources "$tmp/l40s-roofline.json")"
run h200-calibrated --cost calibrated --interval 90
[ "$(sources "$tmp/h200-calibrated.json")" = "clock:0.015:0 calibration:0.012:0 live-load:0.071:0 unbounded:" ] && ok ||
    bad "an H200 calibrated run's sources: $(sources "$tmp/h200-calibrated.json")"
run h100-from-h200 --gpu h100 --cost calibrated --calib-from h200 --interval 90
[ "$(sources "$tmp/h100-from-h200.json")" = "clock:0.013:0 calibration:0.012:0 transfer:0.039:0 live-load:0.071:1 unbounded:" ] && ok ||
    bad "an H100 run priced by the H200's calibration: $(sources "$tmp/h100-from-h200.json")"
run l40s-from-h100 --gpu l40s --cost calibrated --calib-from h100 --interval 90
[ "$(sources "$tmp/l40s-from-h100.json")" = "clock:0.015:1 calibration:0.012:0 live-load:0.071:1 unbounded:transfer" ] && ok ||
    bad "an L40S run priced by the H100's calibration: $(sources "$tmp/l40s-from-h100.json")"
expect 0 "the summary of a transfer never measured" -- "$bin" sim "${plain[@]}" --gpu l40s --cost calibrated \
    --calib-from h100 --interval 90
contains "the summary of a transfer never measured" "not bounded: transfer, never measured for this card"
# a fleet whose replicas differ: a source one replica draws and another's card never measured is both
# drawn and named as not bounded
printf '1 --gpu h100 --cost calibrated --calib-from h200\n1 --gpu l40s --cost calibrated --calib-from h100\n' >"$tmp/mixed.txt"
"$bin" sim --fleet "$tmp/mixed.txt" "${small[@]}" --interval 90 >"$tmp/mixed.json" 2>"$tmp/mixed.err" ||
    bad "a mixed fleet's interval: $(head -2 "$tmp/mixed.err")"
[ "$(sources "$tmp/mixed.json")" = "clock:0.013:0 calibration:0.012:0 transfer:0.039:0 live-load:0.071:1 unbounded:transfer" ] && ok ||
    bad "a mixed fleet's sources: $(sources "$tmp/mixed.json")"
# nesting, figure by figure, on one seed; and the roofline's error widening the latencies' intervals
# beyond the calibration's
run h200-50 --interval 50
run h200-calibrated-50 --cost calibrated --interval 50
got=$(python3 -c 'import json, sys
a, b, c, d = (json.load(open(p))["interval"] for p in sys.argv[1:5])
keys = [k for k, v in b.items() if isinstance(v, list) and k != "unbounded"]
print(len(keys), all(b[k][0] <= a[k][0] <= a[k][1] <= b[k][1] for k in keys),
      all(d[k][1] - d[k][0] > c[k][1] - c[k][0] for k in keys if k.startswith("lat_")))' \
    "$tmp/h200-50.json" "$tmp/h200-roofline.json" "$tmp/h200-calibrated.json" "$tmp/h200-roofline.json")
[ "$got" = "6 True True" ] && ok || bad "nesting (50% in 90%) or the roofline's source widening: '$got'"
# one log of rejections a run: the replicates are quiet
"$bin" sim --gpu rtx4090 --requests 60 --gen-len 64 --no-progress >/dev/null 2>"$tmp/plain.err"
"$bin" sim --gpu rtx4090 --requests 60 --gen-len 64 --interval 90 --interval-runs 10 --no-progress >/dev/null 2>"$tmp/iv.err"
n=$(grep -c 'rejected:' "$tmp/plain.err")
[ "$n" -gt 0 ] && [ "$(grep -c 'rejected:' "$tmp/iv.err")" = "$n" ] && ok ||
    bad "rejections logged $(grep -c 'rejected:' "$tmp/iv.err") times with --interval, $n without"
finish
