#!/usr/bin/env bash
# experiments/power.sh: the energy model against the card's own power draw.
#
# On a GPU machine with the engine built: the card's idle draw (nvidia-smi over 5 s of an idle
# card, the median) and its power limit become a --gpu-file entry; then four workloads run live
# (`--executor gpu`) while nvidia-smi samples the card's draw every 50 ms: two requests decoding
# (small, memory-bound steps), 48 requests of dual-cache Reuse blocks, 24 whole-sequence (vanilla)
# requests of 2,048 tokens, and dual cache with a Refresh every 4 steps. Each run's measured energy
# is the trace's integral between its first step's start and its last step's end (the summary's
# live_t0_unix and live_t1_unix); the prediction is the steps' energy as `tessera sim` prices it
# (sim/docs/cost-model.md, "Energy") for their measured times. A live run also holds the host's time between
# steps, which the simulated timeline does not: the card's mean draw over the window is set against
# the steps' predicted mean power, and the window's energy with those gaps idle is printed beside it.
#
# Writes OUT/power-compare.txt, OUT/gpu-power.json, OUT/gpu.txt, OUT/raw.tgz (the traces, the runs'
# JSON summaries, the windows) and, with gnuplot, OUT/power.png (analysis/power-plot.sh: each trace
# beside the steps' predicted power). GPU: the card's name in tessera's table [h100].
#
# Usage: tessera exp run power OUT [GPU] [--force]   (or experiments/power.sh OUT [GPU] with TESSERA=path)
# Needs: GPU
set -uo pipefail
out=${1:?usage: power.sh OUT [GPU]}
gpu=${2:-h100}
t=${TESSERA:-build/gpu/tessera}
[ -x "$t" ] || { echo "power.sh: $t not found: make BUILD=build/gpu, or set TESSERA" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "power.sh: no nvidia-smi: a GPU machine is needed" >&2; exit 2; }
mkdir -p "$out"
q=power.draw.instant
nvidia-smi --query-gpu=$q --format=csv,noheader,nounits >/dev/null 2>&1 || q=power.draw
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv | tee "$out/gpu.txt"
sample() { nvidia-smi --query-gpu=timestamp,$q --format=csv,noheader,nounits -lms 50 >"$1" & echo $!; }
p=$(sample "$out/idle.csv"); sleep 5; kill "$p"; wait "$p" 2>/dev/null
idle=$(python3 -c "
import sys; v=sorted(float(l.split(',')[1]) for l in open(sys.argv[1]) if l.count(',') == 1 and l.split(',')[1].strip() not in ('', '[N/A]'))
print(v[len(v) // 2])" "$out/idle.csv")
limit=$(nvidia-smi --query-gpu=power.limit --format=csv,noheader,nounits | head -1)
echo "power.sh: idle $idle W, limit $limit W" >&2
printf '{"%s": {"tdp_w": %s, "idle_w": %s}}\n' "$gpu" "$limit" "$idle" >"$out/gpu-power.json"
# a warm-up run first (the GEMMs' tuning, the clocks)
"$t" sim --executor gpu --gpu "$gpu" --requests 8 --rps 50 --gen-len 64 --lengths fixed:512,64 --quiet --no-progress >/dev/null ||
    exit 1
: >"$out/windows.txt"
run() { # run NAME ARGS...: one workload live, the card's draw sampled
    local name=$1 p
    shift
    p=$(sample "$out/power-$name.csv")
    sleep 1
    "$t" sim --executor gpu --gpu "$gpu" --gpu-file "$out/gpu-power.json" --json --quiet --no-progress "$@" \
        >"$out/sim-$name.json" || { kill "$p"; exit 1; }
    sleep 1
    kill "$p"
    wait "$p" 2>/dev/null
    echo "$name" >>"$out/windows.txt"
}
run decode --policy dual --requests 2 --rps 200 --gen-len 1024 --lengths fixed:512,1024 --block 32
run reuse --policy dual --requests 48 --rps 200 --gen-len 256 --lengths fixed:512,256 --block 32
run refresh --policy vanilla --requests 24 --rps 200 --gen-len 64 --lengths fixed:2048,64 --block 32
run mixed --policy dual --requests 48 --rps 200 --gen-len 128 --lengths fixed:1024,128 --block 32 --refresh-interval 4
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$root/analysis" python3 - "$out" <<'PY' | tee "$out/power-compare.txt"
import sys
import power_trace
out = sys.argv[1]
idle = power_trace.card(out)["idle_w"]
print(f"idle {idle:.1f} W (median of 5 s)")
for name, d, _, e, span, n in power_trace.runs(out):
    busy, ebusy = d["busy_s"], d["busy_energy_j"]
    pred = ebusy + idle * max(0.0, span - busy)
    print(f"{name}: window {span:.2f} s ({n} samples), steps {busy:.2f} s of it (the rest the host's "
          f"between steps); measured {e:.0f} J, mean {e / span:.0f} W; the steps' predicted power "
          f"{ebusy / busy:.0f} W ({100 * (ebusy / busy - e / span) / (e / span):+.1f}%); over the window with the "
          f"gaps idle {pred:.0f} J ({100 * (pred - e) / e:+.1f}%)")
PY
if command -v gnuplot >/dev/null 2>&1; then
    bash "$root/analysis/power-plot.sh" "$out" "$out/power.png" || rm -f "$out/power.png"
fi
(cd "$out" && tar czf raw.tgz idle.csv windows.txt power-*.csv sim-*.json && rm -f idle.csv windows.txt power-*.csv sim-*.json)
