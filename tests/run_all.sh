#!/usr/bin/env bash
# run_all.sh: runs every Check suite, the layering and function-length checks, the database's
# reliability, the README's commands and the CLI script, and prints the failures (again, so that a
# log cut to its tail shows them) and one closing line "tests: N passed, M failed" summed over all
# of them. Usage: run_all.sh TESSERA_BIN SUITE...
set -u
bin=$1
shift
# the shipped calibrations only: none made on this machine (make calibrate) may answer for them
export TESSERA_CALIB_DIR=/nonexistent/tessera-calib
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for t in "$@"; do
    "$t" 2>&1 | tee -a "$log" | grep --line-buffered -E "^[a-z_]+: [0-9]+ passed|%: Checks|:[EF]:" || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
for s in check_layers check_functions; do
    bash "$(dirname "$0")/$s.sh" 2>&1 | tee -a "$log" | grep --line-buffered -E "passed|FAIL" || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
bash "$(dirname "$0")/db_test.sh" "$bin" 2>&1 | tee -a "$log" | grep --line-buffered -E "passed|FAIL" || true
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
bash "$(dirname "$0")/readme_test.sh" "$bin" 2>&1 | tee -a "$log" | grep --line-buffered -E "passed|FAIL" || true
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
bash "$(dirname "$0")/cli_test.sh" "$bin" 2>&1 | tee -a "$log" | grep --line-buffered -E "passed|FAIL|^cli: \.\.\." || true
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# the failures again, last, where a log cut to its tail still shows them
grep -E "FAIL|:[EF]:" "$log" | head -40 | sed 's/^/failed: /'
awk '/^[a-z_]+: [0-9]+ passed, [0-9]+ failed$/ {p += $2; f += $4} END {printf "tests: %d passed, %d failed\n", p, f}' "$log"
exit $status
