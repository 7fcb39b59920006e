# shellcheck shell=bash disable=SC2154,SC2015 # bin, root: hostile_test.sh's; CHECK && ok || bad: one of them runs
# Databases handed to analysis/plot.sh: it reads them through tessera db export and runs nothing they
# hold. A run_id that is SQL text (the runs table rebuilt with a TEXT key, or a request's and an
# op's in tessera's own schema), and a system name and an op name that break out of a gnuplot
# string (a quote, a newline, a backquoted command), are refused (exit 2, with a message, no PNG) or
# drawn as text, in every mode; no file named PWNED appears.
# (Sourced by hostile_test.sh in a folder of its own.)
# shellcheck disable=SC2016 # backquotes and $(...) meant literally: they are the crafted text
"$bin" sim --requests 3 --rps 4 --gen-len 32 --quiet --no-progress --db run.db >/dev/null || bad "plot: the first run failed"

# refused_or_drawn WHAT MODE OUT.png ARGS...: plot.sh MODE OUT.png ARGS exits 0 with its PNG, or 2
# with a message and no PNG; either way no PWNED is written
refused_or_drawn() {
    local what=$1 png=$3
    shift
    rm -f "$png"
    TESSERA=$bin bash "$root/analysis/plot.sh" "$@" >plot.out 2>&1
    local rc=$?
    case $rc in
        0) [ "$(head -c 4 "$png" | tail -c 3)" = PNG ] && ok || bad "$what: exit 0 and no PNG" ;;
        2) [ -s plot.out ] && [ ! -e "$png" ] && ok || bad "$what: exit 2 without a message, or with a PNG" ;;
        *) bad "$what: exit $rc, wanted 0 or 2"; sed 's/^/    /' plot.out >&2 ;;
    esac
    [ -z "$(find . -name PWNED)" ] && ok || bad "$what: ran text from the database: PWNED written"
}

# (i) a run_id that is SQL: pasted into a query, it writes PWNED
payload="(SELECT writefile('PWNED','x'))"
cp run.db textid.db
sqlite3 textid.db "ALTER TABLE runs RENAME TO runs_old;
    CREATE TABLE runs(run_id TEXT PRIMARY KEY, created TEXT, code_version TEXT, seed INTEGER, config_json TEXT);
    INSERT INTO runs SELECT * FROM runs_old; DROP TABLE runs_old;
    UPDATE runs SET run_id = '${payload//\'/\'\'}'; UPDATE requests SET run_id = '${payload//\'/\'\'}';
    UPDATE step_runs SET run_id = '${payload//\'/\'\'}'; UPDATE segment_runs SET run_id = '${payload//\'/\'\'}';
    UPDATE op_breakdown SET run_id = '${payload//\'/\'\'}'" # (summary's INTEGER PRIMARY KEY holds no text)
[ "$(sqlite3 textid.db "SELECT run_id FROM runs")" = "$payload" ] && ok || bad "plot: the run_id was not crafted"
for mode in latency-cdf steps ops; do
    refused_or_drawn "plot.sh $mode of a run_id that is SQL" "$mode" out.png textid.db
done
refused_or_drawn "plot.sh sweep of a run_id that is SQL" sweep out.png textid.db rps lat_p99_s policy

# the same text as the run_id of rows in tessera's own schema (an INTEGER column keeps a text it
# cannot convert): a request and an op of no run, left out
cp run.db rows.db
sqlite3 rows.db "UPDATE requests SET run_id = '${payload//\'/\'\'}' WHERE req_id = 1;
    UPDATE op_breakdown SET run_id = '${payload//\'/\'\'}' WHERE op = 'qkv'"
for mode in latency-cdf steps ops; do
    refused_or_drawn "plot.sh $mode of rows whose run_id is SQL" "$mode" out.png rows.db
done

# (ii) a system and an op name that end a gnuplot string, start a command and name PWNED
cp run.db names.db
sqlite3 names.db "UPDATE runs SET config_json = json_set(config_json, '\$.system',
    'it''s \"q\" \`touch PWNED\` \$(touch PWNED)' || char(10) || 'set output ''PWNED''' || char(10) || 'system(\"touch PWNED\")');
    UPDATE op_breakdown SET op = 'q''\"\`touch PWNED\`' || char(10) || 'system(\"touch PWNED\") 1' WHERE op = 'qkv'"
[ "$(sqlite3 names.db "SELECT count(*) FROM runs WHERE json_extract(config_json, '\$.system') LIKE '%set output%'")" = 1 ] &&
    ok || bad "plot: the system name was not crafted"
for mode in latency-cdf steps ops; do
    refused_or_drawn "plot.sh $mode of a system name that ends a string" "$mode" out.png names.db
done
refused_or_drawn "plot.sh sweep over a system name that ends a string" sweep out.png names.db rps lat_p99_s system
# the crafted name is a label like any other: drawn, not refused
TESSERA=$bin bash "$root/analysis/plot.sh" latency-cdf drawn.png names.db >plot.out 2>&1 && [ -s drawn.png ] && ok ||
    bad "plot.sh latency-cdf refused a system name it can draw as text: $(head -3 plot.out)"
