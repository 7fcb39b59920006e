#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# pricing_test.sh: how a run is priced, as a user meets it: the pricing chain's links a run names (its
# summary, JSON and database), a runtime's rounds taken whole or their host work alone (FP8 weights: the
# forwards as where no rounds were measured) and the interval's sources that follow, and vLLM's
# DiffusionGemma sampler's memory (tessera mem sampler) against vLLM's tile rule, its peak by hand and
# the profile run's activations as mem plan plans them.
# Usage: pricing_test.sh PATH/TO/tessera    Prints "pricing: N passed, M failed".
set -u
bin=${1:?usage: pricing_test.sh PATH/TO/tessera}
TEST=pricing
source "$(dirname "$0")/lib_cli.sh"
root=$(cd "$(dirname "$0")/.." && pwd)

# the pricing chain: each run names the links that priced its steps (text, JSON, database), and only those
pricing() { # pricing WANT WHAT SIM-OPTIONS...: the run's JSON and its summary line both say WANT
    local want=$1 what=$2
    shift 2
    local got line
    got=$("$bin" sim --requests 12 --quiet --json "$@" 2>/dev/null | sed -n 's/.*"pricing": *"\([^"]*\)".*/\1/p')
    line=$("$bin" sim --requests 12 --no-progress "$@" 2>/dev/null | sed -n 's/^  priced by     //p')
    [ "$got" = "$want" ] && [ "$line" = "$want" ] && ok || bad "$what: priced by '$got' (JSON), '$line' (text), wanted '$want'"
}
pricing "roofline" "the roofline alone"
pricing "calibrated > clock" "a calibration at the card's clock" --cost calibrated --clock on
pricing "calibrated > rounds" "SGLang's rounds" --system sglang
pricing "roofline > host" "HERALD's host part over offloaded K/V" --policy herald --model sdar-8b
pricing "roofline > drafter" "a diffusion drafter" --policy dflash
"$bin" sim --requests 12 --quiet --db "$tmp/pricing.db" --cost calibrated --clock on >/dev/null 2>&1
"$bin" db export "$tmp/pricing.db" runs --json 2>/dev/null | grep -q '"pricing": *"calibrated > clock"' && ok ||
    bad "the database's summary row lacks the run's pricing chain"

# SGLang's rounds on the H200 (sim/data/rounds): bf16 weights, each step its round whole; FP8 weights,
# which the rounds did not run, their host work between rounds alone, the forwards priced as where no
# rounds were measured (a data folder without them), to the nanosecond; the interval draws the runtime's
# spread for the first, the clock's and the roofline's for the second
mkdir -p "$tmp/norounds"
for e in "$root"/sim/data/*; do [ "$(basename "$e")" = rounds ] || ln -s "$e" "$tmp/norounds/"; done
split_ops() { # split_ops JSON: "FORWARD-SECONDS HOST-SECONDS" of the run's op breakdown
    python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["op_seconds"]; h = o.get("host", 0)
print("%.9f %.9f" % (sum(o.values()) - h, h))' "$1"
}
for w in bf16 fp8; do
    for d in "$root/sim/data" "$tmp/norounds"; do
        "$bin" sim --system sglang --cost roofline --weights "$w" --extrapolate --requests 20 --datadir "$d" --quiet \
            --json >"$tmp/r-$w-$(basename "$d").json" 2>/dev/null || bad "sglang $w over $d did not run"
    done
done
read -r f8 h8 <<<"$(split_ops "$tmp/r-fp8-data.json")"
read -r f8n h8n <<<"$(split_ops "$tmp/r-fp8-norounds.json")"
read -r f16 _ <<<"$(split_ops "$tmp/r-bf16-data.json")"
[ "$f8" = "$f8n" ] && awk -v a="$h8" -v b="$h8n" 'BEGIN { exit !(a > 10 * b) }' && ok ||
    bad "FP8 weights on the H200's own rounds: forwards $f8 s against $f8n s without rounds, host $h8 s against $h8n s"
awk -v a="$f16" -v b="$f8" 'BEGIN { exit !(a != b) }' && ok || bad "bf16 weights: the rounds' forwards ($f16 s) not taken whole"
grep -q '"pricing": *"roofline > rounds"' "$tmp/r-fp8-data.json" && ok || bad "FP8 on rounds: not priced by roofline > rounds"
for w in bf16 fp8; do
    "$bin" sim --system sglang --cost roofline --weights "$w" --extrapolate --requests 40 --interval 90 --quiet \
        --json >"$tmp/iv-$w.json" 2>/dev/null || bad "sglang $w --interval did not run"
done
python3 - "$tmp/iv-bf16.json" "$tmp/iv-fp8.json" <<'PY' && ok || bad "the interval's sources do not follow how the rounds price the run"
import json, sys
names = lambda p: set(json.load(open(p))["interval"]["sources"])
whole, host = names(sys.argv[1]), names(sys.argv[2])
assert {"runtime-run", "runtime-machine"} <= whole and not {"clock", "roofline"} & whole, whole
assert {"clock", "roofline"} <= host and not {"runtime-run", "runtime-machine"} & host, host
PY

# vLLM's DiffusionGemma sampler: an H200 at utilization 0.9 keeps 14.04 GiB outside its budget, 1 held, and
# the profile run's activations free at a step; whole, n canvases take n GiB (0.25 of fp32 logits and 3
# copies of them): the most is what is available, rounded down; tiled, 32 fit
expect 0 "mem sampler, whole" -- "$bin" mem sampler --max-num-seqs 32 --code whole
contains "mem sampler, whole, runs out" "--max-num-seqs 32 runs out of memory at its first full batch"
avail=$(awk '$1 == 32 { print $6 }' "$tmp/out")
holds=$(sed -n 's/.*a step holds \([0-9]*\) canvas.*/\1/p' "$tmp/out")
[ -n "$avail" ] && [ "$holds" = "$(awk -v a="$avail" 'BEGIN { print int(a) }')" ] && ok ||
    bad "mem sampler, whole: holds $holds canvases with $avail GiB available (n GiB at n canvases)"
expect 0 "mem sampler, tiled" -- "$bin" mem sampler --max-num-seqs 32
contains "mem sampler, tiled, fits" "--max-num-seqs 32 fits"
"$bin" mem sampler --max-num-seqs 32 --json >"$tmp/sampler.json" 2>&1
python3 - "$tmp/sampler.json" <<'PY' && ok || bad "mem sampler --json: a step's rows do not follow vLLM's tile rule or its peak"
import json, sys
o = json.load(open(sys.argv[1]))
canvas = o["canvas"] * 262144
for s in o["steps"]:
    n, g = s["canvases"], s["group"]
    assert g == max(1, min(n, int(0.5 * s["free_bytes"]) // (canvas * 40))), s
    assert s["transient_bytes"] == 3 * 4 * g * canvas, s
    assert s["need_bytes"] == max(6 * n * canvas, 4 * n * canvas + s["transient_bytes"]), s
    assert s["oom"] == (s["need_bytes"] > s["available_bytes"]), s
assert o["holds"] == 32 and o["code"] == "tiled", o
PY
expect 0 "mem sampler, more copies" -- "$bin" mem sampler --mem-limit 34.2 --weights-gib 17 --gpu-memory-utilization 0.75 \
    --code whole --copies 6
contains "mem sampler, more copies hold fewer" "a step holds 4 canvases"
expect 1 "mem sampler, no KV pool" -- "$bin" mem sampler --mem-limit 34.2 --gpu-memory-utilization 0.75
contains "mem sampler, no KV pool, says so" "holds no KV pool after 47.00 GiB of weights"
expect 2 "mem sampler --code bad" -- "$bin" mem sampler --code half
contains "mem sampler --code names its values" "--code: 'half' is not tiled or whole"
expect 2 "mem sampler --gpu-memory-utilization 0" -- "$bin" mem sampler --gpu-memory-utilization 0
# the profile run's activations the sampler finds free: what mem plan plans for that forward (8192 tokens,
# a logit row a sequence) with PyTorch's caching allocator
"$bin" mem sampler --max-num-seqs 8 --json >"$tmp/s8.json" 2>&1
"$bin" mem plan --model diffusion-gemma --planner caching --tokens 8192 --logit-rows 8 --json >"$tmp/p8.json" 2>&1
python3 - "$tmp/s8.json" "$tmp/p8.json" <<'PY' && ok || bad "mem sampler's profile run is not mem plan's forward"
import json, sys
s, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert s["slack_bytes"] == p["peak_bytes"], (s["slack_bytes"], p["peak_bytes"])
PY

# a run of vLLM's DiffusionGemma runner held against that memory: at 16 canvases a step (--max-batch 16, every
# request at once) the whole sampler runs out where mem sampler's step of 16 does, holding as many as it
# says; tiled it fits, a request reserving its fp32 logits alone: 10 bytes a logit of its canvas fewer
for im in vllm-dgemma vllm-dgemma-tiled; do
    expect 0 "sim, $im against vLLM's memory" -- "$bin" sim --system diffusion-gemma --impl "$im" --gpu h200 \
        --max-batch 16 --requests 16 --rps 1000 --lengths fixed:256,256 --json --quiet --no-progress
    cp "$tmp/out" "$tmp/dg-$im.json"
done
"$bin" mem sampler --max-num-seqs 16 --code whole --json >"$tmp/sampler-16w.json" 2>&1
"$bin" mem sampler --max-num-seqs 16 --json >"$tmp/sampler-16t.json" 2>&1
python3 - "$tmp/dg-vllm-dgemma.json" "$tmp/dg-vllm-dgemma-tiled.json" "$tmp/sampler-16w.json" "$tmp/sampler-16t.json" <<'PY' \
    && ok || bad "sim: vLLM's sampler judged unlike mem sampler's step of 16 canvases, or the tiled reservation not the logits'"
import json, sys
w, t, mw, mt = (json.load(open(p)) for p in sys.argv[1:])
assert w["sampler_canvases"] == t["sampler_canvases"] == 16, (w, t)
assert w["sampler_oom"] and w["sampler_holds"] == mw["holds"] < 16, (w["sampler_holds"], mw["holds"])
assert not t["sampler_oom"] and t["sampler_holds"] >= 16 and mt["holds"] == 16, (t["sampler_holds"], mt["holds"])
assert abs(w["peak_mem_bytes"] - t["peak_mem_bytes"] - 10 * 16 * 256 * 262144) <= 0.01 * 10 * 16 * 256 * 262144, \
    (w["peak_mem_bytes"], t["peak_mem_bytes"])
PY
# without --max-batch the profile run takes vLLM's default for the card: 1,024 sequences and 8,192 tokens
# on an H200, 256 and 2,048 on an A100 (EngineArgs.get_batch_defaults); a card whose budget holds the
# weights but no KV pool (52 GiB at 0.9) starts no vLLM: a step holds none
for g in h200 a100-80gb; do
    "$bin" sim --system diffusion-gemma --gpu "$g" --requests 16 --rps 1000 --lengths fixed:256,256 --json --quiet \
        --no-progress >"$tmp/dg-default-$g.json" 2>&1
done
"$bin" mem sampler --max-num-seqs 1024 --max-num-batched-tokens 8192 --code whole --json >"$tmp/sampler-h200.json" 2>&1
"$bin" mem sampler --gpu a100-80gb --max-num-seqs 256 --max-num-batched-tokens 2048 --code whole --json \
    >"$tmp/sampler-a100.json" 2>&1
printf '{"g52": {"mem_gib": 52, "bf16_tflops": 989.4, "mem_bw_gbs": 4800}}\n' >"$tmp/g52.json"
"$bin" sim --system diffusion-gemma --gpu g52 --gpu-file "$tmp/g52.json" --requests 4 --rps 1000 --lengths fixed:256,256 \
    --json --quiet --no-progress >"$tmp/dg-g52.json" 2>&1
python3 - "$tmp"/dg-default-h200.json "$tmp"/dg-default-a100-80gb.json "$tmp"/sampler-h200.json "$tmp"/sampler-a100.json \
    "$tmp/dg-g52.json" <<'PY' && ok || bad "sim: vLLM's sampler without a cap not judged at vLLM's defaults for the card"
import json, sys
h, a, mh, ma, g = (json.load(open(p)) for p in sys.argv[1:])
assert h["sampler_holds"] == mh["holds"] and a["sampler_holds"] == ma["holds"] and mh["holds"] != ma["holds"], (h, a)
assert g["num_finished"] == 4 and g["sampler_holds"] == 0 and g["sampler_oom"], g
PY
# the database's summary keeps the verdict (NULL where none was judged)
"$bin" sim --system diffusion-gemma --gpu h200 --max-batch 16 --requests 16 --rps 1000 --lengths fixed:256,256 --quiet \
    --no-progress --db "$tmp/dg.db" >/dev/null 2>&1
"$bin" sim --requests 4 --quiet --no-progress --db "$tmp/dg.db" --append >/dev/null 2>&1
python3 - "$tmp/dg.db" "$tmp/dg-vllm-dgemma.json" <<'PY' && ok || bad "db: summary's sampler columns not the run's verdict"
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT sampler_canvases, sampler_holds, sampler_oom FROM summary ORDER BY run_id").fetchall()
w = json.load(open(sys.argv[2]))
assert rows == [(16, w["sampler_holds"], 1), (None, None, None)], rows
PY
# the edge: a step of as many canvases as mem sampler says a step holds fits, one more does not
for n in 13 14; do
    "$bin" sim --system diffusion-gemma --gpu h200 --max-batch "$n" --requests "$n" --rps 1000 --lengths fixed:256,256 \
        --json --quiet --no-progress >"$tmp/dg-edge-$n.json" 2>&1
    "$bin" mem sampler --max-num-seqs "$n" --code whole --json >"$tmp/sampler-edge-$n.json" 2>&1
done
python3 - "$tmp"/dg-edge-13.json "$tmp"/dg-edge-14.json "$tmp"/sampler-edge-13.json "$tmp"/sampler-edge-14.json <<'PY' \
    && ok || bad "sim: vLLM's sampler at the edge of what a step holds judged unlike mem sampler"
import json, sys
a, b, ma, mb = (json.load(open(p)) for p in sys.argv[1:])
assert a["sampler_canvases"] == 13 and not a["sampler_oom"] and not ma["steps"][-1]["oom"], (a, ma["steps"][-1])
assert b["sampler_canvases"] == 14 and b["sampler_oom"] and mb["steps"][-1]["oom"], (b, mb["steps"][-1])
PY
# what a step holds is the configuration's, not the load's: --max-batch 1024 (the profile run's
# --max-num-seqs) with 4 requests holds what mem sampler's 1,024 sequences hold; the three vLLM
# implementations are judged, the whole ones alike
for im in vllm-dgemma vllm-dgemma-probs; do
    "$bin" sim --system diffusion-gemma --impl "$im" --gpu h200 --max-batch 1024 --requests 4 --rps 1000 \
        --lengths fixed:256,256 --json --quiet --no-progress >"$tmp/dg-cap-$im.json" 2>&1
done
"$bin" mem sampler --max-num-seqs 1024 --code whole --json >"$tmp/sampler-1024.json" 2>&1
python3 - "$tmp/dg-cap-vllm-dgemma.json" "$tmp/dg-cap-vllm-dgemma-probs.json" "$tmp/sampler-1024.json" <<'PY' \
    && ok || bad "sim: what a step holds of vLLM's sampler follows the load, or an implementation of it is not judged"
import json, sys
w, p, m = (json.load(open(f)) for f in sys.argv[1:])
assert w["sampler_canvases"] == 4 and w["sampler_holds"] == m["holds"] < 1024, (w["sampler_holds"], m["holds"])
assert all(p[k] == w[k] for k in ("sampler_canvases", "sampler_holds", "sampler_oom")), p
PY
# what the sampler can take, by hand: 10% of the device outside the budget less 1 GiB, and the profile
# run's activations
python3 - "$tmp/sampler-1024.json" <<'PY' && ok || bad "mem sampler: the bytes a step can take are not 10% of the device less 1 GiB plus the slack"
import json, sys
o = json.load(open(sys.argv[1]))
for s in o["steps"]:
    assert abs(s["available_bytes"] - (int(0.1 * o["device_bytes"]) - 2**30 + o["slack_bytes"])) <= 1, s
PY
# a fleet's capacity: at it, tessera sim over the same fleet runs vLLM's sampler within memory; a rate
# held never carries the reason
expect 0 "plan capacity, a fleet against vLLM's memory" -- "$bin" plan capacity --system diffusion-gemma --gpu h200 \
    --replicas 2 --requests 60 --slo p99=30s --lengths fixed:256,256 --confidence 0 --json
cap=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["capacity_rps"])' "$tmp/out")
"$bin" sim --system diffusion-gemma --gpu h200 --replicas 2 --requests 60 --lengths fixed:256,256 --rps "$cap" --json \
    --quiet --no-progress >"$tmp/dg-fleet-cap.json" 2>&1
python3 - "$tmp/out" "$tmp/dg-fleet-cap.json" <<'PY' && ok || bad "plan capacity: a fleet's capacity runs vLLM's sampler out of memory"
import json, sys
p, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert not f["sampler_oom"], f["sampler_canvases"]
assert not any(u["held"] and u["sampler_oom"] for u in p["probes"]), p["probes"]
assert [u["sampler_oom"] for u in p["probes"] if u["rps"] == p["failed_rps"]] == [True], p["probes"]
PY
# a fleet: one replica whole (out of memory at 16), one tiled (fits): the fleet runs out, its largest step the
# replicas' largest and what a step holds the fewer's
printf '1 --impl vllm-dgemma\n1 --impl vllm-dgemma-tiled\n' >"$tmp/dg-fleet.txt"
expect 0 "sim, a fleet against vLLM's memory" -- "$bin" sim --system diffusion-gemma --gpu h200 --max-batch 16 \
    --fleet "$tmp/dg-fleet.txt" --router round-robin --requests 32 --rps 1000 --lengths fixed:256,256 --json --quiet \
    --no-progress
python3 - "$tmp/out" "$tmp/dg-vllm-dgemma.json" <<'PY' && ok || bad "sim: a fleet's vLLM sampler not merged from its replicas'"
import json, sys
f, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert f["sampler_oom"] and f["sampler_canvases"] == 16 and f["sampler_holds"] == w["sampler_holds"], f
PY
# both replicas fit, the tighter one (whole, 12 canvases of the 13 it holds) is the fleet's: its largest
# step and what a step holds come from one replica, never a step of one against the other's room
printf '1 --impl vllm-dgemma --max-batch 12\n1 --impl vllm-dgemma-tiled --max-batch 16\n' >"$tmp/dg-fleet2.txt"
"$bin" sim --system diffusion-gemma --gpu h200 --fleet "$tmp/dg-fleet2.txt" --router round-robin --requests 28 --rps 1000 \
    --lengths fixed:256,256 --json --quiet --no-progress >"$tmp/dg-fleet2.json" 2>&1
python3 - "$tmp/dg-fleet2.json" <<'PY' && ok || bad "sim: a fleet's vLLM sampler verdict mixes two replicas"
import json, sys
f = json.load(open(sys.argv[1]))
assert not f["sampler_oom"] and (f["sampler_canvases"], f["sampler_holds"]) == (12, 13), f
PY
expect 0 "sim, a runtime without vLLM's sampler" -- "$bin" sim --system sglang-dgemma --requests 4 --json --quiet --no-progress
python3 -c 'import json, sys; assert "sampler_holds" not in json.load(open(sys.argv[1]))' "$tmp/out" && ok || bad "sim: a runtime without vLLM's sampler judged against it"
expect 0 "sim, vLLM's sampler in the summary" -- "$bin" sim --system diffusion-gemma --gpu h200 --max-batch 16 \
    --requests 16 --rps 1000 --lengths fixed:256,256 --quiet --no-progress
contains "sim, vLLM's sampler in the summary" "its largest step's 16 canvases run vLLM out of memory: a step holds"
# plan capacity fails a rate whose largest step runs vLLM's sampler out of memory, and says so
expect 0 "plan capacity, vLLM's sampler" -- "$bin" plan capacity --system diffusion-gemma --gpu h200 --requests 60 \
    --slo p99=30s --lengths fixed:256,256
contains "plan capacity, vLLM's sampler" "vLLM's sampler out of memory (a step of"

finish
