# shellcheck shell=bash
# lib_cli.sh: what the command-line test scripts share. Sourced after setting TEST (the name their
# messages and closing line carry); gives tmp (a folder removed on exit), the counts pass and fail, and
#   ok; bad "what"                   a check passed; one failed (said on stderr)
#   expect STATUS "what" -- CMD...   CMD exits with STATUS; its stdout and stderr in $tmp/out
#   contains "what" "text"           the last expect's output holds text
#   finish                           the closing line "TEST: N passed, M failed"; its status
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "$TEST: FAIL: $*" >&2; }
expect() {
    local want=$1 what=$2
    shift 3
    "$@" >"$tmp/out" 2>&1
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, wanted $want"; sed 's/^/    /' "$tmp/out" >&2; fi
}
contains() {
    if grep -qF -- "$2" "$tmp/out"; then ok; else bad "$1: output lacks '$2'"; sed 's/^/    /' "$tmp/out" >&2; fi
}
finish() {
    echo "$TEST: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
