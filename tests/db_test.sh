#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# db_test.sh: results are never lost. 16 concurrent writers into a new and into an existing
# database all land their runs, each under its own run_id; a database that holds runs is refused
# before the work unless --append or --replace says what to do with them; a bad --db is refused
# before the work with exit status 2, naming the file, and nothing is created; SIGINT, SIGTERM or
# SIGKILL at random moments of a run (its simulation or its write) leave either the whole run or
# none of it, and no file but the database, as does reading it; a database of an older schema is upgraded in place
# when a run is appended; tessera db merge keeps every run; a run's memory does not grow with its
# length (a million requests within 1.3 times a hundred thousand's peak, with and without a database).
# Usage: db_test.sh PATH/TO/tessera [TRIALS]   Prints "db: N passed, M failed".
set -u
bin=${1:?usage: db_test.sh PATH/TO/tessera [TRIALS]}
trials=${2:-60}
TEST=db
source "$(dirname "$0")/lib_cli.sh"
# beside DIR PATTERN: the names in DIR that match PATTERN, a line each (hidden ones too)
beside() { find "$1" -mindepth 1 -maxdepth 1 -name "$2" -printf '%f\n'; }
q() { sqlite3 "$1" "$2" 2>/dev/null; }
small=(sim --requests 20 --rps 4 --gen-len 64 --quiet --no-progress)

# a database whose view is not tessera's (here one that never ends) is refused at once by every
# entry point, naming the view, and left as it was: no stored row is read, no run appended, no OUT made
"$bin" sim --requests 5 --quiet --no-progress --db "$tmp/endless.db" >/dev/null
sqlite3 "$tmp/endless.db" "DROP VIEW segments; CREATE VIEW segments AS WITH RECURSIVE c(n) AS (SELECT 1
    UNION ALL SELECT n + 1 FROM c) SELECT n AS run_id, n AS padding FROM c"
sum=$(cksum <"$tmp/endless.db")
for cmd in "sim --requests 5 --quiet --no-progress --db $tmp/endless.db --append" "db merge $tmp/endless-merged.db $tmp/endless.db" \
    "db export $tmp/endless.db segments" "db check $tmp/endless.db" "db show $tmp/endless.db 1"; do
    read -ra words <<<"$cmd"
    expect 2 "$cmd" -- timeout 30 "$bin" "${words[@]}"
    contains "$cmd" "holds view 'segments', which is not tessera's"
done
[ "$(cksum <"$tmp/endless.db")" = "$sum" ] && [ ! -e "$tmp/endless-merged.db" ] && ok ||
    bad "a refused database was changed, or a merge of it left an OUT"

# tessera db export: a table as CSV or JSON, row for row what SQLite holds (a text with commas, quotes and
# a line break comes back whole through Python's csv reader); a view in place of a table, a missing
# table and an unknown one refused with status 2; a failed --out leaves no file
"$bin" sim --requests 6 --quiet --no-progress --db "$tmp/export.db" >/dev/null
"$bin" sim --requests 4 --quiet --no-progress --db "$tmp/export.db" --append >/dev/null
sqlite3 "$tmp/export.db" "UPDATE requests SET reject_reason = 'a, \"quoted\"'||char(10)||'reason' WHERE run_id = 2 AND req_id = 1"
for t in runs requests steps segments ops; do
    got=$(python3 - "$bin" "$tmp/export.db" "$t" <<'PY' 2>&1
import csv, io, json, sqlite3, subprocess, sys
bin_, path, t = sys.argv[1:4]
src = {"runs": "runs LEFT JOIN summary USING (run_id)", "ops": "op_breakdown"}.get(t, t)
want = sqlite3.connect(path).execute("SELECT * FROM %s WHERE run_id = 2" % src).fetchall()
out = subprocess.run([bin_, "db", "export", path, t, "--run", "2"], capture_output=True, text=True, check=True).stdout
rows = list(csv.reader(io.StringIO(out)))[1:]
js = json.loads(subprocess.run([bin_, "db", "export", path, t, "--run", "2", "--json"], capture_output=True,
                               text=True, check=True).stdout)
def same(w, c):  # an SQLite value against its CSV cell: NULL empty, a real to its last digits
    return c == "" if w is None else abs(w - float(c)) <= 1e-12 * abs(w) if isinstance(w, float) else str(w) == c
ok = len(rows) == len(want) == len(js) > 0 and all(
    len(r) == len(wr) and all(same(w, c) for w, c in zip(wr, r)) and list(j.values()) == list(wr)
    for r, j, wr in zip(rows, js, want))
print("ok" if ok else "%d csv rows, %d json, %d in SQLite" % (len(rows), len(js), len(want)))
PY
)
    [ "$got" = ok ] && ok || bad "db export $t: $got"
done
cp "$tmp/export.db" "$tmp/export-view.db"
sqlite3 "$tmp/export-view.db" "ALTER TABLE requests RENAME TO r0; CREATE VIEW requests AS SELECT * FROM r0"
expect 2 "db export of a view in place of a table" -- "$bin" db export "$tmp/export-view.db" requests
contains "db export of a view in place of a table" "holds table 'r0', which is no part of a tessera database"
expect 2 "db export replicas of single runs" -- "$bin" db export "$tmp/export.db" replicas
contains "db export replicas of single runs" "none of its runs recorded them"
expect 2 "db export of an unknown table" -- "$bin" db export "$tmp/export.db" summaries
contains "db export of an unknown table" "no table 'summaries' to export (runs, requests"
mkdir -p "$tmp/adir"
expect 2 "db export --out onto a folder" -- "$bin" db export "$tmp/export.db" steps --out "$tmp/adir"
[ -z "$(beside "$tmp" 'adir.tmp*')" ] && ok || bad "db export left a file behind: $(beside "$tmp" 'adir.tmp*')"
expect 0 "db export --out" -- "$bin" db export "$tmp/export.db" steps --json --out "$tmp/steps.json"
python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))) > 0' "$tmp/steps.json" && ok || bad "db export --out wrote no JSON"

# a damaged database (a page in its middle overwritten) is refused before the run by --append and by
# db merge, with status 2, naming the damage, and left as it was; tessera db check says which of its
# files are damaged (status 1) and which are sound
"$bin" sim --requests 300 --rps 50 --gen-len 32 --quiet --no-progress --db "$tmp/damaged.db" >/dev/null
cp "$tmp/damaged.db" "$tmp/sound.db"
pages=$(q "$tmp/damaged.db" "PRAGMA page_count") psize=$(q "$tmp/damaged.db" "PRAGMA page_size")
# shellcheck disable=SC2017 # the middle page's first byte: pages / 2 rounds down to a whole page
printf '\336\255\276\357%.0s' $(seq 256) | dd of="$tmp/damaged.db" bs=1 seek=$((pages / 2 * psize)) conv=notrunc status=none
sum=$(cksum <"$tmp/damaged.db")
expect 2 "--append to a damaged database" -- "$bin" "${small[@]}" --db "$tmp/damaged.db" --append
contains "--append to a damaged database" "the database is damaged (SQLite's integrity check: "
[ "$(cksum <"$tmp/damaged.db")" = "$sum" ] && ok || bad "--append to a damaged database changed it"
expect 2 "db merge of a damaged database" -- "$bin" db merge "$tmp/from-damaged.db" "$tmp/sound.db" "$tmp/damaged.db"
contains "db merge of a damaged database" "damaged.db: the database is damaged"
[ ! -e "$tmp/from-damaged.db" ] && ok || bad "db merge wrote its output before refusing a damaged input"
expect 1 "db check" -- "$bin" db check "$tmp/sound.db" "$tmp/damaged.db"
contains "db check" "sound.db: ok"
contains "db check" "damaged.db: the database is damaged"
expect 2 "db check of a missing file" -- "$bin" db check "$tmp/sound.db" "$tmp/missing.db"
contains "db check of a missing file" "missing.db: No such file or directory"

# a database written before the segments' selection columns (keep, score_rows) and before the step
# and segment rows were stored as runs: a sparse run appended to it upgrades it in place (the older
# rows read as 0, the older run's rows the same through the views) and every run stays readable;
# merged as it is into a new database, it is upgraded the same way
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/analysis/records.sh" get ops-h200 def.db.gz "$tmp/old.db.gz" && gzip -d "$tmp/old.db.gz"
cp "$tmp/old.db" "$tmp/old2.db"
rows1="SELECT run_id, step_id, start_ns, duration_ns, num_segs, q_tokens, kv_tokens, kv_write_tokens, logit_rows, decoded,
       num_full, num_refresh, num_reuse, num_prefill, num_block, act_peak_bytes, kv_in_use_bytes, logit_chunk_rows,
       ffn_chunks FROM steps WHERE run_id = 1 ORDER BY step_id; SELECT run_id, step_id, req_id, phase, q, kv, kv_write,
       logit_rows, decoded, padding FROM segments WHERE run_id = 1 ORDER BY step_id, req_id"
before=$(q "$tmp/old.db" "$rows1" | md5sum)
"$bin" "${small[@]}" --policy sparse --db "$tmp/old.db" --append >/dev/null 2>"$tmp/old.err" && ok ||
    bad "appending a sparse run to an older database: $(head -2 "$tmp/old.err")"
[ "$(q "$tmp/old.db" "$rows1" | md5sum)" = "$before" ] && ok || bad "the older run's steps or segments changed in the upgrade"
# the step knobs it did not record read as NULL in its run (a replay derives them), and as recorded in the new one
[ "$(q "$tmp/old.db" "SELECT group_concat(n, ' ') FROM (SELECT count(front_layers) AS n FROM steps GROUP BY run_id ORDER BY run_id)")" = \
  "0 $(q "$tmp/old.db" "SELECT count(*) FROM steps WHERE run_id = 2")" ] && ok || bad "the upgrade's knob columns: not NULL in the older run, or not recorded in the new"
[ "$(q "$tmp/old.db" "SELECT group_concat(type || ' ' || name, ', ') FROM (SELECT type, name FROM sqlite_master
      WHERE name IN ('steps', 'segments', 'step_runs', 'segment_runs') ORDER BY name)")" = \
  "table segment_runs, view segments, table step_runs, view steps" ] && ok || bad "the upgrade left no runs and views"
"$bin" db merge "$tmp/merged.db" "$tmp/old2.db" >/dev/null 2>"$tmp/old.err" && ok || bad "merging an older database: $(head -2 "$tmp/old.err")"
[ "$(q "$tmp/merged.db" "$rows1" | md5sum)" = "$before" ] && ok || bad "an older database merged: its steps or segments changed"
got=$(q "$tmp/old.db" "SELECT group_concat(n, ' ') FROM (SELECT sum(keep > 0) AS n FROM segments GROUP BY run_id ORDER BY run_id)")
case $got in "0 "[1-9]*) ok ;; *) bad "older database upgraded: selecting segments by run '$got', wanted none in run 1 and some in run 2" ;; esac
got=$(q "$tmp/old.db" "SELECT group_concat(num_stalls IS NOT NULL, ' ') FROM (SELECT num_stalls FROM summary ORDER BY run_id)")
[ "$got" = "1 1" ] && ok || bad "older database upgraded: its summary's stalls column '$got', wanted one a run"
"$bin" calib eval --db "$tmp/old.db" >/dev/null 2>"$tmp/old.err" && ok || bad "the older run unreadable after the upgrade: $(head -2 "$tmp/old.err")"
# and a dLLM-Cache run: its per-layer shapes (front rows, probes, carried rows) land in the columns
# the upgrade added
"$bin" "${small[@]}" --policy dllm-cache --db "$tmp/old.db" --append >/dev/null 2>"$tmp/old.err" && ok ||
    bad "appending a dllm-cache run to an older database: $(head -2 "$tmp/old.err")"
got=$(q "$tmp/old.db" "SELECT sum(q_front > 0), sum(probe > 0), sum(carry > 0), sum(q_front = 0 AND probe = 0) FROM segments WHERE run_id = 3")
case $got in [1-9]*"|"[1-9]*"|"[1-9]*"|"[1-9]*) ok ;; *) bad "dllm-cache segments: front, probing, carrying and whole refreshes '$got'" ;; esac

# the step and segment rows are stored as runs, far fewer than the rows the views give back; the
# views give one row a step (each starting when the one before ended or later) and one a request
# and step, as many as the summary counts
"$bin" sim --requests 200 --rps 2 --quiet --no-progress --db "$tmp/runs.db" >/dev/null 2>&1
got=$(q "$tmp/runs.db" "SELECT (SELECT count(*) FROM segment_runs) * 5 < (SELECT count(*) FROM segments),
       (SELECT count(*) FROM step_runs) * 2 < (SELECT count(*) FROM steps),
       (SELECT count(*) FROM steps) = (SELECT num_steps FROM summary),
       (SELECT count(*) FROM segments) = (SELECT request_steps FROM summary),
       (SELECT sum(decoded) FROM segments) = (SELECT tokens_decoded FROM summary),
       (SELECT count(*) FROM steps a JOIN steps b ON b.run_id = a.run_id AND b.step_id = a.step_id + 1
        WHERE b.start_ns < a.start_ns + a.duration_ns),
       (SELECT count(*) FROM (SELECT step_id, req_id FROM segments GROUP BY step_id, req_id HAVING count(*) > 1))")
[ "$got" = "1|1|1|1|1|0|0" ] && ok || bad "runs of steps and segments: '$got', wanted 1|1|1|1|1|0|0"
# a new database is written whole, run and all, before it is given its name: sound, the only file its
# run left, and left in rollback-journal mode (a WAL database cannot be read from read-only media);
# a run appended to it goes through SQLite's log, and it is left so again
got=$(q "$tmp/runs.db" "PRAGMA journal_mode; PRAGMA integrity_check; SELECT count(*) FROM runs" | tr '\n' ' ')
[ "$got" = "delete ok 1 " ] && ok || bad "a new database: journal mode, integrity, runs '$got', wanted 'delete ok 1 '"
[ "$(beside "$tmp" 'runs.db*' | wc -l)" = 1 ] && ok || bad "a new database left files beside it: $(beside "$tmp" 'runs.db*' | tr '\n' ' ')"
"$bin" sim --requests 50 --rps 2 --quiet --no-progress --db "$tmp/runs.db" --append >/dev/null 2>&1
got=$(q "$tmp/runs.db" "PRAGMA integrity_check; SELECT count(*) FROM runs; SELECT count(DISTINCT run_id) FROM segments" | tr '\n' ' ')
[ "$got" = "ok 2 2 " ] && ok || bad "a run appended to a new database: integrity, runs '$got', wanted 'ok 2 2 '"
mkdir -p "$tmp/ro" && cp "$tmp/runs.db" "$tmp/ro/" && chmod a-w "$tmp/ro/runs.db" "$tmp/ro"
[ "$(sqlite3 "file:$tmp/ro/runs.db?mode=ro" "PRAGMA journal_mode; SELECT count(*) FROM runs" 2>&1 | tr '\n' ' ')" = "delete 2 " ] &&
    ok || bad "a database on a read-only folder cannot be read"
chmod u+w "$tmp/ro"
# reading it (calib eval, here with no replayed run to find) leaves no -wal/-shm beside it: a
# read-only connection, the last to close, would
"$bin" calib eval --db "$tmp/runs.db" >/dev/null 2>&1
[ "$(beside "$tmp" 'runs.db*' | wc -l)" = 1 ] && ok || bad "calib eval left files beside the database: $(beside "$tmp" 'runs.db*' | tr '\n' ' ')"

# 16 writers at once into a new database, then 16 more into it
for round in 1 2; do
    pids=()
    for k in $(seq 1 16); do
        "$bin" "${small[@]}" --seed $((round * 100 + k)) --db "$tmp/c.db" --append >/dev/null 2>"$tmp/c.$k.err" &
        pids+=($!)
    done
    st=0
    for p in "${pids[@]}"; do wait "$p" || st=1; done
    [ $st -eq 0 ] && ok || { bad "round $round: a concurrent writer failed: $(cat "$tmp"/c.*.err | head -3 | tr "\n" " ")"; }
    want=$((round * 16))
    got=$(q "$tmp/c.db" "SELECT count(DISTINCT run_id) FROM runs")
    [ "$got" = "$want" ] && ok || bad "round $round: $got runs in the database, wanted $want"
    got=$(q "$tmp/c.db" "SELECT count(DISTINCT run_id) FROM summary WHERE num_finished = 20")
    [ "$got" = "$want" ] && ok || bad "round $round: $got complete summaries, wanted $want"
    got=$(q "$tmp/c.db" "SELECT count(DISTINCT json_extract(config_json, '$.seed')) FROM runs")
    [ "$got" = "$want" ] && ok || bad "round $round: $got distinct seeds, wanted $want"
done
ls "$tmp"/c.db-* >/dev/null 2>&1 && bad "SQLite's -wal/-shm files left after every writer closed" || ok

# 16 writers at once into a new database without --append: exactly one lands its run and every other
# is refused, naming --append, whatever the timing (three rounds)
for round in 1 2 3; do
    rm -f "$tmp/n.db"
    for k in $(seq 1 16); do
        "$bin" "${small[@]}" --seed "$k" --db "$tmp/n.db" >/dev/null 2>"$tmp/n.$k.err" &
    done
    wait
    got="$(q "$tmp/n.db" "SELECT count(*) FROM runs") $(grep -l -- "holds 1 runs already.*--append adds this one" "$tmp"/n.*.err | wc -l)"
    [ "$got" = "1 15" ] && ok || bad "round $round without --append: runs and refusals '$got', wanted '1 15'"
done

# a database that holds runs: refused before the work without --append or --replace
start=$(date +%s%N)
"$bin" sim --requests 100000 --db "$tmp/c.db" >"$tmp/out" 2>&1
st=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ $st -eq 2 ] && grep -qF "$tmp/c.db: holds 32 runs already; --append" "$tmp/out" && [ $ms -lt 2000 ] && ok ||
    bad "a database with runs: exit $st after $ms ms: $(cat "$tmp/out")"
"$bin" "${small[@]}" --db "$tmp/c.db" --replace >/dev/null && [ "$(q "$tmp/c.db" "SELECT count(*) FROM runs")" = 1 ] &&
    [ "$(q "$tmp/c.db" "SELECT count(*) FROM requests")" = 20 ] && ok || bad "--replace did not leave one run alone"
"$bin" "${small[@]}" --append >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -qF "no --db given" "$tmp/out" && ok || bad "--append without --db: $(cat "$tmp/out")"
"$bin" "${small[@]}" --db "$tmp/x.db" --append --replace >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -qF "one or the other" "$tmp/out" && ok || bad "--append --replace: $(cat "$tmp/out")"

# bad --db paths: refused before the work (exit 2, the file named), nothing created
printf 'not a database, but a line of text long enough to be read as a header\n' >"$tmp/text.db"
sqlite3 "$tmp/other.db" "CREATE TABLE runs(x INTEGER); CREATE TABLE t(y);"
ln -s "$tmp/gone/x.db" "$tmp/dangling.db"
for case in "$tmp/none/run.db:no such folder" "$tmp:a folder, not a database file" \
    "$tmp/text.db:not an SQLite database" "$tmp/other.db:not a tessera database" \
    "$tmp/dangling.db:a symbolic link to a file that does not exist" "/dev/null:not a regular file"; do
    path=${case%%:*} want=${case#*:}
    "$bin" sim --requests 100000 --db "$path" >"$tmp/out" 2>&1
    st=$?
    [ $st -eq 2 ] && grep -qF "$path: $want" "$tmp/out" && ok || bad "--db $path: exit $st: $(cat "$tmp/out")"
done
[ ! -e "$tmp/none" ] && ok || bad "a refused --db created its folder"
cmp -s "$tmp/text.db" <(printf 'not a database, but a line of text long enough to be read as a header\n') && ok ||
    bad "a refused --db changed the file"

# a SIGINT the moment the run is committed (TESSERA_FAULT injects it): the run is kept, so the exit
# status is 0 and says so
expect 0 "SIGINT after the commit" -- env TESSERA_FAULT=sigint-after-commit "$bin" "${small[@]}" --db "$tmp/late.db"
contains "SIGINT after the commit" "interrupted; the run was saved to its database already"
[ "$(q "$tmp/late.db" "SELECT count(*) FROM runs")" = 1 ] && ok || bad "SIGINT after the commit: the run is not in the database"

# a full disk and a read-only file system (a small tmpfs, where this user may mount one): a first
# write that fails leaves no file and says the disk is full; trace gen leaves no partial file; a
# database on a read-only file system is refused before the run, and can still be read
mkdir -p "$tmp/small"
if mount -t tmpfs -o size=600k tmpfs "$tmp/small" 2>/dev/null; then
    "$bin" sim --requests 2000 --rps 20 --quiet --no-progress --db "$tmp/small/full.db" >/dev/null 2>"$tmp/out"
    st=$?
    [ $st -ne 0 ] && [ -z "$(ls -A "$tmp/small")" ] && grep -qE "disk is full|No space left" "$tmp/out" && ok ||
        bad "a write on a full disk: exit $st, left '$(beside "$tmp/small" '*' | tr '\n' ' ')': $(cat "$tmp/out")"
    "$bin" trace gen --requests 100000 --rps 20 --out "$tmp/small/t.csv" >/dev/null 2>"$tmp/out"
    st=$?
    [ $st -eq 2 ] && [ -z "$(ls -A "$tmp/small")" ] && grep -qF "t.csv: cannot write it: No space left on device" "$tmp/out" &&
        ok || bad "trace gen on a full disk: exit $st, left '$(beside "$tmp/small" '*' | tr '\n' ' ')': $(cat "$tmp/out")"
    "$bin" "${small[@]}" --db "$tmp/small/ro.db" >/dev/null 2>&1
    mount -o remount,ro "$tmp/small"
    "$bin" "${small[@]}" --db "$tmp/small/ro.db" --append >/dev/null 2>"$tmp/out"
    st=$?
    [ $st -eq 2 ] && grep -qF "ro.db: cannot write it: Read-only file system" "$tmp/out" && ok ||
        bad "--append on a read-only file system: exit $st: $(cat "$tmp/out")"
    [ "$(sqlite3 "file:$tmp/small/ro.db?mode=ro" "SELECT count(*) FROM runs" 2>&1)" = 1 ] && ok ||
        bad "a database on a read-only file system cannot be read"
    umount "$tmp/small"
else
    echo "db: note: no tmpfs could be mounted here (not root?): the full-disk and read-only checks skipped" >&2
fi

# interrupted runs: the whole run or none of it, and no other file; exit 0 exactly when it is there
mid=(sim --requests 1000 --rps 20 --quiet --no-progress)
sigs=(INT TERM KILL)
whole=0
none=0
for t in $(seq 1 "$trials"); do
    d="$tmp/kill$t"
    mkdir -p "$d"
    # (a background job starts with SIGINT ignored; the wrapper gives it the default back)
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
        "$bin" "${mid[@]}" --seed "$t" --db "$d/r.db" >/dev/null 2>&1 &
    pid=$!
    sleep "0.$(printf '%03d' $((RANDOM % 300)))"
    sig=${sigs[$((t % 3))]}
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    st=$?
    if [ -e "$d/r.db" ]; then
        check=$(q "$d/r.db" "PRAGMA integrity_check")
        runs=$(q "$d/r.db" "SELECT count(*) FROM runs" || echo 0)
        runs=${runs:-0}
        if [ "$check" != ok ]; then bad "trial $t ($sig): integrity check: $check"; continue; fi
        if [ "$runs" -gt 1 ]; then bad "trial $t ($sig): $runs runs"; continue; fi
        if [ "$runs" -eq 1 ]; then
            reqs=$(q "$d/r.db" "SELECT count(*) FROM requests") steps=$(q "$d/r.db" "SELECT count(*) FROM steps")
            want_s=$(q "$d/r.db" "SELECT num_steps FROM summary") want_r=$(q "$d/r.db" "SELECT num_requests FROM summary")
            if [ "$reqs" != "$want_r" ] || [ "$steps" != "$want_s" ] || [ "$reqs" != 1000 ]; then
                bad "trial $t ($sig): a partial run: $reqs requests, $steps steps of $want_r, $want_s"; continue
            fi
            # the exit status tells the truth: a run in the database is a success, whenever the
            # signal came (SIGKILL aside, which no process can answer)
            [ $st -eq 0 ] || [ "$sig" = KILL ] || { bad "trial $t ($sig): exit $st with its run saved"; continue; }
            whole=$((whole + 1))
        else
            none=$((none + 1))
            [ $st -ne 0 ] || { bad "trial $t ($sig): exit 0 without its run"; continue; }
        fi
    else
        none=$((none + 1))
    fi
    # (the check above opened the database, so SQLite has recovered and removed its -wal/-shm)
    extra=$(beside "$d" '*' | grep -v '^r\.db$')
    [ -z "$extra" ] && ok || bad "trial $t ($sig): left ${extra//$'\n'/ }"
done
echo "db: $trials interrupted runs: $whole whole, $none without a trace" >&2

# db merge: every run of every input, each under a new run_id
"$bin" "${small[@]}" --seed 7 --db "$tmp/m1.db" >/dev/null && "$bin" "${small[@]}" --seed 8 --db "$tmp/m2.db" >/dev/null
"$bin" "${small[@]}" --seed 9 --db "$tmp/m2.db" --append >/dev/null
"$bin" db merge "$tmp/m.db" "$tmp/m1.db" "$tmp/m2.db" "$tmp/c.db" >"$tmp/out" 2>&1 && grep -qF "4 runs merged from 3" "$tmp/out" &&
    [ "$(q "$tmp/m.db" "SELECT count(DISTINCT run_id) FROM requests")" = 4 ] &&
    [ "$(q "$tmp/m.db" "SELECT group_concat(s, ',') FROM (SELECT json_extract(config_json, '$.seed') s FROM runs ORDER BY run_id)")" = "7,8,9,101" ] ||
    [ "$(q "$tmp/m.db" "SELECT count(*) FROM summary")" = 4 ] && ok || bad "db merge: $(cat "$tmp/out")"
"$bin" db merge "$tmp/m.db" "$tmp/m1.db" "$tmp/none.db" >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -qF "$tmp/none.db" "$tmp/out" && [ "$(q "$tmp/m.db" "SELECT count(*) FROM runs")" = 4 ] && ok ||
    bad "db merge with a missing input: $(cat "$tmp/out")"
# db merge again, as after an interruption: the runs the output holds already are left out, the rest
# merged (a run's identity: created time, code version, seed and configuration)
"$bin" "${small[@]}" --seed 10 --db "$tmp/m3.db" >/dev/null
"$bin" db merge "$tmp/m.db" "$tmp/m1.db" "$tmp/m2.db" "$tmp/m3.db" >"$tmp/out" 2>&1 &&
    grep -qF "1 runs merged from 3 databases (3 it held already left out)" "$tmp/out" &&
    [ "$(q "$tmp/m.db" "SELECT count(*) FROM runs")" = 5 ] && [ "$(q "$tmp/m.db" "SELECT count(*) FROM summary")" = 5 ] &&
    [ "$(q "$tmp/m.db" "SELECT count(DISTINCT run_id) FROM requests")" = 5 ] && ok ||
    bad "db merge again merged a run twice or left one out: $(cat "$tmp/out")"
# memory stays bounded: step rows leave memory as the run makes them
peak_kb() { # peak_kb ARGS...: the largest resident set (KiB) of tessera ARGS
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$bin" "$@"
}
if grep -q __asan_init "$bin" 2>/dev/null; then
    echo "db: note: $bin is built with AddressSanitizer, whose shadow memory the ceilings do not allow for; skipped" >&2
    echo "db: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
fi
# a run's memory does not grow with its length: a million requests (served as they come, with and
# without their database) peak within 1.3 times what a hundred thousand do
light=(--rps 20 --lengths "fixed:64,32" --gen-len 32 --cost roofline --quiet --no-progress)
for db in none steps; do
    args=("${light[@]}")
    [ $db = steps ] && args+=(--db "$tmp/mem.db") && rm -f "$tmp/mem.db"
    k1=$(peak_kb sim --requests 100000 "${args[@]}")
    [ $db = steps ] && rm -f "$tmp/mem.db"
    k2=$(peak_kb sim --requests 1000000 "${args[@]}")
    awk -v a="$k1" -v b="$k2" 'BEGIN { exit !(a > 0 && b > 0 && b <= 1.3 * a) }' && ok ||
        bad "peak memory (database: $db) at 1,000,000 requests $k2 KiB against $k1 KiB at 100,000: more than 1.3 times"
    echo "db: peak memory (database: $db): $k1 KiB at 100,000 requests, $k2 KiB at 1,000,000" >&2
done
[ "$(q "$tmp/mem.db" "SELECT (SELECT count(*) FROM requests) = 1000000 AND count(*) = (SELECT num_steps FROM summary) FROM steps")" = 1 ] &&
    ok || bad "the streamed request and step rows are not all in the database"
finish
