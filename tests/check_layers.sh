#!/usr/bin/env bash
# check_layers.sh: the include graph keeps tessera's floors (Makefile, "Layers"). Each quoted
# include is resolved as the compiler would (the file's own folder, then its floor's paths); a
# header that resolves only on a floor the file may not see is reported as FILE:LINE: the include
# and the floors involved. Prints "layers: N passed, M failed".
#   sim/core                      the ground floor: sees only itself
#   traces                        core
#   kernels                       core
#   engine (the engine proper: engine/ and its rooms gpu/, ext/)  core, kernels
#   sim (the simulator: sim/ and its rooms policies/, sched/, cost/, db/, fleet/)  core, traces
#   the command line, harness and tools  (sim/cli, engine/harness, engine/bench, tests): all
set -u
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0

# the simulator's rooms (the Makefile's SIM_ROOMS): one floor, each room a folder of its own
sim_rooms="sim/policies sim/sched sim/cost sim/db sim/fleet"
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
        top) echo sim/core traces sim "$sim_rooms" sim/cli engine engine/gpu engine/harness kernels ;;
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
room_rule cli.h ':(glob)sim/*.c' ':(glob)sim/*/*.c' ':!sim/cli/*' ':(glob)sim/core/*' ':(glob)engine/*.c' ':(glob)traces/*.c'
echo "layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
