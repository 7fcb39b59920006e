#!/usr/bin/env bash
# readme_test.sh: the commands README.md shows run as written. Every line of a code block that
# starts with "$ " is run in order (from a scratch folder that sees the repository's sim/, analysis/,
# experiments/ and ../shared as a fresh clone does, and the given binary as ./build/tessera), and must exit 0, or with the status its trailing
# comment gives ("# ... exit status N"); each output line the README shows after it (but "...",
# and measured times) must be in what the command printed. Prints "readme: N passed, M failed".
# The topic pages' ```sh blocks (sim/, traces/, analysis/, engine/, experiments/) run too, but those
# that need a GPU machine; each command must exit 0.
# Usage: readme_test.sh PATH/TO/tessera [README]   (./build/tessera in the README runs that binary)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$(dirname "${1:?usage: readme_test.sh PATH/TO/tessera [README]}")" && pwd)/$(basename "$1")
readme=${2:-$root/README.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/work/build"
ln -s "$bin" "$tmp/work/build/tessera"
for d in sim analysis experiments; do ln -s "$root/$d" "$tmp/work/$d"; done
[ -d "$root/../shared" ] && ln -s "$root/../shared" "$tmp/shared"
pass=0
fail=0
# cmd<TAB>status<TAB>shown-output lines joined by \x1f, one record per command
awk '
    /^```/ { inblock = !inblock; flush(); next }
    !inblock { next }
    /^\$ / { flush(); cmd = substr($0, 3); status = 0
             if (match(cmd, /# .*exit status [0-9]+/)) { status = substr(cmd, RSTART, RLENGTH); sub(/.*exit status /, "", status) }
             sub(/[ \t]+#.*$/, "", cmd); shown = ""; next }
    cmd != "" { shown = shown (shown == "" ? "" : "\x1f") $0 }
    function flush() { if (cmd != "") printf "%s\t%s\t%s\n", cmd, status, shown; cmd = "" }
    END { flush() }' "$readme" >"$tmp/cmds"
# needs_shared CMD: a command over ../shared's traces, where no ../shared stands beside the repository:
# said and skipped (make check is hermetic; make check-full runs beside ../shared)
needs_shared() {
    [[ $1 == *../shared/* ]] && [ ! -d "$root/../shared" ] && echo "readme: skipped, no ../shared beside the repository: '$1'"
}
while IFS=$'\t' read -r cmd want shown; do
    needs_shared "$cmd" && continue
    (cd "$tmp/work" && bash -c "$cmd") >"$tmp/out" 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail=$((fail + 1)); echo "readme: FAIL: '$cmd': exit $got, wanted $want" >&2; sed 's/^/    /' "$tmp/out" | head -5 >&2
        continue
    fi
    missing=""
    IFS=$'\x1f' read -r -a lines <<<"$shown"
    for l in "${lines[@]}"; do
        case ${l//[[:space:]]/} in "" | "...") continue ;; esac
        case $l in *"planning time"*) continue ;; esac
        grep -qF -- "$l" "$tmp/out" || { missing=$l; break; }
    done
    if [ -z "$missing" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "readme: FAIL: '$cmd': its output lacks the line README shows: $missing" >&2; fi
done <"$tmp/cmds"
# the topic pages' command blocks, but those that need a GPU machine (or what one makes)
for page in sim/README.md $(cd "$root" && echo sim/docs/*.md) traces/README.md analysis/README.md engine/README.md experiments/README.md; do
    awk -v page="$page" '
        /^```sh/ { inblock = 1; n = 0; gpu = 0; next }
        /^```/ && inblock { inblock = 0; if (!gpu) for (i = 1; i <= n; i++) print page "\t" lines[i]; next }
        inblock && /^(\.\/build\/tessera|bash analysis)/ { lines[++n] = $0 }
        inblock && /tessera engine|engine profile|--executor gpu|--live|gpu_run|apt-get|exp run|make calibrate/ { gpu = 1 }' \
        "$root/$page"
done >"$tmp/pages"
while IFS=$'\t' read -r page cmd; do
    cmd=${cmd%%  #*}
    needs_shared "$cmd" && continue
    (cd "$tmp/work" && bash -c "$cmd") >"$tmp/out" 2>&1
    st=$?
    if [ "$st" -eq 0 ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "readme: FAIL: $page: '$cmd': exit $st" >&2; sed 's/^/    /' "$tmp/out" | head -5 >&2; fi
done <"$tmp/pages"
echo "readme: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
