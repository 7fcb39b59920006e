# shellcheck shell=bash disable=SC2154,SC2015 # bin: hostile_test.sh's; CHECK && ok || bad: one of them runs
# The one rule for reading a database, at every entry point: a crafted database (a generated column, a
# hostile index under tessera's index's name, an endless range of steps, a control character in a
# stored option or name) is refused by name, at once, with status 2, and nothing is written; writers
# make their files whole (export, calibrations, traces) and never replace their input; a run file
# names no output. (Sourced by hostile_test.sh in a folder of its own.)
q() { sqlite3 "$1" "$2" 2>/dev/null; }
"$bin" sim --requests 3 --rps 4 --gen-len 32 --quiet --no-progress --db run.db >/dev/null || bad "db-rule: the first run failed"
crafted() { cp run.db "$1" && sqlite3 "$1" "$2"; }

# every entry point that reads a database refuses it, fast, naming what is wrong, and writes nothing
entry_points() { # entry_points FILE TEXT
    local cmd words
    for cmd in "db check $1" "db merge m.db $1" "db export $1 steps" "db export $1 runs --out x.csv" "db show $1 1" \
        "sim --requests 2 --quiet --no-progress --db $1 --append" "calib eval --db $1"; do
        read -ra words <<<"$cmd"
        expect 2 "$cmd" -- timeout 10 "$bin" "${words[@]}"
        contains "$cmd" "$2"
    done
    [ ! -e m.db ] && [ ! -e x.csv ] && ok || bad "a refused database left an OUT"
}
crafted gen.db "ALTER TABLE summary ADD COLUMN g TEXT AS (printf('%.*c', 100000000, 'x'))"
entry_points gen.db "'g TEXT AS (printf("
crafted idx.db "CREATE INDEX segment_runs_first ON segment_runs(run_id, first_step, length(printf('%.*c', 1000000, 'x')))"
entry_points idx.db "holds index 'segment_runs_first', which is not tessera's"
crafted range.db "UPDATE step_runs SET last_step = 9000000000000000000 WHERE rowid = (SELECT max(rowid) FROM step_runs)"
for cmd in "db check range.db" "db merge m.db range.db" "db export range.db steps" "db export range.db segments --run 1"; do
    read -ra words <<<"$cmd"
    expect 2 "$cmd" -- timeout 10 "$bin" "${words[@]}"
    contains "$cmd" "run 1: a run of steps from step"
done
[ ! -e m.db ] && ok || bad "db merge of an endless range left an OUT"
crafted back.db "UPDATE step_runs SET first_step = -9000000000000000000 WHERE rowid = (SELECT min(rowid) FROM step_runs)"
expect 2 "db export of a range from far before the run" -- timeout 10 "$bin" db export back.db steps
# the rows an export would write are counted first: past --max-rows, refused before any is written
n=$(q run.db "SELECT count(*) FROM steps")
expect 0 "db export of exactly --max-rows" -- "$bin" db export run.db steps --max-rows "$n"
expect 2 "db export past --max-rows" -- "$bin" db export run.db steps --max-rows $((n - 1))
contains "db export past --max-rows" "$n steps rows to write, more than --max-rows $((n - 1))"

# a stored option, time or version holding a line break or a terminal's escape: db show writes no run
# file that says more than the run did (a value a line cannot hold refused, a comment's text escaped)
crafted nl.db "UPDATE runs SET config_json = json_set(config_json, '\$.model', 'llada-8b' || char(10) || 'db OTHER.db' || char(10) || 'replace')"
expect 2 "db show of a line break in a stored option" -- "$bin" db show nl.db 1
contains "db show of a line break in a stored option" "model: its value holds a control character"
[ -z "$("$bin" db show nl.db 1 2>/dev/null)" ] && ok || bad "db show wrote part of a run file it refused"
crafted esc.db "UPDATE runs SET created = NULL, code_version = 'v' || char(27) || '[2J' || char(10) || 'db OTHER.db'"
"$bin" db show esc.db 1 >esc.txt 2>/dev/null || bad "db show of an escape in the code version failed"
grep -q 'created unknown by tessera v\\x1b\[2J\\x0adb OTHER.db)' esc.txt && ok || bad "db show: $(head -1 esc.txt)"
[ "$(grep -c '^db ' esc.txt)" = 0 ] && ok || bad "db show wrote a db line"
# a run file names no output: --db, --append, --replace and --gemm-cache are the command line's alone
for line in "db OTHER.db" "append" "replace" "--gemm-cache x.db"; do
    printf 'rps 2\n%s\n' "$line" >rf.txt
    expect 2 "a run file holding '$line'" -- "$bin" sim --config rf.txt --requests 2 --quiet --no-progress
    contains "a run file holding '$line'" "rf.txt:2:"
done
# a fleet's replica group may not carry the fleet's options through a run file either
printf 'requests 10\n' >group.txt
printf '2 --config group.txt\n' >fleet.txt
expect 2 "a fleet group's run file holding --requests" -- "$bin" sim --fleet fleet.txt --requests 4 --quiet --no-progress
contains "a fleet group's run file holding --requests" "the fleet's option (or its workload's), not a replica group's (its run file's)"

# a table's name holding a terminal's escape is shown escaped
crafted name.db "CREATE TABLE \"x$(printf '\033')[2Jy\"(run_id INTEGER)"
expect 2 "db check of a table named with an escape" -- "$bin" db check name.db
contains "db check of a table named with an escape" "holds table 'x\\x1b[2Jy'"
grep -q "$(printf '\033')" "$tmp/out" && bad "an error echoed a terminal's escape raw" || ok

# export: a FILE that holds something is replaced only with --force, the database itself never, by
# any of its names; an export cut short by a signal leaves no temporary beside OUT
echo keep >kept.csv
expect 2 "db export onto a file that holds something" -- "$bin" db export run.db runs --out kept.csv
contains "db export onto a file that holds something" "kept.csv: exists and is not empty; --force replaces it"
[ "$(cat kept.csv)" = keep ] && ok || bad "db export replaced a file it was not told to"
expect 0 "db export --force" -- "$bin" db export run.db runs --out kept.csv --force
ln -s run.db alias.db
for name in run.db alias.db; do
    sum=$(cksum <run.db)
    expect 2 "db export onto its own database as $name" -- "$bin" db export run.db runs --out "$name" --force
    contains "db export onto its own database as $name" "a writer never replaces its own input"
    [ "$(cksum <run.db)" = "$sum" ] && ok || bad "db export onto $name changed the database"
done
"$bin" sim --requests 4000 --rps 50 --gen-len 256 --quiet --no-progress --db long.db >/dev/null
# (SIGTERM: a background job of a script ignores SIGINT, and so, rightly, does the export)
"$bin" db export long.db segments --out cut.csv &
pid=$!
for _ in $(seq 200); do [ -n "$(find . -maxdepth 1 -name 'cut.csv.tmp*')" ] && break; sleep 0.02; done
sleep 0.2
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ $? -eq 143 ] && ok || bad "db export outlived SIGTERM"
left=$(find . -maxdepth 1 -name 'cut.csv*' -printf '%f ')
[ -z "$left" ] && ok || bad "db export killed by SIGTERM left $left"
# a file-size limit met midway (SIGXFSZ): no temporary, and the good file already there untouched
"$bin" db export run.db runs --out big.csv
sum=$(cksum <big.csv)
{ (ulimit -f 8 && exec "$bin" db export long.db segments --out big.csv --force); } 2>/dev/null
[ "$(cksum <big.csv)" = "$sum" ] && [ -z "$(find . -maxdepth 1 -name 'big.csv.*' -printf '%f')" ] && ok ||
    bad "an export past the file-size limit left big.csv changed or a temporary beside it"
# trace gen and the calibration's writers make their files whole too
"$bin" trace gen --requests 10 --out t.csv >/dev/null
sum=$(cksum <t.csv)
{ (ulimit -f 8 && exec "$bin" trace gen --requests 200000 --out t.csv --force); } >/dev/null 2>&1
[ "$(cksum <t.csv)" = "$sum" ] && [ -z "$(find . -maxdepth 1 -name 't.csv.*' -printf '%f')" ] && ok ||
    bad "trace gen past the file-size limit left t.csv changed or a temporary beside it"
cp "$root/sim/data/calib/h100-llada-8b-tessera.csv" calib.csv
sum=$(cksum <calib.csv)
{ (ulimit -f 4 && exec "$bin" calib transfer "$root/sim/data/calib/h100-llada-8b-tessera.csv" --from h100 --to l40s \
    --out calib.csv); } >/dev/null 2>&1
[ "$(cksum <calib.csv)" = "$sum" ] && [ -z "$(find . -maxdepth 1 -name 'calib.csv.*' -printf '%f')" ] && ok ||
    bad "calib transfer past the file-size limit left calib.csv changed or a temporary beside it"

# the smaller ones: a count in hexadecimal, the fleet's own errors unprefixed, db's commands named
printf 'arrival_ns,prompt_tokens,output_tokens\n0,0x10,32\n' >hex.csv
expect 2 "a hexadecimal prompt length" -- "$bin" sim --trace hex.csv --quiet --no-progress
contains "a hexadecimal prompt length" "hex.csv:2: prompt_tokens: not an integer ('0x10')"
expect 2 "--autoscale bogus" -- "$bin" sim --replicas 2 --autoscale bogus --requests 4 --quiet --no-progress
grep -q -- "--replicas 2:" "$tmp/out" && bad "--autoscale's error carries a replica group's prefix" || ok
for cmd in "db frobnicate:no command 'frobnicate'" "db check:check needs a database" "db merge out.db:merge needs at least one input after OUT" "db:a command is needed"; do
    read -ra words <<<"${cmd%%:*}"
    expect 2 "${cmd%%:*}" -- "$bin" "${words[@]}"
    contains "${cmd%%:*}" "${cmd#*:}"
done
rm -f long.db ./*.csv
