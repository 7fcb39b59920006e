#!/usr/bin/env bash
# live_tp_gpu_test.sh: tensor parallelism live (make check-gpu-tp, on a machine of N GPUs). A small
# schedule runs with --executor gpu --tp N: every step executed and measured, every request
# finished, the measured time within a factor of 3 of the roofline's tensor-parallel prediction,
# and one run in the database (rank 0's); the per-head sparse cache runs split; a step the split
# engine refuses (one sparse kept set for all heads) ends
# every rank with a message and a non-zero exit, not a hang, and so does a rank stuck outside any
# collective (the watchdog, TESSERA_TP_TIMEOUT_S); a degree beyond the visible GPUs, or one that does
# not divide the model's heads, is refused at start with exit 2.
# Usage: live_tp_gpu_test.sh PATH/TO/tessera N
set -u
bin=${1:?usage: live_tp_gpu_test.sh PATH/TO/tessera N}
n=${2:?usage: live_tp_gpu_test.sh PATH/TO/tessera N}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
timeout 300 "$bin" sim --tp "$n" --requests 6 --rps 8 --gen-len 64 --lengths fixed:300,64 --executor gpu \
    --json --quiet --no-progress --db "$tmp/live.db" >"$tmp/out.json" || { echo "live tp: the run failed"; exit 1; }
python3 - "$tmp/out.json" "$tmp/live.db" "$n" "$(dirname "$0")" <<'PY' || fail=1
import json, sqlite3, sys
sys.path.insert(0, sys.argv[4])
from live_summary import fails as summary_fails
s, n = json.load(open(sys.argv[1])), int(sys.argv[3])
fails, meas, model = summary_fails(s, 6)
db = sqlite3.connect(sys.argv[2])
runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
if runs != 1:
    fails.append(f"{runs} runs in the database (rank 0 alone writes)")
if json.loads(db.execute("SELECT config_json FROM runs").fetchone()[0]).get("tp") != n:
    fails.append("the run's configuration lacks its tp")
for f in fails:
    print("live tp: FAIL:", f)
print(f"live tp {n}: {s['num_steps']} steps measured {meas:.3f} s (roofline {model:.3f} s); "
      f"{'ok' if not fails else 'failed'}")
sys.exit(1 if fails else 0)
PY
# dLLM-Serve's head-centric sparse cache: each GPU selects for its own K/V heads
timeout 300 "$bin" sim --tp "$n" --policy sparse --sparse-select head --requests 4 --rps 8 --gen-len 64 \
    --lengths fixed:300,64 --executor gpu --json --quiet --no-progress >"$tmp/head.json" ||
    { echo "live tp: FAIL: the per-head sparse run failed"; fail=1; }
python3 - "$tmp/head.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
ok = s.get("live_steps") == s["num_steps"] > 0 and s["num_finished"] == 4
print(f"live tp: sparse per K/V head {s['num_steps']} steps executed in {s.get('live_measured_s', 0):.3f} s; "
      f"{'ok' if ok else 'failed'}")
sys.exit(0 if ok else 1)
PY
# a refused step (one kept set for all heads) ends the run on every rank, with the reason
timeout 300 "$bin" sim --tp "$n" --policy sparse --sparse-select uniform --requests 2 --rps 8 --gen-len 32 \
    --lengths fixed:300,32 \
    --executor gpu --quiet --no-progress >"$tmp/sparse.out" 2>"$tmp/sparse.err"
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "tensor parallelism runs steps" "$tmp/sparse.err"; then
    echo "live tp: FAIL: a refused step gave exit $rc: $(head -c 300 "$tmp/sparse.err")"
    fail=1
else
    echo "live tp: a refused step ends every rank (exit $rc); ok"
fi
# a rank stuck outside any collective: the watchdog ends it, the launcher the others, with the reason
start=$(date +%s)
TESSERA_TP_TIMEOUT_S=5 TESSERA_TP_TEST_STALL=1 timeout 120 "$(dirname "$bin")/tests/gpu/check_engine" --tp "$n" >/dev/null 2>"$tmp/stall.err"
rc=$?
took=$(( $(date +%s) - start ))
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "no collective for 5 s" "$tmp/stall.err"; then
    echo "live tp: FAIL: a stalled rank gave exit $rc after $took s: $(head -c 300 "$tmp/stall.err")"
    fail=1
else
    echo "live tp: a stalled rank ends the run in $took s (exit $rc); ok"
fi
# refused at start: more GPUs than visible, a degree that does not divide the heads
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || nvidia-smi -L | wc -l)
beyond=$((gpus * 2))
for bad in "--tp $beyond" "--tp 3 --model dream-7b"; do
    [ "$bad" = "--tp $beyond" ] && [ $beyond -gt 8 ] && continue
    read -r -a bad_opts <<<"$bad"
    timeout 120 "$bin" sim "${bad_opts[@]}" --requests 2 --executor gpu --quiet --no-progress >/dev/null 2>"$tmp/bad.err"
    rc=$?
    if [ $rc -ne 2 ]; then
        echo "live tp: FAIL: $bad gave exit $rc: $(head -c 300 "$tmp/bad.err")"
        fail=1
    else
        echo "live tp: $bad refused: $(head -1 "$tmp/bad.err")"
    fi
done
exit $fail
