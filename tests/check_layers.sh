#!/usr/bin/env bash
# check_layers.sh: the include graph keeps tessera's floors (Makefile, "Layers"). Each quoted
# include is resolved as the compiler would (the file's own folder, then its floor's paths); a
# header that resolves only on a floor the file may not see is reported as FILE:LINE: the include
# and the floors involved. Then the calls between the build's objects (BUILD) must hold no circle.
# Prints "layers: N passed, M failed".
#   sim/core                      the ground floor: sees only itself
#   traces                        core
#   kernels                       core
#   engine (the engine proper: engine/ and its rooms gpu/, ext/)  core, kernels
#   sim (the simulator: sim/ and its rooms policies/, sched/, cost/, db/, fleet/, plan/)  core, traces
#   the command line, harness and tools  (sim/cli, engine/harness, engine/bench, tests): all
set -u
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0

# the simulator's rooms (the Makefile's SIM_ROOMS): one floor, each room a folder of its own
sim_rooms="sim/policies sim/sched sim/cost sim/db sim/fleet sim/plan"
# the engine's rooms (the Makefile's ENGINE_ROOMS): the device side and the extensions
engine_rooms="engine/gpu engine/ext"
floor_of() {
    case $1 in
        sim/core/*) echo core ;;
        sim/cli/* | engine/harness/* | engine/bench/* | tests/*) echo top ;;
        traces/*) echo traces ;;
        kernels/*) echo kernels ;;
        engine/*) echo engine ;;
        sim/*) echo sim ;;
        *) echo top ;;
    esac
}
sees() { # the folders a floor's includes resolve in, in order
    case $1 in
        core) echo sim/core ;;
        traces) echo sim/core traces ;;
        kernels) echo sim/core kernels ;;
        engine) echo sim/core engine "$engine_rooms" kernels ;;
        sim) echo sim/core traces sim "$sim_rooms" ;;
        top) echo sim/core traces sim "$sim_rooms" sim/cli engine engine/gpu engine/ext engine/harness kernels ;;
    esac
}
all_dirs="sim/core traces sim $sim_rooms sim/cli engine $engine_rooms engine/harness kernels"

for f in $(git ls-files 'sim/*.[ch]' 'traces/*.[ch]' 'engine/*.[ch]' 'kernels/*.h' 'kernels/*.cu' 'kernels/*.cuh' 'kernels/*.inc'); do
    fl=$(floor_of "$f")
    own=$(dirname "$f")
    while IFS=: read -r line inc; do
        found=""
        for d in "$own" $(sees "$fl"); do
            if [ -e "$d/$inc" ]; then found=$d; break; fi
        done
        if [ -n "$found" ]; then pass=$((pass + 1)); continue; fi
        where=""
        for d in $all_dirs; do [ -e "$d/$inc" ] && where="$where $d"; done
        if [ -n "$where" ]; then
            fail=$((fail + 1))
            echo "layers: FAIL: $f:$line: includes \"$inc\" from${where}, above its floor ($fl sees $(sees "$fl"))" >&2
        fi # else a system or generated header: not ours to place
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed -E 's/^([0-9]+):.*"([^"]+)".*/\1:\2/')
done
# rooms within the simulator's floor: the database's private header is its own files' alone, and the
# simulator's event loop and parts know no database (a run's steps reach the writer through the sink
# sim_stream_steps sets) and no command line
room_rule() { # room_rule HEADER GLOB-OF-FILES-THAT-MAY-NOT-INCLUDE-IT...
    local inc=$1 f
    shift
    for f in $(git ls-files "$@"); do
        if grep -qE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$inc\"" "$f"; then
            fail=$((fail + 1))
            echo "layers: FAIL: $f includes \"$inc\", outside its room" >&2
        else
            pass=$((pass + 1))
        fi
    done
}
room_rule db_internal.h ':(glob)sim/**/*.c' ':(glob)sim/**/*.h' ':(glob)sim/*.c' ':(glob)sim/*.h' ':!sim/db/*'
room_rule db.h ':(glob)sim/sim*.c' ':(glob)sim/sched/*' ':(glob)sim/policies/*' ':(glob)sim/decode.c' \
    ':(glob)sim/cost/cost*.c' ':(glob)sim/core/*'
# the engine's inside (struct eng) and its extension hooks are the device side's and the extensions' alone
room_rule eng_internal.h ':(glob)engine/*.[ch]' ':(glob)engine/harness/*' ':(glob)engine/bench/*' ':(glob)tests/**' \
    ':(glob)sim/**'
room_rule eng_ext.h ':(glob)engine/*.[ch]' ':(glob)engine/harness/*' ':(glob)engine/bench/*' ':(glob)tests/**' \
    ':(glob)sim/**'
# a room's internal header is its own files' alone
room_rule sim_internal.h ':(glob)sim/db/*' ':(glob)sim/fleet/*' ':(glob)sim/cost/*' ':(glob)sim/policies/*' ':(glob)sim/sched/*' \
    ':(glob)sim/cli/*' ':(glob)sim/core/*' ':(glob)engine/**' ':(glob)traces/*'
room_rule calib_internal.h ':(glob)sim/**' ':(glob)engine/**' ':(glob)tests/**' ':!sim/cost/calib_*'
room_rule cli_calib.h ':(glob)sim/**' ':(glob)engine/**' ':(glob)tests/**' ':!sim/cli/cli_calib*'
room_rule eng_ref_internal.h ':(glob)sim/**' ':(glob)engine/**' ':(glob)tests/**' ':!engine/eng_ref*'
room_rule engine_bench_internal.h ':(glob)sim/**' ':(glob)engine/**' ':(glob)tests/**' ':!engine/bench/engine_bench*'
room_rule cli.h ':(glob)sim/*.c' ':(glob)sim/*/*.c' ':!sim/cli/*' ':(glob)sim/core/*' ':(glob)engine/*.c' ':(glob)traces/*.c'
# no circles: the product's objects in the build (BUILD, default build) as a graph, an arrow from
# each file to the files whose functions it calls (nm; a table's rows, data, are no arrow: a part's
# file uses its table's helpers); tsort names every loop it finds. Objects of no source, or older than
# theirs, are left out.
objs=$(find "${BUILD:-build}" -name '*.o' ! -path '*/tests/*' ! -path '*/fuzz/*' 2>/dev/null |
    while read -r o; do
        src=${o#"${BUILD:-build}"/}
        src=${src%.o}
        [ -e "$src.c" ] && [ "$o" -nt "$src.c" ] && echo "$o"
    done)
if [ -z "$objs" ]; then
    echo "layers: the circle check skipped: no objects of the sources in ${BUILD:-build} (build first)" >&2
else
    edges=$(for o in $objs; do nm -A "$o" 2>/dev/null; done | awk '
        { i = index($0, ":"); file = substr($0, 1, i - 1); n = split(substr($0, i + 1), w, " ")
          if (n == 2 && w[1] == "U") use[file] = use[file] " " w[2]
          else if (n == 3 && w[2] == "T") def[w[3]] = file }
        END { for (f in use) { n = split(use[f], u, " ")
                  for (i = 1; i <= n; i++) if ((u[i] in def) && def[u[i]] != f) print f, def[u[i]] }
              for (f in use) print f, f }' | sort -u)
    loops=$(echo "$edges" | tsort 2>&1 >/dev/null | grep -v 'input contains a loop')
    if [ -n "$loops" ]; then
        fail=$((fail + 1))
        echo "layers: FAIL: files that use each other's functions, round a circle:" >&2
        echo "$loops" | sed "s|${BUILD:-build}/||; s|^tsort: |    |" >&2
    else
        pass=$((pass + 1))
    fi
fi
echo "layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
