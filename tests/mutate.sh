#!/usr/bin/env bash
# mutate.sh: does the test suite catch small planted bugs? Each planted bug replaces one piece of code
# by a plausible mistake: the file is copied aside with the mistake in it, compiled with the flags
# the build gives it, and linked ahead of the built library into the suites that cover it (its
# functions then replace the library's), which must fail. The repository and its build are never
# touched.
# The planted bugs live beside the tests that must catch them: tests/SUITE.mutants (a Check suite's,
# or a test script's), tests/hostile/CASE.mutants (a hostile case's), a line each:
#     what it breaks|FILE|TEXT|REPLACEMENT|SUITES[|KILLER]
# TEXT must stand in FILE once (else the planted bug is reported stale: the code moved, update the
# line); TEXT and REPLACEMENT take printf %b escapes (\n, \x7c for a bar). SUITES: Check suites
# (check_sched), hostile:CASE (the command line linked with the mistake in it, run through
# tests/hostile/CASE.case.sh) or sh:NAME (the same run through tests/NAME.sh), tried in turn. KILLER
# is the test that killed it when it was recorded (RECORD=1): SUITE:TCASE (a Check suite's test case,
# run alone through CK_RUN_CASE), sh:NAME, hostile:CASE, or build (it does not compile or link).
# Prints one line a planted bug and a closing "mutate: N passed, M failed" (passed: killed); exits 1
# when any survives or is stale.
# Usage: mutate.sh [FILTER]   (FILTER: only the planted bugs whose name contains it)
# Environment: BUILD (the build whose libtessera.a and flags it uses, default build), JOBS (planted
# bugs run at once, default 1), SHARD=K[,K...]/N (the planted bugs i, from 1, with (i - 1) mod N + 1
# one of the Ks: runs whose Ks cover 1..N share the list), CHANGED=BASE (only those planted in the
# files that differ from git revision BASE, the working tree's changes included), RECORDED=1 (each
# run against its KILLER alone; where that no longer kills it, against all its SUITES), RECORD=1 (each
# killed one's KILLER written into its line), plus the Makefile's settings (NO_CUDA, DEPS, CC)
# passed to make, and MUTANT_TIMEOUT (seconds a suite may run with a planted bug in it, default 600:
# one that runs past it, hanging or crawling, has been caught, as CI's time limit would catch it).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
filter=${1:-}
build=${BUILD:-build}
jobs=${JOBS:-1}
limit=${MUTANT_TIMEOUT:-600}
shard=${SHARD:-1/1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root" || exit 2
# the planted bugs, in their files' name order, each file's in its order; where each came from
mutations=() origin=()
for f in tests/*.mutants tests/hostile/*.mutants; do
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        [ -z "$line" ] || [[ $line == '#'* ]] && continue
        mutations+=("$line") origin+=("$f:$n")
    done <"$f"
done
changed=""
if [ -n "${CHANGED:-}" ]; then
    changed=$( (git diff --name-only "$CHANGED" -- && git ls-files --others --exclude-standard) 2>/dev/null) || {
        echo "mutate: CHANGED=$CHANGED: not a revision git knows" >&2
        exit 2
    }
fi

# the build's compile line for a file, and the suites' link line, as the Makefile gives them
mk() { make -s --no-print-directory BUILD="$build" "$@"; }
mk "$build/libtessera.a" "$build/tessera" >/dev/null || { echo "mutate: FAIL: the library does not build"; exit 1; }
link=$(mk print-test-link) && libs=$(mk print-libs) || exit 1
# cli_with DIR FILE: DIR/tessera, the command line linked with DIR/m.o (FILE mutated) in place of
# FILE's object: a file of the command line's own (sim/cli/) replaced among its objects, a library
# file replaced in a copy of the library
cli_with() {
    local dir=$1 file=$2 objs=() o lib=$build/libtessera.a
    for o in "$build"/sim/cli/*.o; do [ "$o" = "$build/${file%.c}.o" ] || objs+=("$o"); done
    if [[ $file == sim/cli/* ]]; then
        objs+=("$dir/m.o")
    else
        lib=$dir/lib.a
        cp "$build/libtessera.a" "$lib"
        cp "$dir/m.o" "$dir/$(basename "${file%.c}").o"
        ar d "$lib" "$(basename "${file%.c}").o" && ar q "$lib" "$dir/$(basename "${file%.c}").o" || return 1
    fi
    # shellcheck disable=SC2086 # the link line and the libraries: the Makefile's words, split on purpose
    $link -rdynamic -o "$dir/tessera" "${objs[@]}" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive $libs -ldl
}
# kill_with DIR FILE SUITE: whether SUITE fails with DIR/m.o (FILE mutated) in it: a Check suite (or
# SUITE:TCASE, its one test case), or the command line with the mistake in it run through a hostile
# case (hostile:CASE) or a test script of its own (sh:NAME); what killed it into DIR/killer (a Check
# suite's with its first failing test case)
kill_with() {
    local dir=$1 file=$2 s=$3 tcase=""
    case $s in
    build) return 1 ;; # (it built)
    hostile:* | sh:*)
        if ! cli_with "$dir" "$file" >"$dir/log" 2>&1; then
            echo build >"$dir/killer"
            return 0
        fi
        echo "$s" >"$dir/killer"
        if [[ $s == hostile:* ]]; then
            (cd "$root" && timeout "$limit" bash tests/hostile/hostile_test.sh "$dir/tessera" "${s#hostile:}" >/dev/null 2>&1)
        else
            (cd "$root" && timeout "$limit" bash "tests/${s#sh:}.sh" "$dir/tessera" >/dev/null 2>&1)
        fi && return 1
        return 0 ;;
    esac
    [[ $s == *:* ]] && tcase=${s#*:} s=${s%%:*}
    [[ $file == sim/cli/* ]] && return 1 # (a Check suite is linked here with the library alone: no command-line file)
    # shellcheck disable=SC2086 # the link line and the libraries: the Makefile's words, split on purpose
    if ! [ -x "$dir/$s" ] && ! $link -o "$dir/$s" "$work/$s.o" "$work/test_util.o" "$dir/m.o" "$build/libtessera.a" $libs >"$dir/log" 2>&1; then
        echo build >"$dir/killer"
        return 0
    fi
    (cd "$root" && if [ -n "$tcase" ]; then export CK_RUN_CASE=$tcase; fi && CK_FORK=yes timeout "$limit" "$dir/$s" >"$dir/out" 2>&1) &&
        return 1
    # (Check's failure lines: FILE:LINE:F|E:TCASE:TEST:ITERATION: message)
    tcase=$(sed -n 's/^[^:]*:[0-9]*:[FE]:\([^:]*\):.*/\1/p' "$dir/out" | head -1)
    echo "$s${tcase:+:$tcase}" >"$dir/killer"
    return 0
}
# one planted bug (its index in mutations): prints its line; exits 0 when killed
plant() {
    local i=$1 name file from to suites killer dir src caught="" s tried note=""
    IFS='|' read -r name file from to suites killer <<<"${mutations[$i]}"
    from=$(printf '%b' "$from") to=$(printf '%b' "$to")
    dir=$work/m$i
    mkdir -p "$dir"
    src=$dir/$(basename "$file")
    if ! python3 - "$file" "$src" "$from" "$to" <<'PY'
import sys
path, out, old, new = sys.argv[1:5]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(1)
open(out, "w").write(text.replace(old, new))
PY
    then
        echo "mutate: STALE: $name ($file no longer holds its text once)"
        return 1
    fi
    # quoted includes still resolve beside the original file
    if ! ${cc[$file]} -iquote "$(dirname "$file")" -c "$src" -o "$dir/m.o" >"$dir/log" 2>&1; then
        echo "mutate: $name: killed by build (does not build)"
        echo "$i|build" >>"$work/killers"
        return 0
    fi
    tried=$suites
    if [ -n "${RECORDED:-}" ] && [ -n "$killer" ] && [ "$killer" != build ]; then
        kill_with "$dir" "$file" "$killer" && caught=$killer
        [ -n "$caught" ] || note=", not by its recorded $killer"
    fi
    [ -n "$caught" ] && tried=""
    for s in $tried; do
        kill_with "$dir" "$file" "$s" && { caught=$(cat "$dir/killer"); break; }
    done
    rm -rf "$dir"
    if [ -n "$caught" ]; then
        echo "mutate: $name: killed by $caught$note"
        echo "$i|$caught" >>"$work/killers"
        return 0
    fi
    echo "mutate: SURVIVED: $name ($suites)"
    return 1
}
picked=()
for i in "${!mutations[@]}"; do
    IFS='|' read -r name file _ <<<"${mutations[$i]}"
    [ -n "$filter" ] && [[ $name != *"$filter"* ]] && continue
    [ -n "${CHANGED:-}" ] && ! grep -qxF -- "$file" <<<"$changed" && continue
    case ",${shard%/*}," in *",$((i % ${shard#*/} + 1)),"*) ;; *) continue ;; esac
    picked+=("$i")
done
# what every mutation shares, made once: each mutated file's compile line, and the suites' objects
declare -A cc
suites_used=""
for i in "${picked[@]}"; do
    IFS='|' read -r _ file _ _ suites killer <<<"${mutations[$i]}"
    [ -n "${cc[$file]:-}" ] || cc[$file]=$(mk print-cc FILE="$file") || exit 1
    [[ $killer == hostile:* || $killer == sh:* ]] || killer=${killer%%:*} # (a Check suite's, its test case dropped)
    suites_used+=" $suites $killer"
done
# shellcheck disable=SC2086 # the suites named, a word each
for s in test_util $(printf '%s\n' $suites_used | grep -v '^hostile:\|^sh:\|^build$' | sort -u); do
    src=tests/$s.c
    $link -c "$src" -o "$work/$s.o" || { echo "mutate: FAIL: $src does not build"; exit 1; }
done
# JOBS at a time, each printing its line when it ends
{
for i in "${picked[@]}"; do
    plant "$i" &
    [ "$(jobs -rp | wc -l)" -ge "$jobs" ] && wait -n
done
wait
} | tee "$work/results"
killed=$(grep -c ': killed' "$work/results")
if [ -n "${RECORD:-}" ] && [ -s "$work/killers" ]; then # each killed one's killer into its line
    python3 - "$work/killers" "${origin[@]}" <<'PY'
import sys
killers = dict(l.rstrip("\n").split("|", 1) for l in open(sys.argv[1]))
origin = sys.argv[2:]
files = {}
for i, k in killers.items():
    path, n = origin[int(i)].rsplit(":", 1)
    files.setdefault(path, {})[int(n)] = k
for path, at in files.items():
    lines = open(path).read().split("\n")
    for n, k in at.items():
        f = lines[n - 1].split("|")
        lines[n - 1] = "|".join(f[:5] + [k])
    open(path + ".new", "w").write("\n".join(lines))
    import os
    os.replace(path + ".new", path)
PY
fi
left=$((${#picked[@]} - killed))
echo "mutate: $killed passed, $left failed"
[ "$left" -eq 0 ]
