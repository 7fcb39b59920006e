#!/usr/bin/env bash
# experiments/fleet.sh: a worked fleet: a mixed fleet behind each router, an autoscaled day, and energy a token against fleet size.
#
# Six parts, the first five on LLaDA-8B with the dual cache (but load's published sweep, LLaDA2.0-mini's blocks), priced by the roofline (sim/docs/fleets.md):
#   routers    4 H100 + 8 L40S serving 2,000 generated requests at 10 req/s: each router (round robin,
#              least outstanding, least KV, phase-aware) with a fresh view, and least outstanding with
#              a view STALE (10) seconds old: p50, p99, the share within SLO (30) s, J a token
#   autoscale  8 H200 serving a day in three parts (1 req/s for 300 s, 12 req/s for 300 s, 1 req/s
#              for 600 s, evenly spaced, generated here): all up, and under --autoscale with a 60 s
#              and a 10 s provisioning delay; the 10 s run's readings drawn beside its load
#   sizes      1 to 16 H200 replicas behind least outstanding at the same 16 req/s: throughput, p99 and
#              J a token by fleet size (a small fleet saturates; a large one idles)
#   disagg     8 H200 at 4, 8, 12 and 16 req/s, co-located against Refresh/Reuse disaggregated on the
#              same cards: `first` with 2 Refresh replicas, `every` with 5 (over the cards' NVLink and
#              over InfiniBand NDR); and at 8 req/s `every` with 2 to 7 Refresh replicas
#   load       4 L40S serving the day, threshold decoding (Fast-dLLM's, TPF 2.77 at 0.9): the
#              threshold fixed, and lowered under load to 0.7 at most (--load-control) under each
#              elasticity swept (0.5, 1, 2: how TPF grows as the threshold falls, an assumption); and
#              LLaDA2.0-mini along its published sweep (threshold:llada2-mini-sweep: 0.95 to 0.85, TPF
#              and accuracy at both), the threshold fixed at 0.95 and lowered to 0.85: speed and the
#              expected accuracy side by side
#   affinity   4 H100 serving SDAR-8B (block diffusion, block-causal: a prompt's K/V are another
#              request's own) the first 4,000 requests of Mooncake's conversation trace (its hash_ids
#              name each prompt's 512-token blocks) at 8, 16 and 24 req/s: least outstanding without a
#              prompt cache and with one, and SGLang's cache-aware router (--router affinity) with its
#              balance of 32 requests and with one of 4: the share of prompt tokens found cached,
#              first-block time, mean and p99 latency
# Writes OUT/results.jsonl (a run a line), OUT/report.md (the six parts' tables and the checks) and,
# with gnuplot, OUT/autoscale.png, OUT/sizes.png, OUT/disagg.png, OUT/load-control.png and
# OUT/affinity.png.
#
# Usage: tessera exp run fleet OUT [--force]   (REQUESTS=2000; SLO=30; STALE=10; MOONCAKE=the
#        conversation trace, ../shared/traces/raw/'s by default; or experiments/fleet.sh OUT with
#        TESSERA=path)
set -uo pipefail
source "$(dirname "$0")/lib/plot.sh"
out=${1:?usage: tessera exp run fleet OUT [--force]}
bin=${TESSERA:-build/tessera}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" || exit 2
: >"$out/results.jsonl"
requests=${REQUESTS:-2000} slo=${SLO:-30} stale=${STALE:-10}
mooncake=${MOONCAKE:-$here/../shared/traces/raw/mooncake_conversation_trace.jsonl}
[ -r "$mooncake" ] || { echo "fleet.sh: $mooncake: no Mooncake conversation trace (MOONCAKE=PATH)" >&2; exit 2; }
die() { echo "fleet.sh: $*" >&2; exit 1; }
# run PART NAME OPTIONS...: one fleet run, its summary a line of results.jsonl (and OUT/PART-NAME.json)
run() {
    local part=$1 name=$2
    shift 2
    "$bin" sim "$@" --slo "$slo" --quiet --no-progress --json >"$out/$part-$name.json" ||
        die "$part $name failed: tessera sim $*"
    python3 - "$part" "$name" "$out/$part-$name.json" >>"$out/results.jsonl" <<'PY' || exit 1
import json, sys
part, name, path = sys.argv[1:]
d = json.load(open(path))
f = dict(d, num_replicas=d.get("num_replicas", 1))  # (one replica is a single run)
print(json.dumps({"part": part, "name": name, "replicas": f["num_replicas"], "lat_p50_s": f["lat_p50_s"],
                  "lat_p99_s": f["lat_p99_s"], "slo_attainment": f["slo_attainment"],
                  "throughput_tok_s": f["throughput_tok_s"], "energy_j": f["energy_j"],
                  "energy_per_token_j": f["energy_per_token_j"], "num_finished": f["num_finished"],
                  "threshold_mean": f.get("threshold_mean"), "lat_mean_s": f["lat_mean_s"],
                  "ttfb_mean_s": f["ttfb_mean_s"], "prompt_tokens": f.get("prompt_tokens", 0),
                  "prompt_hit_tokens": f.get("prompt_hit_tokens", 0),
                  "expected_accuracy": f.get("expected_accuracy")}))
PY
}

printf '# the mixed fleet\n4 --gpu h100\n8 --gpu l40s\n' >"$out/fleet.txt"
for r in round-robin least-outstanding least-kv phase-aware; do
    run routers "$r" --fleet "$out/fleet.txt" --requests "$requests" --rps 10 --router "$r"
done
run routers "least-outstanding-stale" --fleet "$out/fleet.txt" --requests "$requests" --rps 10 \
    --router least-outstanding --router-staleness "$stale"

python3 - "$out/day.csv" <<'PY' || exit 1
import sys
with open(sys.argv[1], "w") as f:
    f.write("arrival_ns,prompt_tokens,output_tokens\n")
    i = 0
    for rate, start, end in ((1, 0, 300), (12, 300, 600), (1, 600, 1200)):
        n = int((end - start) * rate)
        for k in range(n):
            f.write("%d,%d,200\n" % (round((start + k / rate) * 1e9), 100 + 37 * i % 500))
            i += 1
PY
day=(--replicas 8 --gpu h200 --trace "$out/day.csv" --gen-len 256)
run autoscale all-up "${day[@]}"
run autoscale delay-60 "${day[@]}" --autoscale min=1,up=6,down=2,every=10,delay=60,cooldown=60
run autoscale delay-10 "${day[@]}" --autoscale min=2,up=4,down=1,every=10,delay=10,cooldown=120

for n in 1 2 4 8 16; do
    run sizes "$n" --replicas "$n" --gpu h200 --requests "$requests" --rps 16
done

for rps in 4 8 12 16; do
    run disagg "co-located@$rps" --replicas 8 --gpu h200 --requests "$requests" --rps "$rps"
    run disagg "first-2-host@$rps" --replicas 8 --gpu h200 --requests "$requests" --rps "$rps" \
        --disagg first,refresh=2,link=host
    run disagg "every-5-host@$rps" --replicas 8 --gpu h200 --requests "$requests" --rps "$rps" \
        --disagg every,refresh=5,link=host
    run disagg "every-5-ib-ndr@$rps" --replicas 8 --gpu h200 --requests "$requests" --rps "$rps" \
        --disagg every,refresh=5,link=ib-ndr
done
for k in 2 3 4 6 7; do
    run split "every-$k-host" --replicas 8 --gpu h200 --requests "$requests" --rps 8 --disagg "every,refresh=$k,link=host"
done

load=(--replicas 4 --gpu l40s --trace "$out/day.csv" --gen-len 256 --decode threshold:llada-gsm8k)
run load fixed "${load[@]}"
for e in 0.5 1 2; do
    run load "elasticity-$e" "${load[@]}" --load-control "lo=0.7,elasticity=$e"
done
sweep=(--replicas 4 --gpu l40s --trace "$out/day.csv" --gen-len 256 --model llada2.0-mini --policy block
       --decode threshold:llada2-mini-sweep)
run load sweep-fixed "${sweep[@]}"
run load sweep-lowered "${sweep[@]}" --load-control lo=0.85

aff=(--replicas 4 --gpu h100 --model sdar-8b --policy block --decode threshold:sdar-high --trace "$mooncake"
     --requests 4000)
for rps in 8 16 24; do
    run affinity "no-cache@$rps" "${aff[@]}" --rps "$rps" --router least-outstanding
    run affinity "least-outstanding@$rps" "${aff[@]}" --rps "$rps" --router least-outstanding --prompt-cache 10000000
    run affinity "affinity-32@$rps" "${aff[@]}" --rps "$rps" --router affinity --prompt-cache 10000000
    run affinity "affinity-4@$rps" "${aff[@]}" --rps "$rps" --router affinity:abs=4 --prompt-cache 10000000
done

python3 - "$out" "$slo" "$stale" <<'PY' || exit 1
import json, os, sys
out, slo, stale = sys.argv[1], float(sys.argv[2]), sys.argv[3]
DISAGG = ("co-located", "first-2-host", "every-5-host", "every-5-ib-ndr")
LABEL = {"co-located": "co-located", "first-2-host": "first, 2 + 6, NVLink", "every-5-host": "every, 5 + 3, NVLink",
         "every-5-ib-ndr": "every, 5 + 3, IB NDR"}
rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
by = {(r["part"], r["name"]): r for r in rows}
def line(r, label):
    return "| %s | %.2f | %.2f | %.1f%% | %.0f | %.3f |\n" % (label, r["lat_p50_s"], r["lat_p99_s"],
                                                           100 * r["slo_attainment"], r["throughput_tok_s"],
                                                           r["energy_per_token_j"])
head = "| %s | p50 (s) | p99 (s) | within %g s | tokens/s | J a token |\n|---|---|---|---|---|---|\n"
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("# A worked fleet\n\nLLaDA-8B, the dual cache, priced by the roofline (`tessera sim --fleet|--replicas`, "
            "sim/docs/fleets.md).\n\n## Routers: 4 H100 + 8 L40S, 10 req/s\n\n" + head % ("router", slo))
    for name in ("round-robin", "least-outstanding", "least-kv", "phase-aware"):
        f.write(line(by[("routers", name)], name))
    f.write(line(by[("routers", "least-outstanding-stale")], "least-outstanding, view %s s stale" % stale))
    f.write("\n## An autoscaled day: 8 H200, 1, 12 and 1 req/s\n\n" + head.replace("| J a token |", "| energy (MJ) |")
            % ("replicas", slo))
    for name, label in (("all-up", "all 8 up"), ("delay-60", "autoscaled, 60 s to start one"),
                        ("delay-10", "autoscaled, 10 s to start one, at least 2 up")):
        r = by[("autoscale", name)]
        f.write(line(r, label).rsplit("|", 2)[0] + "| %.2f |\n" % (r["energy_j"] / 1e6))
    f.write("\n## Energy a token against fleet size: H200s at 16 req/s\n\n" + head % ("replicas", slo))
    sizes = sorted((r for r in rows if r["part"] == "sizes"), key=lambda r: r["replicas"])
    for r in sizes:
        f.write(line(r, str(r["replicas"])))
    f.write("\n## Refresh/Reuse disaggregation: 8 H200, co-located against split on the same cards\n\n"
            "p99 latency (s) and J a generated token by load; `first`: a request's first step in 2 Refresh replicas, the "
            "rest in 6 Reuse ones; `every`: each Refresh step in 5 Refresh replicas, each Reuse step in 3, the K/V moved "
            "at every change (LLaDA-8B: 512 KiB a token, about 1 GB a request).\n\n"
            "| req/s | " + " | ".join(LABEL[c] for c in DISAGG) + " |\n|---|" + "---|" * len(DISAGG) + "\n")
    for rps in (4, 8, 12, 16):
        f.write("| %d | " % rps + " | ".join("%.2f s, %.2f J" % (by[("disagg", "%s@%d" % (c, rps))]["lat_p99_s"],
                                                                 by[("disagg", "%s@%d" % (c, rps))]["energy_per_token_j"])
                                               for c in DISAGG) + " |\n")
    f.write("\n`every` over NVLink at 8 req/s by the Refresh pool's size (of 8):\n\n| Refresh replicas | p99 (s) | "
            "J a token |\n|---|---|---|\n")
    split = {2: by[("split", "every-2-host")], 3: by[("split", "every-3-host")], 4: by[("split", "every-4-host")],
             5: by[("disagg", "every-5-host@8")], 6: by[("split", "every-6-host")], 7: by[("split", "every-7-host")]}
    for k in sorted(split):
        f.write("| %d | %.2f | %.3f |\n" % (k, split[k]["lat_p99_s"], split[k]["energy_per_token_j"]))
    f.write("\n## Load control: 4 L40S serving the day, threshold decoding\n\nThe threshold fixed at 0.9, and lowered "
            "under load (a step of 0.05 every 10 s while the requests outstanding average more than 8 a replica, "
            "to 0.7 at most) under each elasticity: TPF - 1 grows as ((1 - tau) / 0.1)^e, an assumption.\n\n"
            "| threshold | p50 (s) | p99 (s) | within %g s | mean threshold | TPF at 0.7 |\n|---|---|---|---|---|---|\n" % slo)
    loads = [("fixed", "0.9, fixed")] + [("elasticity-%s" % e, "lowered, elasticity %s" % e) for e in ("0.5", "1", "2")]
    for name, label in loads:
        r = by[("load", name)]
        e = float(name.split("-")[1]) if "-" in name else 0
        f.write("| %s | %.2f | %.2f | %.1f%% | %s | %s |\n" % (label, r["lat_p50_s"], r["lat_p99_s"], 100 * r["slo_attainment"],
                "%.3f" % r["threshold_mean"] if r.get("threshold_mean") else "0.900",
                "%.2f" % (1 + 1.77 * 3 ** e) if e else "2.77"))
    f.write("\nLLaDA2.0-mini (blocks of 32) along the sweep its report publishes (threshold 0.95: 70.15 at 2.55 TPF; "
            "0.85: 67.90 at 3.31; between them on the line), the same day and control, lowered to 0.85 at most: the "
            "accuracy expected is the published one at each token's threshold.\n\n"
            "| threshold | p50 (s) | p99 (s) | within %g s | mean threshold | expected accuracy |\n|---|---|---|---|---|---|\n"
            % slo)
    for name, label in (("sweep-fixed", "0.95, fixed"), ("sweep-lowered", "lowered to 0.85")):
        r = by[("load", name)]
        f.write("| %s | %.2f | %.2f | %.1f%% | %.3f | %.2f%% |\n" % (label, r["lat_p50_s"], r["lat_p99_s"],
                100 * r["slo_attainment"], r["threshold_mean"] or 0.95, r["expected_accuracy"]))
    AFF = ("no-cache", "least-outstanding", "affinity-32", "affinity-4")
    ALABEL = {"no-cache": "least outstanding, no prompt cache", "least-outstanding": "least outstanding",
              "affinity-32": "affinity, balance 32 (SGLang's)", "affinity-4": "affinity, balance 4"}
    hit = lambda r: r["prompt_hit_tokens"] / r["prompt_tokens"] if r["prompt_tokens"] else 0
    f.write("\n## Prompt affinity: 4 H100, SDAR-8B, Mooncake's conversations\n\nThe first 4,000 requests of Mooncake's "
            "conversation trace, rescaled in rate; each replica keeps prompt blocks in its KV pool's free pages "
            "(`--prompt-cache`), and the affinity router sends a request where its picture of the caches holds more than "
            "half its prompt's blocks, unless the replicas' outstanding requests differ by more than the balance.\n\n"
            "| req/s | router | prompt found cached | first block (s) | mean (s) | p99 (s) |\n|---|---|---|---|---|---|\n")
    for rps in (8, 16, 24):
        for name in AFF:
            r = by[("affinity", "%s@%d" % (name, rps))]
            f.write("| %d | %s | %.1f%% | %.3f | %.3f | %.2f |\n" % (rps, ALABEL[name], 100 * hit(r), r["ttfb_mean_s"],
                                                                  r["lat_mean_s"], r["lat_p99_s"]))
    aff = lambda name, rps: by[("affinity", "%s@%d" % (name, rps))]
    with open(os.path.join(out, "affinity.dat"), "w") as d:
        for rps in (8, 16, 24):
            d.write("%d %s\n" % (rps, " ".join("%g %g" % (aff(n, rps)["lat_mean_s"], 100 * hit(aff(n, rps))) for n in AFF)))
    co = {rps: by[("disagg", "co-located@%d" % rps)] for rps in (4, 8, 12, 16)}
    ev = {rps: by[("disagg", "every-5-host@%d" % rps)] for rps in (4, 8, 12, 16)}
    ib = {rps: by[("disagg", "every-5-ib-ndr@%d" % rps)] for rps in (4, 8, 12, 16)}
    rr, lo = by[("routers", "round-robin")], by[("routers", "least-outstanding")]
    st = by[("routers", "least-outstanding-stale")]
    up, a60, a10 = by[("autoscale", "all-up")], by[("autoscale", "delay-60")], by[("autoscale", "delay-10")]
    checks = [
        ("on the mixed fleet, least outstanding's p99 is below round robin's", lo["lat_p99_s"] < rr["lat_p99_s"]),
        ("a stale view costs least outstanding some of its p99", st["lat_p99_s"] > lo["lat_p99_s"]),
        ("autoscaling uses less energy than the fleet all up", a60["energy_j"] < up["energy_j"] and
         a10["energy_j"] < up["energy_j"]),
        ("a long provisioning delay misses more deadlines than a short one", a60["slo_attainment"] < a10["slo_attainment"]),
        ("throughput rises with the fleet until it serves the load", sizes[-1]["throughput_tok_s"] > sizes[0]["throughput_tok_s"]),
        ("past the size the load needs, a token costs more energy (idle replicas)",
         sizes[-1]["energy_per_token_j"] > min(r["energy_per_token_j"] for r in sizes)),
        ("over InfiniBand NDR the moves of LLaDA-8B's K/V cost `every` more p99 than over NVLink, at every load",
         all(ib[r]["lat_p99_s"] > ev[r]["lat_p99_s"] for r in ev)),
        ("a Refresh pool too small for its steps queues them: 2 of 8 has a higher p99 than 5 of 8",
         split[2]["lat_p99_s"] > split[5]["lat_p99_s"]),
        ("at the highest load the co-located fleet serves at least the tokens/s of every split",
         all(co[16]["throughput_tok_s"] >= by[("disagg", "%s@16" % c)]["throughput_tok_s"] for c in DISAGG)),
        ("lowering the threshold under load meets more deadlines than holding it, at every elasticity swept",
         all(by[("load", "elasticity-%s" % e)]["slo_attainment"] > by[("load", "fixed")]["slo_attainment"]
             for e in ("0.5", "1", "2"))),
        ("the more TPF a lower threshold buys (elasticity), the shorter the tail",
         by[("load", "elasticity-0.5")]["lat_p99_s"] > by[("load", "elasticity-1")]["lat_p99_s"] >
         by[("load", "elasticity-2")]["lat_p99_s"]),
        ("along LLaDA2.0-mini's published sweep, lowering the threshold under load shortens the tail and costs "
         "expected accuracy", by[("load", "sweep-lowered")]["lat_p99_s"] < by[("load", "sweep-fixed")]["lat_p99_s"] and
         67.90 < by[("load", "sweep-lowered")]["expected_accuracy"] < by[("load", "sweep-fixed")]["expected_accuracy"]),
        ("a prompt cache shortens the first block under least outstanding, at every load",
         all(aff("least-outstanding", r)["ttfb_mean_s"] < aff("no-cache", r)["ttfb_mean_s"] for r in (8, 16, 24))),
        ("the affinity router finds more of the prompts cached than least outstanding, at every load and balance",
         all(hit(aff(n, r)) > hit(aff("least-outstanding", r)) for n in ("affinity-32", "affinity-4") for r in (8, 16, 24))),
        ("near saturation (24 req/s) affinity's mean latency is below least outstanding's at either balance",
         all(aff(n, 24)["lat_mean_s"] < aff("least-outstanding", 24)["lat_mean_s"] for n in ("affinity-32", "affinity-4"))),
        ("with a balance of 4, affinity's p99 is below least outstanding's at 16 and 24 req/s",
         all(aff("affinity-4", r)["lat_p99_s"] < aff("least-outstanding", r)["lat_p99_s"] for r in (16, 24))),
    ]
    f.write("\n| check | in tessera |\n|---|---|\n")
    for text, ok in checks:
        f.write("| %s | %s |\n" % (text, "holds" if ok else "does not hold"))
    with open(os.path.join(out, "sizes.dat"), "w") as d:
        for r in sizes:
            d.write("%d %g %g\n" % (r["replicas"], r["throughput_tok_s"], r["energy_per_token_j"]))
    with open(os.path.join(out, "disagg.dat"), "w") as d:
        for rps in (4, 8, 12, 16):
            d.write("%d %s\n" % (rps, " ".join("%g" % by[("disagg", "%s@%d" % (c, rps))]["lat_p99_s"] for c in DISAGG)))
PY
if command -v gnuplot >/dev/null 2>&1; then
    bash "$here/analysis/fleet-plot.sh" "$out/autoscale-delay-10.json" "$out/autoscale.png" >/dev/null ||
        echo "fleet.sh: no autoscale figure" >&2
    bash "$here/analysis/fleet-plot.sh" "$out/load-elasticity-1.json" "$out/load-control.png" >/dev/null ||
        echo "fleet.sh: no load-control figure" >&2
    plot_png fleet.sh "$out/sizes.png" 800 480 <<EOF
set title "H200 fleets at 16 req/s: energy a token against throughput"
set xlabel "Throughput (generated tokens/s)"
set ylabel "Energy (J a generated token)"
set grid
set key off
set offsets graph 0.02, graph 0.08, graph 0.1, 0
plot $(gp_file "$out/sizes.dat") using 2:3 with linespoints lc rgb '#0072B2' pt 7 lw 2, \
     "" using 2:3:(\$1 == 1 ? "1 replica" : sprintf("%d replicas", \$1)) with labels offset 0,1.2
EOF
    plot_png fleet.sh "$out/disagg.png" 800 480 <<EOF
set title "8 H200, LLaDA-8B dual cache: co-located against Refresh/Reuse pools on the same cards"
set xlabel "Load (requests/s)"
set ylabel "p99 latency (s)"
set logscale y
set grid
set key top left
set xtics 4
plot $(gp_file "$out/disagg.dat") using 1:2 with linespoints lc rgb '#000000' pt 7 lw 2 title "co-located", \
     "" using 1:3 with linespoints lc rgb '#E69F00' pt 5 lw 2 title "first: 2 Refresh + 6 Reuse, NVLink", \
     "" using 1:4 with linespoints lc rgb '#0072B2' pt 9 lw 2 title "every: 5 Refresh + 3 Reuse, NVLink", \
     "" using 1:5 with linespoints lc rgb '#0072B2' pt 9 lw 2 dt 2 title "every: 5 + 3, InfiniBand NDR"
EOF
    plot_png fleet.sh "$out/affinity.png" 1000 420 <<EOF
set multiplot layout 1,2 title "4 H100, SDAR-8B, Mooncake conversations: routing by prompt"
set xlabel "Load (requests/s)"
set grid
set xtics 8
set key top left
set ylabel "Mean latency (s)"
plot $(gp_file "$out/affinity.dat") using 1:2 with linespoints lc rgb '#999999' pt 7 lw 2 title "least outstanding, no cache", \
     "" using 1:4 with linespoints lc rgb '#000000' pt 7 lw 2 title "least outstanding", \
     "" using 1:6 with linespoints lc rgb '#E69F00' pt 5 lw 2 title "affinity, balance 32", \
     "" using 1:8 with linespoints lc rgb '#0072B2' pt 9 lw 2 title "affinity, balance 4"
set ylabel "Prompt tokens found cached (%)"
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
set key bottom right
plot $(gp_file "$out/affinity.dat") using 1:5 with linespoints lc rgb '#000000' pt 7 lw 2 title "least outstanding", \
     "" using 1:7 with linespoints lc rgb '#E69F00' pt 5 lw 2 title "affinity, balance 32", \
     "" using 1:9 with linespoints lc rgb '#0072B2' pt 9 lw 2 title "affinity, balance 4"
unset multiplot
EOF
fi
figs=""
for f in autoscale sizes disagg load-control affinity; do [ -s "$out/$f.png" ] && figs="$figs, $out/$f.png"; done
echo "fleet: $out/report.md, $out/results.jsonl$figs"
