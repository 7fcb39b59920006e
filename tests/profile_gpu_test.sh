#!/usr/bin/env bash
# profile_gpu_test.sh: engine profile records the attention launch rules version it ran under, and
# an uneven step's kv_long (make check-gpu). One uneven step (3 x 32, the last over 2,048 cached
# keys) profiled into a new database gives rows of ATTN_RULES (sim/core/attn_rules.h) and kv_long 2048; one
# even step into a database whose engine_profile table predates both columns (another model's row in
# it): the table gains them, the old row reads NULL for both (version 1, even) and the new rows
# ATTN_RULES and kv_long 0. The grid's batch part (its steps of up to 400 rows) profiles steps of 24,
# 32 and 48 sequences, which merge into the GPU's shipped LLaDA-8B calibration (an H100 or an H200).
# Four steps of one's own (--step four times) profile into one database and merge into it too.
# Usage: profile_gpu_test.sh PATH/TO/tessera
set -u
bin=${1:?usage: profile_gpu_test.sh PATH/TO/tessera}
root=$(cd "$(dirname "$0")/.." && pwd)
rules=$(awk '$1 == "#define" && $2 == "ATTN_RULES" { print $3 }' "$root/sim/core/attn_rules.h")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/old.db" <<'PY' || exit 1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE engine_profile(device TEXT, sm_clock_khz INTEGER, mem_clock_khz INTEGER, driver INTEGER, "
           "cuda_runtime INTEGER, cublas INTEGER, model TEXT, segs INTEGER, q INTEGER, kv INTEGER, "
           "logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL)")
db.execute("INSERT INTO engine_profile VALUES('old GPU', 0, 0, 0, 0, 0, 'sdar-8b', 1, 32, 0, 0, 'qkv', 0.1, 1.0)")
db.commit()
PY
for db in new old; do
    step=1,32,480,32
    [ $db = new ] && step=3,32,128,32,2048
    "$bin" engine profile --db "$tmp/$db.db" --step $step --reps 1 >"$tmp/$db.out" 2>&1 ||
        { echo "profile: engine profile into the $db database failed"; cat "$tmp/$db.out"; exit 1; }
done
python3 - "$tmp/new.db" "$tmp/old.db" "$rules" <<'PY' || exit 1
import sqlite3, sys
new, old, rules = sys.argv[1], sys.argv[2], int(sys.argv[3])
fails = []
for path, want_old, kv_long in ((new, 0, 2048), (old, 1, 0)):
    got = sqlite3.connect(path).execute(
        "SELECT model, attn_rules, kv_long, segs, count(*) FROM engine_profile "
        "GROUP BY model, attn_rules, kv_long, segs").fetchall()
    llada = [r for r in got if r[0] == "llada-8b"]
    if len(llada) != 1 or llada[0][1] != rules or llada[0][2] != kv_long or llada[0][4] < 10:
        fails.append(f"{path}: llada-8b rows {llada}, want all of attn_rules {rules} and kv_long {kv_long}")
    olds = [r for r in got if r[0] == "sdar-8b"]
    if len(olds) != want_old or (olds and (olds[0][1] is not None or olds[0][2] is not None)):
        fails.append(f"{path}: the earlier rows {olds}, want {want_old} with attn_rules and kv_long NULL")
for f in fails:
    print("profile: FAIL:", f)
print(f"profile: attention launch rules {rules} and an uneven step recorded, an older table upgraded; "
      f"{'ok' if not fails else 'failed'}")
sys.exit(1 if fails else 0)
PY
# the grid's batch part (up to 400 rows: 24, 32 and 48 sequences of 8) profiles steps of more than 16
# sequences, and merges into the shipped calibration of this GPU where one is shipped
"$bin" engine profile --db "$tmp/batch.db" --grid batch --max-rows 400 --reps 1 >"$tmp/batch.out" 2>&1 ||
    { echo "profile: engine profile --grid batch failed"; cat "$tmp/batch.out"; exit 1; }
segs=$(python3 -c 'import sqlite3, sys; print(",".join(str(r[0]) for r in sqlite3.connect(sys.argv[1]).execute(
    "SELECT DISTINCT segs FROM engine_profile ORDER BY segs")))' "$tmp/batch.db")
[ "$segs" = "24,32,48" ] || { echo "profile: FAIL: the batch part's sequences a step: $segs, want 24,32,48"; exit 1; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case $gpu in *H100*) g=h100 ;; *H200*) g=h200 ;; *) g= ;; esac
if [ -n "$g" ]; then
    "$bin" calib merge "$root/sim/data/calib/$g-llada-8b-tessera.csv" "$tmp/batch.db" --gpu $g --out "$tmp/merged.csv" \
        >"$tmp/merge.out" 2>&1 || { echo "profile: FAIL: the batch part does not merge"; cat "$tmp/merge.out"; exit 1; }
fi
echo "profile: the grid's batch part profiled (24, 32 and 48 sequences)${g:+ and merged into $g-llada-8b-tessera}; ok"
# steps of one's own (--step several times): each profiled into the one database, in the order given,
# the uneven one with its kv_long; together they merge into the shipped calibration (the even ones,
# without logits, measure each op at three token counts, as calib merge asks)
"$bin" engine profile --db "$tmp/own.db" --reps 1 --step 64,8,640,0 --step 4,16,480,0 --step 8,32,480,0 \
    --step 3,32,128,0,2048 \
    >"$tmp/own.out" 2>&1 || { echo "profile: engine profile with four --step failed"; cat "$tmp/own.out"; exit 1; }
steps=$(python3 -c 'import sqlite3, sys; print(" ".join(f"{r[0]},{r[1]},{r[2]},{r[3]},{r[4]}" for r in
    sqlite3.connect(sys.argv[1]).execute("SELECT segs, q, kv, logit_rows, kv_long FROM engine_profile GROUP BY segs, q, kv, logit_rows, kv_long "
    "ORDER BY min(rowid)")))' \
    "$tmp/own.db")
[ "$steps" = "64,8,640,0,0 4,16,480,0,0 8,32,480,0,0 3,32,128,0,2048" ] ||
    { echo "profile: FAIL: four --step profiled as $steps"; exit 1; }
if [ -n "$g" ]; then
    "$bin" calib merge "$root/sim/data/calib/$g-llada-8b-tessera.csv" "$tmp/own.db" --gpu $g --out "$tmp/own.csv" \
        >"$tmp/merge.out" 2>&1 || { echo "profile: FAIL: the --step profile does not merge"; cat "$tmp/merge.out"; exit 1; }
fi
echo "profile: four steps of one's own profiled into one database${g:+ and merged into $g-llada-8b-tessera}; ok"
