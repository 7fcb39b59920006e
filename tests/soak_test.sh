#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# soak_test.sh: many writers and kills against one database (make check-soak). WRITERS runs append to
# one database at once while KILLS more are started beside them and killed at random moments by
# SIGINT, SIGTERM or SIGKILL. Afterwards the database must be sound, hold every writer's run, and each
# run it holds (a killed one's too, where its commit came first) must be, row for row, the run a
# single writer makes alone with the same seed: its requests, steps and segments hashed against that
# reference. Exit 0 must mean the run is there (SIGKILL aside). Prints the figures and
# "soak: N passed, M failed".
# Usage: soak_test.sh PATH/TO/tessera [WRITERS [KILLS]]   (16 and 50)
set -u
bin=${1:?usage: soak_test.sh PATH/TO/tessera [WRITERS [KILLS]]}
writers=${2:-16}
kills=${3:-50}
TEST=soak
source "$(dirname "$0")/lib_cli.sh"
q() { sqlite3 "$1" "$2" 2>/dev/null; }
run=(sim --requests 40 --rps 8 --gen-len 64 --quiet --no-progress)
long=(sim --requests 1500 --rps 40 --gen-len 64 --quiet --no-progress) # (long enough to be killed mid-run)
# hash DB RUN_ID: the run's requests, steps and segments, without their run_id
hash() {
    q "$1" "SELECT req_id, arrival_ns, admitted_ns, first_block_ns, finish_ns, P, G, C, steps, preemptions, state,
                   reject_reason FROM requests WHERE run_id = $2 ORDER BY req_id;
            SELECT * FROM steps WHERE run_id = $2 ORDER BY step_id;
            SELECT * FROM segments WHERE run_id = $2 ORDER BY step_id, req_id" |
        sed 's/^[0-9]*|//' | md5sum | cut -c1-32
}
start=$SECONDS
# the writers, and the runs to be killed, all at once into one database (their seeds tell them apart)
db=$tmp/soak.db
"$bin" "${run[@]}" --seed 0 --db "$db" >/dev/null 2>&1 # (the database exists before they start)
declare -A status signal
{ # (the shell's own notes of killed jobs left out)
    for s in $(seq 1 "$writers"); do
        "$bin" "${run[@]}" --seed "$s" --db "$db" --append >/dev/null 2>"$tmp/w$s.err" &
        pids[s]=$!
    done
    sigs=(INT TERM KILL)
    for k in $(seq 1 "$kills"); do
        s=$((1000 + k))
        "$bin" "${long[@]}" --seed "$s" --db "$db" --append >/dev/null 2>&1 &
        pids[s]=$!
        signal[$s]=${sigs[$((RANDOM % 3))]}
        (sleep "0.$(printf '%03d' $((RANDOM % 400)))"; kill -s "${signal[$s]}" "${pids[$s]}" 2>/dev/null) &
    done
    for s in "${!pids[@]}"; do
        wait "${pids[$s]}" 2>/dev/null
        status[$s]=$?
    done
    wait
} 2>/dev/null
echo "soak: $writers writers and $kills killed runs into one database in $((SECONDS - start)) s" >&2
# the database sound; every writer's run there; what a killed run's status says, true
[ "$(q "$db" "PRAGMA integrity_check")" = ok ] && ok || bad "the database fails its integrity check"
for s in $(seq 1 "$writers"); do
    [ "${status[$s]}" -eq 0 ] && ok || bad "writer $s exited ${status[$s]}: $(head -2 "$tmp/w$s.err")"
done
kept=0 lost=0
for k in $(seq 1 "$kills"); do
    s=$((1000 + k))
    n=$(q "$db" "SELECT count(*) FROM runs WHERE json_extract(config_json, '$.seed') = $s")
    if [ "$n" = 1 ]; then
        kept=$((kept + 1))
        [ "${status[$s]}" -eq 0 ] || [ "${signal[$s]}" = KILL ] && ok ||
            bad "killed run $s (${signal[$s]}) is in the database but exited ${status[$s]}"
    else
        lost=$((lost + 1))
        [ "$n" = 0 ] && [ "${status[$s]}" -ne 0 ] && ok || bad "killed run $s: $n runs of it, exit ${status[$s]}"
    fi
done
# each run the database holds, row for row the run a single writer makes alone
mismatched=0
while IFS='|' read -r id seed; do
    if [ "$seed" -gt 1000 ]; then args=("${long[@]}"); else args=("${run[@]}"); fi
    "$bin" "${args[@]}" --seed "$seed" --db "$tmp/r$seed.db" >/dev/null 2>&1
    if [ "$(hash "$db" "$id")" = "$(hash "$tmp/r$seed.db" 1)" ]; then ok; else
        mismatched=$((mismatched + 1))
        bad "run $id (seed $seed) differs from the same run written alone"
    fi
    rm -f "$tmp/r$seed.db"
done < <(q "$db" "SELECT run_id, json_extract(config_json, '$.seed') FROM runs ORDER BY run_id")
compgen -G "$db-*" >/dev/null && bad "files left beside the database: $(compgen -G "$db-*" | tr '\n' ' ')" || ok
echo "soak: $((writers + 1 + kept)) runs kept, each equal to its single-writer reference ($mismatched not);" \
     "of $kills killed runs $kept had committed and $lost left no trace; in $((SECONDS - start)) s" >&2
finish
