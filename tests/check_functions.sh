#!/usr/bin/env bash
# check_functions.sh: no function of the product's C code runs over 120 lines (a
# function does one thing); CUDA kernels (kernels/*.cu) may, where a kernel needs it. A function is
# counted from the line that starts its signature to its closing brace at column 0. Prints
# "functions: N passed, M failed", naming each function over the limit with FILE:LINE.
set -u
cd "$(dirname "$0")/.." || exit 2
limit=120
# shellcheck disable=SC2016 # awk's program: its $ fields are awk's
out=$(git ls-files 'sim/*.c' 'traces/*.c' 'engine/*.c' 'tests/gpu/*.c' | xargs awk -v limit="$limit" '
    FNR == 1 { sig = 0 }
    !open_ && /^[A-Za-z_]/ && !/;[[:space:]]*$/ && !/^#/ { sig = FNR; name = $0 }
    /^\{/ { start = sig ? sig : FNR; open_ = 1; next }
    /^\}/ && open_ {
        n = FNR - start + 1; open_ = 0; sig = 0
        if (n > limit) { printf "functions: FAIL: %s:%d: %d lines (limit %d): %s\n", FILENAME, start, n, limit, name; bad++ }
        else ok++
    }
    END { printf "functions: %d passed, %d failed\n", ok, bad }')
echo "$out" | grep FAIL >&2
echo "$out" | tail -1
! echo "$out" | grep -q FAIL
