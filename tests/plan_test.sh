#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# plan_test.sh: tessera plan as a user meets it (sim/docs/plan.md): help texts, the SLO's and the space's
# errors naming their term, file and line, and the plans against tessera sim itself: at the found
# capacity the SLO held and at the rate that missed it not, the robust capacity below the point where
# the interval is wide, --jobs 1 and 2 alike, the front by its definition, the cheapest's run file
# holding the SLO at the load.
# Usage: plan_test.sh PATH/TO/tessera    Prints "plan: N passed, M failed".
set -u
bin=${1:?usage: plan_test.sh PATH/TO/tessera}
TEST=plan
source "$(dirname "$0")/lib_cli.sh"

# tessera plan: capacity and size (sim/docs/plan.md) on a quick configuration: SGLang's preset on an
# H200, fixed lengths and decoder, 200 requests
quick=(--system sglang --gpu h200 --lengths "fixed:128,64" --gen-len 64 --decode fixed:2 --requests 200)
expect 2 "plan, no subcommand" -- "$bin" plan
expect 0 "plan --help" -- "$bin" plan --help
contains "plan --help" "capacity"
expect 0 "plan capacity --help" -- "$bin" plan capacity --help
contains "plan capacity --help" "--confidence P"
expect 2 "plan capacity without --slo" -- "$bin" plan capacity "${quick[@]}"
contains "plan capacity without --slo" "--slo SPEC is required"
expect 2 "plan capacity, a bad term" -- "$bin" plan capacity --slo p99=5s,median=2s "${quick[@]}"
contains "plan capacity, a bad term" "unknown term 'median'"
expect 2 "plan capacity, a bad time" -- "$bin" plan capacity --slo p99=5x "${quick[@]}"
contains "plan capacity, a bad time" "'5x' is not a time"
expect 2 "plan capacity, a bad sim option" -- "$bin" plan capacity --slo p99=5s --gpu nosuchcard --requests 5
expect 2 "plan capacity --executor gpu" -- "$bin" plan capacity --slo p99=5s --executor gpu "${quick[@]}"
contains "plan capacity --executor gpu" "a plan searches with the cost model"
expect 2 "plan capacity --db" -- "$bin" plan capacity --slo p99=5s --db "$tmp/plan.db" "${quick[@]}"
[ ! -e "$tmp/plan.db" ] && ok || bad "plan capacity --db: a database was made"
expect 0 "plan capacity --json" -- "$bin" plan capacity --slo p90=2s --confidence 0 --json "${quick[@]}"
cap=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
held = [p["rps"] for p in d["probes"] if p["held"]]; missed = [p["rps"] for p in d["probes"] if not p["held"]]
assert d["capacity_rps"] == max(held) and d["failed_rps"] == min(m for m in missed if m > max(held))
assert d["failed_rps"] - d["capacity_rps"] <= 0.02 * d["capacity_rps"] and d["robust_rps"] is None
print(d["capacity_rps"], d["failed_rps"])' "$tmp/out") && ok || bad "plan capacity --json: capacity not the highest held probe within 2%"
# tessera sim itself at the capacity: 90% within 2 s, not overloaded; at the rate that missed: not both
read -r held missed <<<"$cap"
for r in "$held" "$missed"; do
    expect 0 "plan capacity, sim at $r" -- "$bin" sim "${quick[@]}" --rps "$r" --slo 2 --json --quiet
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(int(d["slo_attainment"] >= 0.9 and not d["overloaded"]))' \
        "$tmp/out" >"$tmp/verdict.$r"
done
[ "$(cat "$tmp/verdict.$held")$(cat "$tmp/verdict.$missed")" = 10 ] && ok ||
    bad "plan capacity: tessera sim does not hold the SLO at $held and miss it at $missed"
expect 0 "plan capacity, robust" -- "$bin" plan capacity --slo p90=2s --interval-runs 10 "${quick[@]}"
contains "plan capacity, robust" "at 90% confidence"

# the robust capacity at the interval's pessimistic end: below the point where the interval is wide (the
# roofline on an H100) and a bound under the queue's turn decides
expect 0 "plan capacity, robust below the point" -- "$bin" plan capacity --slo p90=0.8s --gpu h100 \
    --lengths "fixed:200,64" --gen-len 64 --requests 60 --interval-runs 20 --json
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert 0 < d["robust_rps"] < d["capacity_rps"]' \
    "$tmp/out" && ok || bad "plan capacity: the robust capacity not below the point ($(head -c 200 "$tmp/out"))"

# a fleet's robust capacity, against tessera sim --interval over the same fleet: at it, the interval's
# pessimistic p99 within the bound; at the rate its search missed, beyond it
fleet=(--replicas 2 --gpu h100 --requests 100 --interval-runs 20)
expect 0 "plan capacity, a fleet's robust" -- "$bin" plan capacity --slo p99=10s "${fleet[@]}" --json
rates=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert 0 < d["robust_rps"] < d["capacity_rps"] and d["robust_failed_rps"] <= 1.02 * d["robust_rps"]
print(d["robust_rps"], d["robust_failed_rps"])' "$tmp/out") && ok ||
    bad "plan capacity: a fleet's robust capacity not below its point ($(head -c 300 "$tmp/out"))"
read -r held missed <<<"$rates"
for r in "$held" "$missed"; do
    expect 0 "plan capacity, a fleet's interval at $r" -- "$bin" sim "${fleet[@]}" --interval 90 --rps "$r" --json --quiet
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(int(d["interval"]["lat_p99_s"][1] <= 10))' \
        "$tmp/out" >"$tmp/verdict.$r"
done
[ "$(cat "$tmp/verdict.$held")$(cat "$tmp/verdict.$missed")" = 10 ] && ok ||
    bad "plan capacity: the fleet's interval does not hold p99 within 10 s at $held and miss it at $missed"
expect 2 "plan capacity, a fleet's option without a fleet" -- "$bin" plan capacity --slo p99=10s --autoscale min=1,up=2,down=1
contains "plan capacity, a fleet's option without a fleet" "--autoscale: a fleet's option"
expect 2 "plan capacity, a fleet with two pNN terms" -- "$bin" plan capacity --slo p99=10s,p50=5s "${fleet[@]}"
contains "plan capacity, a fleet with two pNN terms" "a fleet is judged on one percentile term"

# a fleet file's capacity (groups of 1 and 2), fixed, autoscaled and a --replicas fleet autoscaled,
# against tessera sim over the same fleet: at the capacity 99% within 10 s and not overloaded, at the
# rate that missed not both; the fleet file's robust capacity against its interval's p99
printf '1 --gpu h100\n2 --gpu h200\n' >"$tmp/plan-fleet.txt"
for made in "--fleet $tmp/plan-fleet.txt" "--fleet $tmp/plan-fleet.txt --autoscale min=1,up=4,down=1" \
    "--replicas 3 --autoscale min=1,up=4,down=1"; do
    # shellcheck disable=SC2086 # $made: the fleet's options, a word each
    expect 0 "plan capacity $made" -- "$bin" plan capacity --slo p99=10s $made --requests 100 --confidence 0 --json
    rates=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["replicas"] == 3 and 0 < d["capacity_rps"] < d["failed_rps"]
assert ("autoscale" in sys.argv[2]) == ("autoscaled" in d["searched"])
assert "fleet" not in sys.argv[2] or d["searched"].startswith("1 x llada-8b on h100 (policy dual), 2 x llada-8b on h200")
print(d["capacity_rps"], d["failed_rps"])' "$tmp/out" "$made") && ok || bad "plan capacity $made: $(head -c 300 "$tmp/out")"
    read -r held missed <<<"$rates"
    for r in "$held" "$missed"; do
        # shellcheck disable=SC2086
        expect 0 "plan capacity $made, sim at $r" -- "$bin" sim $made --requests 100 --rps "$r" --slo 10 --json --quiet
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(int(d["slo_attainment"] >= 0.99 and not d["overloaded"]))' \
            "$tmp/out" >"$tmp/verdict.$r"
    done
    [ "$(cat "$tmp/verdict.$held")$(cat "$tmp/verdict.$missed")" = 10 ] && ok ||
        bad "plan capacity $made: tessera sim does not hold the SLO at $held and miss it at $missed"
done
expect 0 "plan capacity --fleet, robust" -- "$bin" plan capacity --slo p99=10s --fleet "$tmp/plan-fleet.txt" --requests 100 \
    --interval-runs 20 --json
rates=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert 0 < d["robust_rps"] < d["capacity_rps"]
print(d["robust_rps"], d["robust_failed_rps"])' "$tmp/out") && ok || bad "plan capacity --fleet, robust: $(head -c 300 "$tmp/out")"
read -r held missed <<<"$rates"
for r in "$held" "$missed"; do
    expect 0 "plan capacity --fleet, its interval at $r" -- "$bin" sim --fleet "$tmp/plan-fleet.txt" --requests 100 \
        --interval 90 --interval-runs 20 --rps "$r" --json --quiet
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(int(d["interval"]["lat_p99_s"][1] <= 10))' \
        "$tmp/out" >"$tmp/verdict.$r"
done
[ "$(cat "$tmp/verdict.$held")$(cat "$tmp/verdict.$missed")" = 10 ] && ok ||
    bad "plan capacity --fleet: its interval does not hold p99 within 10 s at $held and miss it at $missed"
printf -- '--gpu h100 h200\n' >"$tmp/space-cards.txt"
expect 2 "plan size, a fleet file" -- "$bin" plan size --rps 1 --slo p99=10s --space "$tmp/space-cards.txt" \
    --fleet "$tmp/plan-fleet.txt" --out "$tmp/plan-fleet-out"
contains "plan size, a fleet file" "a plan sizes a fleet of --replicas N"
# a fleet file's errors are said by the command that read it
printf '1 --gpu h100\n0 --gpu h200\n' >"$tmp/plan-fleet-bad.txt"
expect 2 "plan capacity, a fleet file's bad count" -- "$bin" plan capacity --slo p99=10s --fleet "$tmp/plan-fleet-bad.txt"
contains "plan capacity, a fleet file's bad count" "tessera plan: $tmp/plan-fleet-bad.txt:2: count: '0'"

printf '# two cards, two caps\n--gpu h200 h100\n--max-running-requests 1 8\n' >"$tmp/space.txt"
size=(--rps 6 --slo p90=2s --space "$tmp/space.txt" --confidence 0 --rounds-host h200 "${quick[@]}")
expect 0 "plan size --help" -- "$bin" plan size --help
contains "plan size --help" "--space FILE"
expect 2 "plan size without --rps" -- "$bin" plan size --slo p90=2s --space "$tmp/space.txt" "${quick[@]}"
contains "plan size without --rps" "--rps R (the load) is required"
printf -- '--gpu h200\n--rps 1 2\n' >"$tmp/space-bad.txt"
expect 2 "plan size, a space varying --rps" -- "$bin" plan size --rps 6 --slo p90=2s --space "$tmp/space-bad.txt" "${quick[@]}"
contains "plan size, a space varying --rps" "space-bad.txt:2: --rps: a plan sets it itself"
printf -- '--gpu h200\nmax-running-requests 1\n' >"$tmp/space-bad.txt"
expect 2 "plan size, a space line without --" -- "$bin" plan size --rps 6 --slo p90=2s --space "$tmp/space-bad.txt" "${quick[@]}"
contains "plan size, a space line without --" "space-bad.txt:2: 'max-running-requests' is not an option"
printf -- '--gpu h200 nosuchcard\n' >"$tmp/space-bad.txt"
expect 2 "plan size, a bad value" -- "$bin" plan size --rps 6 --slo p90=2s --space "$tmp/space-bad.txt" "${quick[@]}"
contains "plan size, a bad value" "candidate 2 (gpu=nosuchcard)"
printf 'gpu,usd_per_hour,date,source\nh200,free,2026-11-29,x\n' >"$tmp/prices-bad.csv"
expect 2 "plan size, a bad price" -- "$bin" plan size "${size[@]}" --prices "$tmp/prices-bad.csv"
contains "plan size, a bad price" "prices-bad.csv:2: usd_per_hour: 'free' is not a price"
mkdir -p "$tmp/plan-full" && : >"$tmp/plan-full/x"
expect 2 "plan size --out, not empty" -- "$bin" plan size "${size[@]}" --out "$tmp/plan-full"
contains "plan size --out, not empty" "holds files of something else (--force starts this plan over in it)"
for j in 1 2; do
    expect 0 "plan size --jobs $j" -- "$bin" plan size "${size[@]}" --jobs "$j" --out "$tmp/plan-$j"
done
cmp -s "$tmp/plan-1/plan.csv" "$tmp/plan-2/plan.csv" && ok || bad "plan size: --jobs 1 and 2 differ"
# the front by its definition, by hand: a ranked candidate is on it where no other is as cheap, as fast at
# the load and as accurate, and better in one
python3 - "$tmp/plan-1/plan.csv" <<'PY' && ok || bad "plan size: the front is not the candidates no other dominates"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ranked"]
key = lambda r: (float(r["usd_per_hour"]), float(r["p99_s"]), -float(r["accuracy"]))
dominated = lambda a, b: all(x <= y for x, y in zip(key(a), key(b))) and key(a) != key(b)
assert len(rows) >= 2
for r in rows:
    assert (r["front"] == "1") == (not any(dominated(o, r) for o in rows if o is not r)), r["candidate"]
PY
contains "plan size --jobs 2" "4 candidates"
# the cheapest as planned: its run file, run by tessera sim, holds the SLO at the load
first=$(awk -F, 'NR == 2 && $3 == "ranked" { print $15 }' "$tmp/plan-1/plan.csv")
expect 0 "plan size, the cheapest's run file" -- "$bin" sim --config "$tmp/plan-1/$first" --slo 2 --json --quiet
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["slo_attainment"] >= 0.9 and not d["overloaded"]' \
    "$tmp/out" && ok || bad "plan size: the cheapest's run file does not hold p90 2 s at 6 req/s"
# the plan's database: a candidate a run (its summary the confirming fleet's), its row in plan_candidates as
# plan.csv ranks it; tessera's own database, checked, exported and merged as any
expect 0 "plan size: db check plan.db" -- "$bin" db check "$tmp/plan-1/plan.db"
expect 0 "plan size: db export plan" -- "$bin" db export "$tmp/plan-1/plan.db" plan --out "$tmp/plan-1.csv"
python3 - "$tmp/plan-1/plan.csv" "$tmp/plan-1.csv" <<'PY' && ok || bad "plan size: plan.db's rows are not plan.csv's"
import csv, sys
plan = {r["run_file"].split("-")[-1].split(".")[0]: r for r in csv.DictReader(open(sys.argv[1]))}
rows = {r["candidate"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert sorted(plan) == sorted(rows) and len(rows) == 4
for k, r in rows.items():
    p = plan[k]
    assert int(r["rank"]) == int(p["rank"]) and r["front"] == p["front"] and r["replicas"] == p["replicas"], k
    assert abs(float(r["usd_per_hour"] or 0) - float(p["usd_per_hour"])) < 1e-3 * float(p["usd_per_hour"]), k
    assert r["label"].replace(",", ";") == p["candidate"] and r["plan"] == rows["1"]["plan"], k
PY
expect 0 "plan size: db export runs" -- "$bin" db export "$tmp/plan-1/plan.db" runs --out "$tmp/plan-1-runs.csv"
python3 - "$tmp/plan-1-runs.csv" "$tmp/plan-1.csv" <<'PY' && ok || bad "plan size: a candidate's run is not its fleet at the load"
import csv, json, sys
runs = {r["run_id"]: r for r in csv.DictReader(open(sys.argv[1]))}
for c in csv.DictReader(open(sys.argv[2])):
    r = runs[c["run_id"]]; cfg = json.loads(r["config_json"])
    assert cfg["rps"] == 6 and cfg["replicas"] == int(c["replicas"]), c["candidate"]
    assert abs(float(r["lat_p99_s"]) - float(c["p99_s"])) < 1e-9 and r["overloaded"] == "0", c["candidate"]
PY
# another load into that folder: refused, naming the plan; --force starts it over
expect 2 "plan size, another plan's folder" -- "$bin" plan size "${size[@]}" --rps 7 --out "$tmp/plan-1"
contains "plan size, another plan's folder" "holds another plan (its plan.key differs"
# another price table: the plan goes on, its candidates kept, ranked anew (the H100 now the dearer)
printf 'gpu,usd_per_hour,date,source\nh200,1,2026-11-29,test\nh100,5,2026-11-29,test\n' >"$tmp/prices-test.csv"
expect 0 "plan size, new prices" -- "$bin" plan size "${size[@]}" --jobs 1 --out "$tmp/plan-1" --prices "$tmp/prices-test.csv"
contains "plan size, new prices" "0 sized in"
contains "plan size, new prices" "4 kept from"
awk -F, '$3 == "ranked" && $1 == 1 { exit !($2 ~ /gpu=h200/ && $4 == 1) } END { }' "$tmp/plan-1/plan.csv" && ok ||
    bad "plan size, new prices: the cheapest is not an H200 at 1 USD an hour"
# killed outright while sizing, the plan goes on: the candidates sized kept, the plan the one run through
printf -- '--gpu h200 h100\n--max-running-requests 1 2 4 8\n' >"$tmp/space8.txt"
size8=(--rps 6 --slo p90=2s --space "$tmp/space8.txt" --confidence 0 --rounds-host h200 "${quick[@]}")
expect 0 "plan size, run through" -- "$bin" plan size "${size8[@]}" --jobs 2 --out "$tmp/plan-8"
"$bin" plan size "${size8[@]}" --jobs 1 --out "$tmp/plan-k" >/dev/null 2>&1 &
victim=$!
python3 - "$tmp/plan-k/plan.db" <<'PY' || bad "plan size: no candidate reached the database before the kill"
import os, sqlite3, sys, time
for _ in range(600):
    try:
        if os.path.exists(sys.argv[1]) and sqlite3.connect(sys.argv[1]).execute(
                "SELECT count(*) FROM plan_candidates").fetchone()[0] >= 2:
            break
    except sqlite3.Error:
        pass
    time.sleep(0.02)
PY
pkill -KILL -P "$victim" 2>/dev/null; kill -KILL "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
expect 0 "plan size, after a kill" -- "$bin" plan size "${size8[@]}" --jobs 1 --out "$tmp/plan-k"
grep -Eq "space .*8 candidates, [1-6] sized in .* [2-7] kept from" "$tmp/out" && ok ||
    bad "plan size, after a kill: not gone on with the candidates sized ($(grep space "$tmp/out"))"
cmp -s "$tmp/plan-8/plan.csv" "$tmp/plan-k/plan.csv" && ok || bad "plan size: the plan gone on after a kill differs"
# a Slurm array's shards, each run as its task would be, then merged and ranked: the plan run through
expect 0 "plan size --slurm" -- "$bin" plan size "${size8[@]}" --slurm --jobs 3 --out "$tmp/plan-s"
contains "plan size --slurm" "8 candidates in 3 shards"
for k in 1 2 3; do
    SLURM_ARRAY_TASK_ID=$k bash "$tmp/plan-s/plan.sbatch" >"$tmp/out" 2>&1 && ok || bad "plan.sbatch task $k failed: $(cat "$tmp/out")"
done
expect 0 "plan size, the shards merged" -- "$bin" plan size "${size8[@]}" --out "$tmp/plan-s"
contains "plan size, the shards merged" "8 kept from"
cmp -s "$tmp/plan-8/plan.csv" "$tmp/plan-s/plan.csv" && ok || bad "plan size: the plan from shards differs"
expect 2 "plan size --shard without --out" -- "$bin" plan size "${size8[@]}" --shard 1/2
expect 2 "plan size, a bad --shard" -- "$bin" plan size "${size8[@]}" --shard 3/2 --out "$tmp/plan-s"
contains "plan size, a bad --shard" "is not K/N"
# a plan.db whose rows no plan writes: refused, naming the file, the row and the field, nothing written
for sql in "UPDATE plan_candidates SET status = 'done' WHERE candidate = 2" \
    "UPDATE plan_candidates SET candidate = 99 WHERE candidate = 2" \
    "UPDATE plan_candidates SET label = printf('%.2000c', 'x') WHERE candidate = 2" \
    "UPDATE plan_candidates SET label = printf('%.1024c', 'x') WHERE candidate = 2" \
    "UPDATE plan_candidates SET replicas = -3 WHERE candidate = 2" \
    "UPDATE plan_candidates SET gpus = 0, rps_per_replica = NULL WHERE candidate = 2"; do
    rm -rf "$tmp/plan-bad" && cp -r "$tmp/plan-1" "$tmp/plan-bad" && rm "$tmp/plan-bad/plan.csv"
    python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' \
        "$tmp/plan-bad/plan.db" "$sql"
    expect 2 "plan size, a crafted plan.db ($sql)" -- "$bin" plan size "${size[@]}" --out "$tmp/plan-bad"
    contains "plan size, a crafted plan.db ($sql)" "plan-bad/plan.db: plan_candidates"
    [ ! -e "$tmp/plan-bad/plan.csv" ] && ok || bad "plan size, a crafted plan.db: plan.csv written"
done
# a label one byte short of the field's end is the longest a row may hold: kept
rm -rf "$tmp/plan-bad" && cp -r "$tmp/plan-1" "$tmp/plan-bad"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' \
    "$tmp/plan-bad/plan.db" "UPDATE plan_candidates SET label = printf('%.1023c', 'x') WHERE candidate = 2"
expect 0 "plan size, a plan.db label of 1,023 bytes" -- "$bin" plan size "${size[@]}" --out "$tmp/plan-bad"
# what sizes a plan is its key, every word of it: the workload's last option changed, the folder is another plan's
expect 2 "plan size, the last option changed" -- "$bin" plan size "${size8[@]:0:${#size8[@]}-1}" 150 --out "$tmp/plan-8"
contains "plan size, the last option changed" "holds another plan"
# --force starts the plan over: every candidate sized again, none kept
expect 0 "plan size --force" -- "$bin" plan size "${size8[@]}" --force --out "$tmp/plan-8"
contains "plan size --force" "8 candidates, 8 sized in"
grep -q "kept from" "$tmp/out" && bad "plan size --force: candidates kept" || ok
# a plan gone on from its database alone is the plan run through: its ranks, prices (GPUs a replica,
# --tp) and the reasons of the candidates not ranked, read back from plan.db
printf -- '--tp 1 2\n--policy dual block\n' >"$tmp/space-tp.txt"
tp=(--rps 25 --slo p90=5s --space "$tmp/space-tp.txt" --confidence 0 --max-replicas 1 --gpu h200 --lengths "fixed:128,64"
    --gen-len 64 --requests 200)
expect 0 "plan size over --tp" -- "$bin" plan size "${tp[@]}" --out "$tmp/plan-tp"
grep -v '^  space' "$tmp/out" >"$tmp/plan-tp.out"
cp "$tmp/plan-tp/plan.csv" "$tmp/plan-tp.csv"
grep -q "needs more than 1 replicas" "$tmp/plan-tp.out" && grep -q '^ *1[*] .* 2 .*tp=2' "$tmp/plan-tp.out" && ok ||
    bad "plan size over --tp: not the plan this test needs (a candidate of 2 GPUs ranked, one not ranked): $(cat "$tmp/plan-tp.out")"
expect 0 "plan size over --tp, gone on" -- "$bin" plan size "${tp[@]}" --out "$tmp/plan-tp"
contains "plan size over --tp, gone on" "4 kept from"
grep -v '^  space' "$tmp/out" | cmp -s - "$tmp/plan-tp.out" && ok || bad "plan size over --tp: the plan gone on prints another plan"
cmp -s "$tmp/plan-tp.csv" "$tmp/plan-tp/plan.csv" && ok || bad "plan size over --tp: the plan gone on writes another plan.csv"
# a floor no candidate's decoder publishes: none ranked, each said
expect 0 "plan size --accuracy" -- "$bin" plan size "${size[@]}" --accuracy "gsm8k>=50"
contains "plan size --accuracy" "its decoder publishes no accuracy on gsm8k"

finish
