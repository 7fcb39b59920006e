#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# rules_test.sh: the rules every command keeps: --help on stdout with status 0; a folder or file a
# command writes refused where it holds something unless --force, nothing left by a refusal; an
# interrupted run leaving a folder marked INCOMPLETE that the same command replaces; an unknown
# option answered with the nearest; GPU experiments marked and refused at once without one; sim's
# summary naming its cost model and --system pricing as the paper experiments do; --decode's
# confidence threshold; a trace's output lengths honoured; rejections with their reason and remedy.
# Usage: rules_test.sh PATH/TO/tessera    Prints "rules: N passed, M failed".
set -u
bin=${1:?usage: rules_test.sh PATH/TO/tessera}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
TEST=rules
source "$(dirname "$0")/lib_cli.sh"
# expect and contains as lib_cli.sh's, but stdout apart from stderr (--help's usage goes to stdout):
# stdout in $tmp/out, stderr in $tmp/err, both in $tmp/all
expect() {
    local want=$1 what=$2
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    cat "$tmp/out" "$tmp/err" >"$tmp/all"
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, wanted $want"; sed 's/^/    /' "$tmp/all" >&2; fi
}
contains() { # contains "description" "text": in stdout or stderr
    if grep -qF -- "$2" "$tmp/all"; then ok; else bad "$1: output lacks '$2'"; sed 's/^/    /' "$tmp/all" >&2; fi
}
empty_dir() { # empty_dir DIR "what": DIR is missing (nothing left behind)
    if [ ! -e "$1" ]; then ok; else bad "$2 left $1 behind: $(find "$1" -mindepth 1 -maxdepth 1 -printf '%f ')"; fi
}

# --help on every command and subcommand: its usage on stdout, status 0
root=$(cd "$(dirname "$0")/.." && pwd)
exps=$(cd "$root/experiments" && for f in *.sh; do echo "${f%.sh}"; done)
while IFS= read -r c; do
    read -r -a words <<<"$c" # the command's words
    expect 0 "tessera $c --help" -- "$bin" "${words[@]}" --help
    [ -s "$tmp/out" ] && ok || bad "tessera $c --help printed nothing on stdout"
done <<EOF

sim
trace
trace info
trace gen
trace fit
mem
mem plan
mem lmax
calib
calib import
calib merge
calib fit
calib show
calib eval
calib transfer
calib host
calib clock
calib price
exp
exp list
exp run
exp sweep
db
db merge
list
list models
list gpus
engine
engine replay
engine profile
engine generate
$(for e in $exps; do echo "exp run $e"; done)
EOF
expect 0 "tessera exp run focus-fig7 --help" -- "$bin" exp run focus-fig7 --help
contains "exp run NAME --help shows its usage" "Usage: tessera exp run focus-fig7 OUT"
[ ! -e ./--help ] && ok || bad "exp run NAME --help made a folder named --help"
expect 0 "sim --help" -- "$bin" sim --help
n=$(wc -l <"$tmp/out")
[ "$n" -le 170 ] && ok || bad "sim --help is $n lines (at most 170: a line or two a mechanism)"
wide=$(awk 'length($0) > 104' "$tmp/out" | wc -l)
[ "$wide" -eq 0 ] && ok || bad "sim --help has $wide lines over 104 columns"
dups=$(grep -oE '^  --[a-z0-9-]+' "$tmp/out" | sort | uniq -d | tr '\n' ' ')
[ -z "$dups" ] && ok || bad "sim --help lists options twice: $dups"
for w in finished rejected preemptions stalls makespan "first block" queueing cost; do
    contains "sim --help defines '$w'" "$w,"
done
grep -qiE 'lent|machine start|launch rules [0-9]|rules [0-9]\)' "$tmp/out" && bad "sim --help narrates history" || ok
for c in "" calib mem trace "exp" list db; do
    "$bin" ${c:+"$c"} --help 2>&1 | grep -qiE '\blent\b|machine start|launch rules [0-9]|rules [0-9]\)' &&
        bad "tessera $c --help narrates history" || ok
done

# an unknown option: the nearest valid one, in every parser
expect 2 "sim --reqests" -- "$bin" sim --reqests 5
contains "sim suggests" "did you mean --requests?"
expect 2 "trace gen --requsts" -- "$bin" trace gen --requsts 5
contains "trace gen suggests" "did you mean --requests?"
expect 2 "trace info --jsn" -- "$bin" trace info x.csv --jsn
contains "trace info suggests" "did you mean --json?"
expect 2 "mem plan --tokns" -- "$bin" mem plan --tokns 5
contains "mem suggests" "did you mean --tokens?"
expect 2 "calib show --gpuu" -- "$bin" calib show --gpuu h200
contains "calib suggests" "did you mean --gpu?"
expect 2 "list gpus --measurd" -- "$bin" list gpus --measurd
contains "list gpus suggests" "did you mean --measured?"
expect 2 "list modls" -- "$bin" list modls
contains "list suggests" "did you mean models?"
expect 2 "tessera simm" -- "$bin" simm
contains "the command suggested" "did you mean sim?"
expect 2 "exp run --quik" -- "$bin" exp run focus-fig7 "$tmp/q" --quik
contains "exp run suggests" "did you mean --quick?"
empty_dir "$tmp/q" "exp run --quik"
printf -- '--policy dual\n--requests 2\n' >"$tmp/g1.txt"
expect 2 "exp sweep --jbos" -- "$bin" exp sweep "$tmp/g1.txt" "$tmp/q" --jbos 2
contains "exp sweep suggests" "did you mean --jobs?"
empty_dir "$tmp/q" "exp sweep --jbos"

# a non-empty folder or file is refused unless --force, and the refusal leaves nothing
mkdir -p "$tmp/full" && echo keep >"$tmp/full/mine.txt"
expect 2 "exp run into a non-empty OUT" -- "$bin" exp run lookahead "$tmp/full"
contains "exp run names the folder" "$tmp/full is not empty (--force writes over it)"
expect 2 "exp sweep into a non-empty OUT" -- "$bin" exp sweep "$tmp/g1.txt" "$tmp/full"
contains "exp sweep names the folder" "$tmp/full is not empty (--force writes over it)"
[ "$(ls -A "$tmp/full")" = mine.txt ] && ok || bad "a refused command wrote into $tmp/full: $(ls -A "$tmp/full")"
expect 0 "exp sweep --force" -- "$bin" exp sweep "$tmp/g1.txt" "$tmp/full" --force
[ -f "$tmp/full/sweep.db" ] && [ ! -e "$tmp/full/INCOMPLETE" ] && ok || bad "exp sweep --force wrote no sweep.db or left INCOMPLETE"
expect 0 "exp sweep --slurm" -- "$bin" exp sweep "$tmp/g1.txt" "$tmp/slurm" --slurm
[ -f "$tmp/slurm/sweep.sbatch" ] && [ ! -e "$tmp/slurm/INCOMPLETE" ] && ok || bad "exp sweep --slurm wrote no sweep.sbatch"
printf -- '--policy dual\n--rps 1 -4\n' >"$tmp/bad.txt"
expect 2 "exp sweep, a bad value" -- "$bin" exp sweep "$tmp/bad.txt" "$tmp/sb"
contains "exp sweep names the bad run" "run 2 (--policy dual --rps -4)"
empty_dir "$tmp/sb" "a refused sweep"
echo x >"$tmp/trace.csv"
expect 2 "trace gen --out over a file" -- "$bin" trace gen --requests 5 --out "$tmp/trace.csv"
contains "trace gen names the file" "$tmp/trace.csv is not empty (--force writes over it)"
[ "$(cat "$tmp/trace.csv")" = x ] && ok || bad "a refused trace gen changed its file"
expect 0 "trace gen --out --force" -- "$bin" trace gen --requests 5 --out "$tmp/trace.csv" --force
[ "$(wc -l <"$tmp/trace.csv")" -eq 6 ] && ok || bad "trace gen --force wrote $(wc -l <"$tmp/trace.csv") lines"
ls "$tmp"/trace.csv.tmp* >/dev/null 2>&1 && bad "trace gen left a temporary file" || ok

# interrupted: a folder marked INCOMPLETE, which the same command replaces without --force
# (interrupt waits for the run to be under way: its INCOMPLETE, and a file the script wrote)
interrupt() { # interrupt SIGNAL OUT COMMAND...: runs COMMAND, signals it once it has begun writing OUT
    local sig=$1 out=$2
    shift 2
    "$@" >"$tmp/out" 2>&1 &
    local pid=$!
    for _ in $(seq 1 100); do [ -n "$(find "$out" -mindepth 1 -maxdepth 1 ! -name '*INCOMPLETE*' 2>/dev/null)" ] && break; sleep 0.1; done
    sleep 0.5
    kill -"$sig" $pid
    wait $pid
    echo $? >"$tmp/rc"
}
printf -- '--policy dual sparse\n--rps 1 2 3 4\n--requests 4000\n' >"$tmp/g2.txt"
interrupt INT "$tmp/sw" "$bin" exp sweep "$tmp/g2.txt" "$tmp/sw" --jobs 1
[ "$(cat "$tmp/rc")" -eq 130 ] && ok || bad "an interrupted sweep exited $(cat "$tmp/rc"), wanted 130"
grep -q "interrupted by SIGINT" "$tmp/sw/INCOMPLETE" 2>/dev/null && ok || bad "an interrupted sweep left no INCOMPLETE saying so"
grep -q "^tessera exp sweep $tmp/g2.txt $tmp/sw --jobs 1$" "$tmp/sw/INCOMPLETE" 2>/dev/null && ok ||
    bad "INCOMPLETE does not name the command"
printf -- '--policy dual sparse\n--rps 1 2\n--requests 10\n' >"$tmp/g2.txt"
expect 0 "the interrupted sweep run again" -- "$bin" exp sweep "$tmp/g2.txt" "$tmp/sw" --jobs 1
[ ! -e "$tmp/sw/INCOMPLETE" ] && [ -f "$tmp/sw/sweep.db" ] && ok || bad "the rerun sweep did not complete the folder"
[ ! -e "$tmp/sw/runs/run-8.log" ] && ok || bad "the rerun sweep kept the interrupted one's logs"
# ... but the same grid run again goes on with the interrupted sweep: the runs it finished are kept,
# only the others run
printf -- '--policy dual block\n--rps 10 20 40\n--requests 30000\n' >"$tmp/g3.txt"
$bin exp sweep "$tmp/g3.txt" "$tmp/sw3" --jobs 1 >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -f "$tmp/sw3/runs/run-1.db" ] && break; sleep 0.05; done
kill -INT $pid
wait $pid
kept=$(find "$tmp/sw3/runs" -maxdepth 1 -name 'run-*.db' 2>/dev/null | wc -l)
expect 0 "the same sweep again" -- "$bin" exp sweep "$tmp/g3.txt" "$tmp/sw3" --jobs 2
contains "the same sweep again goes on with it" "holds an interrupted sweep (INCOMPLETE): going on with it"
[ "$kept" -ge 1 ] && [ "$kept" -lt 6 ] && grep -qF "; $kept done before, kept" "$tmp/out" &&
    [ "$(grep -c "^sweep: run .* done" "$tmp/out")" -eq $((6 - kept)) ] && ok ||
    bad "the sweep run again did not keep its $kept finished runs and run only the others"
[ "$(sqlite3 "$tmp/sw3/sweep.db" "SELECT count(*) FROM runs" 2>/dev/null)" = 6 ] && ok || bad "the resumed sweep merged other than 6 runs"
# tessera killed outright: its sweep's runs end with it (none left running into the folder)
rm -rf "$tmp/sw3"
$bin exp sweep "$tmp/g3.txt" "$tmp/sw3" --jobs 2 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -f "$tmp/sw3/runs/run-1.log" ] && break; sleep 0.05; done
kill -KILL $pid
wait $pid 2>/dev/null
sleep 1
pgrep -f "$tmp/sw3/runs" >/dev/null && bad "a sweep's runs outlived its tessera, killed" || ok
# any folder (a space in its name), and grid values never taken as file patterns
printf -- '--policy dual\n--lengths fixed:*,64\n' >"$tmp/g4.txt"
mkdir -p "$tmp/cwd" && touch "$tmp/cwd/fixed:9,64"
expect 2 "a sweep of a value with a '*'" -- env -C "$tmp/cwd" "$bin" exp sweep "$tmp/g4.txt" "$tmp/g4 out"
contains "a sweep's value is a word, not a pattern" "lengths 'fixed:*,64'"
printf -- '--policy dual block\n--requests 5\n' >"$tmp/g5.txt"
expect 0 "a sweep into a folder with a space" -- "$bin" exp sweep "$tmp/g5.txt" "$tmp/with space" --jobs 2
[ "$(sqlite3 "$tmp/with space/sweep.db" "SELECT count(*) FROM runs" 2>/dev/null)" = 2 ] && ok ||
    bad "a sweep into a folder with a space merged no runs"
interrupt TERM "$tmp/la" env RPS="0.5 1.0" REQUESTS=3000 "$bin" exp run lookahead "$tmp/la"
[ "$(cat "$tmp/rc")" -eq 143 ] && ok || bad "a terminated exp run exited $(cat "$tmp/rc"), wanted 143"
grep -q "interrupted by SIGTERM" "$tmp/la/INCOMPLETE" 2>/dev/null && ok || bad "a terminated exp run left no INCOMPLETE"
expect 0 "the terminated exp run again" -- env RPS=1.0 REQUESTS=20 "$bin" exp run lookahead "$tmp/la"
contains "the rerun says it replaces" "holds an incomplete run (INCOMPLETE): replacing it"
[ ! -e "$tmp/la/INCOMPLETE" ] && [ -s "$tmp/la/results.jsonl" ] && ok || bad "the rerun exp run did not complete the folder"
expect 2 "an experiment refusing its arguments" -- "$bin" exp run focus-fig7 "$tmp/fr/deep" extra
empty_dir "$tmp/fr" "an experiment that refused its arguments"

# GPU experiments: marked in exp list, refused at once without a GPU (exit 2, one line, nothing written)
expect 0 "exp list" -- "$bin" exp list
contains "exp list marks live" "[needs a GPU]"
contains "exp list marks fidelity" "[needs a GPU unless MEASURED is set]"
grep -E '^(live|fidelity) ' "$tmp/out" | grep -vq "needs a GPU" && bad "exp list leaves a GPU experiment unmarked" || ok
if ! [ -e /dev/nvidia0 ]; then
    for e in live fidelity; do
        expect 2 "exp run $e without a GPU" -- "$bin" exp run $e "$tmp/gpu-$e"
        contains "exp run $e says why" "needs a GPU and the CUDA engine"
        [ "$(wc -l <"$tmp/all")" -eq 1 ] && ok || bad "exp run $e: $(wc -l <"$tmp/all") lines, wanted one"
        empty_dir "$tmp/gpu-$e" "exp run $e without a GPU"
    done
fi
# the validation against the seed systems' own code: from its record on a CPU; without it, the record
# named and how to make it; its GPU half (MEASURE) refused without one
expect 0 "exp run validate on a CPU" -- "$bin" exp run validate "$tmp/val"
v=$tmp/val/validate.csv
# (the loops served one request at a time, and dLLM-Cache's in static batches: every forward count
# exact; dLLM-Serve's batching runtime: its step count within 5%)
[ "$(awk -F, '$3 == "forwards" && $1 != "dllm-serve" && $6 == "+0.0"' "$v" 2>/dev/null | wc -l)" -eq 10 ] && ok ||
    bad "exp run validate: not every one-at-a-time run's forward count matches its measurement"
[ "$(awk -F, '$3 == "forwards" && $1 == "dllm-serve" { e = $6 < 0 ? -$6 : $6; if (e < 5) n++ } END { print n + 0 }' "$v" 2>/dev/null)" -eq 2 ] &&
    ok || bad "exp run validate: dLLM-Serve's step count off by 5% or more"
[ "$(awk -F, '$3 == "throughput_tok_s" { e = $6 < 0 ? -$6 : $6; if (e < 15) n++ } END { print n + 0 }' "$v" 2>/dev/null)" -eq 12 ] &&
    ok || bad "exp run validate: a throughput off by 15% or more"
[ "$(grep -cE '^\| [a-z-]+ \| (low|high|b4|b16) \|' "$tmp/val/validate.md" 2>/dev/null)" -eq 12 ] && ok ||
    bad "exp run validate: its table lacks a run"
# each throughput, mean and p99 latency against its prediction's 90% interval, by load: at least 85% inside
python3 - "$tmp/val/coverage.csv" <<'PY' && ok || bad "exp run validate: its coverage of the measurements by the 90% intervals"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 36 and {r["load"] for r in rows} == {"below saturation", "above saturation", "static batches"}
assert all(float(r["lo"]) <= float(r["predicted"]) <= float(r["hi"]) for r in rows)
assert sum(int(r["inside"]) for r in rows) >= 0.85 * len(rows)
assert all(int(r["inside"]) == (float(r["lo"]) <= float(r["measured"]) <= float(r["hi"])) for r in rows)
PY
grep -q "^| below saturation | 15 | " "$tmp/val/validate.md" && ok || bad "exp run validate: no coverage below saturation"
[ "$(wc -l <"$tmp/val/latency.csv")" -eq $((10 * 64 + 8 + 32 + 1)) ] && ok || bad "exp run validate: latency.csv lacks requests"
expect 2 "exp run validate without its record" -- env RECORDS="$tmp/no-records" "$bin" exp run validate "$tmp/val2"
contains "exp run validate names the record" "needs the record experiments/records/validate-h100"
contains "exp run validate says how to make it" "MEASURE=1 tessera exp run validate OUT"
if ! [ -e /dev/nvidia0 ]; then
    expect 2 "exp run validate measuring without a GPU" -- env MEASURE=1 "$bin" exp run validate "$tmp/val3"
    contains "exp run validate measuring says why" "needs a GPU and the CUDA engine"
fi
expect 0 "exp run lmax on a CPU" -- env LIMITS=24 "$bin" exp run lmax "$tmp/lmax"
[ -s "$tmp/lmax/lmax.png" ] && [ "$(head -c 4 "$tmp/lmax/lmax.png" | tail -c 3)" = PNG ] && ok || bad "exp run lmax drew no PNG"

# a grid varying three options says why it draws no figure
printf -- '--policy dual sparse\n--rps 1 2\n--block 16 32\n--requests 3\n' >"$tmp/g3.txt"
expect 0 "exp sweep over three options" -- "$bin" exp sweep "$tmp/g3.txt" "$tmp/s3" --jobs 2
contains "a three-option sweep says why it draws no figure" "sweep: no figure: the grid varies 3 options"

# sim's summary names its cost model; --system prices as the paper experiments do
expect 0 "sim, roofline" -- "$bin" sim --requests 5 --quiet
contains "the summary names the roofline" "cost          roofline (tessera profile)"
expect 0 "sim --system fast-dllm" -- "$bin" sim --system fast-dllm --gpu rtx4090 --requests 5 --lengths livebench --quiet
contains "the summary names the carried calibration" "cost          calibrated, sim/data/calib/h200-llada-8b-torch-eager.csv carried to rtx4090"
expect 0 "sim --system fast-dllm --json" -- "$bin" sim --system fast-dllm --gpu rtx4090 --requests 5 --lengths livebench --quiet --json
contains "the JSON summary names the cost model" '"cost":"calibrated, sim/data/calib/h200-llada-8b-torch-eager.csv carried to rtx4090; host as calibrated'
expect 0 "sim --system mosaic" -- "$bin" sim --system mosaic --requests 3 --quiet
contains "mosaic prices with the roofline, as its experiments" "cost          roofline (torch-eager profile)"
expect 0 "dllm-serve-fig3 --quick" -- "$bin" exp run dllm-serve-fig3 "$tmp/f3" --quick
want=$(awk -F'\t' '$2 == "livebench" && $3 == "0.5" && $4 == "throughput_tok_s" { v[$1] = $5 }
    END { printf "%.4f", v["dllm-serve"] / v["fast-dllm"] }' "$tmp/f3/points.tsv")
n=$(awk -F'\t' '$2 == "livebench" && $3 == "0.5" { print; exit }' "$tmp/f3/points.idx" | wc -l)
tp() { "$bin" sim --system "$1" --gpu rtx4090 --rps 0.5 --requests 40 --lengths livebench --gen-len 256 --block 32 \
    --seed 1 --quiet --json | sed 's/.*"throughput_tok_s":\([0-9.e+-]*\).*/\1/'; }
got=$(awk -v a="$(tp dllm-serve)" -v b="$(tp fast-dllm)" 'BEGIN { printf "%.4f", a / b }')
[ "$n" -eq 1 ] && [ "$got" = "$want" ] && ok || bad "sim --system dllm-serve / fast-dllm at 0.5 req/s: $got, the experiment's $want"

# --decode: the papers' confidence threshold by name, the TPF forms kept
expect 0 "--decode threshold:tau=0.9" -- "$bin" sim --decode threshold:tau=0.9 --requests 20 --quiet --json
steps() { sed 's/.*"num_steps":\([0-9]*\).*"makespan_ns":\([0-9]*\).*/\1 \2/' "$tmp/out"; }
a=$(steps)
expect 0 "--decode threshold:llada-gsm8k" -- "$bin" sim --decode threshold:llada-gsm8k --requests 20 --quiet --json
[ "$a" = "$(steps)" ] && ok || bad "threshold:tau=0.9 ($a) is not llada-gsm8k's profile ($(steps))"
expect 0 "--decode threshold:2.5" -- "$bin" sim --decode threshold:2.5 --requests 5 --quiet
expect 2 "--decode threshold:0.9" -- "$bin" sim --decode threshold:0.9 --requests 5
contains "threshold:0.9 points to tau" "a confidence threshold is threshold:tau=TAU"
expect 2 "--decode threshold:tau=0.7" -- "$bin" sim --decode threshold:tau=0.7 --requests 5
contains "no profile at 0.7" "no threshold profile measured at confidence threshold 0.7"
expect 0 "sim --help documents tau" -- "$bin" sim --help
contains "sim --help documents tau" "threshold:tau=TAU"

# a trace's output lengths are honoured by default; rejections come with the reason and the remedy
printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,40\n1000000,100,70\n' >"$tmp/out40.csv"
expect 0 "sim --trace with outputs" -- "$bin" sim --trace "$tmp/out40.csv" --quiet --json
s=$(sed 's/.*"tokens_decoded":\([0-9]*\).*/\1/' "$tmp/out")
[ "$s" -eq 160 ] && ok || bad "the trace's output lengths (40 and 70: 64 + 96 positions in blocks of 32) not honoured: $s decoded"
expect 0 "sim --trace --gen-len 256" -- "$bin" sim --trace "$tmp/out40.csv" --gen-len 256 --quiet --json
s=$(sed 's/.*"tokens_decoded":\([0-9]*\).*/\1/' "$tmp/out")
[ "$s" -eq 512 ] && ok || bad "--gen-len 256 over a trace: $s decoded"
$bin trace gen --requests 200 --out "$tmp/sg.csv" >/dev/null 2>&1
expect 0 "sim with long prompts" -- "$bin" sim --trace "$tmp/sg.csv" --gen-len 256 --quiet
contains "the rejection's reason and remedy" "P + G exceeds the model's maximum positions: --clip-prompt admits them"
expect 0 "sim --clip-prompt" -- "$bin" sim --trace "$tmp/sg.csv" --gen-len 256 --clip-prompt --quiet
contains "--clip-prompt admits them" " 0 rejected"

finish
