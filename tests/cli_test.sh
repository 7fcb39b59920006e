#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# cli_test.sh: the tessera command line as a user meets it: help texts, exit statuses, error
# messages naming file, line and field, no database left behind by bad input, JSON output.
# Usage: cli_test.sh PATH/TO/tessera    Prints "cli: N passed, M failed".
set -u
bin=${1:?usage: cli_test.sh PATH/TO/tessera}
TEST=cli
source "$(dirname "$0")/lib_cli.sh"
is_png() { # is_png FILE "what wrote it": FILE is a non-empty PNG
    if [ -s "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = PNG ]; then ok; else bad "$2 wrote no PNG"; fi
}

# help for every command
for c in "" "sim" "trace" "trace gen" "list"; do
    read -r -a words <<<"$c" # the command's words
    expect 0 "tessera $c --help" -- "$bin" "${words[@]}" --help
done
expect 2 "no command" -- "$bin"
expect 2 "unknown command" -- "$bin" frobnicate
contains "unknown command lists commands" "commands: sim, trace, mem, calib, exp, db, plan, list, engine"

# the default scenario prints a summary
expect 0 "default sim" -- "$bin" sim --no-progress
contains "summary" "throughput"
contains "summary" "latency (s)   mean"
contains "summary names its load" "  load          200 requests at 1 req/s (poisson arrivals), lengths sharegpt, --gen-len 256"
# the presets page's tables are the tool's own: each between its marker and the next "<!-- end -->"
for t in table known; do
    awk -v m="<!-- tessera list systems $t -->" '$0 == m { on = 1; next } on && /^<!-- end -->/ { exit } on' \
        "$(dirname "$0")/../sim/docs/presets.md" >"$tmp/doc-$t.md"
    "$bin" list systems "$t" >"$tmp/tool-$t.md"
    [ -s "$tmp/doc-$t.md" ] && cmp -s "$tmp/doc-$t.md" "$tmp/tool-$t.md" && ok ||
        bad "sim/docs/presets.md's $t is not tessera list systems $t's output (write it there again)"
done
# --rps 0 is defined (1 a second for a synthetic workload, a file's own times), and its range error says so
expect 2 "sim --rps -1" -- "$bin" sim --rps -1 --requests 2
contains "sim --rps -1" "(0: 1 a second for a synthetic workload, a file's own times)"
cmp -s <("$bin" sim --rps 0 --requests 40 --json --quiet) <("$bin" sim --rps 1 --requests 40 --json --quiet) && ok ||
    bad "sim --rps 0 and --rps 1 differ on a synthetic workload"
# where requests were rejected, the latency line says it is the finished ones'
expect 0 "a run with rejections" -- "$bin" sim --gpu rtx4090 --requests 60 --no-progress
contains "a run with rejections" "latency (s)   of the "
# a fleet says whether it keeps up, as a single run does: overloaded where it finishes fewer than arrive
# (each replica marked), in the summary, --json and the database; not where it keeps up
expect 0 "an overloaded fleet" -- "$bin" sim --replicas 2 --gpu l40s --rps 20 --requests 200 --no-progress --db "$tmp/over.db"
contains "an overloaded fleet" "faster than this fleet finishes them"
contains "an overloaded fleet's replicas" "  overloaded"
[ "$(sqlite3 "$tmp/over.db" "SELECT overloaded || ' ' || (offered_rps > 15) FROM summary")" = "1 1" ] && ok ||
    bad "the overloaded fleet's database row"
"$bin" sim --replicas 2 --gpu l40s --rps 0.2 --requests 60 --json --quiet >"$tmp/calm.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(d["overloaded"] or any(r["overloaded"] for r in d["replicas"]))' \
    "$tmp/calm.json" && ok || bad "a fleet that keeps up says it is overloaded"

# live mode: a bad executor is refused; without a GPU (or without CUDA) --executor gpu says why
expect 2 "sim --executor bogus" -- "$bin" sim --executor bogus --requests 2
contains "executor named" "--executor: 'bogus' is not model or gpu"
if ! command -v nvidia-smi >/dev/null 2>&1; then
    expect 2 "sim --executor gpu without a GPU" -- "$bin" sim --executor gpu --requests 2 --db "$tmp/live.db"
    contains "executor gpu says why" "--executor gpu:"
    expect 2 "sim --executor gpu --tp 2 without GPUs" -- "$bin" sim --executor gpu --tp 2 --requests 2 --db "$tmp/live.db"
    contains "executor gpu --tp 2 says why" "--tp 2"
    [ ! -e "$tmp/live.db" ] && ok || bad "--executor gpu failure left a database"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
# a few records lend the checks below their files (analysis/records.sh get: packed or not): a recorded
# profile and step times, an engine replay's database, a clock trace, an older engine's calibration
record() { bash "$root/analysis/records.sh" get "$1" "$2" "$3" || bad "records.sh get $1 $2"; }
# records.sh: a record packed and unpacked gives its files back (a .gz's content, other files' bytes);
# README.md, PNGs and small text stay out of the archive; a record without data unpacks as it is; get
# reads a file packed or not; a record packed twice is refused
mkdir -p "$tmp/recs/r1/profiles"
seq 1 20000 | gzip -c >"$tmp/recs/r1/profiles/p.csv.gz"
seq 1 30000 >"$tmp/recs/r1/big.txt"
printf '# r1\n' >"$tmp/recs/r1/README.md" && printf 'x\n' >"$tmp/recs/r1/small.txt" && printf 'PNG' >"$tmp/recs/r1/f.png"
cp -r "$tmp/recs/r1" "$tmp/r1-orig"
expect 0 "records.sh pack" -- env RECORDS="$tmp/recs" bash "$root/analysis/records.sh" pack "$tmp/recs/r1"
[ "$(cd "$tmp/recs/r1" && printf '%s ' *)" = "README.md data.tar.xz f.png small.txt " ] && ok ||
    bad "records.sh pack left $(cd "$tmp/recs/r1" && printf '%s ' *)"
expect 2 "records.sh pack, packed already" -- env RECORDS="$tmp/recs" bash "$root/analysis/records.sh" pack "$tmp/recs/r1"
contains "records.sh pack, packed already" "packed already"
mkdir -p "$tmp/recs/r2" && printf '# r2\n' >"$tmp/recs/r2/README.md" # (a record with no data, unpacked last)
expect 0 "records.sh unpack" -- env RECORDS="$tmp/recs" bash "$root/analysis/records.sh" unpack "$tmp/un" r1 r2
[ -f "$tmp/un/r2/README.md" ] && ok || bad "records.sh unpack: a record without data not copied"
cmp -s <(gzip -dc "$tmp/un/r1/profiles/p.csv.gz") <(gzip -dc "$tmp/r1-orig/profiles/p.csv.gz") &&
    cmp -s "$tmp/un/r1/big.txt" "$tmp/r1-orig/big.txt" && cmp -s "$tmp/un/r1/f.png" "$tmp/r1-orig/f.png" &&
    [ ! -e "$tmp/un/r1/data.tar.xz" ] && ok || bad "records.sh unpack: the files are not the packed ones"
expect 0 "records.sh get, packed" -- env RECORDS="$tmp/recs" bash "$root/analysis/records.sh" get r1 profiles/p.csv.gz "$tmp/g.gz"
cmp -s <(gzip -dc "$tmp/g.gz") <(gzip -dc "$tmp/r1-orig/profiles/p.csv.gz") && ok || bad "records.sh get: not the packed file"
expect 2 "records.sh get, no such file" -- env RECORDS="$tmp/recs" bash "$root/analysis/records.sh" get r1 none.csv "$tmp/g2"
contains "records.sh get, no such file" "r1 has no none.csv"
[ ! -e "$tmp/g2" ] && [ ! -e "$tmp/g2.part" ] && ok || bad "records.sh get of a missing file left a file"
expect 2 "records.sh unpack, no such record" -- env RECORDS="$tmp/recs" bash "$root/analysis/records.sh" unpack "$tmp/un2" r9
expect 0 "records.sh --help" -- bash "$root/analysis/records.sh" --help
record fidelity-h200 profiles/llada-8b.1.csv.gz "$tmp/rec-profile.csv.gz"
record fidelity-h200 all-steps.csv.gz "$tmp/rec-steps.csv.gz"
record ops-h200 def.db.gz "$tmp/ops-def.db.gz" && gzip -d "$tmp/ops-def.db.gz"
record clock-ladder h200-warm.csv.gz "$tmp/h200-warm.csv.gz" && gzip -d "$tmp/h200-warm.csv.gz"
record fidelity-h200-dream calib-dream-7b.csv.gz "$tmp/dream-rules3.csv.gz" && gzip -d "$tmp/dream-rules3.csv.gz" # an engine of launch rules 3
if command -v python3 >/dev/null 2>&1; then
    # calib merge reads profile databases too (engine profile's engine_profile table): the shipped
    # calibration's rows as a database, merged with its CSV, give the CSV back
    python3 - "$root/sim/data/calib/h200-llada-8b-tessera.csv" "$tmp/prof.db" <<'PY'
import csv, sqlite3, sys
con = sqlite3.connect(sys.argv[2])
con.execute("CREATE TABLE engine_profile(device TEXT, model TEXT, segs INTEGER, q INTEGER, kv INTEGER, "
            "logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL, attn_rules INTEGER, kv_long INTEGER, keep INTEGER, "
            "sel_heads INTEGER, fc_rows INTEGER, probe INTEGER, q_long INTEGER)")
con.executemany("INSERT INTO engine_profile VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(r["device"], r["model"], r["segs"], r["q"], r["kv"], r["logit_rows"], r["op"], float(r["ms"]),
                  float(r["total_ms"]), r["attn_rules"], r["kv_long"], r["keep"], r["sel_heads"], r["fc_rows"],
                  r["probe"], r.get("q_long", 0))
                 for r in csv.DictReader(open(sys.argv[1]))])
con.commit()
PY
    expect 0 "calib merge of a database and a CSV" -- "$bin" calib merge "$tmp/prof.db" \
        "$root/sim/data/calib/h200-llada-8b-tessera.csv" --gpu h200 --out "$tmp/m2.csv"
    cmp -s "$tmp/m2.csv" "$root/sim/data/calib/h200-llada-8b-tessera.csv" && ok || bad "calib merge of a database and its CSV changed the rows"
    # PROFILES= with a single profile: refused by calib merge, nothing evaluated
    mkdir -p "$tmp/prof1"
    cp "$tmp/rec-profile.csv.gz" "$tmp/prof1/llada-8b.1.csv.gz"
    expect 1 "fidelity.sh PROFILES= with one profile" -- env MEASURED="$tmp/rec-steps.csv.gz" \
        PROFILES="$tmp/prof1" TESSERA="$bin" SCRATCH="$tmp/prof1/scr" bash "$root/experiments/fidelity.sh" "$tmp/prof1/out" llada-8b
    contains "fidelity.sh PROFILES= with one profile" "needs two or more PROFILEs"
    # no tessera where it looks: refused before anything runs; a record without the model's runs:
    # every run skipped, which is an error, not an empty table
    expect 2 "fidelity.sh without its tessera" -- env TESSERA="$tmp/none/tessera" \
        bash "$root/experiments/fidelity.sh" "$tmp/nobin" llada-8b
    contains "fidelity.sh without its tessera" "$tmp/none/tessera not found"
    mkdir -p "$tmp/nomodel-cal"
    cp "$root/sim/data/calib/h200-dream-7b-tessera.csv" "$tmp/nomodel-cal/calib-dream-7b.csv"
    expect 1 "fidelity.sh of a record without the model" -- env MEASURED="$tmp/rec-steps.csv.gz" \
        CALIB_DIR="$tmp/nomodel-cal" GPU=h200 TESSERA="$bin" SCRATCH="$tmp/nomodel/scr" \
        bash "$root/experiments/fidelity.sh" "$tmp/nomodel" dream-7b
    contains "fidelity.sh of a record without the model" "no run of dream-7b priced"
fi
# evict_share.sh on what is not an ncu CSV: refused, naming the file
printf 'x\n"a","b"\n' >"$tmp/bad-ncu.csv"
expect 1 "evict_share.sh on a CSV without ncu's columns" -- bash "$root/analysis/evict_share.sh" "$tmp/bad-ncu.csv"
contains "evict_share.sh on a CSV without ncu's columns" "bad-ncu.csv:2: not an ncu CSV header"
expect 2 "evict_share.sh without a file" -- bash "$root/analysis/evict_share.sh"
# (the engine's runs have no host to swap: calib eval --host refuses, naming the host)
expect 2 "calib eval --host on an engine run" -- "$bin" calib eval --db "$tmp/ops-def.db" --host h100-xeon
contains "calib eval --host on an engine run" "--host h100-xeon: the calibration of llada-8b on NVIDIA H200"
expect 2 "calib clock without --gpu" -- "$bin" calib clock "$tmp/h200-warm.csv"
contains "calib clock without --gpu" "needs TRACE.csv"
expect 2 "calib clock of a GPU never measured" -- "$bin" calib clock "$tmp/h200-warm.csv" --gpu l40s
contains "calib clock of a GPU never measured" "no measured held GEMM rate for l40s"
printf 'label,phase,round,graph,t_s,ms\n"step 1x64 over 0 cached, 64 logits: step",warm,0,-1,0.1,-1\n' >"$tmp/bad-warm.csv"
expect 2 "calib clock of a bad trace" -- "$bin" calib clock "$tmp/bad-warm.csv" --gpu h200
contains "calib clock of a bad trace" "bad-warm.csv:2: field ms"
expect 2 "calib clock --out" -- "$bin" calib clock "$tmp/h200-warm.csv" --gpu h200 --out x
contains "calib clock --out" "--out does not apply here"
# sim --clock: auto models it with the calibrated cost on a measured card and says so; off and the
# roofline do not; on refuses where it cannot
expect 0 "sim --clock auto" -- "$bin" sim --cost calibrated --requests 20 --rps 2
contains "sim --clock auto" "clock         the card's state under its power limit moved the steps' time by"
expect 0 "sim --clock off" -- "$bin" sim --cost calibrated --requests 20 --rps 2 --clock off
if grep -q "^  clock " "$tmp/out"; then bad "sim --clock off prints a clock line"; else ok; fi
expect 2 "sim --clock on with the roofline" -- "$bin" sim --clock on --requests 2
contains "sim --clock on with the roofline" "--clock on: the clock is modelled with the calibrated cost only"
$bin calib transfer "$root/sim/data/calib/h200-llada-8b-tessera.csv" --from h200 --to a100-80gb --out "$tmp/a100-clock.csv" >/dev/null
expect 2 "sim --clock on, a card never measured" -- "$bin" sim --clock on --cost calibrated --gpu a100-80gb \
    --calib "$tmp/a100-clock.csv" --requests 2
contains "sim --clock on, a card never measured" "--clock on: no clock measured for a100-80gb"
expect 2 "sim --clock bogus" -- "$bin" sim --clock bogus --requests 2
contains "sim --clock bogus" "--clock: 'bogus' is not auto, on or off"
expect 2 "calib eval --clock bogus" -- "$bin" calib eval --db "$tmp/ops-def.db" --clock bogus
contains "calib eval --clock bogus" "--clock: 'bogus' is not auto, on or off"
# --op-scale: an ablation of the cost model, stored with the run; the attention twice over lengthens a
# calibrated run by about its share, and the summary says the cost was scaled; bad specs refused
for sc in "" attention=2; do
    expect 0 "sim --op-scale '$sc'" -- "$bin" sim --cost calibrated --requests 20 --rps 1000000 --clock off \
        --op-scale "$sc" --json --quiet --db "$tmp/scale-${sc:-none}.db"
    cp "$tmp/out" "$tmp/scale-${sc:-none}.json"
done
python3 - "$tmp/scale-none.json" "$tmp/scale-attention=2.json" <<'PY' && ok || bad "sim --op-scale attention=2 is not the run with its attention twice over"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ta, tb = (sum(x["op_seconds"].values()) for x in (a, b))
oa, ob = a["op_seconds"]["attention"], b["op_seconds"]["attention"]
# (every request there at the start: the same steps either way)
assert a["num_steps"] == b["num_steps"] and abs(ob - 2 * oa) < 1e-6 * ob and abs((tb - ta) - oa) < 1e-6 * oa, (ta, tb, oa, ob)
assert abs(b["makespan_ns"] - a["makespan_ns"] - oa * 1e9) < 1e-3 * oa * 1e9, (a["makespan_ns"], b["makespan_ns"])
PY
[ "$(sqlite3 "$tmp/scale-attention=2.db" "SELECT json_extract(config_json, '$.op_scale') FROM runs" 2>/dev/null)" = attention=2 ] && ok ||
    bad "sim --op-scale: the run's config_json lacks op_scale"
expect 0 "sim --op-scale's summary" -- "$bin" sim --cost calibrated --requests 4 --op-scale gate_up=0.5
contains "sim --op-scale's summary" "op scale      gate_up=0.5 (--op-scale: an ablation, not the calibrated cost)"
expect 2 "sim --op-scale with an unknown op" -- "$bin" sim --op-scale attn=2 --requests 2
contains "sim --op-scale with an unknown op" "--op-scale: 'attn=2': no op 'attn'"
expect 2 "sim --op-scale with a factor out of range" -- "$bin" sim --op-scale attention=0 --requests 2
contains "sim --op-scale with a factor out of range" "the factor is not a number in (0, 100]"

# IterSmooth: with a confidence-threshold decoder its steps pay the LM head again; a fixed count is refused
expect 0 "sim --iter-smooth" -- "$bin" sim --model llada-moe-7b --decode threshold:3 --iter-smooth --requests 20 --json --quiet
expect 2 "sim --iter-smooth with a fixed count" -- "$bin" sim --iter-smooth --requests 2
contains "sim --iter-smooth with a fixed count" "--iter-smooth: dInfer's IterSmooth smooths a confidence-threshold decoder's input"
expect 2 "sim --eos bogus" -- "$bin" sim --eos bogus --requests 2
contains "sim --eos bogus" "--eos: 'bogus' is not auto, bulk or scheduled"
# fixed:1 runs every request its G steps; --eos bulk commits a finished block's EOS positions at once
$bin sim --json --quiet --requests 8 --gen-len 64 --lengths fixed:100,10 >"$tmp/eos-auto.json"
$bin sim --json --quiet --requests 8 --gen-len 64 --lengths fixed:100,10 --eos bulk >"$tmp/eos-bulk.json"
[ "$(sqlite3 :memory: "SELECT json_extract(readfile('$tmp/eos-auto.json'), '\$.request_steps') || ' ' ||
        json_extract(readfile('$tmp/eos-bulk.json'), '\$.request_steps')")" = "512 96" ] && ok ||
    bad "fixed:1 with 10 content tokens of 64: 64 steps a request, or 10 + 2 with --eos bulk"
# JSON summary is one valid object
expect 0 "sim --json" -- "$bin" sim --json --quiet --requests 20
json_check() { # json_check FILE PYTHON-EXPR-ON-d   (skipped without python3)
    command -v python3 >/dev/null || return 0
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert $2" "$1" 2>/dev/null; then ok; else bad "JSON check '$2' on $(head -c 200 "$1")"; fi
}
json_check "$tmp/out" 'd["num_finished"] == 20 and d["tokens_decoded"] == 20 * 256'
# --json is the same bytes for one seed, a single run's and a fleet's; the wall time only with --json-wall
for args in "--requests 30" "--replicas 3 --requests 30 --autoscale every=1"; do
    read -r -a run_opts <<<"$args"
    $bin sim "${run_opts[@]}" --seed 7 --json --quiet >"$tmp/json-1.json"
    $bin sim "${run_opts[@]}" --seed 7 --json --quiet >"$tmp/json-2.json"
    cmp -s "$tmp/json-1.json" "$tmp/json-2.json" && ok || bad "sim $args --json: two runs of one seed differ"
    grep -q run_wall_s "$tmp/json-1.json" && bad "sim $args --json: the wall time without --json-wall" || ok
    expect 0 "sim $args --json --json-wall" -- "$bin" sim "${run_opts[@]}" --seed 7 --json --json-wall --quiet
    contains "sim $args --json --json-wall" '"run_wall_s":'
done
# an abbreviated option is the option: --sys is --system, its preset applied before the rest
expect 0 "sim --sys" -- "$bin" sim --sys fast-dllm --requests 3 --quiet
contains "sim --sys" "system fast-dllm"
# --max-new-tokens caps a trace's output lengths (--gen-len 0) in whole blocks: 500 tokens asked, 64 or 96 run
expect 0 "sim --gen-len 0 --max-new-tokens 64" -- "$bin" sim --json --quiet --gen-len 0 --max-new-tokens 64 \
    --lengths fixed:100,500 --requests 3
json_check "$tmp/out" 'd["tokens_decoded"] == 3 * 64 and d["content_tokens"] == 3 * 64'
expect 0 "sim --max-new-tokens rounds down to whole blocks" -- "$bin" sim --json --quiet --gen-len 0 \
    --max-new-tokens 100 --lengths fixed:100,500 --requests 3 --db "$tmp/max-new.db"
json_check "$tmp/out" 'd["tokens_decoded"] == 3 * 96'
[ "$(sqlite3 "$tmp/max-new.db" "SELECT json_extract(config_json, '\$.max_new_tokens') FROM runs")" = 100 ] && ok ||
    bad "the run's configuration stores --max-new-tokens"
expect 2 "sim --max-new-tokens with a set --gen-len" -- "$bin" sim --max-new-tokens 2048 --requests 3
contains "sim --max-new-tokens with a set --gen-len" "--max-new-tokens caps the trace's output lengths: give it with --gen-len 0"
expect 2 "sim --max-new-tokens under a block" -- "$bin" sim --gen-len 0 --max-new-tokens 10 --requests 3
contains "sim --max-new-tokens under a block" "--max-new-tokens: 10 is less than one block (--block 32)"
expect 2 "sim --max-new-tokens -1" -- "$bin" sim --gen-len 0 --max-new-tokens -1 --requests 3
contains "sim --max-new-tokens -1" "--max-new-tokens: '-1' is not a whole number in 0..268435456 positions"
# a measured distribution of a step's commits (engine generate --profile-out): every step committing 3
# decodes as fixed:3 does, request step for request step
printf '{"three": {"tpf": 3.0, "decoder": "threshold", "steps": [0, 0, 7]}}\n' >"$tmp/steps.json"
$bin sim --json --quiet --requests 5 --gen-len 96 --decode fixed:3 >"$tmp/fixed3.json"
expect 0 "sim --decode threshold with a measured distribution" -- "$bin" sim --json --quiet --requests 5 --gen-len 96 \
    --decode "threshold:$tmp/steps.json:three"
json_check "$tmp/out" "d['request_steps'] == json.load(open('$tmp/fixed3.json'))['request_steps']"
printf '{"off": {"tpf": 2.0, "steps": [0, 0, 7]}}\n' >"$tmp/steps-off.json"
expect 2 "a distribution whose mean is not its TPF" -- "$bin" sim --decode "threshold:$tmp/steps-off.json:off"
contains "a distribution whose mean is not its TPF" "off.steps: their mean, 3 positions a step, is not its tpf 2"

# unknown names list the valid ones
expect 2 "unknown model" -- "$bin" sim --model gpt-5
contains "unknown model" "llada-8b, dream-7b, sdar-8b, llada-moe-7b, llada2.0-mini"
expect 2 "unknown gpu" -- "$bin" sim --gpu mi300x
contains "unknown gpu" "rtx4090"
expect 2 "unknown policy" -- "$bin" sim --policy magic
contains "unknown policy" "vanilla, prefix, dual, block"
expect 2 "unknown scheduler" -- "$bin" sim --scheduler fifo
contains "unknown scheduler" "static, request, phase"
# the mosaic preset's chunk search keeps its 900 MiB of the card free: its peak stays under the card less
# the 1 GiB reserve and the margin; with --search-margin-mib 0 the same load runs into it
for mg in default 0; do
    margin=() # the search's margin as the preset leaves it, or none
    [ "$mg" = 0 ] && margin=(--search-margin-mib 0)
    expect 0 "mosaic preset, margin $mg" -- "$bin" sim --system mosaic --model dream-7b --gpu rtx3090 --lengths fixed:30000,64 \
        --gen-len 64 --requests 24 --rps 100 --quiet --json "${margin[@]}"
    json_check "$tmp/out" "d['num_finished'] == 24 and (d['peak_mem_bytes'] <= (24 << 30) - (1 << 30) - (900 << 20)) == ('$mg' == 'default')"
done
expect 0 "mosaic preset" -- "$bin" sim --system mosaic --model dream-7b --gpu rtx4090 --lengths fixed:20000,64 --gen-len 64 --requests 2 --rps 0.01 --quiet
contains "mosaic preset" "2 finished, 0 rejected"
# Mosaic's baselines: Mosaic-Torch without its memory optimizations, Native one request at a time
expect 0 "mosaic-torch preset" -- "$bin" sim --system mosaic-torch --requests 3 --rps 1 --quiet
contains "mosaic-torch preset" "runtime torch-eager, cost roofline, policy vanilla, scheduler request, decode fixed:1, system mosaic-torch"
expect 0 "native preset" -- "$bin" sim --system native --requests 3 --rps 1 --quiet
contains "native preset" "static batch  1 requests"
contains "native preset" "runtime torch-eager-f64, cost roofline, policy vanilla, scheduler static"
# the fused FFN's implementation profile: roofline-priced, or calibrated where a calibration of it
# is shipped (LLaDA-8B and SDAR-8B on the H200, no other GPU)
expect 0 "sim --impl tessera-fused" -- "$bin" sim --impl tessera-fused --requests 20 --quiet --no-progress
# its steps' activations are accounted as its reservations plan them (fused): at a load that fills
# the H200, no step may exceed the memory (the simulator asserts it)
expect 0 "sim tessera-fused at full memory" -- "$bin" sim --impl tessera-fused --rps 8 --lengths lognormal:7.0,0.6,5.0,0.6 --quiet --no-progress
expect 0 "sim tessera-fused calibrated" -- "$bin" sim --impl tessera-fused --cost calibrated --requests 20 --quiet --no-progress
expect 2 "sim tessera-fused calibrated l40s" -- "$bin" sim --impl tessera-fused --gpu l40s --cost calibrated --requests 2
contains "sim tessera-fused calibrated l40s" "with the tessera-fused implementation"
expect 0 "dinfer preset" -- "$bin" sim --system dinfer --requests 20 --quiet --no-progress
contains "dinfer preset" "policy vicinity, scheduler static, decode hierarchical:dinfer-moe-cache-gsm8k"
contains "dinfer preset" "20 finished, 0 rejected"
expect 2 "negative vicinity" -- "$bin" sim --policy vicinity --vicinity -1
contains "negative vicinity" "--vicinity: '-1' is not a whole number in 0..65536"
expect 2 "vicinity refresh-interval 0" -- "$bin" sim --policy vicinity --refresh-interval 0
contains "vicinity refresh-interval 0" "--refresh-interval: '0' is not a whole number in 1..1000000"
expect 2 "vicinity without its policy" -- "$bin" sim --vicinity 8
contains "vicinity without its policy" "--vicinity: not a parameter of policy dual"
# sparse: every bad value refused by name, before anything runs
for bad in "--sparse-ratio 0|'0' is not a number in (0..1]" "--sparse-ratio 1.5|'1.5' is not a number in (0..1]" \
           "--sparse-kernel 4|'4' is not an odd whole number in 1..255" "--sparse-kernel -1|'-1' is not an odd whole number" \
           "--sparse-delay -1|'-1' is not a whole number in 0..1000000" \
           "--sparse-select both|'both' is not one of uniform|head"; do
    opt=${bad%%|*} msg=${bad#*|}
    # shellcheck disable=SC2086 # the option and its value, a word each
    expect 2 "sparse $opt" -- $bin sim --policy sparse $opt
    contains "sparse $opt" "$msg"
done
expect 2 "sparse-select without its policy" -- "$bin" sim --sparse-select head
contains "sparse-select without its policy" "--sparse-select: not a parameter of policy dual or scheduler phase (it is one of: policy sparse)"
expect 0 "sparse head selection runs" -- "$bin" sim --policy sparse --sparse-select head --sparse-ratio 0.25 --requests 20 \
    --quiet --db "$tmp/sparse.db"
if [ "$(sqlite3 "$tmp/sparse.db" "select json_extract(config_json, '$.sparse_select') || ' ' ||
        json_extract(config_json, '$.sparse_ratio') from runs")" = "head 0.25" ]; then ok
else bad "the sparse run's configuration lacks its selection and ratio"; fi
if [ "$(sqlite3 "$tmp/sparse.db" "select count(*) > 0 and min(score_rows) > 0 from segments where keep > 0")" = 1 ]
then ok; else bad "the sparse run stored no selecting segments"; fi
# engine generate (where the engine is built): its bad values refused by name before any GPU work
if $bin engine generate --help 2>/dev/null | grep -q -- --decoder; then
    for bad in "--iter-smooth=abc|CONT 'abc' is not a number" \
               "--iter-smooth=0.3,,1|INIT must be a number" \
               "--iter-smooth --decoder topk:2|topk:K has none" \
               "--iter-smooth --policy focus --model sdar-8b|IterSmooth runs over a driven policy, not FOCUS" \
               "--policy focus --decoder credit:0.9 --model sdar-8b|--policy focus with credit decoding" \
               "--policy vicinity --model sdar-8b|policy vicinity runs whole-sequence steps" \
               "--policy vicinity --vicinity -1|--vicinity" \
               "--policy vicinity --refresh-interval 0|--refresh-interval" \
               "--policy dual --vicinity 4|policy dual has no parameter --vicinity" \
               "--policy dual --sparsed-block 64|policy dual has no parameter --sparsed-block" \
               "--policy sparsed --sparsed-select 2|--sparsed-select: '2' is not a number in 0..1" \
               "--policy sparse|policy sparse runs in the simulator only: it selects a sparse cache" \
               "--policy lru|lru" \
               "--policy focus --model sdar-8b --block-logits|--block-logits with policy focus" \
               "--decoder threshold:0|TAU '0' must be a confidence in (0, 1]" \
               "--decoder threshold:1.5|TAU '1.5' must be a confidence in (0, 1]" \
               "--vicinty 4|did you mean --vicinity?" "--vicinity|--vicinity needs a value" \
               "--gen-len 0|a generation's length is at least 1" "--block 2048|--block 2048: at most 1024" \
               "--requests 70000|at most 65536 requests" "--seed -1|--seed" "--block 0|--block" \
               "--model nosuch|nosuch"; do
        opts=${bad%%|*} msg=${bad#*|}
        # shellcheck disable=SC2086 # the options and their values, a word each
        expect 2 "engine generate $opts" -- $bin engine generate $opts
        contains "engine generate $opts" "$msg"
    done
fi
# a run file: options a line (with or without --, = or a space, comments), the command line's over them; a
# stored run written back as one (db show) runs again to the same summary; a bad line named by its line
printf '# a run\nsystem dllm-serve\n--rps 2\nrequests=30   # thirty\ngpu h100\n\nearly-stop\n' >"$tmp/run.txt"
expect 0 "sim --config" -- "$bin" sim --config "$tmp/run.txt" --requests 12 --seed 5 --db "$tmp/runfile.db" --json --quiet --no-progress
cp "$tmp/out" "$tmp/runfile-a.json"
json_check "$tmp/out" "d['num_requests'] == 12"
expect 0 "db show" -- "$bin" db show "$tmp/runfile.db" 1
contains "db show" "system dllm-serve"
contains "db show" "gpu h100"
cp "$tmp/out" "$tmp/shown.txt"
expect 0 "sim --config of a stored run" -- "$bin" sim --config "$tmp/shown.txt" --json --quiet --no-progress
python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); assert a == b' "$tmp/runfile-a.json" "$tmp/out" &&
    ok || bad "a stored run run again from db show's run file gives another summary"
for bad in "rps 2;plicy dual|bad.txt:2: the option of this line" "rps two|bad.txt:1: the option of this line" \
           "config other.txt|bad.txt:1: config: a run file names no other run file"; do
    printf '%s\n' "${bad%%|*}" | tr ';' '\n' >"$tmp/bad.txt"
    expect 2 "sim --config with '${bad%%|*}'" -- "$bin" sim --config "$tmp/bad.txt" --requests 2
    contains "sim --config with '${bad%%|*}'" "${bad#*|}"
done
# a fleet reads its run file once, not again for each replica group: the byte-order mark said once
printf '\357\273\277rps 2\nrequests 12\n' >"$tmp/run-bom.txt"
printf '2 --policy dual\n1 --policy vanilla\n' >"$tmp/fleet-two.txt"
expect 0 "sim --config in a fleet" -- "$bin" sim --config "$tmp/run-bom.txt" --fleet "$tmp/fleet-two.txt" --no-progress
[ "$(grep -c "run-bom.txt: note: skipped the UTF-8 byte-order mark" "$tmp/out")" = 1 ] && ok ||
    bad "a fleet's run file was read more than once (its note said $(grep -c byte-order "$tmp/out") times)"
expect 2 "db show of a missing run" -- "$bin" db show "$tmp/runfile.db" 9
contains "db show of a missing run" "no run 9"
# an overloaded run says so: its requests outstanding grow through the arrivals (at 8 req/s on one H200),
# and a run that keeps up (0.5 req/s) says nothing of it
expect 0 "sim past the card's capacity" -- "$bin" sim --rps 8 --requests 100 --no-progress
contains "sim past the card's capacity" "overloaded    requests arrive at 7.522 req/s, faster than this configuration finishes them"
expect 0 "sim within the card's capacity" -- "$bin" sim --rps 0.5 --requests 100 --no-progress
grep -q overloaded "$tmp/out" && bad "a run that keeps up said it was overloaded" || ok
# --interval: each figure's 90% interval over the sources this run has (tessera's engine under the
# roofline: the clock and the roofline's own error; an eager runtime: its host too, from machine to machine unless --host names this
# one's; a drawn decoder: its streams), the point inside, the same for one seed; with every source's
# spread 0 and a fixed decoder the interval is the point itself, and a wider spread gives a wider one
expect 0 "sim --interval" -- "$bin" sim --interval 90 --interval-runs 10 --requests 60 --json --quiet --no-progress
cp "$tmp/out" "$tmp/iv-a.json"
json_check "$tmp/out" "list(d['interval']['sources']) == ['clock', 'roofline'] and all(d['interval'][k][0] <= d[k] <= d['interval'][k][1] for k in ('throughput_tok_s', 'lat_mean_s', 'lat_p99_s', 'energy_j')) and d['interval']['lat_mean_s'][0] < d['interval']['lat_mean_s'][1]"
"$bin" sim --interval 90 --interval-runs 10 --requests 60 --json --quiet --no-progress >"$tmp/iv-b.json"
cmp -s "$tmp/iv-a.json" "$tmp/iv-b.json" && ok || bad "sim --interval: two runs of one seed differ"
"$bin" sim --interval 90 --interval-runs 10 --requests 60 --db "$tmp/iv.db" --quiet --no-progress >/dev/null
python3 - "$tmp/iv.db" "$tmp/iv-a.json" <<'PY' && ok || bad "sim --interval --db: the summary's interval_json is not --json's"
import json, sqlite3, sys
got = json.loads(sqlite3.connect(sys.argv[1]).execute("SELECT interval_json FROM summary").fetchone()[0])
assert got == json.load(open(sys.argv[2]))["interval"]
PY
expect 0 "sim --interval, an eager runtime" -- "$bin" sim --system fast-dllm --interval 90 --interval-runs 10 --requests 20 \
    --rps 0.1 --json --quiet --no-progress
json_check "$tmp/out" "list(d['interval']['sources']) == ['host-run', 'host-machine', 'clock', 'calibration']"
expect 0 "sim --interval, this machine's host" -- "$bin" sim --system fast-dllm --host h200-xeon --interval 90 \
    --interval-runs 10 --requests 20 --rps 0.1 --decode threshold:llada-gsm8k --json --quiet --no-progress
json_check "$tmp/out" "list(d['interval']['sources']) == ['host-run', 'clock', 'calibration', 'decode']"
mkdir -p "$tmp/data0" && cp -r "$root/sim/data/." "$tmp/data0/"
awk -F, 'BEGIN { OFS = "," } NR > 1 && $1 !~ /^#/ { $3 = 0 } { print }' "$root/sim/data/variance.csv" >"$tmp/data0/variance.csv"
expect 0 "sim --interval, no spread" -- env TESSERA_DATA="$tmp/data0" "$bin" sim --system fast-dllm --interval 90 \
    --interval-runs 5 --requests 20 --rps 0.1 --json --quiet --no-progress
json_check "$tmp/out" "all(d['interval'][k] == [d[k], d[k]] for k in ('throughput_tok_s', 'lat_mean_s', 'lat_p50_s', 'lat_p90_s', 'lat_p99_s', 'energy_j'))"
expect 2 "sim --interval live" -- "$bin" sim --interval 90 --executor gpu --requests 2
contains "sim --interval live" "a live run (--executor gpu) measures instead"
# a fleet's interval: each replica drawn as its own machine, by its runtime (an eager loop's host beside
# tessera's engine), the point inside it, stored as --json gives it; with every spread 0 it is the point
printf '1 --system fast-dllm\n1 --policy dual\n' >"$tmp/iv-fleet.txt"
expect 0 "sim --interval in a fleet" -- "$bin" sim --fleet "$tmp/iv-fleet.txt" --interval 90 --interval-runs 8 --requests 30 \
    --db "$tmp/iv-fleet.db" --json --quiet --no-progress
cp "$tmp/out" "$tmp/iv-fleet.json"
json_check "$tmp/out" "list(d['interval']['sources']) == ['host-run', 'host-machine', 'clock', 'calibration', 'roofline'] and all(d['interval'][k][0] <= d[k] <= d['interval'][k][1] for k in ('throughput_tok_s', 'lat_mean_s', 'lat_p99_s')) and d['interval']['lat_mean_s'][0] < d['interval']['lat_mean_s'][1]"
python3 - "$tmp/iv-fleet.db" "$tmp/iv-fleet.json" <<'PY' && ok || bad "sim --interval in a fleet --db: the summary's interval_json is not --json's"
import json, sqlite3, sys
got = json.loads(sqlite3.connect(sys.argv[1]).execute("SELECT interval_json FROM summary").fetchone()[0])
assert got == json.load(open(sys.argv[2]))["interval"]
PY
expect 0 "sim --interval in a fleet, no spread" -- env TESSERA_DATA="$tmp/data0" "$bin" sim --fleet "$tmp/iv-fleet.txt" \
    --interval 90 --interval-runs 5 --requests 20 --json --quiet --no-progress
json_check "$tmp/out" "all(d['interval'][k] == [d[k], d[k]] for k in ('throughput_tok_s', 'lat_mean_s', 'lat_p50_s', 'lat_p90_s', 'lat_p99_s', 'energy_j'))"
# a swapped pair of letters is one edit (--rsp: --rps, not --tp); a folder given as a trace says so; a --db the
# kernel's proc file system would hold is refused before the run, with nothing printed of one
for bad in "--rsp 2|did you mean --rps?" "--trace $tmp|$tmp: a folder, not a file" \
           "--db /proc/tessera.db|'/proc' is the kernel's proc file system, which holds no database"; do
    read -r -a opts <<<"${bad%%|*}"
    expect 2 "sim ${bad%%|*}" -- "$bin" sim "${opts[@]}" --requests 2 --no-progress
    contains "sim ${bad%%|*}" "${bad#*|}"
    grep -q "throughput" "$tmp/out" && bad "sim ${bad%%|*} ran before it was refused" || ok
done
# a fleet: replicas behind a router, its summary and each replica's; a fleet file's bad group refused
# naming the file, the line and the option, before any run
expect 0 "sim --replicas 3" -- "$bin" sim --replicas 3 --requests 60 --rps 4 --no-progress
contains "a fleet's summary" "a fleet of 3 replicas behind router least-outstanding"
contains "each replica's line" "by replica"
expect 0 "sim --replicas --json" -- "$bin" sim --replicas 2 --router round-robin --requests 40 --json --no-progress
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["num_replicas"] == 2 and [r["routed"] for r in d["replicas"]] == [20, 20] and d["num_finished"] == 40 and "fleet" not in d' "$tmp/out"
then ok; else bad "the fleet's JSON lacks its replicas or round robin's even split"; fi
printf '# two cards\n2 --gpu h100 --system dllm-serve\n\n1 --gpu l40s  # the slower one\n' >"$tmp/fleet.txt"
expect 0 "sim --fleet" -- "$bin" sim --fleet "$tmp/fleet.txt" --requests 60 --rps 4 --no-progress
contains "a fleet file's groups" "2 x llada-8b on h100 (dllm-serve), 1 x llada-8b on l40s"
for bad in "2 --gpu h300|fleet.txt:1: unknown GPU 'h300'" "x --gpu h100|fleet.txt:1: count: 'x' is not a number" \
           "2 --router round-robin|fleet.txt:1: --router: the fleet's option" "0|fleet.txt:1: count: '0'" \
           "2 --tp 3|fleet.txt:1: --tp: 3 does not divide" "2 --polcy dual|fleet.txt:1: the replica group's options" \
           "2 --requ 5|fleet.txt:1: --requ (--requests): the fleet's option" \
           "2 --exec gpu|fleet.txt:1: --exec (--executor): the fleet's option" \
           "2 --fle=x|fleet.txt:1: --fle (--fleet): the fleet's option" "1 --json-w|fleet.txt:1: --json-w (--json-wall)"; do
    printf '%s\n' "${bad%%|*}" >"$tmp/fleet.txt"
    expect 2 "sim --fleet with '${bad%%|*}'" -- "$bin" sim --fleet "$tmp/fleet.txt"
    contains "sim --fleet with '${bad%%|*}'" "${bad#*|}"
done
# a static-batch preset in a fleet: each replica sizes its batches by the fleet's workload and forms them from
# what the router sends it (round robin: half the requests each, every one finished)
expect 0 "sim --system fast-dllm --replicas 2" -- "$bin" sim --system fast-dllm --max-batch 8 --replicas 2 \
    --router round-robin --requests 24 --rps 2 --json --quiet --no-progress
json_check "$tmp/out" "d['num_finished'] == 24 and [r['routed'] for r in d['replicas']] == [12, 12] and d['replicas'][0]['static_batch'] == d['replicas'][1]['static_batch'] == 8"
printf '# nothing\n' >"$tmp/fleet.txt"
expect 2 "sim --fleet of no group" -- "$bin" sim --fleet "$tmp/fleet.txt"
contains "sim --fleet of no group" "no replica group"
expect 2 "sim --fleet missing" -- "$bin" sim --fleet "$tmp/none.txt"
contains "sim --fleet missing" "none.txt: cannot open"
# a fleet file's byte-order mark is skipped and said, as a trace's; a NUL byte refused by line and column;
# a JSON file's (a Hugging Face config.json) both refused by line
printf '\xef\xbb\xbf2 --gpu h100\n' >"$tmp/fleet-bom.txt"
expect 0 "sim --fleet, a byte-order mark" -- "$bin" sim --fleet "$tmp/fleet-bom.txt" --requests 4 --no-progress
contains "sim --fleet, a byte-order mark" "fleet-bom.txt: note: skipped the UTF-8 byte-order mark it begins with"
contains "sim --fleet, a byte-order mark" "2 x llada-8b on h100"
printf '2 --gpu h100\n1 --g\0pu h200\n' >"$tmp/fleet-nul.txt"
expect 2 "sim --fleet, a NUL byte" -- "$bin" sim --fleet "$tmp/fleet-nul.txt" --requests 4
contains "sim --fleet, a NUL byte" "fleet-nul.txt:2: a NUL byte at column 6: not a text file"
printf '\xef\xbb\xbf{"hidden_size": 64}\n' >"$tmp/bom-config.json"
expect 2 "sim --model, a config.json's byte-order mark" -- "$bin" sim --model "$tmp/bom-config.json" --requests 4
contains "sim --model, a config.json's byte-order mark" "bom-config.json:1: begins with a UTF-8 byte-order mark"
printf '{"hidden_size":\n 64\0}\n' >"$tmp/nul-config.json"
expect 2 "sim --model, a NUL byte in config.json" -- "$bin" sim --model "$tmp/nul-config.json" --requests 4
contains "sim --model, a NUL byte in config.json" "nul-config.json:2: a NUL byte at column 4"
expect 2 "sim --replicas with --fleet" -- "$bin" sim --replicas 2 --fleet "$tmp/fleet.txt"
# a fleet's run in SQLite: its summary, a row a replica; a second refused without --append, as a run's;
# a fleet refused before its run leaves no database
expect 0 "sim --replicas with --db" -- "$bin" sim --replicas 2 --requests 40 --rps 4 --db "$tmp/fleet.db" --no-progress
[ "$(sqlite3 "$tmp/fleet.db" "SELECT count(*) || ' ' || sum(routed) FROM fleet_replicas; SELECT num_finished FROM summary")" = "2 40
40" ] && ok || bad "a fleet's run is not in its database (fleet_replicas, summary)"
expect 2 "sim --replicas --db, a database holding a run" -- "$bin" sim --replicas 2 --requests 40 --db "$tmp/fleet.db"
contains "sim --replicas --db, a database holding a run" "holds 1 runs already; --append adds this one beside them"
expect 2 "sim --replicas --db, a bad group" -- "$bin" sim --replicas 2 --gpu h300 --db "$tmp/fleet2.db"
[ ! -e "$tmp/fleet2.db" ] && ok || bad "a refused fleet left a database"
expect 0 "sim --autoscale" -- "$bin" sim --replicas 3 --requests 200 --rps 2 --autoscale min=1,up=3,every=5,delay=10 --no-progress
contains "the autoscaler's line" "autoscaling   1 to"
# a long idle run read every 0.01 s: the readings kept show the changes, not every reading taken
$bin sim --replicas 2 --requests 20 --rps 0.001 --autoscale every=0.01 --load-control every=0.01 \
    --decode threshold:tau=0.9 --no-progress --json >"$tmp/idle.json"
json_check "$tmp/idle.json" 'd["scale_readings"] > 1000000 and len(d["scale"]) < 400 and d["threshold_readings"] > 1000000 and len(d["threshold"]) < 400'
$bin sim --replicas 3 --requests 200 --rps 2 --autoscale min=1,up=3,every=5,delay=10 --no-progress --json >"$tmp/fleet.json"
if command -v gnuplot >/dev/null; then # the autoscaled fleet's figure; a run without the autoscaler refused
    expect 0 "fleet-plot" -- bash "$(dirname "$0")/../analysis/fleet-plot.sh" "$tmp/fleet.json" "$tmp/fleet.png"
    is_png "$tmp/fleet.png" fleet-plot
    $bin sim --replicas 2 --requests 20 --no-progress --json >"$tmp/fleet.json"
    expect 1 "fleet-plot without the autoscaler" -- bash "$(dirname "$0")/../analysis/fleet-plot.sh" "$tmp/fleet.json" "$tmp/x.png"
    contains "fleet-plot says what is missing" "no autoscaler or load-control readings (the run had neither --autoscale nor --load-control)"
fi
expect 2 "sim --autoscale bad" -- "$bin" sim --replicas 3 --autoscale min=1,up=2,down=4
contains "sim --autoscale bad" "--autoscale 'min=1,up=2,down=4': down (4) must be below up (2)"
expect 2 "sim --autoscale min above the fleet" -- "$bin" sim --replicas 3 --autoscale min=5
contains "sim --autoscale min above the fleet" "--autoscale: min=5 of 3 replicas"
# Refresh/Reuse disaggregation: the pools, the moves' line, the JSON's pools; a fleet without a link
# between its pools, pools that leave one empty, and --disagg without a fleet refused
expect 0 "sim --disagg" -- "$bin" sim --replicas 4 --requests 60 --rps 4 --disagg every,refresh=2,link=ib-ndr --no-progress
contains "the pools' line" "Refresh: replicas 0-1, Reuse: 2-3 (--disagg every); link ib-ndr: 50.0 GB/s a GPU, 25 us a move"
contains "the moves' line" "with K/V), "
$bin sim --replicas 4 --requests 60 --rps 4 --disagg first,link=host --no-progress --json >"$tmp/disagg.json"
json_check "$tmp/disagg.json" 'd["moves"] == 60 and d["refresh_pool"] == 2 and [r["pool"] for r in d["replicas"]] == ["refresh"] * 2 + ["reuse"] * 2 and sum(r["moved_in"] for r in d["replicas"]) == 60'
expect 2 "sim --disagg without a link" -- "$bin" sim --replicas 4 --disagg every,refresh=2
contains "sim --disagg without a link" "the pools need a link between them (link=NAME: tessera list links)"
expect 2 "sim --disagg, an unknown link" -- "$bin" sim --replicas 4 --disagg every,link=nvlink9
contains "sim --disagg, an unknown link" "link 'nvlink9' is not in the table (host, ib-ndr, ib-hdr, eth-100g)"
expect 2 "sim --disagg, no Reuse pool" -- "$bin" sim --replicas 3 --disagg every,refresh=3,link=host
contains "sim --disagg, no Reuse pool" "a Refresh pool of 3 of the 3 replicas leaves no Reuse pool"
# load control: the threshold's readings in the summary and the JSON; a decoder without a threshold,
# a band above the decoder's threshold, and load control without a fleet refused
expect 0 "sim --load-control" -- "$bin" sim --replicas 2 --gpu l40s --requests 300 --rps 6 --decode threshold:llada-gsm8k --load-control lo=0.7,every=5 --no-progress
contains "the threshold's line" "threshold     0.90 down to 0.70 (TPF 6.31 there)"
expect 2 "sim --load-control, a fixed decoder" -- "$bin" sim --replicas 2 --load-control lo=0.7
contains "sim --load-control, a fixed decoder" "--load-control: replica 0: decode model fixed:1 commits a fixed count a step: no threshold sets it"
expect 2 "sim --load-control, lo above tau0" -- "$bin" sim --replicas 2 --decode threshold:2 --load-control lo=0.95
contains "sim --load-control, lo above tau0" "lo (0.95) must be below tau0 (0.9)"
expect 2 "sim --load-control without a fleet" -- "$bin" sim --decode threshold:2 --load-control lo=0.7
contains "sim --load-control without a fleet" "--load-control: a fleet's option (--replicas N or --fleet FILE)"
# a live fleet's workers on a machine without a GPU: each one's refusal comes back through its pipe,
# naming its replica and GPU, and no worker is left behind
expect 2 "sim --replicas --executor gpu, no GPU" -- "$bin" sim --replicas 2 --requests 3 --executor gpu --no-progress
contains "sim --replicas --executor gpu, no GPU" "tessera sim: --executor gpu: replica 0 (GPU 0): "
pgrep -f "$bin sim --replicas 2 --requests 3 --executor gpu" >/dev/null && bad "a live fleet's worker outlived its fleet" || ok
# a live fleet's bad trace is refused before its workers start (its message, not a worker's)
printf 'arrival_ns,prompt_tokens,output_tokens\n0,10,x\n' >"$tmp/live-bad.csv"
expect 2 "sim --replicas --executor gpu, a bad trace" -- "$bin" sim --replicas 2 --executor gpu --trace "$tmp/live-bad.csv" --no-progress
contains "sim --replicas --executor gpu, a bad trace" "live-bad.csv:2: output_tokens: not an integer ('x')"
grep -qF -- "--executor gpu" "$tmp/out" && bad "a live fleet's bad trace: a worker started first" || ok
# a live fleet: a replica over several GPUs, and disaggregation, refused before any worker starts
expect 2 "sim --replicas --executor gpu --tp 2" -- "$bin" sim --replicas 2 --executor gpu --tp 2
contains "sim --replicas --executor gpu --tp 2" "a fleet runs live with one GPU a replica (replica 0 has --tp 2 --ep 1)"
expect 2 "sim --disagg --executor gpu, no GPU" -- "$bin" sim --replicas 2 --executor gpu --disagg every,link=host --no-progress
contains "sim --disagg --executor gpu, no GPU" "tessera sim: --executor gpu: replica 0 (GPU 0): "
for p in "dllm-cache:token's attention and FFN outputs" "focus:request's eviction progress"; do
    expect 2 "sim --disagg --executor gpu --policy ${p%%:*}" -- "$bin" sim --replicas 2 --executor gpu --policy "${p%%:*}" \
        --disagg every,link=host --no-progress
    contains "sim --disagg --executor gpu --policy ${p%%:*}" "a live move carries a request's K and V alone, and policy '${p%%:*}' keeps each ${p#*:}"
done
printf '2 --gpu h100\n2 --gpu h100 --decode threshold:2\n' >"$tmp/disagg-mixed.txt"
expect 2 "sim --disagg, pools decoding differently" -- "$bin" sim --fleet "$tmp/disagg-mixed.txt" --disagg every,link=host
contains "sim --disagg, pools decoding differently" "--disagg: replica 2's decode model differs from replica 0's"
expect 2 "sim --disagg without a fleet" -- "$bin" sim --disagg every,link=host
contains "sim --disagg without a fleet" "--disagg: a fleet's option (--replicas N or --fleet FILE)"
expect 0 "list links" -- "$bin" list links
contains "list links: the table with its sources" "ConnectX-7"
expect 0 "list routers" -- "$bin" list routers
contains "list routers" "phase-aware"
expect 0 "sim --admit defer" -- "$bin" sim --replicas 2 --requests 100 --rps 8 --admit-max 4 --admit defer --no-progress
contains "sim --admit defer" "100 finished, 0 rejected"
contains "sim --admit defer" "held back by --admit-max a while"
expect 2 "sim --admit unknown" -- "$bin" sim --replicas 2 --admit-max 4 --admit wait
contains "sim --admit unknown" "--admit: 'wait' is not refuse or defer"
expect 2 "sim --router unknown" -- "$bin" sim --replicas 2 --router nearest
contains "sim --router unknown" "'nearest' is not a router (round-robin, least-outstanding, least-kv, phase-aware, affinity)"
# prompt blocks kept across requests, and the router that routes by them
for i in 0 1 2 3 4 5; do
    printf '{"timestamp": %d, "input_length": %d, "output_length": 32, "hash_ids": [7, %s%d]}\n' \
        $((i * 60000)) $((1024 + 100 * (i % 2))) "$([ $((i % 2)) = 1 ] && echo '8, ')" $((100 + i))
done >"$tmp/conv.jsonl"
pc=(--trace "$tmp/conv.jsonl" --model sdar-8b --policy block --gen-len 32 --no-progress)
expect 0 "sim --prompt-cache" -- "$bin" sim "${pc[@]}" --prompt-cache 100000
contains "sim --prompt-cache: the hits" "prompt cache  "
contains "sim --prompt-cache: the hits" "found cached"
expect 0 "sim --prompt-cache --json" -- "$bin" sim "${pc[@]}" --prompt-cache 100000 --json
contains "sim --prompt-cache --json" '"prompt_hit_tokens":'
expect 2 "sim --prompt-cache on a bidirectional prompt" -- "$bin" sim "${pc[@]}" --prompt-cache 100000 --model llada-8b
contains "sim --prompt-cache on a bidirectional prompt" "llada-8b under policy block attends bidirectionally over the prompt"
expect 2 "sim --prompt-cache without block ids" -- "$bin" sim --model sdar-8b --policy block --prompt-cache 100000 --no-progress
contains "sim --prompt-cache without block ids" "--prompt-cache: the workload (synthetic) gives no prompt block ids"
expect 2 "sim --prompt-cache live" -- "$bin" sim "${pc[@]}" --prompt-cache 100000 --executor gpu
contains "sim --prompt-cache live" "--prompt-cache: the engine keeps no K/V across requests"
expect 0 "sim --router affinity" -- "$bin" sim "${pc[@]}" --prompt-cache 100000 --replicas 2 --router affinity:threshold=0.4,abs=8
contains "sim --router affinity: the fleet's hits" "found cached"
# SGLang's radix cache of whole blocks as the prompt cache, the affinity router over it: the cached
# blocks' prefill forwards skipped
expect 0 "sim --system sglang --router affinity" -- "$bin" sim --trace "$tmp/conv.jsonl" --gen-len 32 --no-progress \
    --system sglang --model sdar-8b --max-running-requests 4 --prompt-cache 100000 --replicas 2 --router affinity
contains "sim --system sglang --router affinity: the fleet's hits" "found cached"
contains "sim --system sglang --router affinity: its policy" "2 x sdar-8b on h200 (sglang)"
expect 2 "sim --router affinity without a prompt cache" -- "$bin" sim "${pc[@]}" --replicas 2 --router affinity
contains "sim --router affinity without a prompt cache" "replica 0 keeps no prompt cache (--prompt-cache TOKENS)"
expect 2 "sim --router affinity on a trace without block ids" -- "$bin" sim --model sdar-8b --policy block --prompt-cache 100000 --replicas 2 --router affinity --no-progress
contains "sim --router affinity on a trace without block ids" "--router affinity: the workload (synthetic) gives no prompt block ids"
expect 2 "sim --router affinity parameter" -- "$bin" sim "${pc[@]}" --replicas 2 --router affinity:threshold=2
contains "sim --router affinity parameter" "--router 'threshold=2': threshold '2' must be a number in 0..1"
expect 2 "sim --router parameters of another router" -- "$bin" sim "${pc[@]}" --replicas 2 --router least-kv:abs=3
contains "sim --router parameters of another router" "router least-kv takes no parameters"
printf '{"timestamp": 0, "input_length": 600, "output_length": 32, "hash_ids": [1, -2]}\n' >"$tmp/bad.jsonl"
expect 2 "sim: a bad hash_ids item" -- "$bin" sim --trace "$tmp/bad.jsonl" --no-progress
contains "sim: a bad hash_ids item" "bad.jsonl:1: hash_ids: item 2 is not an integer in 0..2147483647"
# dllm-cache: every bad value refused by name; the preset runs and stores its parameters; live
# mode is refused at start, naming what the engine lacks
for bad in "--update-ratio 0|'0' is not a number in (0..1]" "--update-ratio 1.01|'1.01' is not a number in (0..1]" \
           "--prompt-interval 0|'0' is not a whole number in 1..1000000" \
           "--response-interval -3|'-3' is not a whole number in 1..1000000"; do
    opt=${bad%%|*} msg=${bad#*|}
    # shellcheck disable=SC2086 # the option and its value, a word each
    expect 2 "dllm-cache $opt" -- $bin sim --policy dllm-cache $opt
    contains "dllm-cache $opt" "$msg"
done
expect 0 "dllm-cache preset runs" -- "$bin" sim --system dllm-cache --requests 12 --gen-len 64 --quiet --db "$tmp/dc.db"
if [ "$(sqlite3 "$tmp/dc.db" "select json_extract(config_json, '$.prompt_interval') || ' ' ||
        json_extract(config_json, '$.response_interval') || ' ' || json_extract(config_json, '$.update_ratio') from runs")" = "100 7 0.25" ]
then ok; else bad "the dllm-cache run's configuration lacks its intervals and ratio"; fi
if [ "$(sqlite3 "$tmp/dc.db" "select count(*) > 0 and min(carry) > 0 and min(q_front = q + carry) = 1 and
        min(probe = 64) = 1 and min(picked = 16) = 1 from segments where probe > 0")" = 1 ]; then ok
else bad "the dllm-cache run stored no probing segments with their front rows, carried rows and picked rows"; fi
# focus: bad values refused by name; the preset runs, says which models it is for, and reports its
# redundancy, which stays below block+delayed's on the same requests
for bad in "--focus-alpha 0.5|'0.5' is not a number in 1..64" "--focus-snr 0|'0' is not a number in (0..100]"; do
    opt=${bad%%|*} msg=${bad#*|}
    # shellcheck disable=SC2086 # the option and its value, a word each
    expect 2 "focus $opt" -- $bin sim --policy focus $opt
    contains "focus $opt" "$msg"
done
expect 0 "focus preset runs" -- "$bin" sim --system focus --model sdar-8b --requests 40 --rps 4 --db "$tmp/focus.db"
contains "focus preset runs" "give --model sdar-8b or llada2.0-mini"
contains "focus preset runs" "redundancy "
$bin sim --model sdar-8b --policy block+delayed --scheduler request --decode threshold:sdar-low --requests 40 --rps 4 \
    --quiet --no-progress --db "$tmp/focus.db" --append >/dev/null 2>&1
if [ "$(sqlite3 "$tmp/focus.db" "select (select redundancy from summary where run_id = 1) <
        (select redundancy from summary where run_id = 2) and (select missed_decodes from summary where run_id = 1) > 0
        and (select missed_decodes from summary where run_id = 2) = 0")" = 1 ]; then ok
else bad "focus's redundancy not below block+delayed's, or its missed decodes not recorded"; fi
# its evicting segments carry their candidates (the block's masked rows) and the rows kept of them,
# which the later layers run after the decoded rows waiting for the cache (step_desc.evict)
if [ "$(sqlite3 "$tmp/focus.db" "select count(*) > 0 and min(q - picked = q_front - probe) = 1 and
        min(picked between 1 and probe) = 1 and sum(picked < probe) > 0 from segments where run_id = 1 and probe > 0")" = 1 ]
then ok; else bad "the focus run stored no evicting segments with their candidates and kept rows"; fi
expect 0 "block+delayed" -- "$bin" sim --model sdar-8b --policy block+delayed --requests 20 --quiet --no-progress
contains "block+delayed" "20 finished, 0 rejected"
expect 2 "unknown system" -- "$bin" sim --system trtllm
contains "unknown system" "fast-dllm"
expect 2 "bad number" -- "$bin" sim --rps fast
contains "bad number" "--rps: 'fast'"
expect 2 "stray argument" -- "$bin" sim extra

# every bad value is refused naming the option or field, the value as written and what is accepted
expect 2 "--requests 0" -- "$bin" sim --requests 0
contains "--requests 0 named" "--requests: '0' is not a whole number in 1..2147483647"
expect 2 "a missing option value" -- "$bin" sim --trace --rps 3
contains "a missing value says which option took the next flag" "--trace: missing value (the next argument is the option --rps)"
expect 2 "every request rejected" -- "$bin" sim --gen-len 1000000 --requests 5 --db "$tmp/rej.db"
contains "every request rejected, with the reasons" "every one of the 5 requests was rejected (5: G alone exceeds the model's maximum positions)"
[ ! -e "$tmp/rej.db" ] && ok || bad "a run whose requests were all rejected left a database"
printf '{"h200": {"bf16_flops": 700}}' >"$tmp/gpu-typo.json"
expect 2 "a misspelt --gpu-file key" -- "$bin" sim --gpu-file "$tmp/gpu-typo.json"
contains "a misspelt --gpu-file key named" "gpu-typo.json: h200.bf16_flops: unknown key"
printf '{"d_model": 4097, "n_heads": 32, "n_layers": 32, "vocab_size": 1000, "mlp_hidden_size": 100}' >"$tmp/c-odd.json"
expect 2 "hidden not a multiple of the heads" -- "$bin" sim --model "$tmp/c-odd.json"
contains "hidden not a multiple of the heads, named" "c-odd.json: hidden size 4097 is not a multiple of the 32 attention heads"
printf '{"d_model": 4096, "n_heads": 32, "n_layers": 1e12, "vocab_size": 1000}' >"$tmp/c-big.json"
expect 2 "n_layers 1e12" -- "$bin" sim --model "$tmp/c-big.json"
contains "n_layers 1e12 named with its range" "c-big.json: n_layers: 1000000000000 is not a whole number in 0..1000000000"
printf '{"d_model": 4096, "n_heads": 32, "vocab_size": 1000}' >"$tmp/c-nolayers.json"
expect 2 "a LLaDA config without n_layers" -- "$bin" sim --model "$tmp/c-nolayers.json"
contains "both names of the missing field" "num_hidden_layers or n_layers: missing"
printf '{"d_model": 1000000, "n_heads": 1, "n_layers": 2, "vocab_size": 1000, "mlp_hidden_size": 100}' >"$tmp/c-wide.json"
expect 2 "an implausible dimension" -- "$bin" sim --model "$tmp/c-wide.json"
contains "the implausible dimension named" "head_dim 1000000 is implausibly large (at most 16384)"
printf 'num_prefill_tokens,num_decode_tokens\n100,20\n1e30,5\n' >"$tmp/huge.csv"
expect 2 "a trace length of 1e30" -- "$bin" sim --trace "$tmp/huge.csv"
contains "a trace length as written" "huge.csv:3: num_prefill_tokens: '1e30' is not a plausible token count (0..100000000)"
expect 2 "mem plan --tokens -5" -- "$bin" mem plan --tokens -5
contains "mem plan names the option and its range" "--tokens: '-5' is not a whole number of tokens in 1..67108864"
expect 2 "mem plan, a missing value" -- "$bin" mem plan --planner --tokens 5
contains "mem plan, a missing value named" "--planner: missing value (the next argument is the option --tokens)"
expect 2 "--datadir pointing nowhere" -- "$bin" sim --datadir "$tmp/nowhere" --decode threshold:llada-gsm8k
contains "--datadir pointing nowhere names the file" "$tmp/nowhere/decode_profiles.json: cannot open: No such file or directory"

# arrivals past the clock (int64 nanoseconds less room for the simulation): a rate too low for its
# requests, a rescale or a trace file's span, each refused naming the rate or file, nothing written
expect 2 "sim --rps 1e-9" -- "$bin" sim --rps 1e-9 --requests 20 --db "$tmp/slow.db"
contains "sim --rps 1e-9" "arrival rate 1e-09 req/s: request 7 would arrive after 271 years, past the 146 years"
[ ! -e "$tmp/slow.db" ] && ok || bad "sim --rps 1e-9 left a database"
expect 2 "trace gen --rps 1e-12" -- "$bin" trace gen --rps 1e-12 --requests 5 --out "$tmp/slow.csv"
contains "trace gen --rps 1e-12" "raise --rps or lower --requests"
[ ! -e "$tmp/slow.csv" ] && ok || bad "trace gen --rps 1e-12 wrote its file"
expect 0 "sim --rps 2e-9, three requests (inside the clock)" -- "$bin" sim --rps 2e-9 --requests 3 --quiet
printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,50\n9000000000000000000,100,50\n' >"$tmp/far.csv"
expect 2 "a trace spanning past the clock" -- "$bin" sim --trace "$tmp/far.csv" --quiet
contains "a trace spanning past the clock" "far.csv: request 2 arrives 285 years after the first"
printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,50\n1000000000,100,50\n' >"$tmp/near.csv"
expect 2 "sim --trace --rps 1e-10 (a rescale past the clock)" -- "$bin" sim --trace "$tmp/near.csv" --rps 1e-10 --quiet
contains "sim --trace --rps 1e-10 (a rescale past the clock)" "request 2 would arrive after 317 years"
# a malformed trace row: FILE:LINE: FIELD: problem, status 2, no database
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2031-03-04 05:06:07.10,1808,10\n2031-03-04 05:06:07.15,31x0,8\n' >"$tmp/bad.csv"
expect 2 "malformed trace" -- "$bin" sim --trace "$tmp/bad.csv" --db "$tmp/run.db"
contains "malformed trace" "$tmp/bad.csv:3: ContextTokens: not an integer ('31x0')"
if [ -e "$tmp/run.db" ] || ls "$tmp"/run.db* >/dev/null 2>&1; then bad "a database was left behind"; else ok; fi
printf 'num_prefill_tokens,num_decode_tokens\n100,20\n200,-3\n' >"$tmp/neg.csv"
expect 2 "negative length" -- "$bin" sim --trace "$tmp/neg.csv"
contains "negative length" "$tmp/neg.csv:3: num_decode_tokens: negative length ('-3')"
printf '{"timestamp": 5, "input_length": 10, "output_length": 4}\n{"timestamp": 1, "input_length": 10, "output_length": 4}\n' >"$tmp/back.jsonl"
expect 2 "time backwards" -- "$bin" sim --trace "$tmp/back.jsonl"
contains "time backwards" "$tmp/back.jsonl:2: timestamp: time goes backwards"
expect 0 "--skip-bad-rows" -- "$bin" sim --trace "$tmp/bad.csv" --skip-bad-rows --db "$tmp/skip.db" --no-progress
contains "--skip-bad-rows" "skipped 1 malformed rows"
if [ "$(sqlite3 "$tmp/skip.db" 'select count(*) from requests' 2>/dev/null)" = 1 ]; then ok; else bad "skip.db should hold 1 request"; fi

# the database: tables and a query a user would run
expect 0 "sim --db" -- "$bin" sim --requests 30 --db "$tmp/ok.db" --quiet
for t in runs requests steps segments summary op_breakdown; do
    n=$(sqlite3 "$tmp/ok.db" "select count(*) from $t" 2>/dev/null)
    if [ -n "$n" ] && [ "$n" -gt 0 ]; then ok; else bad "table $t empty or missing"; fi
done
expect 0 "sim --no-steps" -- "$bin" sim --requests 30 --db "$tmp/ns.db" --no-steps --quiet
if [ "$(sqlite3 "$tmp/ns.db" 'select count(*) from steps')" = 0 ]; then ok; else bad "--no-steps wrote steps"; fi

# trace subcommands
expect 0 "trace gen" -- "$bin" trace gen --requests 100 --rps 5 --arrivals gamma:2 --out "$tmp/gen.csv"
expect 0 "trace info" -- "$bin" trace info "$tmp/gen.csv"
contains "trace info" "tessera trace, 100 requests"
expect 0 "trace info --json" -- "$bin" trace info "$tmp/gen.csv" --json
json_check "$tmp/out" 'd["requests"] == 100 and d["format"] == "tessera"'
expect 0 "trace fit" -- "$bin" trace fit "$tmp/gen.csv"
contains "trace fit" "--lengths lognormal:"
expect 0 "sim on a generated trace" -- "$bin" sim --trace "$tmp/gen.csv" --quiet
# OSC's length profile: queries up to 512 tokens (its dataset truncates there), summaries up to 134
expect 0 "trace gen --lengths osc" -- "$bin" trace gen --requests 2000 --rps 5 --lengths osc --out "$tmp/osc.csv"
[ "$(awk -F, 'NR > 1 { if ($2 + 0 > p) p = $2 + 0; if ($3 + 0 > o) o = $3 + 0 } END { print p, (o <= 134) }' "$tmp/osc.csv")" = "512 1" ] &&
    ok || bad "trace gen --lengths osc: its longest query is not 512, or a summary is over 134"
expect 2 "an unknown length profile" -- "$bin" sim --lengths alpaca --requests 2
contains "an unknown length profile" "lengths 'alpaca': expected sharegpt, sharegpt-first, wildchat, math, osc, livebench, burstgpt, fixed:P,O"
expect 2 "trace info missing file" -- "$bin" trace info "$tmp/none.csv"
contains "missing file" "cannot open"
expect 2 "trace gen bad arrivals" -- "$bin" trace gen --arrivals weibull
# trace gen's workload options are tessera sim's rows: the same checks, the same words
expect 2 "trace gen --requests 0" -- "$bin" trace gen --requests 0
"$bin" sim --requests 0 >"$tmp/sim-req0.txt" 2>&1
msg=$(sed -n 's/^tessera sim: //p' "$tmp/sim-req0.txt" | head -1)
[ -n "$msg" ] && grep -qF -- "$msg" "$tmp/out" && ok || bad "trace gen --requests 0 says otherwise than sim ('$msg')"
expect 2 "trace gen --seed -1" -- "$bin" trace gen --seed -1
contains "trace gen --seed -1" "--seed"
expect 0 "trace gen --rps 0 is its default rate" -- "$bin" trace gen --requests 50 --rps 0 --seed 3 --out "$tmp/rps0.csv"
expect 0 "trace gen --rps 1" -- "$bin" trace gen --requests 50 --rps 1 --seed 3 --out "$tmp/rps1.csv"
cmp -s "$tmp/rps0.csv" "$tmp/rps1.csv" && ok || bad "trace gen --rps 0 is not 1 req/s"

# figures from a database
if command -v gnuplot >/dev/null; then
    expect 0 "plot latency-cdf" -- bash "$(dirname "$0")/../analysis/plot.sh" latency-cdf "$tmp/cdf.png" "$tmp/ok.db"
    is_png "$tmp/cdf.png" latency-cdf
    expect 0 "plot steps" -- bash "$(dirname "$0")/../analysis/plot.sh" steps "$tmp/steps.png" "$tmp/ok.db"
    expect 2 "plot steps without steps" -- bash "$(dirname "$0")/../analysis/plot.sh" steps "$tmp/x.png" "$tmp/ns.db"
    expect 0 "plot ops" -- bash "$(dirname "$0")/../analysis/plot.sh" ops "$tmp/ops.png" "$tmp/ok.db"
    # engine_bench's figure, from a recorded H200 bench and anchor; bad input names file and line
    res="$(dirname "$0")/../experiments/records/engine-h200" bp="$(dirname "$0")/../analysis/bench-plot.sh"
    if command -v python3 >/dev/null; then
        expect 0 "bench-plot" -- bash "$bp" "$res/engine_bench.jsonl" "$tmp/bench.png" "$res/anchor.jsonl"
        contains "bench-plot: the default steps have their goals" "1.443 x its floor (goal 1.30)"
        is_png "$tmp/bench.png" bench-plot
        { head -3 "$res/engine_bench.jsonl"; echo '{"case":"reuse 1 x 32 over 480 cached","ms":'; } >"$tmp/bad.jsonl"
        expect 1 "bench-plot on a truncated line" -- bash "$bp" "$tmp/bad.jsonl" "$tmp/x.png"
        contains "bench-plot names the line" "bad.jsonl:4: not JSON"
        echo '{"case":"reuse 1 x 32 over 480 cached","floor_ms":3.8}' >"$tmp/bad.jsonl"
        expect 1 "bench-plot without a step time" -- bash "$bp" "$tmp/bad.jsonl" "$tmp/x.png"
        contains "bench-plot names the field" 'bad.jsonl:1: case "reuse 1 x 32 over 480 cached": field ms missing'
        expect 2 "bench-plot on a missing file" -- bash "$bp" "$tmp/none.jsonl" "$tmp/x.png"
        # a step of engine_bench --step: no goal, no anchor (the anchor's shapes are the default four's)
        echo '{"case":"step 4x256 over 1024 cached, 256 logits","ms":20,"floor_ms":15,"gemm_only_ms":16}' >"$tmp/own.jsonl"
        expect 0 "bench-plot of an own step" -- bash "$bp" "$tmp/own.jsonl" "$tmp/own.png" "$res/anchor.jsonl"
        contains "bench-plot: an own step has no goal" "1.333 x its floor (no goal)"
        # engine_bench --warm-trace's figure, from a recorded trace; bad input names file, line, field
        wp="$(dirname "$0")/../analysis/warm-plot.sh"
        record engine-h200 warm_trace.csv.gz "$tmp/warm_trace.csv.gz"
        expect 0 "warm-plot" -- bash "$wp" "$tmp/warm_trace.csv.gz" "$tmp/warm.png"
        is_png "$tmp/warm.png" warm-plot
        { echo 'label,phase,round,graph,t_s,ms'; echo '"reuse 1 x 32: step",warm,0,-1,0.01,4.9';
          echo '"reuse 1 x 32: step",hot,1,-1,0.02,4.9'; } >"$tmp/bad.csv"
        expect 1 "warm-plot on a bad phase" -- bash "$wp" "$tmp/bad.csv" "$tmp/x.png"
        contains "warm-plot names the line and field" "bad.csv:3: field phase: 'hot' is not warm or timed"
        { echo 'label,phase,round,graph,t_s,ms'; echo '"reuse 1 x 32: step",warm,0,-1,0.01,x'; } >"$tmp/bad.csv"
        expect 1 "warm-plot on a time that is no number" -- bash "$wp" "$tmp/bad.csv" "$tmp/x.png"
        contains "warm-plot names the line" "bad.csv:2: field t_s or ms: not a number"
        echo 'case,ms' >"$tmp/bad.csv"
        expect 1 "warm-plot on another CSV" -- bash "$wp" "$tmp/bad.csv" "$tmp/x.png"
        contains "warm-plot names the header" "bad.csv:1: header"
        expect 2 "warm-plot on a missing file" -- bash "$wp" "$tmp/none.csv" "$tmp/x.png"
        # engine_bench --anchor's figure: every step of the anchor's shapes beside PyTorch eager's
        ap="$(dirname "$0")/../analysis/anchor-plot.sh"
        expect 0 "anchor-plot" -- bash "$ap" "$res/engine_anchor.jsonl" "$tmp/anchor.png"
        contains "anchor-plot: a step beside PyTorch's" "1 x 8192       refresh all        266.280    1.301    311.671    1.522    1.17 x"
        contains "anchor-plot: the geometric mean" "geometric mean 2.10 x over 21 steps"
        is_png "$tmp/anchor.png" anchor-plot
        { head -2 "$res/engine_anchor.jsonl"; echo '{"anchor_step":"reuse","B":1,'; } >"$tmp/bad.jsonl"
        expect 1 "anchor-plot on a truncated line" -- bash "$ap" "$tmp/bad.jsonl" "$tmp/x.png"
        contains "anchor-plot names the line" "bad.jsonl:3: not JSON"
        echo '{"anchor_step":"reuse","B":1,"T":512,"ms":4.8}' >"$tmp/bad.jsonl"
        expect 1 "anchor-plot without a floor" -- bash "$ap" "$tmp/bad.jsonl" "$tmp/x.png"
        contains "anchor-plot names the field" "bad.jsonl:1: field floor_ms missing"
        expect 1 "anchor-plot on a bench without the anchor's shapes" -- bash "$ap" "$res/engine_bench.jsonl" "$tmp/x.png"
        contains "anchor-plot says what is missing" "no anchor steps"
        expect 2 "anchor-plot on a missing file" -- bash "$ap" "$tmp/none.jsonl" "$tmp/x.png"
    fi
fi

# the engine's command line (its GPU work runs on a GPU machine: make check-gpu)
if $bin --help | grep -q "CUDA engine (built in)"; then
    expect 0 "engine --help" -- "$bin" engine --help
    expect 2 "engine replay without --db" -- "$bin" engine replay
    contains "engine replay without --db" "which database"
    eb="$(dirname "$bin")/engine_bench" ce="$(dirname "$bin")/tests/gpu/check_engine"
    expect 0 "engine_bench --help" -- "$eb" --help
    expect 2 "engine_bench bad --only" -- "$eb" --only everything
    expect 2 "engine_bench, a typo'd option" -- "$eb" --repz 3
    contains "engine_bench, a typo'd option" "did you mean --reps?"
    # the anchor's output is read, and refused naming file, line and field, before any GPU work
    printf '{"B": 1, "T": 512, "masked": 256, "refresh_all_logits_ms": 20}\n' >"$tmp/anchor.jsonl"
    expect 2 "engine_bench --anchor without a time" -- "$eb" --anchor "$tmp/anchor.jsonl"
    contains "engine_bench --anchor names the field" "anchor.jsonl:1: refresh_masked_logits_ms: missing field"
    expect 2 "engine_bench --anchor on a missing file" -- "$eb" --anchor "$tmp/none.jsonl"
    contains "engine_bench --anchor names the file" "none.jsonl"
    expect 2 "engine_bench --anchor with --only gemm" -- "$eb" --only gemm --anchor "$tmp/anchor.jsonl"
    contains "engine_bench --anchor runs alone or after the bench" "the anchor's shapes run alone"
    expect 2 "engine unknown subcommand" -- "$bin" engine fly
    contains "engine unknown subcommand" "replay, profile, generate"
    expect 2 "tessera engine check: the suite is a program of its own" -- "$bin" engine check
    contains "tessera engine check: the suite is a program of its own" "build/tests/gpu/check_engine"
    expect 0 "check_engine --help" -- "$ce" --help
    for part in 0/4 5/4 2/0 2/4x 2 x/4; do # the steps half's parts: K of N, 1 <= K <= N <= 64
        expect 2 "check_engine --only steps:$part" -- "$ce" --only "steps:$part"
        contains "check_engine --only steps:$part" "--only: bad value 'steps:$part'"
    done
    if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then # (where a GPU answers, make check-gpu runs it)
        expect 2 "check_engine without a GPU" -- "$ce"
        contains "check_engine without a GPU" "no CUDA device"
        expect 2 "check_engine --only steps:2/4 without a GPU" -- "$ce" --only steps:2/4
        contains "check_engine --only steps:2/4 without a GPU" "no CUDA device"
    fi
    expect 2 "check_engine --tp with --only" -- "$ce" --tp 2 --only kernels
    contains "check_engine --tp with --only" "--only runs on one GPU"
else
    expect 2 "engine not built" -- "$bin" engine replay --db "$tmp/x.db"
    contains "engine not built" "built without CUDA"
fi

# activation-memory planners
expect 0 "mem plan" -- "$bin" mem plan --planner caching --tokens 2048 --softmax-copy 4
contains "mem plan" "inflation"
expect 0 "mem plan --json" -- "$bin" mem plan --planner first-fit --tokens 2048 --json
json_check "$tmp/out" 'd["peak_bytes"] == d["theoretical_bytes"] and d["plan_us"] > 0'
# a fused FFN has no gate/up buffer: LLaDA-8B's 8192-token step peaks at its LM head (x + a 2048-row logit chunk)
# a chunk search reports its time and plans: brute force tries more than the bottleneck-driven one
expect 0 "mem plan, lazy search" -- "$bin" mem plan --tokens 300000 --mask-ratio 0.5 --chunking lazy --budget-gib 24 --json
lazy_plans=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["plans_tried"] if d["fits"] and d["search_us"] > 0 else -1)' "$tmp/out")
expect 0 "mem plan, brute-force search" -- "$bin" mem plan --tokens 300000 --mask-ratio 0.5 --chunking brute --budget-gib 24 --json
brute_plans=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["plans_tried"] if d["fits"] and d["search_us"] > 0 else -1)' "$tmp/out")
[ "$lazy_plans" -ge 1 ] && [ "$brute_plans" -gt "$lazy_plans" ] && ok || bad "chunk searches: lazy $lazy_plans plans, brute $brute_plans"
expect 2 "mem plan --ilp-seconds 0" -- "$bin" mem plan --planner ilp --ilp-seconds 0
contains "mem plan --ilp-seconds names its range" "--ilp-seconds: '0' is not a number of seconds in (0, 3600]"
expect 0 "mem plan --ilp-tensors" -- "$bin" mem plan --planner ilp --tokens 64 --ilp-tensors 500 --ilp-seconds 0.2 --json
contains "mem plan --ilp-tensors solves the whole graph (or says it stopped)" '"planner":"ilp"'
expect 0 "mem plan --fused-ffn" -- "$bin" mem plan --tokens 8192 --max-num-logits 2048 --fused-ffn --json
json_check "$tmp/out" 'd["fused_ffn"] and d["theoretical_bytes"] == 8192 * 4096 * 2 + 2048 * 126464 * 2'
expect 0 "mem lmax --fused-ffn" -- "$bin" mem lmax --mem-limit 24 --mask-ratio 0.02 --fused-ffn --json
json_check "$tmp/out" 'd["lmax"] > 150000'
expect 2 "mem lmax --live --fused-ffn" -- "$bin" mem lmax --live --fused-ffn
contains "mem lmax --live --fused-ffn" "plans its FFN split"
expect 1 "mem plan over budget" -- "$bin" mem plan --tokens 65536 --budget-gib 1 --chunking lazy
contains "mem plan over budget" "does not fit"
expect 0 "mem lmax" -- "$bin" mem lmax --gpu rtx4090 --planner first-fit --mask-ratio 0.5 --chunking lazy
contains "mem lmax" "L_max ="
contains "mem lmax: the chunk search keeps Mosaic's margin" "keeping 900 MiB more free"
# the chunk search's margin (Mosaic's 900 MiB; an MoE model's 1,600) comes off the activations' budget;
# --search-margin-mib 0 plans in all of it, and the unchunked planner keeps none
for m in llada-8b:943718400 llada-moe-7b:1677721600; do
    expect 0 "mem lmax, ${m%%:*}'s margin" -- "$bin" mem lmax --model "${m%%:*}" --gpu rtx3090 --mask-ratio 0.5 --chunking lazy --json
    cp "$tmp/out" "$tmp/margin.json"
    expect 0 "mem lmax, ${m%%:*} without a margin" -- "$bin" mem lmax --model "${m%%:*}" --gpu rtx3090 --mask-ratio 0.5 --chunking lazy --search-margin-mib 0 --json
    python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); m=int(sys.argv[3])
sys.exit(not (a["search_margin_bytes"] == m and b["search_margin_bytes"] == 0 and
              b["activation_budget_bytes"] - a["activation_budget_bytes"] == m and a["lmax"] < b["lmax"]))' \
        "$tmp/margin.json" "$tmp/out" "${m##*:}" && ok || bad "mem lmax: ${m%%:*}'s chunk search margin"
done
expect 0 "mem lmax, unchunked: no margin" -- "$bin" mem lmax --mask-ratio 0.5 --json
json_check "$tmp/out" 'd["search_margin_bytes"] == 0'
expect 0 "mem plan, lazy search with a margin" -- "$bin" mem plan --tokens 300000 --mask-ratio 0.5 --chunking lazy --budget-gib 24 --search-margin-mib 2048 --json
json_check "$tmp/out" 'd["fits"] and d["search_margin_bytes"] == 2 << 30 and d["peak_bytes"] <= 22 << 30'
expect 2 "mem --search-margin-mib -1" -- "$bin" mem lmax --search-margin-mib -1
contains "mem --search-margin-mib names its range" "--search-margin-mib: '-1' is not a number of MiB in 0..1048576"
expect 2 "sim --search-margin-mib x" -- "$bin" sim --system mosaic --search-margin-mib x
contains "sim --search-margin-mib names itself" "--search-margin-mib: 'x' is not a number in 0..1048576 MiB"
# Mosaic's layer (--act-layout mosaic, graph_builder.py's plan): Dream-7B holds 28 KiB a token once
# finely chunked where the engine's layer holds 23, so its L_max falls; LLaDA-8B's is the same either way
expect 0 "mem plan --act-layout mosaic" -- "$bin" mem plan --model dream-7b --tokens 10000 --logit-rows 64 --ffn-chunks 64 --act-layout mosaic --json
json_check "$tmp/out" 'd["act_layout"] == "mosaic" and d["peak_bytes"] == 286720000'
expect 0 "mem plan, the engine's layout" -- "$bin" mem plan --model dream-7b --tokens 10000 --logit-rows 64 --ffn-chunks 64 --json
json_check "$tmp/out" 'd["act_layout"] == "engine" and d["peak_bytes"] < 286720000'
for m in dream-7b llada-8b; do
    expect 0 "mem lmax, $m, the engine's layer" -- "$bin" mem lmax --model $m --gpu rtx3090 --mask-ratio 0.5 --chunking lazy --json
    cp "$tmp/out" "$tmp/engine.json"
    expect 0 "mem lmax, $m, Mosaic's layer" -- "$bin" mem lmax --model $m --gpu rtx3090 --mask-ratio 0.5 --chunking lazy --act-layout mosaic --json
    python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
sys.exit(not (b["act_layout"] == "mosaic" and (b["lmax"] < 0.85 * a["lmax"] if sys.argv[3] == "dream-7b" else b["lmax"] == a["lmax"])))' \
        "$tmp/engine.json" "$tmp/out" $m && ok || bad "mem lmax: $m in Mosaic's layout"
done
expect 0 "mem lmax --act-layout mosaic, text" -- "$bin" mem lmax --model dream-7b --gpu rtx3090 --chunking lazy --act-layout mosaic
contains "mem lmax names its layout" "mosaic layout"
expect 2 "mem --act-layout vllm" -- "$bin" mem plan --act-layout vllm
contains "mem --act-layout names the layouts" "--act-layout: 'vllm' is not engine or mosaic"
expect 2 "mem lmax --live --act-layout mosaic" -- "$bin" mem lmax --live --act-layout mosaic
contains "mem lmax --live refuses Mosaic's layout" "drop --act-layout"
expect 2 "sim --act-layout vllm" -- "$bin" sim --act-layout vllm --requests 2
contains "sim --act-layout names the layouts" "--act-layout: 'vllm' is not engine or mosaic"
expect 0 "sim --system mosaic: its layout in the configuration" -- "$bin" sim --system mosaic --model dream-7b --gpu rtx3090 --requests 2 --gen-len 32 --quiet --db "$tmp/layout.db"
[ "$(sqlite3 "$tmp/layout.db" "SELECT json_extract(config_json, '\$.act_layout') FROM runs")" = mosaic ] && ok ||
    bad "sim --system mosaic: act_layout not stored in the run's configuration"
expect 0 "list systems mosaic" -- "$bin" list systems mosaic
contains "list systems: the mosaic preset's layout" "--lazy-chunking --act-layout mosaic"
expect 0 "mem lmax --mem-limit" -- "$bin" mem lmax --mem-limit 24 --planner caching --softmax-copy 4 --json
json_check "$tmp/out" 'd["mem_bytes"] == 24000000000 and 5000 < d["lmax"] < 12000'
expect 2 "mem lmax bad --layers" -- "$bin" mem lmax --live --layers 0
expect 2 "mem lmax --live profiled" -- "$bin" mem lmax --live --planner profiled
contains "mem lmax --live profiled" "fixed step"
if $bin --help | grep -q "CUDA engine (built in)"; then
    expect 1 "mem lmax --live without a GPU" -- "$bin" mem lmax --live --mem-limit 24
    contains "mem lmax --live without a GPU" "no CUDA device"
else
    expect 2 "mem lmax --live, engine not built" -- "$bin" mem lmax --live --mem-limit 24
    contains "mem lmax --live, engine not built" "built without CUDA"
fi
# the simulator reserves what the chosen planner plans: the phase scheduler's reservation (its
# profiled step, max_num_batched_tokens 16,384 with 2,048-row logit chunks) is `mem plan`'s peak
for p in first-fit greedy-size caching profiled ilp; do
    expect 0 "mem plan --planner $p at the phase cap" -- "$bin" mem plan --planner $p --tokens 16384 --logit-rows 16384 --max-num-logits 2048 --json
    cp "$tmp/out" "$tmp/plan.json"
    expect 0 "sim --planner $p" -- "$bin" sim --planner $p --requests 3 --json --quiet --no-progress
    command -v python3 >/dev/null && { python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['act_reserved_bytes']; b=json.load(open(sys.argv[2]))['peak_bytes']; sys.exit(a != b)" "$tmp/out" "$tmp/plan.json" && ok || bad "sim --planner $p reserves other than mem plan plans"; }
done
expect 2 "mem unknown planner" -- "$bin" mem plan --planner buddy
contains "mem unknown planner" "caching, profiled, first-fit, greedy-size, ilp"

# the calibrated cost model
expect 0 "calib show" -- "$bin" calib show
contains "calib show" "calibration of llada-8b on NVIDIA H200"
# the shipped LLaDA-8B and SDAR-8B calibrations were profiled under this build's launch rules
# (sim/core/attn_rules.h)
rules=$(awk '$1 == "#define" && $2 == "ATTN_RULES" { print $3 }' "$root/sim/core/attn_rules.h")
contains "calib show names its launch rules" "attention launch rules ${rules:?ATTN_RULES not found in attn_rules.h}"
expect 0 "calib show --calib" -- "$bin" calib show --calib "$root/sim/data/calib/h200-sdar-8b-tessera.csv"
contains "calib show --calib" "calibration of sdar-8b"
contains "calib show names this build's launch rules" "attention launch rules ${rules:?ATTN_RULES not found in attn_rules.h}"
expect 2 "calib show with another subcommand's option" -- "$bin" calib show --db x.db
contains "calib show with another subcommand's option" "--db does not apply here (show takes"
expect 2 "calib show with the calibration twice" -- "$bin" calib show a.csv --calib b.csv
contains "calib show with the calibration twice" "the calibration twice"
expect 0 "sim --cost calibrated" -- "$bin" sim --cost calibrated --requests 20 --quiet
contains "sim --cost calibrated" "throughput"
expect 2 "calibrated without a calibration" -- "$bin" sim --cost calibrated --gpu rtx4090
contains "calibrated without a calibration" "no calibration for llada-8b on rtx4090"
# ...unless one is transferred from the H200's
data=$(dirname "$bin")/../sim/data
[ -d "$data" ] || data=sim/data
expect 0 "calib transfer" -- "$bin" calib transfer "$data/calib/h200-llada-8b-tessera.csv" --from h200 --to rtx4090 --out "$tmp/4090.csv"
contains "calib transfer" "on rtx4090 (roofline transfer from NVIDIA H200"
expect 0 "sim with a transferred calibration" -- "$bin" sim --cost calibrated --gpu rtx4090 --calib "$tmp/4090.csv" --requests 10 --quiet
# a calibration measured on one GPU is refused for another (the file and both GPUs named), and a
# transferred one for any GPU but its target
expect 2 "an H200 calibration for the H100" -- "$bin" sim --cost calibrated --gpu h100 --calib "$data/calib/h200-llada-8b-tessera.csv" --requests 2
contains "an H200 calibration for the H100" "h200-llada-8b-tessera.csv: a calibration measured on NVIDIA H200 (sm_90, 132 SMs), used for h100: carry it over first (tessera calib transfer"
expect 2 "a transferred calibration for another GPU" -- "$bin" sim --cost calibrated --gpu l40s --calib "$tmp/4090.csv" --requests 2
contains "a transferred calibration for another GPU" "measured on rtx4090 (roofline transfer from NVIDIA H200"
expect 2 "calib import for another GPU" -- "$bin" calib import "$data/calib/h200-llada-8b-tessera.csv" --gpu a100-80gb --out "$tmp/a100.csv"
contains "calib import for another GPU" "used for a100-80gb"
[ ! -e "$tmp/a100.csv" ] && ok || bad "a refused calib import left a file"
expect 2 "calib transfer without --to" -- "$bin" calib transfer "$data/calib/h200-llada-8b-tessera.csv" --from h200 --out "$tmp/x.csv"
[ ! -e "$tmp/x.csv" ] && ok || bad "calib transfer failure left a file"
expect 0 "calib price" -- "$bin" calib price --step 16,512,0,512
contains "calib price per op" "gate_up"
contains "calib price step" "step "
contains "calib price names the attention's launch" "launch     attention as the profiled engine launches it (launch rules $rules): 16 segments on the wgmma kernel"
# a bad host file is refused naming it once
printf 'bad\n' >"$tmp/badhost.csv"
expect 2 "--host, a bad file" -- "$bin" sim --host "$tmp/badhost.csv" --cost calibrated --requests 2
contains "--host, a bad file" "--host: $tmp/badhost.csv:1: header: column 'device' missing"
[ "$(grep -o "$tmp/badhost.csv" "$tmp/out" | wc -l)" = 1 ] && ok || bad "--host names its file more than once: $(cat "$tmp/out")"
# host profiles (tessera calib host, --host): the host of an eager calibration swapped for another
# machine's; a calibration without a host measured apart, a bad host file and --host without the
# calibrated back end are refused by name
expect 0 "list hosts" -- "$bin" list hosts
contains "list hosts" "h100-xeon    30.09 ms a step + 0.000 ms a segment, measured on NVIDIA H100 80GB HBM3"
expect 0 "calib host" -- "$bin" calib host "$data/calib/h200-llada-8b-torch-eager.csv" --out "$tmp/host.csv"
contains "calib host" "a step's issue takes 23.99 ms + 0.034 ms a segment (fitted on 52 host-bound steps, 80% of them 0.88-1.21x the line)"
expect 0 "calib host of a host file" -- "$bin" calib host h100-xeon
contains "calib host of a host file: the line alone" "(fitted on 59 host-bound steps); its"
cmp -s "$tmp/host.csv" "$data/hosts/h200-xeon.csv" && ok || bad "calib host --out is not the shipped h200-xeon.csv"
# (the names older runs stored the two under still take them)
expect 0 "calib host lent-h100" -- "$bin" calib host lent-h100
contains "calib host lent-h100" "a step's issue takes 30.09 ms"
# FFN chunks (the sixth field): a small step's FFN weights read once a chunk, so more chunks cost more
for f in 1 8; do
    expect 0 "calib price, $f FFN chunks" -- "$bin" calib price --roofline --model llada-8b --gpu a100-40gb \
        --step 1,64,0,32,2048,$f
    awk '$1 == "gate_up" { print $2 }' "$tmp/out" >"$tmp/gu-$f"
done
awk 'NR == FNR { a = $1; next } { exit !($1 > 4 * a) }' "$tmp/gu-1" "$tmp/gu-8" && ok ||
    bad "calib price: 8 FFN chunks of a 64-row step should read the gate/up weights 8 times"
expect 2 "calib price, 0 FFN chunks" -- "$bin" calib price --roofline --step 1,64,0,32,2048,0
contains "calib price, 0 FFN chunks" "FFN_CHUNKS 1 to 64"
expect 0 "calib price --host" -- "$bin" calib price --impl torch-eager --step 1,32,480,32 --host h100-xeon
contains "calib price --host" "step          30.131"
expect 0 "calib price with its own host" -- "$bin" calib price --impl torch-eager --step 1,32,480,32 --host "$tmp/host.csv"
contains "calib price with its own host" "step          24.026"
expect 2 "calib host of an engine calibration" -- "$bin" calib host "$data/calib/h200-llada-8b-tessera.csv"
contains "calib host of an engine calibration" "measured no host apart from its GPU"
expect 2 "calib price --host on an engine calibration" -- "$bin" calib price --step 1,32,480,32 --host h100-xeon
contains "calib price --host on an engine calibration" "--host h100-xeon: the calibration of llada-8b"
printf 'host0_ms,seg_ms,eager_gap_ms,steps,device\n-3,0.1,2,40,X\n' >"$tmp/badhost.csv"
expect 2 "a bad host profile" -- "$bin" calib price --impl torch-eager --step 1,32,480,32 --host "$tmp/badhost.csv"
contains "a bad host profile" "badhost.csv:2: expected host0_ms,seg_ms,eager_gap_ms,steps,device"
expect 2 "an unknown host profile" -- "$bin" sim --impl torch-eager --cost calibrated --host nosuch --requests 2
contains "an unknown host profile" "hosts/nosuch.csv: cannot open"
# a loop's own host line (calib host --probe --loop): priced as the loop's line, its multiple in it, and
# refused for another runtime, naming the one it was measured on; the loop probe's refusals come before
# anything runs
printf 'host0_ms,seg_ms,eager_gap_ms,steps,impl,device\n50,0,0,128,torch-fast-dllm,X (its own loop)\n' >"$tmp/loop-host.csv"
expect 0 "calib price on a loop's own line" -- "$bin" calib price --impl torch-fast-dllm --step 1,32,480,32 --host "$tmp/loop-host.csv"
contains "calib price on a loop's own line" "step          50.0"
expect 2 "a loop's own line for another runtime" -- "$bin" sim --system native --cost calibrated --host "$tmp/loop-host.csv" --requests 2
contains "a loop's own line for another runtime" "measured on torch-fast-dllm's own loop, not --impl torch-eager-f64's (give --impl torch-fast-dllm)"
expect 2 "calib host --probe --loop, an unknown loop" -- "$bin" calib host --probe --loop fastdllm
contains "calib host --probe --loop, an unknown loop" "a batch-1 loop tessera models: native, fast-dllm, dllm-cache, sparse-dllm"
expect 2 "calib host --probe --loop, no checkout" -- "$bin" calib host --probe --loop dllm-cache --code "$tmp/none"
contains "calib host --probe --loop, no checkout" "needs dllm-cache's checkout in $tmp/none/dllm-cache"
expect 2 "calib host --loop without --probe" -- "$bin" calib host --loop native
contains "calib host --loop without --probe" "(add --probe)"
expect 2 "calib host --probe --code without --loop" -- "$bin" calib host --probe --code "$tmp"
contains "calib host --probe --code without --loop" "--code names the checkouts of the loop --loop SYSTEM times"
expect 2 "--host on the engine's implementation" -- "$bin" sim --host h100-xeon --requests 2
contains "--host on the engine's implementation" "--host h100-xeon: the tessera implementation issues its steps from CUDA graphs"
# under the roofline, an eager implementation's launch costs scale from the host they were measured
# with (h200-xeon: no change) to the other's (h100-xeon: 30.09 / 23.99 ms a step, a slower run)
for h in h200-xeon h100-xeon; do
    $bin sim --impl torch-eager --host $h --requests 20 --quiet --no-progress --json >"$tmp/rh-$h.json" 2>&1
done
$bin sim --impl torch-eager --requests 20 --quiet --no-progress --json >"$tmp/rh-none.json" 2>&1
t() { sqlite3 :memory: "SELECT json_extract(readfile('$1'), '\$.makespan_ns')"; }
[ "$(t "$tmp/rh-h200-xeon.json")" = "$(t "$tmp/rh-none.json")" ] && [ "$(t "$tmp/rh-h100-xeon.json")" -gt "$(t "$tmp/rh-none.json")" ] &&
    ok || bad "roofline --host: h200-xeon should change nothing and h100-xeon slow the run"
expect 0 "sim --host" -- "$bin" sim --impl torch-eager --cost calibrated --host h100-xeon --requests 4 --quiet --db "$tmp/host.db"
[ "$(sqlite3 "$tmp/host.db" "SELECT json_extract(config_json, '\$.host') FROM runs")" = h100-xeon ] && ok ||
    bad "sim --host: the run's configuration does not name its host profile"
# --roofline needs no calibration: a card and model none was made for
expect 0 "calib price --roofline" -- "$bin" calib price --roofline --gpu rtx3090 --model dream-7b --impl torch-eager --step 1,4096,0,2048,0
contains "calib price --roofline" "dream-7b on rtx3090 (torch-eager): 1 x q 4096 over 0 cached, 2048 logit rows each (chunks of 0), roofline"
contains "calib price --roofline" "step "
expect 2 "calib price without --roofline, no calibration" -- "$bin" calib price --gpu rtx3090 --model dream-7b --step 1,4096,0,2048
expect 2 "--roofline elsewhere" -- "$bin" calib eval --roofline --db "$tmp/x.db"
contains "--roofline elsewhere" "--roofline does not apply here"
# the launch the calibration prices (its launch rules): SDAR-8B's Reuse blocks packed two query heads
# a block (GQA, rules 4), their keys split as attn_split_rule_pv works out (check_calib);
# LLaDA-8B's (MHA) one head a block
expect 0 "calib price, packed GQA heads" -- "$bin" calib price --step 8,32,4096,32 --model sdar-8b
contains "calib price, packed GQA heads" "(launch rules 4): 8 segments on the mma.sync kernel, 2 query heads a block, 2 key splits, 64-key K/V tiles"
expect 0 "calib price, MHA" -- "$bin" calib price --step 8,32,4096,32 --model llada-8b
contains "calib price, MHA" "8 segments on the mma.sync kernel, 1 query head a block"
expect 2 "calib price with a bad step" -- "$bin" calib price --step 1,0,0,0
contains "calib price names the field" "--step SEGS,Q,KV,LOGIT_ROWS"
expect 2 "calib price with trailing text in its step" -- "$bin" calib price --step 1,32,480,32x
contains "calib price with trailing text in its step" "--step SEGS,Q,KV,LOGIT_ROWS"
# a block-causal prefill (--attn-block): about half the bidirectional attention, by both back ends
expect 0 "calib price, block-causal" -- "$bin" calib price --step 1,8192,0,0 --model sdar-8b --attn-block 32
contains "calib price says the attention is block-causal" "attention block-causal over blocks of 32"
cp "$tmp/out" "$tmp/causal.out"
expect 0 "calib price, bidirectional" -- "$bin" calib price --step 1,8192,0,0 --model sdar-8b
if awk 'NR == FNR { if ($1 == "attention") { c = $2; r = $4 } next }
        $1 == "attention" { exit !(c < 0.6 * $2 && c > 0.4 * $2 && r < 0.52 * $4 && r > 0.48 * $4) }' \
    "$tmp/causal.out" "$tmp/out"; then ok; else bad "calib price --attn-block 32: attention not about half the bidirectional"; fi
expect 2 "calib price --attn-block not a size" -- "$bin" calib price --step 1,32,480,32 --attn-block -4
contains "calib price --attn-block names the value" "--attn-block '-4': a block size in tokens"
expect 0 "calib price, torch-eager calibration" -- "$bin" calib price --step 1,32,480,32 --impl torch-eager
expect 0 "calib show --gpu without a measured calibration" -- "$bin" calib show --gpu l40s
contains "calib show --gpu states the transfer" "no calibration measured on l40s"
contains "calib show --gpu states the assumptions" "assumes: what each op took beyond its roofline time"
expect 2 "calibrated beyond the range" -- "$bin" sim --cost calibrated --lengths fixed:3000,256 --max-num-batched-tokens 30000 --rps 50 --requests 40 --db "$tmp/range.db"
contains "calibrated beyond the range" "beyond the profiled range"
if [ -e "$tmp/range.db" ]; then bad "a database was left behind by a failed run"; else ok; fi
# calib merge: two copies of a calibration merge to itself; bad inputs named, no file left
expect 0 "calib merge of two copies" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" \
    "$data/calib/h200-llada-8b-tessera.csv" --gpu h200 --out "$tmp/m.csv"
contains "calib merge reports" "each the median of its times in 2 profiles (0 rows held by fewer"
cmp -s "$tmp/m.csv" "$data/calib/h200-llada-8b-tessera.csv" && ok || bad "calib merge of two copies changed the calibration"
expect 2 "calib merge of one profile" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" --gpu h200 --out "$tmp/x.csv"
contains "calib merge of one profile" "needs two or more PROFILEs"
expect 2 "calib merge of two models" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" \
    "$data/calib/h200-sdar-8b-tessera.csv" --gpu h200 --out "$tmp/x.csv"
contains "calib merge of two models" "h200-sdar-8b-tessera.csv: model 'sdar-8b', but"
expect 2 "calib merge of two implementations" -- "$bin" calib merge "$data/calib/h200-sdar-8b-tessera.csv" \
    "$data/calib/h200-sdar-8b-tessera-fused.csv" --gpu h200 --out "$tmp/x.csv"
contains "calib merge of two implementations" "h200-sdar-8b-tessera-fused.csv: has no op act"
expect 2 "calib merge of two engines' launch rules" -- "$bin" calib merge "$data/calib/h200-dream-7b-tessera.csv" \
    "$tmp/dream-rules3.csv" --gpu h200 --out "$tmp/x.csv"
contains "calib merge of two engines' launch rules" "profiled under attention launch rules 3"
# the select grid alone (engine profile --grid select) merges into a whole profile: its kv_select
# rows join, and the calibration then prices sparse selections
python3 - "$data/calib/h200-llada-8b-tessera.csv" "$tmp/select.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=rows[0].keys())
out.writeheader()
out.writerows(r for r in rows if int(r["keep"]) > 0)
PY
expect 0 "calib merge of a select part" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" "$tmp/select.csv" \
    --gpu h200 --out "$tmp/ms.csv"
expect 0 "sparse priced by a merged select part" -- "$bin" sim --policy sparse --cost calibrated --calib "$tmp/ms.csv" \
    --requests 10 --quiet
# --over: a select part profiled again replaces the selecting steps' rows, the other steps untouched
python3 - "$tmp/select.csv" "$tmp/select2.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    r["ms"] = repr(float(r["ms"]) * 2)
out = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=rows[0].keys())
out.writeheader()
out.writerows(rows)
PY
expect 0 "calib merge --over" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" --over "$tmp/select2.csv" \
    --gpu h200 --out "$tmp/mo.csv"
contains "calib merge --over counts what it replaced" "260 rows of the others replaced"
got=$(python3 - "$data/calib/h200-llada-8b-tessera.csv" "$tmp/mo.csv" <<'PY'
import csv, sys
def rows(f):
    return {tuple(v for k, v in r.items() if k not in ("ms", "total_ms")): float(r["ms"]) for r in csv.DictReader(open(f))}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
sel = [k for k in a if int(k[-5]) > 0]  # keep > 0: the selecting steps
print(set(a) == set(b), all(b[k] == a[k] for k in a if k not in sel), all(abs(b[k] - 2 * a[k]) < 1e-6 * b[k] + 1e-9 for k in sel))
PY
)
[ "$got" = "True True True" ] && ok || bad "calib merge --over: keys, other steps, replaced steps '$got'"
expect 2 "calib merge with --over alone" -- "$bin" calib merge --over "$tmp/select2.csv" --over "$tmp/select.csv" \
    --gpu h200 --out "$tmp/x.csv"
contains "calib merge with --over alone" "one other at least"
expect 2 "calib merge --over without a value" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" --over
contains "calib merge --over without a value" "--over needs a value"
expect 2 "calib import --over" -- "$bin" calib import "$tmp/select.csv" --over "$tmp/select.csv" --gpu h200 --out "$tmp/x.csv"
contains "calib import --over" "--over does not apply here"
grep -v ',kv_select,' "$data/calib/h200-sdar-8b-tessera-fused.csv" >"$tmp/nosel.csv"
expect 2 "sparse refused by a calibration without selections" -- "$bin" sim --policy sparse --cost calibrated \
    --model sdar-8b --impl tessera-fused --calib "$tmp/nosel.csv" --requests 10
contains "sparse refused by a calibration without selections" "has no uniform selection (kv_select) measurements"
# the lookahead scheduler: its projections keep every running request stepping (no stall) where phase's
# admissions leave some sitting steps out, in the summary, its JSON and the database
expect 0 "list schedulers" -- "$bin" list schedulers
contains "list schedulers names lookahead" "lookahead  phase with admission by projection"
for sch in phase lookahead; do
    expect 0 "sim --scheduler $sch --json" -- "$bin" sim --scheduler $sch --gpu rtx4090 --rps 4 --requests 200 \
        --no-progress --quiet --json --db "$tmp/$sch.db"
    sed -n 's/.*"num_stalls": *\([0-9]*\).*/\1/p' "$tmp/out" >"$tmp/$sch.stalls"
done
p=$(cat "$tmp/phase.stalls") l=$(cat "$tmp/lookahead.stalls")
[ "${p:-0}" -gt 0 ] && [ "$l" = 0 ] && ok || bad "stalls: phase '$p', lookahead '$l' (wanted some, and none)"
[ "$(sqlite3 "$tmp/lookahead.db" "SELECT num_stalls FROM summary" 2>/dev/null)" = 0 ] && ok || bad "lookahead.db's summary has no num_stalls 0"
[ "$(sqlite3 "$tmp/phase.db" "SELECT num_stalls FROM summary" 2>/dev/null)" = "$p" ] && ok || bad "phase.db's summary's num_stalls is not the JSON's $p"
expect 0 "sim --scheduler lookahead" -- "$bin" sim --scheduler lookahead --gpu rtx4090 --rps 4 --requests 50 --no-progress --quiet
contains "sim's summary counts the stalls" "0 preemptions, 0 stalls (of 50)"
# a preset's scheduler parameter is dropped where the user picks a scheduler without it; the user's own is not
expect 0 "a preset's scheduler replaced" -- "$bin" sim --system fast-dllm --scheduler phase --requests 2 --quiet
expect 0 "dllm-serve on the request scheduler" -- "$bin" sim --system dllm-serve --scheduler request --requests 2 --quiet
expect 2 "the user's parameter of another scheduler" -- "$bin" sim --system dllm-serve --scheduler request \
    --gpu-memory-utilization 0.8 --requests 2 --quiet
contains "the user's parameter of another scheduler" "--gpu-memory-utilization: not a parameter of policy sparse or scheduler request"
expect 2 "lookahead with --max-batch" -- "$bin" sim --scheduler lookahead --max-batch 4 --requests 2
contains "lookahead with --max-batch" "--max-batch: not a parameter"
# a line a preset, with its runtime and cost model; one in full by its name; a misspelt one suggested
expect 0 "list systems" -- "$bin" list systems
[ "$(wc -l <"$tmp/out")" -le 30 ] && ok || bad "list systems: $(wc -l <"$tmp/out") lines for a choice among presets"
grep -q "^dllm-serve  *torch-dllm-serve  *calibrated  *sparse  *phase  *validated  *dLLM-Serve" "$tmp/out" && ok ||
    bad "list systems: dllm-serve's line lacks its runtime, cost, policy, scheduler or how it is known"
expect 0 "list systems sglang" -- "$bin" list systems sglang
contains "list systems sglang" "--max-running-requests 1 --model llada2.0-mini"
[ "$(grep -c "^            from: " "$tmp/out")" = 1 ] && ok || bad "list systems sglang: not the one preset in full"
expect 2 "list systems sglan" -- "$bin" list systems sglan
contains "list systems sglan" "no system 'sglan' (did you mean sglang?)"
# a preset's whole configuration, its policy's parameters included
expect 0 "list systems all" -- "$bin" list systems all
contains "list systems shows a preset's policy parameters" "--planner profiled --sparse-select head"
contains "list systems shows Mosaic's switches" "--planner first-fit --mask-only --lazy-chunking"
# every preset says where its choices come from
[ "$(grep -c "^            from: " "$tmp/out")" = "$(grep -c "^            = --policy" "$tmp/out")" ] && ok ||
    bad "list systems: a preset without its sources"
contains "list systems names a preset's sources" "chosen-ox/dLLM-Serve dllmserve/layers/attention.py"
# sweeps: a grid of runs, each checked before any runs, as a Slurm job array or run here N at a time
printf '# policies by load\n--policy dual sparse\n--rps 1 4\n--requests 20   # every run\n' >"$tmp/grid.txt"
expect 0 "exp sweep --slurm" -- "$bin" exp sweep "$tmp/grid.txt" "$tmp/sws" --slurm
contains "exp sweep --slurm" "sweep: 4 runs from"
if grep -q -- "--array=1-4" "$tmp/sws/sweep.sbatch" && [ "$(wc -l <"$tmp/sws/runs.txt")" -eq 4 ] &&
    [ "$(sed -n 3p "$tmp/sws/runs.txt")" = "--policy sparse --rps 1 --requests 20 --db $tmp/sws/runs/run-3.db --quiet --no-progress" ]
then ok; else bad "exp sweep --slurm: its job array or runs.txt is not the grid's"; fi
# the time a batch of runs has left (experiments/lib/eta.sh, on a sweep's and exp run papers' lines): a
# finished run's line gets it at the pace so far, a line that ends no run and the last run's get none
eta=$( { echo "run 1 of 4 done"; sleep 1.2; echo "run 2 of 4 done"; echo "merging"; echo "run 3 of 4 done"
         sleep 1.2; echo "run 4 of 4 done"; } | bash -c 'source "$1/experiments/lib/eta.sh"; eta_lines 4' _ "$root")
if [[ $(sed -n 2p <<<"$eta") =~ ^"run 2 of 4 done (about "[1-9][0-9]*" s left)"$ ]] &&
    [ "$(sed -n 3p <<<"$eta")" = "merging" ] && [ "$(sed -n 5p <<<"$eta")" = "run 4 of 4 done" ]
then ok; else bad "eta_lines: $(tr '\n' '|' <<<"$eta")"; fi
# a sweep over presets of different runtimes (Fast-dLLM's PyTorch loop, dLLM-Serve's runtime) says it is not
# like for like and what holds them fixed; with --impl and --cost given it says nothing of it
printf -- '--system fast-dllm dllm-serve\n--requests 4\n' >"$tmp/sysgrid.txt"
expect 0 "exp sweep over presets" -- "$bin" exp sweep "$tmp/sysgrid.txt" "$tmp/sys1" --slurm
contains "exp sweep over presets" "sweep: note: its runs differ in runtime or cost model (runtime torch-dllm-serve, cost calibrated; runtime torch-fast-dllm, cost calibrated): give --impl and --cost"
printf -- '--system fast-dllm dllm-serve\n--impl tessera\n--cost calibrated\n--requests 4\n' >"$tmp/sysgrid.txt"
expect 0 "exp sweep over presets, like for like" -- "$bin" exp sweep "$tmp/sysgrid.txt" "$tmp/sys2" --slurm
grep -q "sweep: note: its runs differ" "$tmp/out" && bad "a like-for-like sweep said its runs differ" || ok
# nor is one over engines that cap the requests running at once differently (SGLang's dLLM default of one,
# vLLM's plugin's batch of 32): said with each cap and the options that set them; one cap for all says nothing
printf -- '--system sglang vllm-dllm-plugin\n--requests 4\n' >"$tmp/capgrid.txt"
expect 0 "exp sweep over capped engines" -- "$bin" exp sweep "$tmp/capgrid.txt" "$tmp/cap1" --slurm
contains "exp sweep over capped engines" "its runs cap the requests running at once differently (--max-batch 32; --max-running-requests 1): give each the same cap (--max-batch, --max-running-requests)"
printf -- '--system fast-dllm sparse-dllm\n--max-batch 8\n--requests 4\n' >"$tmp/capgrid.txt"
expect 0 "exp sweep, one cap" -- "$bin" exp sweep "$tmp/capgrid.txt" "$tmp/cap2" --slurm
grep -q "cap the requests running at once differently" "$tmp/out" && bad "a sweep with one cap said its caps differ" || ok
printf -- '--policy dual\n--rps 1 -4\n' >"$tmp/badgrid.txt"
expect 2 "exp sweep with a bad value" -- "$bin" exp sweep "$tmp/badgrid.txt" "$tmp/swb" --slurm
contains "exp sweep with a bad value" "run 2 (--policy dual --rps -4)"
printf -- '--policy dual\nrps 1\n' >"$tmp/badgrid.txt"
expect 2 "exp sweep with a bad line" -- "$bin" exp sweep "$tmp/badgrid.txt" "$tmp/swb" --slurm
contains "exp sweep with a bad line" "badgrid.txt:2: expected '--OPTION VALUE [VALUE ...]'"
printf -- '--db x.db\n' >"$tmp/badgrid.txt"
expect 2 "exp sweep sets --db itself" -- "$bin" exp sweep "$tmp/badgrid.txt" "$tmp/swb" --slurm
expect 2 "exp sweep --jobs 0" -- "$bin" exp sweep "$tmp/grid.txt" "$tmp/swb" --jobs 0
expect 0 "exp sweep" -- "$bin" exp sweep "$tmp/grid.txt" "$tmp/swp" --jobs 2
[ "$(grep -c "^sweep: run [1-4] of 4 done\( (about [0-9].* left)\)\?$" "$tmp/out")" -eq 4 ] && ok ||
    bad "exp sweep: not a line for each finished run (the time left after it, where a run took a second)"
got=$(sqlite3 "$tmp/swp/sweep.db" "SELECT group_concat(json_extract(config_json, '$.policy') || ':' ||
    json_extract(config_json, '$.rps') || ':' || num_finished, ' ') FROM runs JOIN summary USING (run_id)")
[ "$got" = "dual:1.0:20 dual:4.0:20 sparse:1.0:20 sparse:4.0:20" ] && ok || bad "exp sweep merged '$got'"
# its figures (two options vary, rps numeric: over rps, a curve a policy), and plot.sh sweep's refusals
if command -v gnuplot >/dev/null; then
    contains "exp sweep draws its figures" "sweep: $tmp/swp/throughput.png and $tmp/swp/latency.png over rps, a curve for each policy"
    is_png "$tmp/swp/throughput.png" "exp sweep" && is_png "$tmp/swp/latency.png" "exp sweep"
    expect 0 "plot.sh sweep" -- bash "$root/analysis/plot.sh" sweep "$tmp/swp/p99.png" "$tmp/swp/sweep.db" --rps lat_p99_s --policy
    is_png "$tmp/swp/p99.png" "plot.sh sweep"
    expect 2 "plot.sh sweep without BY" -- bash "$root/analysis/plot.sh" sweep "$tmp/x.png" "$tmp/swp/sweep.db" rps lat_p99_s
    contains "plot.sh sweep without BY" "the runs also differ in policy (give it as BY"
    expect 2 "plot.sh sweep over a name" -- bash "$root/analysis/plot.sh" sweep "$tmp/x.png" "$tmp/swp/sweep.db" policy lat_p99_s rps
    contains "plot.sh sweep over a name" "X 'policy' is not a number in every run's configuration (the options that vary: policy rps)"
    expect 2 "plot.sh sweep of no column" -- bash "$root/analysis/plot.sh" sweep "$tmp/x.png" "$tmp/swp/sweep.db" rps p99 policy
    contains "plot.sh sweep of no column" "'p99' is not a column of the summary table (num_requests"
    [ ! -e "$tmp/x.png" ] && ok || bad "plot.sh sweep drew a refused figure"
    # presets differ in many options at once: a curve a preset, since each curve holds one run an x
    printf -- '--system dllm-serve fast-dllm\n--rps 1 4\n--requests 10\n' >"$tmp/grid-sys.txt"
    expect 0 "exp sweep over presets" -- "$bin" exp sweep "$tmp/grid-sys.txt" "$tmp/sws2" --jobs 2
    contains "exp sweep over presets" "over rps, a curve for each system"
    is_png "$tmp/sws2/throughput.png" "exp sweep over presets"
fi
# a run that fails after the checks (planted: run 2's binary exits 3): it names its log, no run
# starts after it, the runs that finished are merged, and the sweep exits 1
printf '#!/usr/bin/env bash\ncase " $* " in *" --requests 1 "*) ;; *" --policy dual --rps 4 "*) echo planted >&2; exit 3 ;; esac\nexec "%s" "$@"\n' \
    "$bin" >"$tmp/failing-tessera"
chmod +x "$tmp/failing-tessera"
expect 1 "exp sweep with a failing run" -- env TESSERA="$tmp/failing-tessera" bash "$root/experiments/lib/sweep.sh" \
    "$tmp/grid.txt" "$tmp/swf" --jobs 1
contains "exp sweep with a failing run" "sweep: run 2 of 4 failed (its log: $tmp/swf/runs/run-2.log)"
contains "exp sweep with a failing run" "a run failed, so no more were started; the 1 that finished are merged"
[ ! -e "$tmp/swf/runs/run-3.log" ] && [ "$(sqlite3 "$tmp/swf/sweep.db" "SELECT count(*) FROM runs")" = 1 ] &&
    grep -q planted "$tmp/swf/runs/run-2.log" && ok || bad "exp sweep with a failing run: later runs started or run 1 not merged"
# tensor parallelism in the simulator: a degree that does not divide the heads, or is out of range,
# or with the calibrated back end, is refused at start; a run on two H200s takes the measured
# all-reduce times and reports them
expect 2 "--tp 3" -- "$bin" sim --tp 3 --requests 2
contains "--tp 3" "--tp: 3 does not divide llada-8b's 32 query and 32 K/V heads"
expect 2 "--tp 9" -- "$bin" sim --tp 9 --requests 2
contains "--tp 9" "--tp: '9' is not a whole number in 1..8 GPUs"
# the calibrated back end prices a GPU's share of the model from a calibration of that share
# (NAME-tpN, shipped for LLaDA-8B over two H200s) plus the measured all-reduces
expect 0 "--tp with calibrated" -- "$bin" sim --tp 2 --cost calibrated --requests 8 --rps 8
contains "--tp with calibrated" "allreduce"
expect 2 "--tp calibrated, no share's calibration" -- "$bin" sim --tp 2 --model dream-7b --cost calibrated --requests 2
contains "--tp calibrated, no share's calibration" "no calibration for dream-7b-tp2 on h200"
expect 0 "a share as a model" -- "$bin" list models
contains "a share as a model" "qk-norm,block,rope64      sigmoid+bias,norm,4/8g,x2.5" # LLaDA2.0-mini's attention and router
expect 0 "a share simulated" -- "$bin" sim --model llada-8b-tp2 --requests 4 --quiet
contains "a share simulated" "llada-8b-tp2 on h200"
expect 2 "a share that does not divide" -- "$bin" sim --model dream-7b-tp8 --requests 4
contains "a share that does not divide" "--tp 8 does not divide dream-7b's 28 query heads"
# expert parallelism: an MoE model's experts split over the GPUs, the rest of each step whole on each;
# refused for a dense model, a degree that does not divide the experts, beside --tp, or on the engine
expect 2 "--ep on a dense model" -- "$bin" sim --ep 4 --requests 2
contains "--ep on a dense model" "--ep 4: llada-8b has no experts to split"
expect 2 "--ep 3" -- "$bin" sim --ep 3 --model llada-moe-7b --requests 2
contains "--ep 3" "--ep: 3 does not divide llada-moe-7b's 64 experts"
expect 2 "--ep with --tp" -- "$bin" sim --ep 2 --tp 2 --model llada-moe-7b --requests 2
contains "--ep with --tp" "not beside tensor parallelism"
expect 2 "--ep on the engine" -- "$bin" sim --ep 2 --model llada-moe-7b --executor gpu --requests 2
contains "--ep on the engine" "the engine runs no expert parallelism"
# a GPU holds the model but three quarters of its experts: LLaDA-MoE-7B's 64 x 16 layers of
# 3 x 2048 x 1024 bf16 weights are 12 GiB, 9 of them on the other GPUs at --ep 4
expect 0 "--ep 4" -- "$bin" sim --ep 4 --model llada-moe-7b --requests 2 --lengths fixed:128,64 --gen-len 64 --cost roofline
contains "--ep 4" "llada-moe-7b on h200 x 4 (expert parallel)"
wb() { $bin sim "$@" --model llada-moe-7b --requests 2 --lengths fixed:128,64 --gen-len 64 --cost roofline --json |
    sed -n 's/.*"weight_bytes":\([0-9]*\).*/\1/p'; }
w1=$(wb) w4=$(wb --ep 4)
[ "$((w1 - w4))" = "$((9 * 1024 * 1024 * 1024))" ] && ok || bad "--ep 4: weights $w1 bytes on one GPU, $w4 a GPU over four"
# the engine's own split is refused at start, before any process or GPU work
expect 2 "--executor gpu --tp 3" -- "$bin" sim --executor gpu --tp 3 --model dream-7b --requests 2 --db "$tmp/tp.db"
contains "--executor gpu --tp 3" "--tp: 3 does not divide dream-7b's 28 query and 4 K/V heads"
[ ! -e "$tmp/tp.db" ] && ok || bad "a refused --tp left a database"
expect 0 "--tp 2" -- "$bin" sim --tp 2 --requests 40 --rps 8
contains "--tp 2" "llada-8b on h200 x 2 (tensor parallel)"
contains "--tp 2" "allreduce"
contains "--tp 2" "weights 7.47"

# the papers' experiments: listed with what each reproduces or waits on; one waiting runs nothing,
# an unknown one lists the others, a non-empty OUT is refused; the reduced versions of every built
# one run, their results are well-formed JSON lines, and the trends that hold in tessera hold
expect 0 "exp list" -- "$bin" exp list
contains "exp list" "focus-fig6         FOCUS Fig. 6"
contains "exp list" "dinfer-table1      dInfer Table 1"
# (every experiment is built: one waiting is made in a copy of the folder)
mkdir -p "$tmp/exps" && (cd "$root/experiments" && tar --exclude=./records -cf - .) | tar -C "$tmp/exps" -xf - &&
    ln -s "$root/experiments/records" "$tmp/exps/records"
printf 'mosaic-fig11\tMosaic Fig. 11: latency reduction extremes\tMosaic-Compile, a measured torch.compile profile\n' \
    >>"$tmp/exps/papers.tsv"
expect 0 "exp list, one waiting" -- env TESSERA_EXPERIMENTS="$tmp/exps" "$bin" exp list
contains "exp list, one waiting" "(waiting on: Mosaic-Compile, a measured torch.compile profile)"
expect 2 "exp run, waiting" -- env TESSERA_EXPERIMENTS="$tmp/exps" "$bin" exp run mosaic-fig11 "$tmp/dt1"
contains "exp run, waiting" "waits on Mosaic-Compile"
[ ! -e "$tmp/dt1" ] && ok || bad "an experiment waiting on its parts made its OUT"
expect 2 "exp run, unknown" -- "$bin" exp run focus-fig99 "$tmp/x"
contains "exp run, unknown" "focus-fig6"
mkdir -p "$tmp/full" && touch "$tmp/full/x"
expect 2 "exp run, non-empty OUT" -- "$bin" exp run focus-fig8 "$tmp/full"
contains "exp run, non-empty OUT" "is not empty (--force writes over it)"
# the lookahead experiment, reduced: under fixed:1 lookahead's runs never stall where phase's do
expect 0 "exp run lookahead" -- env RPS=1.0 REQUESTS=60 "$bin" exp run lookahead "$tmp/la"
got=$(python3 -c 'import json, sys
r = {(o["scheduler"], o["decode"]): o for o in map(json.loads, open(sys.argv[1]))}
print(r[("phase", "fixed:1")]["num_stalls"] > 0, r[("lookahead", "fixed:1")]["num_stalls"],
      r[("lookahead", "threshold:llada-gsm8k")]["num_stalls"] < r[("phase", "threshold:llada-gsm8k")]["num_stalls"])' \
    "$tmp/la/results.jsonl" 2>&1)
[ "$got" = "True 0 True" ] && [ -s "$tmp/la/report.md" ] && ok ||
    bad "exp run lookahead: phase's stalls, lookahead's and the threshold runs' '$got'"
is_png "$tmp/la/figure.png" "exp run lookahead"
# SGLang's two modes on an H200 (SGLang's own rounds), reduced: with one running request (its dLLM
# default) they run the same forwards, and sync's mean latency is the lower, its host work once a round;
# with eight, sync's is the lower at a light load too, as SGLang ran, and under a heavy one its rounds
# keep the rows of blocks done early (more request rows than first done, first out's)
# (an experiment's variables are its options too: --mrr 1 is MRR=1)
expect 0 "exp run sglang-modes, one running" -- "$bin" exp run sglang-modes "$tmp/sgm1" --rps 0.5 --mrr 1 --requests 40
contains "exp run sglang-modes, one running" "on h200, lognormal:6,0.7,5,0.6 lengths, at most 1 running requests"
# its sweep of forwards a round (--steps-per-round): with one request running, a round ends once its one block
# resolves, so K runs the same forwards and pays the host's work once a round: less of it as K grows
python3 - "$tmp/sgm1/steps.jsonl" <<'PY' && ok || bad "exp run sglang-modes: one running request's forwards not alike across K, or its host work not falling"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert sorted({r["steps_per_round"] for r in rows}) == [1, 2, 4, 8]
for rate in {r["rps"] for r in rows}:
    rs = sorted((r for r in rows if r["rps"] == rate), key=lambda r: r["steps_per_round"])
    assert len({r["num_steps"] for r in rs}) == 1, rate
    assert all(a["host_s"] > b["host_s"] for a, b in zip(rs, rs[1:])), rate
PY
# DiffusionGemma on both engines: at a low rate they finish alike; at a high one SGLang's default (one running)
# falls behind vLLM's 8 and waits longer, while SGLang at 8 keeps up; only SGLang's first done, first out stalls
# canvases (for its context passes and prompts)
expect 0 "exp run dgemma-engines" -- env RPS="0.25 4" REQUESTS=60 "$bin" exp run dgemma-engines "$tmp/dge"
got=$(python3 -c 'import json, sys
r = {(x["config"], x["rps"]): x for x in map(json.loads, open(sys.argv[1]))}
lo, hi = 0.25, 4.0
print(len(r), abs(r[("sglang-1", lo)]["throughput_tok_s"] / r[("vllm", lo)]["throughput_tok_s"] - 1) < 0.01,
      r[("sglang-1", hi)]["throughput_tok_s"] < 0.7 * r[("vllm", hi)]["throughput_tok_s"],
      r[("sglang-1", hi)]["lat_mean_s"] > 3 * r[("vllm", hi)]["lat_mean_s"],
      r[("sglang-8", hi)]["throughput_tok_s"] > 0.9 * r[("vllm", hi)]["throughput_tok_s"],
      r[("vllm", hi)]["num_stalls"] == 0 and r[("sglang-8", hi)]["num_stalls"] > 0)' "$tmp/dge/results.jsonl" 2>&1)
[ "$got" = "10 True True True True True" ] && [ -s "$tmp/dge/report.md" ] && ok || bad "exp run dgemma-engines: '$got'"
is_png "$tmp/dge/figure.png" "exp run dgemma-engines"
expect 0 "exp run sglang-modes --help" -- "$bin" exp run sglang-modes --help
contains "exp run sglang-modes --help" "(--name VALUE sets NAME): --rps --mrr --requests --gpu --lengths --seed"
expect 2 "exp run sglang-modes --gpuu" -- "$bin" exp run sglang-modes "$tmp/sgm-typo" --gpuu h100
contains "exp run sglang-modes --gpuu" "unknown option '--gpuu' (did you mean --gpu?)"
[ ! -e "$tmp/sgm-typo" ] && ok || bad "exp run with an unknown option made its OUT"
expect 0 "exp run sglang-modes" -- env RPS="0.5 8" MRR=8 REQUESTS=120 "$bin" exp run sglang-modes "$tmp/sgm"
got=$(python3 -c 'import json, sys
one = {o["mode"]: o for o in map(json.loads, open(sys.argv[1]))}
r = {(o["mode"], o["rps"]): o for o in map(json.loads, open(sys.argv[2]))}
print(one["fdfo"]["num_steps"] == one["sync"]["num_steps"] and one["fdfo"]["lat_mean_s"] > one["sync"]["lat_mean_s"],
      r[("sync", 0.5)]["lat_mean_s"] < r[("fdfo", 0.5)]["lat_mean_s"],
      r[("sync", 8)]["request_steps"] > r[("fdfo", 8)]["request_steps"])' "$tmp/sgm1/results.jsonl" "$tmp/sgm/results.jsonl" 2>&1)
[ "$got" = "True True True" ] && [ -s "$tmp/sgm/report.md" ] && ok || bad "exp run sglang-modes: '$got'"
is_png "$tmp/sgm/figure.png" "exp run sglang-modes"
expect 0 "sim --system sglang-sync" -- "$bin" sim --system sglang-sync --max-running-requests 4 --requests 20 --no-progress
contains "sim --system sglang-sync" "policy serve-block, scheduler sglang"
expect 0 "sim --system vllm-dllm-plugin" -- "$bin" sim --system vllm-dllm-plugin --requests 20 --no-progress
contains "sim --system vllm-dllm-plugin" "policy serve-block, scheduler request"
contains "sim --system vllm-dllm-plugin" "note: --system vllm-dllm-plugin: not run"
expect 2 "serve-block on a bidirectional model" -- "$bin" sim --policy serve-block --scheduler sglang --requests 2
contains "serve-block on a bidirectional model" "block-causal model"
# SGLang's DiffusionGemma: the prompt an EXTEND forward with no logits, two canvases of 256 with every row's
# logits, the first encoded again by a context pass of 256 rows (a prefill: no logits, nothing decoded), the
# last not; a context pass only where the scheduler encodes the context apart; the engine runs no
# self-conditioning, so a live run of its profile is refused
expect 0 "sim --system sglang-dgemma" -- "$bin" sim --system sglang-dgemma --requests 2 --rps 1000 \
    --lengths fixed:300,512 --gen-len 0 --decode fixed:128 --no-progress --db "$tmp/dg.db"
contains "sim --system sglang-dgemma" "policy fdllm-v2, scheduler sglang, decode fixed:128, system sglang-dgemma"
contains "sim --system sglang-dgemma" "note: --system sglang-dgemma: a canvas's steps depend on its entropies"
got=$(sqlite3 "$tmp/dg.db" "SELECT phase || ':' || q || ':' || kv || ':' || logit_rows || ':' || decoded FROM segments
    WHERE req_id = 0 ORDER BY step_id" | tr '\n' ' ')
want="PREFILL:300:0:0:0 BLOCK:256:300:256:128 BLOCK:256:300:256:128 PREFILL:256:300:0:0 BLOCK:256:556:256:128 BLOCK:256:556:256:128 "
[ "$got" = "$want" ] && ok || bad "sim --system sglang-dgemma: request 0's steps '$got', not '$want'"
expect 0 "list systems sglang-dgemma" -- "$bin" list systems sglang-dgemma
contains "list systems sglang-dgemma" "--v2-context-pass 1 --separate-context 1 --fdfo 1 --max-running-requests 1"
contains "list systems sglang-dgemma" "dllm/algorithm/gemma4_renoise.py"
expect 2 "sim --v2-context-pass 1 without a separate context" -- "$bin" sim --system sglang-dgemma --separate-context 0 \
    --requests 2 --no-progress
contains "sim --v2-context-pass 1 without a separate context" "separate-context 0 under policy fdllm-v2 with --v2-context-pass 1"
expect 2 "sim --system sglang-dgemma --executor gpu" -- "$bin" sim --system sglang-dgemma --model llada2.0-mini \
    --executor gpu --requests 2
contains "sim --system sglang-dgemma --executor gpu" "--impl sglang-dgemma prices a self-conditioning product"
# speed against accuracy, dInfer's panels reduced to GSM8K: each configuration's published score (dInfer Table
# 1, and Table 2 for the distilled model) beside tessera's throughput, like for like: the distilled model's
# decoding fastest, Fast-dLLM's without a cache slowest; on LLaDA-8B, d3LLM's leaderboard (d3LLM fastest, the
# model itself a token a forward slowest) and WINO's Table 1; a run's summary and database carry its score
expect 0 "exp run quality" -- env TASKS=gsm8k REQUESTS=4 "$bin" exp run quality "$tmp/qual"
got=$(python3 -c 'import json, sys
rows = list(map(json.loads, open(sys.argv[1])))
r = {o["config"]: o for o in rows if o["task"] == "gsm8k"}
a = {o["config"]: o for o in rows if o["task"] == "aup-gsm8k-cot"}
w = {o["config"]: o for o in rows if o["task"] == "wino-gsm8k"}
print(len(r), [r[k]["accuracy"] for k in ("Fast-dLLM, no cache", "dInfer, no cache", "Fast-dLLM, cache", "dInfer, cache",
                                          "dInfer TD, cache")],
      max(r, key=lambda k: r[k]["throughput_tok_s"]), min(r, key=lambda k: r[k]["throughput_tok_s"]),
      all("dInfer Table" in o["source"] for o in r.values()), len(a),
      max(a, key=lambda k: a[k]["throughput_tok_s"]), min(a, key=lambda k: a[k]["throughput_tok_s"]),
      a["d3LLM"]["accuracy"], w["WINO"]["accuracy"], w["LLaDA"]["accuracy"],
      w["WINO"]["throughput_tok_s"] > 4 * w["LLaDA"]["throughput_tok_s"])' "$tmp/qual/results.jsonl" 2>&1)
[ "$got" = "5 [82.79, 82.26, 79.9, 80.97, 79.15] dInfer TD, cache Fast-dLLM, no cache True 5 d3LLM LLaDA 73.09 75.82 73.24 True" ] && ok ||
    bad "exp run quality: '$got'"
is_png "$tmp/qual/figure.png" "exp run quality"
# LLaDA2's panels: the published pairs, and the faster setting the less accurate in each
got=$(python3 -c 'import json, sys
l = {(o["task"], o["config"]): o for o in map(json.loads, open(sys.argv[1])) if o["task"].startswith("llada2")}
t = lambda k: l[k]["throughput_tok_s"]
print([l[k]["accuracy"] for k in sorted(l)], t(("llada2-threshold", "LLaDA2.0-mini, 0.85")) > t(("llada2-threshold", "LLaDA2.0-mini, 0.95")),
      t(("llada2.1-avg", "LLaDA2.1-mini S")) > t(("llada2.1-avg", "LLaDA2.1-mini Q")) > t(("llada2.1-avg", "LLaDA2.0-mini")))' \
    "$tmp/qual/results.jsonl" 2>&1)
[ "$got" = "[67.9, 70.15, 63.39, 63.9, 62.07] True True" ] && ok || bad "exp run quality, LLaDA2's panels: '$got'"
# the Python module (analysis/tessera.py, stdlib alone): a run's summary as sim --json's, a database's rows
# as db export's, and tessera's own message in the error a bad option raises
if command -v python3 >/dev/null; then
    got=$(TESSERA=$bin python3 - "$root/analysis" "$tmp/py.db" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import tessera
m = tessera.sim(requests=6, rps=2, max_batch=4, scheduler="request", db=sys.argv[2])
req = tessera.read(sys.argv[2], "requests", run=1)
runs = tessera.read(sys.argv[2])
try:
    tessera.sim(requests=2, polcy="dual")
    bad = "no error"
except tessera.TesseraError as e:
    bad = "did you mean --policy" in str(e) and e.status == 2
print(m["num_finished"], len(req), runs[0]["num_finished"], abs(runs[0]["throughput_tok_s"] - m["throughput_tok_s"]) <= 1e-9 * m["throughput_tok_s"], bad)
PY
)
    [ "$got" = "6 6 6 True True" ] && ok || bad "analysis/tessera.py: '$got'"
fi
expect 0 "sim with a scored decode profile" -- "$bin" sim --decode hierarchical:dinfer-moe-cache-gsm8k --requests 4 \
    --no-progress --db "$tmp/acc.db"
contains "sim with a scored decode profile" "accuracy      80.97% expected on GSM8K"
[ "$(sqlite3 "$tmp/acc.db" "SELECT expected_accuracy || ' ' || accuracy_task FROM summary" 2>/dev/null)" = "80.97 GSM8K" ] &&
    ok || bad "the database's summary lacks the expected accuracy"
expect 0 "exp run mechanisms" -- env REQUESTS=40 "$bin" exp run mechanisms "$tmp/mech"
[ "$(grep -c '| holds |' "$tmp/mech/report.md")" = 23 ] && ok || bad "exp run mechanisms: a check does not hold ($tmp/mech/report.md)"
[ "$(grep -c . "$tmp/mech/results.jsonl")" = 35 ] && ok || bad "exp run mechanisms: not 35 runs"
if command -v gnuplot >/dev/null; then is_png "$tmp/mech/figure.png" "exp run mechanisms"; fi
# the crossover against AR serving, reduced to batches 1, 8 and 64: the dLLM with its cache and parallel
# decoding ahead at 1, AR ahead of every dLLM variant at 64; one at a time, AR takes a prefill step and
# then a step a token (8 requests of 256: 8 x 257 steps), the dLLM at one token a step 8 x 256; AR
# with the DFlash drafter a prefill and then a cycle a step, each committing tau (6.55) on average within
# four standard errors
expect 0 "exp run crossover" -- env BATCHES="1 8 64" LIMIT=64 "$bin" exp run crossover "$tmp/arx"
got=$(python3 -c 'import json, sys
r = {(o["system"], o["batch"]): o for o in map(json.loads, open(sys.argv[1]))}
cycles = r[("ar-dflash", 1)]["num_steps"] - 8
print(len(r), r[("ar", 1)]["num_steps"], r[("dual", 1)]["num_steps"], abs(2048 / cycles - 6.55) < 4 * 4.5 / cycles ** 0.5)' \
    "$tmp/arx/results.jsonl" 2>&1)
[ "$got" = "28 2056 2048 True" ] && ok || bad "exp run crossover: runs and steps at batch 1 '$got', wanted '28 2056 2048 True'"
[ "$(grep -c '| holds |' "$tmp/arx/report.md")" = 7 ] && ok || bad "exp run crossover: a trend does not hold ($tmp/arx/report.md)"
is_png "$tmp/arx/figure.png" "exp run crossover"
papers=${PAPERS_OUT:-$tmp/papers} # (make check's figures part reads it after)
expect 0 "exp run papers --quick" -- "$bin" exp run papers "$papers" --quick
for e in dllm-serve-fig3 dllm-serve-fig4 dllm-serve-fig5 dllm-serve-table4 dllm-serve-fig7 dllm-serve-fig8 focus-fig6 \
         focus-fig7 focus-fig8 focus-table5 mosaic-fig10 mosaic-fig12 mosaic-fig13 mosaic-fig14 dinfer-table1; do
    f="$papers/$e/results.jsonl"
    if [ -s "$f" ] && [ -s "$papers/$e/figure.png" ] && [ -s "$papers/$e/report.md" ] &&
       [ "$(sqlite3 :memory: "SELECT count(*) = sum(json_valid(j) AND json_type(j, '\$.value') IN ('integer', 'real')
            AND json_extract(j, '\$.experiment') = '$e' AND json_type(j, '\$.paper_value') IS NOT NULL
            AND json_extract(j, '\$.metric') IS NOT NULL AND json_type(j, '\$.x') IS NOT NULL)
            FROM (SELECT value AS j FROM json_each('[' || replace(trim(readfile('$f'), char(10)), char(10), ',') || ']'))")" = 1 ]
    then ok; else bad "$e: its results, figure or report missing, or a line of results.jsonl malformed"; fi
done
for t in "focus-fig6|FOCUS's throughput is above LMDeploy's at every batch size" "focus-fig6|LMDeploy's throughput plateaus" \
         "focus-fig7|FOCUS's speedup grows with the block size" "focus-fig8|token eviction gains more than the delayed cache" \
         "focus-table5|FOCUS's redundancy is below LMDeploy's" \
         "mosaic-fig12|Mosaic's peak-to-average ratio is below the baselines' at every length" \
         "mosaic-fig13|Mosaic's manager all but eliminates fragmentation: it reserves within 1% of the theoretical peak, less than the baselines do" \
         "mosaic-fig14|every part of Mosaic raises L_max over the stage before it" \
         "mosaic-fig10|Mosaic's L_max is above the baselines' at every r_p" \
         "dinfer-table1|dInfer without a cache is still ahead of vLLM on average" \
         "mosaic-fig10|Mosaic's latency reduction is least at the smallest r_p and most at the largest" \
         "mosaic-fig10|Mosaic does not compromise latency against Mosaic-Compile: its step is no slower at every r_p" \
         "dllm-serve-fig8|the inference engine gives the largest jump of the three parts"; do
    e=${t%%|*} text=${t#*|}
    grep -F "$text" "$papers/$e/checks.tsv" | grep -q $'\tholds$' && ok || bad "$e: '$text' no longer holds"
done
# dLLM-Serve's baselines: each batch size is recorded, a batch of one request stays under the ceiling
# the report quotes for one request a step (tessera's roofline), and that under the lossless bound
f="$papers/dllm-serve-fig3/results.jsonl"
[ "$(sqlite3 :memory: "WITH r AS (SELECT json_extract(value, '\$.system') s, json_extract(value, '\$.workload') w,
        json_extract(value, '\$.x') x, json_extract(value, '\$.metric') m, json_extract(value, '\$.value') v
        FROM json_each('[' || replace(trim(readfile('$f'), char(10)), char(10), ',') || ']'))
    SELECT count(*) = 3 AND min(c.v) > 40 AND min(c.v) < 70 AND sum(b.v = 1 AND t.v > c.v) = 0 AND sum(b.v = 1) > 0
           AND sum(d.v <= c.v) = 0
    FROM r b JOIN r t ON t.s = b.s AND t.w = b.w AND t.x = b.x AND t.m = 'throughput_tok_s'
             JOIN r c ON c.w = b.w AND c.x = b.x AND c.m = 'single_request_ceiling'
             JOIN r d ON d.w = b.w AND d.x = b.x AND d.m = 'single_request_bound'
    WHERE b.s = 'fast-dllm' AND b.m = 'static_batch' AND b.x = 0.5")" = 1 ] &&
    grep -q "^Why the results move with the workload: at 0.5 req/s the baselines' static batches hold" \
        "$papers/dllm-serve-fig3/report.md" && ok ||
    bad "dllm-serve-fig3: the baselines' batch sizes or the single-request ceiling missing, or a batch of one above it"
# dLLM-Serve priced by its own runtime's calibration, and run by the baselines' eager layer instead on
# every workload (priced otherwise: not the same throughput on all three), the report giving both
# and what their ratio says
[ "$(sqlite3 :memory: "WITH r AS (SELECT json_extract(value, '\$.workload') w, json_extract(value, '\$.value') v
        FROM json_each('[' || replace(trim(readfile('$f'), char(10)), char(10), ',') || ']')
        WHERE json_extract(value, '\$.system') = 'dllm-serve' AND json_extract(value, '\$.x') = 0.5
          AND json_extract(value, '\$.metric') = 'throughput_tok_s')
    SELECT count(*) = 3 AND max(e.v != o.v) FROM r o JOIN r e ON e.w = o.w || '-torch-eager'")" = 1 ] &&
    tr -s ' \n' '  ' <"$papers/dllm-serve-fig3/report.md" |
    grep -q "its host takes 27.2 ms a step and 3.57 ms more a sequence on the H200 machine the calibration was measured on.*in tok/s: livebench [0-9.]* against [0-9.]*, osc .*: \(what its runtime\|within 2% on every workload\)" &&
    [ -s "$papers/dllm-serve-fig3/calib-rtx4090-llada-8b-torch-dllm-serve.csv" ] && ok ||
    bad "dllm-serve-fig3: dLLM-Serve not priced by its own runtime's calibration, or its eager-layer counterfactual missing"
# dInfer's table: each system's forward, tessera's and the table's, and why two trends fail
f="$papers/dinfer-table1/results.jsonl"
[ "$(sqlite3 :memory: "SELECT count(*) FROM json_each('[' || replace(trim(readfile('$f'), char(10)), char(10), ',') || ']')
    WHERE json_extract(value, '\$.x') = 1 AND json_extract(value, '\$.metric') IN ('forward_ms', 'forward_ms_table')
      AND json_extract(value, '\$.workload') = 'p512-g1024' AND json_extract(value, '\$.value') > 0")" = 10 ] &&
    grep -q "^Why trends do not hold" "$papers/dinfer-table1/report.md" && ok ||
    bad "dinfer-table1: the forward times or the paragraph on why trends fail missing"
# ... Fast-dLLM priced by the PyTorch harness's LLaDA-MoE-7B calibration carried to the H800, its
# cached forward the host's (no faster than the uncached one), and the report says so
[ -s "$papers/dinfer-table1/calib-h800-llada-moe-7b-torch-eager.csv" ] &&
    [ "$(sqlite3 :memory: "SELECT max(CASE s WHEN 'fast-dllm' THEN v END) >= 0.9 * max(CASE s WHEN 'fast-dllm-nocache' THEN v END)
        FROM (SELECT json_extract(value, '\$.system') s, json_extract(value, '\$.value') v
              FROM json_each('[' || replace(trim(readfile('$f'), char(10)), char(10), ',') || ']')
              WHERE json_extract(value, '\$.x') = 1 AND json_extract(value, '\$.metric') = 'forward_ms'
                AND json_extract(value, '\$.workload') = 'p512-g1024')")" = 1 ] &&
    tr -s ' \n' '  ' <"$papers/dinfer-table1/report.md" |
    grep -q "Fast-dLLM's forwards are the host's: the harness's eager forward issues 1569 CUDA kernels.* Issued by the host of the H200 machines its calibration was measured on instead" && ok ||
    bad "dinfer-table1: Fast-dLLM not priced by the carried torch-eager LLaDA-MoE-7B calibration, or its hosts not said"
# ... and Hugging Face's expert loop as torch-moe-h100 measured it (11.471 and 28.280 ms a layer)
tr -s ' \n' '  ' <"$papers/dinfer-table1/report.md" |
    grep -q "it takes 11.5 ms a layer at 32 tokens and 28.3 at 1,536, 184 and 452 ms a forward over 16 layers" && ok ||
    bad "dinfer-table1: Hugging Face's expert loop not read from records/torch-moe-h100"
contains "exp run papers --quick" "papers: $papers/report.md"
# dLLM-Serve's paper numbers over its setting's unknowns: each speedup's range holds the value at the
# defaults and the BATCH=code run's, and the report gives the table; an unknown outside its plausible
# range is refused, naming the range and its source
for e in dllm-serve-fig3 dllm-serve-table4; do
    f="$papers/$e/results.jsonl"
    [ "$(sqlite3 :memory: "WITH r AS (SELECT json_extract(value, '\$.workload') w, json_extract(value, '\$.metric') m,
            json_extract(value, '\$.value') v, json_extract(value, '\$.x') x FROM json_each('[' ||
            replace(trim(readfile('$f'), char(10)), char(10), ',') || ']') WHERE json_extract(value, '\$.system') = 'dllm-serve')
        SELECT count(*) = 3 AND sum(lo.v <= d.v AND d.v <= hi.v AND lo.v <= c.v AND c.v <= hi.v) = 3
        FROM r d JOIN r lo ON lo.w = d.w AND lo.x = d.x AND lo.m = 'speedup_lo' JOIN r hi ON hi.w = d.w AND hi.x = d.x
            AND hi.m = 'speedup_hi' JOIN r c ON c.w = d.w || '~BATCH=code' AND c.x = d.x AND c.m = 'speedup'
        WHERE d.m = 'speedup' AND d.w NOT LIKE '%~%' AND d.w NOT LIKE '%-%'" 2>&1)" = 1 ] &&
        grep -q '^| livebench | .*x | .* | inside\|below it\|above it' "$papers/$e/report.md" && ok ||
        bad "$e: no speedup range over the assumptions, or its table missing"
done
# dInfer's: each TPS number has its range over the prompt's length (and Fast-dLLM's blocks), holding
# the value at the defaults
f="$papers/dinfer-table1/results.jsonl"
[ "$(sqlite3 :memory: "WITH r AS (SELECT json_extract(value, '\$.system') s, json_extract(value, '\$.x') x,
        json_extract(value, '\$.metric') m, json_extract(value, '\$.value') v FROM json_each('[' ||
        replace(trim(readfile('$f'), char(10)), char(10), ',') || ']') WHERE json_extract(value, '\$.workload') = 'p512-g1024')
    SELECT count(*) = 10 AND sum(lo.v <= d.v AND d.v <= hi.v) = 10 AND sum(lo.v < hi.v) > 0 FROM r d
    JOIN r lo ON lo.s = d.s AND lo.x = d.x AND lo.m = 'tps_lo' JOIN r hi ON hi.s = d.s AND hi.x = d.x AND hi.m = 'tps_hi'
    WHERE d.m = 'tps'")" = 1 ] && grep -q "lie inside\." "$papers/dinfer-table1/report.md" && ok ||
    bad "dinfer-table1: no TPS range over the assumptions"
expect 2 "dinfer-table1 with PROMPT outside 128-1024" -- env PROMPT=2000 "$bin" exp run dinfer-table1 "$tmp/p2000"
contains "PROMPT outside its range names it and its source" "PROMPT=2000: the prompt's tokens must be 128-1024 (dInfer's slides give no lengths"
expect 2 "dllm-serve-fig3 with N outside 64-400" -- env N=500 "$bin" exp run dllm-serve-fig3 "$tmp/n500"
contains "N outside its range names it" "N=500: the requests a run must be 64-400"
contains "N outside its range names its source" "LiveBench's coding section has 128 questions"
expect 2 "dllm-serve-fig3 with GEMM outside the band" -- env GEMM=1.5 "$bin" exp run dllm-serve-fig3 "$tmp/gemm" --quick
contains "GEMM outside its band names it" "GEMM=1.5: the rtx4090's GEMM time must lie in 0.82-1.03"
# every trend that does not hold says why, in its report and in the summary
if grep -q "does not hold" "$papers"/*/checks.tsv; then
    ! grep -q "no reason recorded" "$papers/report.md" && grep -q "^Trends that do not hold, and why:" "$papers/report.md" &&
        [ "$(cat "$papers"/*/failing.tsv | wc -l)" = "$(cat "$papers"/*/checks.tsv | grep -c $'\tdoes not hold$')" ] &&
        ok || bad "papers: a trend that does not hold gives no reason: $(grep -h "no reason recorded" "$papers"/*/failing.tsv | cut -f1 | head -3)"
else
    ok
fi
# carried EXP TEXT LINE CALIB...: EXP's report says TEXT (its lines joined), has a line matching LINE
# (a transfer's band), and EXP left each carried calibration CALIB in its OUT
carried() {
    local e=$1 text=$2 line=$3 f
    shift 3
    tr -s ' \n' '  ' <"$papers/$e/report.md" | grep -q "$text" && grep -q "$line" "$papers/$e/report.md" ||
        return 1
    for f; do [ -s "$papers/$e/$f" ] || return 1; done
}
# Mosaic Fig. 10's steps priced by the H100 torch-eager calibration carried to the card, its band said
carried mosaic-fig10 "Latency is priced by the PyTorch harness's torch-eager calibration of each model measured on an H100" \
    "^  llada-8b on a100-40gb:" calib-a100-40gb-llada-8b-torch-eager.csv && ok ||
    bad "mosaic-fig10: not priced by the carried torch-eager calibration, or its band missing"
expect 0 "dinfer-table1 --quick, COST=roofline" -- env COST=roofline "$bin" exp run dinfer-table1 "$tmp/di-roof" --quick
[ ! -e "$tmp/di-roof/calib-h800-llada-moe-7b-torch-eager.csv" ] &&
    grep -q "Every TPS is priced by the roofline" "$tmp/di-roof/report.md" && ok ||
    bad "dinfer-table1: COST=roofline still carried a calibration"
expect 2 "dinfer-table1, a bad COST" -- env COST=engine "$bin" exp run dinfer-table1 "$tmp/di-bad" --quick
contains "dinfer-table1, a bad COST" "COST=engine: calibrated or roofline"
grep -q "| \[focus-fig7\](focus-fig7/report.md) |" "$papers/report.md" && ok || bad "the papers' report lacks its summary table"
# dLLM-Serve's systems priced by the PyTorch harness's H200 calibration carried to the card, its band
# in the report; COST=roofline prices them by the roofline, anything else is refused
carried dllm-serve-table4 "Cost model: calibrated. Every system here runs PyTorch, each priced by .* carried to the l40s by tessera calib transfer" \
    "^  Reuse 1 x 32 over 480 .*\[" calib-l40s-llada-8b-torch-eager.csv calib-l40s-llada-8b-torch-dllm-serve.csv &&
    grep -q "^torch-dllm-serve:" "$papers/dllm-serve-table4/report.md" && ok ||
    bad "dllm-serve-table4: not priced by the transferred torch-eager and torch-dllm-serve calibrations, or a band missing"
# FOCUS's benchmark as it ran: ShareGPT's first prompts generated until EOS (at most 2,048 tokens), both
# systems priced by tessera's H200 calibration of each model carried to the A100, the bands reported
carried focus-fig6 "(--lengths sharegpt-first: .* (--gen-len 0 --max-new-tokens 2048).* carried to the A100-80GB by tessera calib transfer" \
    "^  sdar-8b:" calib-a100-80gb-sdar-8b-tessera.csv && ok ||
    bad "focus-fig6: not FOCUS's workload, or not priced by the transferred calibration with its band"
expect 0 "focus-table5 --quick, COST=roofline" -- env COST=roofline "$bin" exp run focus-table5 "$tmp/fc5" --quick
grep -q "^Cost model: roofline on the A100-80GB's table entry" "$tmp/fc5/report.md" &&
    [ ! -e "$tmp/fc5/calib-a100-80gb-sdar-8b-tessera.csv" ] && ok || bad "focus-table5 with COST=roofline: not priced by the roofline"
expect 2 "focus-fig8, COST=other" -- env COST=other "$bin" exp run focus-fig8 "$tmp/fc8x" --quick
contains "focus-fig8, COST=other" "COST=other: calibrated or roofline"
expect 0 "dllm-serve-fig5 --quick, COST=roofline" -- env COST=roofline "$bin" exp run dllm-serve-fig5 "$tmp/ds5" --quick
grep -q "^Cost model: roofline on the GPU's table entry" "$tmp/ds5/report.md" && [ ! -e "$tmp/ds5/calib-rtx4090-llada-8b-torch-eager.csv" ] &&
    ok || bad "dllm-serve-fig5 with COST=roofline: not priced by the roofline"
expect 2 "dllm-serve-fig5, COST=other" -- env COST=other "$bin" exp run dllm-serve-fig5 "$tmp/ds5x" --quick
contains "dllm-serve-fig5, COST=other" "COST=other: calibrated or roofline"

# calibrations made on this machine (make calibrate) are found before the shipped ones
mkdir -p "$tmp/ucal"
cp "$data/calib/h200-llada-8b-tessera.csv" "$tmp/ucal/"
expect 0 "calib show finds this machine's calibration first" -- env TESSERA_CALIB_DIR="$tmp/ucal" "$bin" calib show
contains "calib show finds this machine's calibration first" "$tmp/ucal/h200-llada-8b-tessera.csv"
expect 0 "list calibrations names both folders" -- env TESSERA_CALIB_DIR="$tmp/ucal" "$bin" list calibrations
contains "list calibrations names both folders" "calibrations in $tmp/ucal, made on this machine"
# and so is a clock fitted on it (make calibrate's clock.csv): one that never slows moves nothing
printf 'gpu,k,tau_ms,lo,hi,held_tflops,record\nh200,0,40,0.5,0.8,680,make calibrate\n' >"$tmp/ucal/clock.csv"
expect 0 "sim finds this machine's clock first" -- env TESSERA_CALIB_DIR="$tmp/ucal" "$bin" sim --cost calibrated --requests 20 --rps 2
contains "sim finds this machine's clock first" "moved the steps' time by +0.00%"
printf 'gpu,k,tau_ms,lo,hi,held_tflops,record\nh200,0,40\n' >"$tmp/ucal/clock.csv"
expect 2 "sim with a bad clock.csv line" -- env TESSERA_CALIB_DIR="$tmp/ucal" "$bin" sim --cost calibrated --requests 2
contains "sim with a bad clock.csv line" "$tmp/ucal/clock.csv:2: field lo"
rm -f "$tmp/ucal/clock.csv"
# a GPU tessera's table lacks, from a --gpu-file (what make calibrate writes for an unknown card)
printf '{"myh200": {"mem_gib": 140, "bf16_tflops": 989.4, "mem_bw_gbs": 4800}}\n' >"$tmp/myh200.json"
expect 0 "calib import for a GPU of a --gpu-file" -- "$bin" calib import "$data/calib/h200-sdar-8b-tessera.csv" \
    --gpu myh200 --gpu-file "$tmp/myh200.json" --out "$tmp/myh200.csv"
expect 2 "calib import for an unknown GPU" -- "$bin" calib import "$data/calib/h200-sdar-8b-tessera.csv" \
    --gpu myh200 --out "$tmp/myh200.csv"
contains "calib import for an unknown GPU" "myh200"
if ! command -v nvidia-smi >/dev/null 2>&1; then
    expect 1 "make calibrate without a GPU" -- env TESSERA="$bin" bash "$root/engine/calibrate.sh" "$tmp/calout"
    contains "make calibrate without a GPU" "nvidia-smi not found"
fi
# make calibrate's first stage, the GPU matched to tessera's table, with a stand-in nvidia-smi (the
# stages after it need the engine on a GPU: they stop, named, where there is none)
mkdir -p "$tmp/fakebin"
for card in "NVIDIA GeForce RTX 4090|24564|rtx4090" "NVIDIA A100-SXM4-80GB|81920|a100-80gb" \
            "NVIDIA A100-PCIE-40GB|40960|a100-40gb" "NVIDIA L40S|46068|l40s" "NVIDIA H100 80GB HBM3|81559|h100"; do
    IFS='|' read -r name mib entry <<<"$card"
    printf '#!/bin/sh\ncase "$*" in *memory.total*) echo %s ;; *) echo "%s" ;; esac\n' "$mib" "$name" >"$tmp/fakebin/nvidia-smi"
    chmod +x "$tmp/fakebin/nvidia-smi"
    PATH="$tmp/fakebin:$PATH" TESSERA=$bin TORCH=0 bash "$root/engine/calibrate.sh" "$tmp/calout" >"$tmp/out" 2>&1
    contains "make calibrate matches $name" "GPU: $name ($mib MiB): tessera's entry $entry"
done
printf '#!/bin/sh\ncase "$*" in *memory.total*) echo 49152 ;; *) echo "NVIDIA RTX 6000 Ada Generation" ;; esac\n' \
    >"$tmp/fakebin/nvidia-smi"
PATH="$tmp/fakebin:$PATH" TESSERA=$bin TORCH=0 bash "$root/engine/calibrate.sh" "$tmp/calout" >"$tmp/out" 2>&1
contains "make calibrate measures an unknown card" "not in tessera's table; measuring its ceilings as entry rtx-6000-ada-generation"
# what make calibrate leaves is packed into one file to send back (engine/calib_bundle.sh)
mkdir -p "$tmp/calsend"
cp "$data/calib/h200-llada-8b-tessera.csv" "$tmp/calsend/h100-llada-8b-tessera.csv"
echo "tessera calibration of ..." >"$tmp/calsend/report.txt"
: >"$tmp/calsend/profile.db"
printf 'gpu,k,tau_ms,lo,hi,held_tflops,record\nh100,0.1,40,0.5,0.8,700,make calibrate\n' >"$tmp/calsend/clock.csv"
expect 0 "calib_bundle.sh" -- env TESSERA="$bin" bash "$root/engine/calib_bundle.sh" "$tmp/calsend" h100 llada-8b
contains "calib_bundle.sh" "$tmp/calsend/tessera-calibration-h100-llada-8b.tar.gz"
[ "$(tar tzf "$tmp/calsend/tessera-calibration-h100-llada-8b.tar.gz" | sort | tr '\n' ' ')" = \
  "clock.csv h100-llada-8b-tessera.csv machine.txt profile.db report.txt " ] && ok || bad "calib_bundle.sh: the bundle's files"
tar xzf "$tmp/calsend/tessera-calibration-h100-llada-8b.tar.gz" -O machine.txt | grep -q "^tessera " && ok ||
    bad "calib_bundle.sh: machine.txt lacks tessera's version"
expect 1 "calib_bundle.sh without a calibration" -- env TESSERA="$bin" bash "$root/engine/calib_bundle.sh" "$tmp/calsend" l40s llada-8b
contains "calib_bundle.sh without a calibration" "no calibration l40s-llada-8b-*.csv"
expect 2 "calib merge of a missing file" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" \
    "$tmp/none.csv" --gpu h200 --out "$tmp/x.csv"
contains "calib merge of a missing file" "none.csv: cannot open"
expect 2 "calib merge with --db" -- "$bin" calib merge a.csv b.csv --db x.db
contains "calib merge with another subcommand's option" "--db does not apply here (merge takes"
[ ! -e "$tmp/x.csv" ] && ok || bad "a refused calib merge left a file"
printf 'device,model,segs,q,kv,logit_rows,op,ms,total_ms\nA,llada-8b,16,32,0,0,qkv,0.5,1\n' >"$tmp/thin.csv"
expect 2 "calib merge with a thin profile" -- "$bin" calib merge "$data/calib/h200-llada-8b-tessera.csv" "$tmp/thin.csv" \
    --gpu h200 --out "$tmp/x.csv"
contains "calib merge names the thin profile" "thin.csv: profile of llada-8b on A: no rows for op norm"
expect 2 "calib import of a thin profile" -- "$bin" calib import "$tmp/thin.csv" --gpu h200 --out "$tmp/c.csv"
contains "calib import of a thin profile" "no rows for op norm"
if [ -e "$(dirname "$bin")/libtessera_engine.so" ]; then # engine built: its argument checks need no GPU
    expect 2 "engine profile --step with bad logit rows" -- "$bin" engine profile --db "$tmp/p.db" --step 1,32,1024,5
    contains "engine profile --step says what it wants" "--step 1,32,1024,5: LOGIT_ROWS 0 or Q"
    expect 2 "engine profile --step too large" -- "$bin" engine profile --db "$tmp/p.db" --step 16,2048,0,0
    expect 2 "engine profile --step uneven with one sequence" -- "$bin" engine profile --db "$tmp/p.db" --step 1,32,128,32,2048
    contains "engine profile --step names KV_LONG" "KV_LONG (2 or more SEGS) a count"
    expect 2 "engine profile --step, KV_LONG not a count" -- "$bin" engine profile --db "$tmp/p.db" --step 3,32,128,32,-1
    expect 2 "engine profile --step, a sixth field" -- "$bin" engine profile --db "$tmp/p.db" --step 3,32,128,32,2048,1
    eb="$(dirname "$bin")/engine_bench"
    expect 2 "engine_bench --step uneven" -- "$eb" --step 3,32,128,32,2048
    contains "engine_bench refuses KV_LONG" "the bench's steps are even (KV_LONG is tessera engine profile's)"
    expect 2 "engine profile --warmup negative" -- "$bin" engine profile --db "$tmp/p.db" --warmup -1
    expect 2 "engine profile --warm-ms negative" -- "$bin" engine profile --db "$tmp/p.db" --warm-ms -5
    contains "engine profile --warm-ms names the value" "bad value '-5'"
    expect 2 "engine profile --warm-ms not a number" -- "$bin" engine profile --db "$tmp/p.db" --warm-ms 1e9
    expect 2 "engine profile --grid unknown" -- "$bin" engine profile --db "$tmp/p.db" --grid longer
    contains "engine profile --grid names the value" "bad value 'longer'"
    expect 2 "engine profile --grid with --step" -- "$bin" engine profile --db "$tmp/p.db" --grid long --step 1,32,480,0
    contains "engine profile --grid with --step says why" "--step and --grid: the steps given, or a grid"
    expect 1 "engine profile --grid long for LLaDA-8B (no long-cache step)" -- "$bin" engine profile --db "$tmp/p.db" --grid long
    contains "engine profile --grid long says why, before any GPU work" "the long grid holds no step for llada-8b (context 4096)"
    expect 2 "engine profile --max-rows 0" -- "$bin" engine profile --db "$tmp/p.db" --max-rows 0
    contains "engine profile --max-rows names the value" "--max-rows: bad value '0'"
    expect 2 "engine profile --max-rows with --step" -- "$bin" engine profile --db "$tmp/p.db" --max-rows 64 --step 1,32,480,0
    contains "engine profile --max-rows with --step says why" "--step and --max-rows: the steps given, or a grid"
    expect 1 "engine profile --grid long --max-rows for SDAR-8B (its smallest long-cache step has 8 rows)" -- \
        "$bin" engine profile --db "$tmp/p.db" --model sdar-8b --grid long --max-rows 7
    contains "engine profile --max-rows says why, before any GPU work" "no step of the grid has at most 7 rows"
    expect 2 "engine replay --max-rows" -- "$bin" engine replay --db "$tmp/p.db" --max-rows 64
    contains "engine replay --max-rows is profile's" "engine replay: --max-rows is profile's"
    expect 2 "engine replay --step" -- "$bin" engine replay --db "$tmp/p.db" --step 1,32,480,0
    contains "engine replay --step is profile's" "engine replay: --step is profile's"
    expect 2 "engine_bench --grid" -- "$eb" --grid long
    contains "engine_bench --grid is profile's" "unknown option '--grid'"
    [ ! -e "$tmp/p.db" ] && ok || bad "a refused engine profile left a database"
    expect 2 "engine_bench --warm-s negative" -- "$eb" --warm-s -1
    contains "engine_bench --warm-s names the value" "bad value '-1'"
    expect 2 "engine_bench --warm-s beyond 600 s" -- "$eb" --warm-s 601
    expect 2 "engine_bench --only clock without its trace" -- "$eb" --only clock
    contains "engine_bench --only clock without its trace" "--only clock: its measurement is the warm trace: --warm-trace FILE"
    expect 2 "engine_bench --idle-s negative" -- "$eb" --idle-s -1
    contains "engine_bench --idle-s names the value" "bad value '-1'"
    expect 2 "engine_bench --warm-trace where no file can be" -- "$eb" --warm-trace "$tmp/no/such/dir/t.csv"
    contains "engine_bench --warm-trace names the file" "$tmp/no/such/dir/t.csv: cannot open"
    expect 2 "engine_bench --step with more logits than queries" -- "$eb" --step 1,32,0,40
    contains "engine_bench --step says what it wants" "LOGIT_ROWS from 0 to Q"
    expect 2 "engine_bench --step beyond a bench step's rows" -- "$eb" --step 16,1024,0,0
    contains "engine_bench --step names the step" "--step 16,1024,0,0: 16 x 1024 tokens, more than the 8192"
    # shellcheck disable=SC2046 # nine --step options, a word each
    expect 2 "engine_bench --step nine times" -- "$eb" $(for k in 1 2 3 4 5 6 7 8 9; do printf -- '--step 1,32,0,0 '; done)
    contains "engine_bench --step says how often" "at most 8 steps"
    # shellcheck disable=SC2046 # 33 --step options, a word each
    expect 2 "engine profile --step 33 times" -- "$bin" engine profile --db "$tmp/p.db" \
        $(for k in $(seq 33); do printf -- '--step %d,32,0,0 ' "$k"; done)
    contains "engine profile --step says how often" "at most 32 steps"
    expect 2 "engine profile --step with bad logit rows among others" -- "$bin" engine profile --db "$tmp/p.db" \
        --step 1,32,0,0 --step 2,16,480,8 --step 4,8,480,0
    contains "engine profile names the step with bad logit rows" "--step 2,16,480,8: LOGIT_ROWS 0 or Q"
fi
expect 2 "calib eval without a replay" -- "$bin" calib eval --db "$tmp/ok.db"
contains "calib eval without a replay" "no replayed run"
# calib eval on planted measurements: every step measured 10% above the calibrated prediction,
# with op times (as engine replay --ops writes them) 30% attention, 70% gate_up (each step at its
# own steady state in both: the planted times are the simulated ones)
$bin sim --requests 4 --rps 2 --gen-len 64 --cost calibrated --clock off --db "$tmp/ev.db" --quiet --no-progress >/dev/null
sqlite3 "$tmp/ev.db" "CREATE TABLE engine_steps(run_id INTEGER, step_id INTEGER, predicted_ns INTEGER, measured_ns INTEGER, device TEXT, PRIMARY KEY(run_id, step_id));
    INSERT INTO engine_steps SELECT run_id, step_id, duration_ns, CAST(duration_ns * 1.1 AS INTEGER), 'test' FROM steps;
    CREATE TABLE engine_step_ops(run_id INTEGER, step_id INTEGER, op TEXT, ms REAL, PRIMARY KEY(run_id, step_id, op));
    INSERT INTO engine_step_ops SELECT run_id, step_id, 'attention', measured_ns * 0.3e-6 FROM engine_steps;
    INSERT INTO engine_step_ops SELECT run_id, step_id, 'gate_up', measured_ns * 0.7e-6 FROM engine_steps;"
expect 0 "calib eval" -- "$bin" calib eval --db "$tmp/ev.db" --clock off
contains "calib eval: per-step error of a planted 10%" "calibrated  per-step MAPE    9.1%"
contains "calib eval: total time" "total time   -9.1%"
contains "calib eval: per-op breakdown" "per op over"
grep -qE "^ +attention +[0-9.]+ +30\.0%" "$tmp/out" && grep -qE "^ +gate_up +[0-9.]+ +70\.0%" "$tmp/out" && ok ||
    bad "calib eval: op shares 30/70 not reported"

# lists
for w in models gpus policies schedulers planners costs systems impls calibrations decode; do expect 0 "list $w" -- "$bin" list $w; done
contains "list decode" "threshold:llada-gsm8k"
# the ceilings measured on the H100 and H200 cards beside the datasheet's; an unknown option refused
# printed it; an unknown option refused
expect 0 "list gpus --measured" -- "$bin" list gpus --measured
contains "list gpus --measured" "h200              989.4         780.5       676.6       4800           4200"
contains "list gpus --measured" "rtx4090           165.2             -"
contains "list gpus --measured" "h200         0.162     39.5  0.484  0.820       676.6  experiments/records/clock-ladder"
expect 2 "list gpus, an unknown option" -- "$bin" list gpus --datasheet
contains "list gpus, an unknown option" "unknown option '--datasheet'"
# the entry a card is by its driver's name and memory (engine/calibrate.sh asks), status 1 for none
expect 0 "list gpus --device" -- "$bin" list gpus --device "NVIDIA A100-SXM4" 81920
contains "list gpus --device" "a100-80gb"
expect 1 "list gpus --device, a card not in the table" -- "$bin" list gpus --device "Tesla T4" 15360
expect 2 "list gpus --device, memory not a number" -- "$bin" list gpus --device "NVIDIA H100" 80GB
contains "list gpus --device, memory not a number" "'80GB' is not a whole number of MiB"
# the tables' entries and a policy's parameters, as the tables declare them
expect 0 "list policies" -- "$bin" list policies
contains "list policies shows a policy's parameter" "--refresh-interval N     dual: also refresh every K steps"
expect 0 "sim --help" -- "$bin" sim --help
contains "sim --help lists the policies from the table" "--policy NAME            the denoising policy (tessera list policies): vanilla prefix dual block"
contains "sim --help lists the policy parameters" "vicinity (policy)        --vicinity N [16] --refresh-interval N [32]"
contains "sim --help lists the planners from the table" "caching profiled first-fit greedy-size ilp"
# --weights fp8: a byte a weight (the embedding and LM head kept in bf16), the roofline's alone, on cards with FP8
expect 0 "sim --weights fp8" -- "$bin" sim --model llada-8b --weights fp8 --requests 2 --no-progress --json
got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["weight_bytes"])' "$tmp/out")
[ "$got" = "$(( 16031162368 / 2 + 2 * 126464 * 4096 ))" ] && ok || bad "sim --weights fp8: weight bytes $got"
expect 2 "sim --weights fp8 calibrated" -- "$bin" sim --model llada-8b --weights fp8 --cost calibrated --requests 2
contains "sim --weights fp8 calibrated" "FP8 is priced by the roofline alone"
expect 2 "sim --weights fp8 on an A100" -- "$bin" sim --model llada-8b --weights fp8 --gpu a100-80gb --requests 2
contains "sim --weights fp8 on an A100" "a100-80gb has no FP8 tensor cores"
expect 2 "sim --weights fp4" -- "$bin" sim --weights fp4 --requests 2
# --rounds-host: another card's measured host work between rounds, where --gpu has no rounds of its own
expect 0 "sim --rounds-host" -- "$bin" sim --system sglang --gpu b200 --cost roofline --rounds-host h200 --requests 4 \
    --lengths fixed:500,256 --gen-len 256
contains "sim --rounds-host" "the host's work between rounds as measured beside h200 (--rounds-host"
expect 2 "sim --rounds-host, the card's own rounds" -- "$bin" sim --system sglang --gpu h200 --rounds-host h100 --requests 4
contains "sim --rounds-host, the card's own rounds" "h200's own rounds of llada2.0-mini are measured"
# naming the card itself changes nothing (a grid over cards may keep it)
expect 0 "sim --rounds-host, the card itself" -- "$bin" sim --system sglang --gpu h200 --rounds-host h200 --requests 4 --json
self=$(grep -v run_wall "$tmp/out")
expect 0 "sim --rounds-host, the card itself" -- "$bin" sim --system sglang --gpu h200 --requests 4 --json
[ "$self" = "$(grep -v run_wall "$tmp/out")" ] && ok || bad "sim --rounds-host h200 on h200: not the run without it"
expect 2 "sim --rounds-host, a runtime without rounds" -- "$bin" sim --rounds-host h200 --requests 2
contains "sim --rounds-host, a runtime without rounds" "no rounds of --impl tessera measured for llada-8b on h200"
# LinearSpec: its commits its own (a decoder named is refused); at --lspec-accept 1 two forwards a token
expect 2 "sim linear-spec with a decoder" -- "$bin" sim --model sdar-8b --policy linear-spec --decode threshold:2.5 --requests 2
contains "sim linear-spec with a decoder" "policy linear-spec draws its steps' commits itself"
expect 0 "sim linear-spec" -- "$bin" sim --model sdar-8b --policy linear-spec --lspec-accept 1 --requests 3 --rps 100 \
    --scheduler static --max-batch 1 --lengths fixed:100,64 --gen-len 64 --no-progress --json
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["request_steps"], d["tokens_decoded"])' "$tmp/out")
[ "$got" = "387 192" ] && ok || bad "sim linear-spec: 3 x (1 + 2 x 64) forwards for 192 tokens (got $got)"
expect 0 "sim --early-commit" -- "$bin" sim --early-commit 0.45 --requests 10 --no-progress --json
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["tokens_decoded"], d["num_finished"])' "$tmp/out")
[ "$got" = "2560 10" ] && ok || bad "sim --early-commit: every position of the 10 requests counted decoded (got $got)"
expect 2 "sim --early-commit under ar" -- "$bin" sim --early-commit 0.5 --system vllm --model qwen2.5-3b
contains "sim --early-commit under ar" "policy ar decodes one token a step"
expect 2 "sim --early-commit 1.5" -- "$bin" sim --early-commit 1.5
contains "sim --early-commit 1.5" "--early-commit"
expect 0 "list decode: LLaDA2.1's modes" -- "$bin" list decode
contains "list decode: LLaDA2.1's modes" "threshold:llada2.1-mini-s"
contains "list decode: LLaDA2.1's modes" "TPF 5.34"
contains "list decode: Prophet's early commit" "Prophet's early commit (arXiv 2508.19982"
expect 0 "sim --policy dpad over the dual cache" -- "$bin" sim --policy dpad --dpad-cache dual --dpad-window 128 --requests 20 --no-progress
contains "sim --policy dpad over the dual cache" "20 finished"
expect 2 "sim --policy elastic past the model's layers" -- "$bin" sim --policy elastic --ec-depth 32 --ec-refresh-every 4 --requests 2
contains "sim --policy elastic past the model's layers" "llada-8b has 32 layers, which leaves none to recompute (at most 31)"
expect 0 "sim --policy elastic, no refresh, any depth" -- "$bin" sim --policy elastic --model llada-moe-7b --requests 2 --no-progress
# --max-pos: a model run past its config's positions (SparseD runs LLaDA at 16k and more)
expect 2 "sim past llada-8b's positions" -- "$bin" sim --requests 2 --lengths fixed:8192,128 --gen-len 128 --no-progress
contains "sim past llada-8b's positions" "exceeds the model's maximum positions"
expect 0 "sim --max-pos 32768" -- "$bin" sim --max-pos 32768 --requests 2 --lengths fixed:8192,128 --gen-len 128 --no-progress
contains "sim --max-pos 32768" "2 finished"
expect 2 "sim --max-pos -1" -- "$bin" sim --max-pos -1
contains "sim --max-pos -1" "--max-pos"
# sparsed runs live (its refusal here is the missing GPU's alone)
expect 2 "sim --policy sparsed live" -- "$bin" sim --policy sparsed --executor gpu --requests 2
contains "sim --policy sparsed live" "--executor gpu:"
grep -q "lacks\|cannot run" "$tmp/out" && bad "sim --policy sparsed live: refused for the policy" || ok
expect 2 "sim --sparsed-select 2" -- "$bin" sim --policy sparsed --sparsed-select 2
contains "sim --sparsed-select 2" "--sparsed-select"
# sparsed stores each step's keys a row: dense before its pattern, the pattern's step, sparse after
# (P 300, G 128: 26 dense steps, 664 keys at the 27th, 384 at the 101 after; check_policy derives them)
expect 0 "sim --policy sparsed --db" -- "$bin" sim --policy sparsed --requests 1 --lengths fixed:300,128 --gen-len 128 \
    --db "$tmp/sparsed.db" --quiet --no-progress
got=$(sqlite3 "$tmp/sparsed.db" "select attn_keys, count(*) from segments group by attn_keys order by attn_keys" | tr '\n' ' ')
[ "$got" = "0|26 384|101 664|1 " ] && ok || bad "sim --policy sparsed --db: keys a row by step '$got'"
# herald: block models alone; its selections stored a block (host_kv, host_scan), its host part in
# the step's time: before the step it lengthens the run, beside it no more than that
expect 2 "sim --policy herald on a bidirectional model" -- "$bin" sim --policy herald --model llada-8b --requests 2
contains "sim --policy herald on a bidirectional model" "policy herald needs a block-causal model (tessera list models: block), and llada-8b attends bidirectionally"
expect 2 "sim --policy herald live, no GPU" -- "$bin" sim --policy herald --model sdar-8b --executor gpu --requests 2
contains "sim --policy herald live, no GPU" "tessera sim: --executor gpu: "
expect 2 "sim --herald-link unknown" -- "$bin" sim --policy herald --model sdar-8b --herald-link nvlink
contains "sim --herald-link unknown" "--herald-link"
expect 0 "sim --policy herald --db" -- "$bin" sim --policy herald --model sdar-8b --requests 1 --lengths fixed:300,96 \
    --gen-len 96 --db "$tmp/herald.db" --quiet --no-progress
got=$(sqlite3 "$tmp/herald.db" "select host_kv, host_scan, count(*) from segments where host_scan > 0 group by host_kv, host_scan order by host_kv" | tr '\n' ' ')
[ "$got" = "30|300|2 34|332|1 " ] && ok || bad "sim --policy herald --db: selections '$got'"
for o in 0 1; do
    expect 0 "sim --policy herald --herald-overlap $o" -- "$bin" sim --policy herald --model sdar-8b --requests 20 \
        --lengths fixed:8000,256 --herald-scan-gbs 5 --herald-overlap $o --json --quiet --no-progress
    cp "$tmp/out" "$tmp/herald$o.json"
done
json_check "$tmp/herald0.json" "d['makespan_ns'] > json.load(open('$tmp/herald1.json'))['makespan_ns']"
# DiffusionGemma: its interleaved layers refused live; a running request keeps a canvas of fp32 rows, hidden
# wide (vllm-dgemma) or vocab wide (vllm-dgemma-probs): 4 at once hold 4 x 256 x (262,144 - 2,816) x 4
# bytes more under the second, within a page of 16 tokens a request each way
expect 2 "sim --system diffusion-gemma live" -- "$bin" sim --system diffusion-gemma --executor gpu --requests 2
contains "sim --system diffusion-gemma live" "model diffusion-gemma has interleaved sliding-window and global attention layers"
for im in vllm-dgemma vllm-dgemma-probs; do
    expect 0 "sim --system diffusion-gemma --impl $im" -- "$bin" sim --system diffusion-gemma --impl $im --requests 8 \
        --max-batch 4 --lengths fixed:512,256 --rps 1e6 --json --quiet --no-progress
    cp "$tmp/out" "$tmp/dg-$im.json"
done
json_check "$tmp/dg-vllm-dgemma-probs.json" "abs(d['peak_kv_bytes'] - json.load(open('$tmp/dg-vllm-dgemma.json'))['peak_kv_bytes'] - 4 * 256 * (262144 - 2816) * 4) <= 8 * 16 * 225280 and d['num_finished'] == 8"
# Spiffy: every block step runs 3 draft blocks of 32 rows beside its rows, each row scoring the real rows' keys
# (SDAR-8B block-causal at 32: a block's step its cache and the block, 32 keys more; the fused commit's two
# blocks 32 and 64 more, 48 on average)
expect 0 "sim --decode spiffy --db" -- "$bin" sim --model sdar-8b --policy block --decode spiffy:3 --requests 3 \
    --db "$tmp/spiffy.db" --quiet --no-progress
got=$(sqlite3 "$tmp/spiffy.db" "select distinct q, attn_keys - kv from segments where phase = 'BLOCK' order by q" | tr '\n' ' ')
[ "$got" = "128|32 160|48 " ] && ok || bad "sim --decode spiffy: rows and keys a block step '$got'"
expect 2 "sim --decode spiffy live" -- "$bin" sim --decode spiffy:3 --executor gpu --requests 2
contains "sim --decode spiffy live" "verifies draft blocks under a mask of its own"
expect 2 "sim --decode spiffy under ar" -- "$bin" sim --system vllm --model qwen2.5-3b --decode spiffy:3
contains "sim --decode spiffy under ar" "Spiffy's draft blocks ride beside a step's rows, which policy ar shapes itself"
# WINO: every step of LLaDA's whole sequence (vanilla: 20 + 64 rows) runs its shadow block of 32 rows beside them
expect 0 "sim --decode wino --db" -- "$bin" sim --policy vanilla --decode wino:wino-llada-gsm8k --lengths fixed:20,64 \
    --gen-len 64 --block 32 --requests 3 --db "$tmp/wino.db" --quiet --no-progress
got=$(sqlite3 "$tmp/wino.db" "select distinct phase, q, logit_rows from segments" | tr '\n' ' ')
[ "$got" = "FULL|116|116 " ] && ok || bad "sim --decode wino: rows a step '$got'"
expect 0 "sim --decode wino's accuracy" -- "$bin" sim --policy vanilla --decode wino:wino-llada-gsm8k --requests 3 --json --quiet --no-progress
json_check "$tmp/out" "d['expected_accuracy'] == 75.82 and d['accuracy_task'] == 'GSM8K'"
expect 2 "sim --decode wino live" -- "$bin" sim --decode wino:3 --executor gpu --requests 2
contains "sim --decode wino live" "verifies a shadow block under a mask of its own"
expect 2 "sim --decode wino under ar" -- "$bin" sim --system vllm --model qwen2.5-3b --decode wino:3
contains "sim --decode wino under ar" "WINO's shadow blocks ride beside a step's rows, which policy ar shapes itself"
expect 2 "sim --decode wino with a threshold profile" -- "$bin" sim --decode wino:llada-gsm8k --requests 2
contains "sim --decode wino with a threshold profile" "profile 'llada-gsm8k' is the TPF of threshold decoding, not of wino"
expect 0 "list policies: d2f and sparsed with their sources" -- "$bin" list policies
contains "list policies: d2f and sparsed with their sources" "D2F (arXiv 2508.09192, zhijie-group/Discrete-Diffusion-Forcing"
contains "list policies: d2f and sparsed with their sources" "SparseD (arXiv 2509.24014, INV-WZQ/SparseD"
contains "list policies: herald with its source" "HERALD (arXiv 2606.21633, its abstract)"
contains "list policies: dkv-cache with its source" "dKV-Cache-Decode (arXiv 2505.15781, horseee/dKV-Cache"
expect 2 "sim --d2f-flight 13" -- "$bin" sim --policy d2f --d2f-flight 13
contains "sim --d2f-flight 13" "--d2f-flight"
expect 2 "sim --dpad-window 1" -- "$bin" sim --policy dpad --dpad-window 1
contains "sim --dpad-window 1" "--dpad-window: '1' is not a whole number in 2..1048576"
expect 2 "sim --dpad-cache unknown" -- "$bin" sim --policy dpad --dpad-cache block
contains "sim --dpad-cache unknown" "--dpad-cache"
expect 0 "list policies: dpad with its source" -- "$bin" list policies
contains "list policies: dpad with its source" "DPad (arXiv 2508.14148, Crys-Chen/DPad"
expect 0 "sim --refresh-interval" -- "$bin" sim --refresh-interval 4 --requests 3 --db "$tmp/ri.db" --quiet --no-progress
if [ "$(sqlite3 "$tmp/ri.db" "select json_extract(config_json, '$.refresh_interval') from runs")" = 4 ]; then ok
else bad "--refresh-interval not stored in the run's configuration"; fi
expect 2 "a parameter of another policy" -- "$bin" sim --refresh-interval 4 --policy block --requests 3
contains "a parameter of another policy, named" "--refresh-interval: not a parameter of policy block or scheduler phase (it is one of: policy dual, policy vicinity)"
expect 2 "a parameter out of range" -- "$bin" sim --refresh-interval -4 --requests 3
contains "a parameter out of range, named with its range" "--refresh-interval: '-4' is not a whole number in 0..1000000"
# exp run validate-sglang's arithmetic on a record made by hand: three requests and ten rounds, SGLang's
# figures worked out here, tessera's read from sim --json
rec=$tmp/sg-records/sglang-h200
mkdir -p "$rec/traces" "$tmp/sg-run/fdfo/t"
printf 'arrival_ns,prompt_tokens,output_tokens\n0,32,32\n100000000,32,32\n200000000,32,32\n' >"$rec/traces/t.csv"
printf '{"sglang": "0.5.17", "gpu": "H", "fdfo": 1, "max_running_requests": 8, "algorithm": "LowConfidence", "traces": ["t.csv"], "server_args": {"attention_backend": "flashinfer", "disable_cuda_graph": "False"}}\n' \
    >"$tmp/sg-run/fdfo/meta.json"
printf 'id,arrival_s,finish_s,prompt_tokens,gen_tokens,out_tokens\n0,0.0,1.0,32,32,32\n1,0.5,2.0,32,32,32\n2,0.2,2.7,32,32,32\n' \
    >"$tmp/sg-run/fdfo/t/requests.csv"
# five rounds of one request (4, 6, 5, 5, 5 ms; two pairs 1 ms apart, the rest after idle gaps, which are
# no host work), then five of two (8 ms, 2 ms apart)
{
    echo 'start_s,ms,reqs,q_tokens,forwards,graph'
    printf '%s,1,32,1,1\n' 0.000,4 0.005,6 0.300,5 0.306,5 0.600,5
    printf '%s,8,2,64,1,1\n' 0.900 0.910 0.920 0.930 0.940
} >"$tmp/sg-run/fdfo/t/rounds.csv"
tar -czf "$rec/fdfo.tgz" -C "$tmp/sg-run" fdfo
expect 0 "exp run validate-sglang on a record made by hand" -- env TESSERA_RECORDS="$tmp/sg-records" \
    "$bin" exp run validate-sglang "$tmp/sg-out"
"$bin" sim --system sglang --fdfo 1 --max-running-requests 8 --decode fixed:1 --gpu h200 --trace "$rec/traces/t.csv" \
    --seed 1 --json --quiet --no-progress >"$tmp/sg.json" 2>/dev/null
if python3 - "$tmp/sg-out/fdfo-sglang/sglang.csv" "$tmp/sg-out/fdfo-sglang/rounds.csv" "$tmp/sg.json" <<'PY'; then ok; else bad "validate-sglang: the hand-made record's figures (above)"; fi
import csv, json, sys
row = next(csv.DictReader(open(sys.argv[1])))
rounds = {r["requests"]: r for r in csv.DictReader(open(sys.argv[2]))}
d = json.load(open(sys.argv[3]))
# p99 as tessera takes it: 0.98 of the way from rank 1 (1.5 s) to rank 2 (2.5 s)
want = {"meas_req_s": 3 / 2.7, "meas_mean_s": 5 / 3, "meas_p99_s": 1.5 + 0.98 * 1.0, "meas_forwards": 15 / 3, "meas_rounds": 10,
        "pred_req_s": d["req_s"], "pred_mean_s": d["lat_mean_s"], "pred_p99_s": d["lat_p99_s"],
        "mean_err_pct": 100 * (d["lat_mean_s"] - 5 / 3) / (5 / 3)}
bad = [f"{k} {row[k]} != {v}" for k, v in want.items() if abs(float(row[k]) - v) > 1e-4 * max(1, abs(v))]
for b, ms, gap in (("1", 5.0, 1.0), ("2", 8.0, 2.0)):  # medians; a round's gap to the next, the last's left out
    r = rounds.get(b)
    if not r or abs(float(r["sglang_round_ms"]) - ms) > 1e-6 or abs(float(r["sglang_host_ms"]) - gap) > 1e-6 \
            or r["sglang_rounds"] != "5":
        bad.append(f"rounds of {b}: {r}")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# the SGLang driver's hook (experiments/validate/sglang_hook/sitecustomize.py) over stand-ins for the
# modules it patches: a round timed with its requests, query tokens and forwards; a config registered
# over one already taken; a missing package stood in for, its classes refusing use
h=$tmp/hook
mkdir -p "$h/sglang/srt/managers" "$h/sglang/srt/model_executor" "$h/torch" "$h/transformers/models/auto"
for d in sglang sglang/srt sglang/srt/managers sglang/srt/model_executor transformers transformers/models \
    transformers/models/auto; do : >"$h/$d/__init__.py"; done
printf 'import types\ncuda = types.SimpleNamespace(synchronize=lambda: None)\n' >"$h/torch/__init__.py"
cat >"$h/sglang/srt/model_executor/model_runner.py" <<'PY'
class ModelRunner:
    def forward(self, fb):
        return None
PY
cat >"$h/sglang/srt/managers/tp_worker.py" <<'PY'
class Res:
    can_run_cuda_graph = True
class TpModelWorker:
    def _forward_batch_generation_dllm(self, fb, batch=None):
        from sglang.srt.model_executor.model_runner import ModelRunner
        r = ModelRunner()
        r.forward(fb), r.forward(fb), r.forward(fb)
        return Res()
PY
cat >"$h/transformers/models/auto/configuration_auto.py" <<'PY'
class AutoConfig:
    @staticmethod
    def register(model_type, config, exist_ok=False):
        if model_type == "taken" and not exist_ok:
            raise ValueError("taken")
        return "registered"
PY
if (cd "$tmp" && env PYTHONPATH="$h:$root/experiments/validate/sglang_hook" SGLANG_STEP_LOG="$h/log" \
    SGLANG_STAND_INS=xgrammar python3 - "$h/log" <<'PY'
import glob, os, sys
from sglang.srt.managers.tp_worker import TpModelWorker
class Ids:
    def numel(self):
        return 96
class FB:
    batch_size, input_ids, seq_lens_sum = 3, Ids(), 1056
TpModelWorker()._forward_batch_generation_dllm(FB())
from transformers.models.auto.configuration_auto import AutoConfig
assert AutoConfig.register("taken", object) == "registered"
from xgrammar.structural_tag import StructuralTag
try:
    StructuralTag()
    sys.exit("a stand-in's class let itself be built")
except RuntimeError:
    pass
rows = open(f"{sys.argv[1]}.{os.getpid()}").read().splitlines()
assert rows[0] == "start_s,ms,reqs,q_tokens,forwards,graph,kv_tokens", rows
assert len(rows) == 2 and rows[1].split(",")[2:] == ["3", "96", "3", "1", "1056"], rows
PY
) >"$tmp/out" 2>&1; then ok; else bad "the SGLang driver's hook: $(tail -3 "$tmp/out" | tr '\n' ' ')"; fi

# a hint lists what the tables hold: each policy that Spiffy's draft blocks are told to take does take them
expect 2 "spiffy beside fdllm-v2" -- "$bin" sim --requests 2 --decode spiffy:2,2 --policy fdllm-v2
took=0
for p in $(sed -n 's/.*give it one of //p' "$tmp/out" | tr -d ','); do
    { "$bin" sim --requests 2 --gen-len 64 --decode spiffy:2,2 --policy "$p" --quiet >/dev/null 2>&1 ||
        "$bin" sim --requests 2 --gen-len 64 --decode spiffy:2,2 --policy "$p" --model sdar-8b --quiet >/dev/null 2>&1; } &&
        took=$((took + 1)) || bad "the hint names policy $p for Spiffy's drafts, which it refuses (on either model)"
done
[ "$took" -ge 10 ] && ok || bad "the hint for Spiffy's drafts names $took policies that take them"

expect 0 "list calibrations" -- "$bin" list calibrations
if [ "$(tail -n +2 "$tmp/out" | sed 's/^  //')" = "$(cd "$root/sim/data/calib" && LC_ALL=C ls -1 -- *.csv)" ]; then ok
else bad "list calibrations: not the shipped calibrations in name order"; sed 's/^/    /' "$tmp/out" >&2; fi

finish
