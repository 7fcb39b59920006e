#!/usr/bin/env bash
# tests/shellcheck_test.sh: shellcheck over every script of experiments/, analysis/, engine/ and
# tests/ (each *.sh, in their subfolders too), with the repository's .shellcheckrc. A script passes
# where the tool finds nothing in it; one that does not prints "shellcheck: FAIL FILE" and the
# findings under it. A warning a script means (words split on purpose, a variable a sourcing script
# sets) is justified in the script itself: `# shellcheck disable=SCxxxx` with its reason, on or
# above its line. Where shellcheck is missing: one failure, saying that `make deps` installs it.
# Usage: tests/shellcheck_test.sh   Prints "shellcheck: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 2
if ! command -v shellcheck >/dev/null; then
    echo "shellcheck: FAIL: shellcheck not found (make deps installs it; Debian: apt-get install shellcheck)"
    echo "shellcheck: 0 passed, 1 failed"
    exit 1
fi
mapfile -d '' -t files < <(find experiments analysis engine tests -name '*.sh' -type f -print0 | sort -z)
# one run over them all (each sourced file read once), its findings a line each: FILE:LINE:COL: ...
findings=$(shellcheck -f gcc "${files[@]}" 2>&1)
rc=$?
if [ "$rc" -gt 1 ]; then
    echo "shellcheck: FAIL: shellcheck itself failed (exit $rc): $(head -3 <<<"$findings")"
    echo "shellcheck: 0 passed, 1 failed"
    exit 1
fi
pass=0 fail=0
for f in "${files[@]}"; do
    mine=$(F=$f: awk 'index($0, ENVIRON["F"]) == 1' <<<"$findings")
    if [ -z "$mine" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "shellcheck: FAIL $f ($(wc -l <<<"$mine") findings)"
        awk '{ print "    " $0 }' <<<"$mine"
    fi
done
echo "shellcheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
