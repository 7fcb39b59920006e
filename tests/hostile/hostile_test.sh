#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# hostile_test.sh: files and paths a user is handed are data, never code. Every case file beside this
# one (NAME.case.sh, in name order) is sourced in a folder of its own, the sandbox, with the functions
# of lib_cli.sh, bin (the tessera binary), root (the repository) and case (its folder). A case hands
# tessera crafted input (databases, OUT paths with quotes, $(), newlines and spaces, the clock's
# edge, huge grids and replica counts) and checks that it is refused by name (exit 2) or handled.
# After each case, whatever it did: nothing was written outside its folder (the folder of the case
# folders holds nothing else, and no file named PWNED exists anywhere under it) and no process it
# started is still running.
# Usage: hostile_test.sh PATH/TO/tessera [FILTER]   Prints "hostile: N passed, M failed".
set -u
bin=${1:?usage: hostile_test.sh PATH/TO/tessera [FILTER]}
filter=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # root: the cases read it
root=$(cd "$here/../.." && pwd)
TEST=hostile
# shellcheck source=tests/lib_cli.sh
source "$here/../lib_cli.sh"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
for f in "$here"/*.case.sh; do
    name=$(basename "$f" .case.sh)
    [ -z "$filter" ] || [[ $name == *"$filter"* ]] || continue
    case=$tmp/cases/$name
    mkdir -p "$case"
    before=$fail
    # shellcheck source=/dev/null # a case, found at run time (each is checked on its own)
    (cd "$case" && source "$f" && echo "$pass $fail" >"$tmp/.counts") || bad "$name: the case stopped early"
    [ -f "$tmp/.counts" ] && read -r pass fail <"$tmp/.counts" && rm -f "$tmp/.counts"
    # nothing outside the case folders, no PWNED anywhere, no process left
    stray=$(find "$tmp/cases" -mindepth 1 -maxdepth 1 ! -type d -printf '%f\n')
    [ -z "$stray" ] && ok || bad "$name: wrote outside its folder: $stray"
    pwned=$(find "$tmp" -name PWNED 2>/dev/null | head -3)
    [ -z "$pwned" ] && ok || bad "$name: a command pasted from a path or file ran: $pwned"
    left=$(me=$BASHPID && ps -o pid=,args= --ppid $$ 2>/dev/null | awk -v me="$me" '$1 != me')
    [ -z "$left" ] && ok || bad "$name: processes left running: $left"
    echo "hostile: $name: $((fail - before)) failed"
done
finish
