#!/usr/bin/env bash
# check.sh: what `make check` (the fast door) and `make check-full` (the slow one) run once the
# simulator and its suites are built. Two lanes share the machine's cores.
#   fast (make check; hermetic: reads nothing outside the repository):
#     A: the Check suites (one a module, golden scenarios among them), the layering and
#        function-length checks, shellcheck over the scripts (shellcheck_test.sh), no SQL text from
#        data in the scripts (sql_text_test.sh), hostile inputs (tests/hostile/), the rules every
#        command keeps (rules_test.sh), --interval's sources and levels (interval_test.sh) and the
#        planted bugs of the files changed against the branch it started from, each against the test
#        recorded as killing it (mutate.sh CHANGED= RECORDED=1);
#     B: the database's reliability (db_test.sh), README's commands, the command line (cli_test.sh), tessera plan's (plan_test.sh), a diffusion
#        drafter's (spec_test.sh), how a run is priced (pricing_test.sh) and the papers' figures cli_test
#        drew (figures_test.sh).
#   full (make check-full): what the fast door leaves out: the suites again under AddressSanitizer +
#     UBSan (built here, host code only) and the command line so built fed hostile run files and
#     databases (sanitized_cli_test.sh, leaks included), the planted bugs (mutate.sh), a share a lane,
#     the command-line checks that read ../shared's real traces or run longest (full_cli_test.sh),
#     tessera plan's capacities on 20 configurations drawn at random (plan_random_test.sh),
#     and the database's 60 interrupted runs where the fast door takes 20.
# A line of progress at least every 30 s, one line a part when it ends (its failures under it), and
# one closing line "check: N passed, M failed" summed over every part.
# Usage: check.sh TESSERA_BIN BUILD [fast|full]   (BUILD: the build the suites are in; the sanitizer
# build goes to BUILD/asan)
set -u
bin=${1:?usage: check.sh TESSERA_BIN BUILD [fast|full]}
build=${2:?usage: check.sh TESSERA_BIN BUILD [fast|full]}
door=${3:-fast}
case $door in fast | full) ;; *) echo "check.sh: '$door' is not fast or full" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 2
# the shipped calibrations only: none made on this machine (make calibrate) may answer for them
export TESSERA_CALIB_DIR=/nonexistent/tessera-calib
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM
start=$SECONDS
suites=() # the Check suites' binaries (not their .d dependency files)
for t in "$build"/tests/check_*; do [[ $t == *.d ]] || suites+=("$t"); done

# part NAME COMMAND...: runs it into logs/NAME.log and records "NAME<TAB>passed<TAB>failed<TAB>s"
# from the "X: N passed, M failed" lines it printed (each Check suite prints one beside Check's own
# summary; a command that fails without such a line counts one failure)
part() {
    local name=$1 t0=$SECONDS rc
    shift
    echo "$name" >"$logs/$name.running"
    "$@" >"$logs/$name.log" 2>&1
    rc=$?
    awk -v name="$name" -v rc="$rc" -v s=$((SECONDS - t0)) '
        /^[a-z_-]+: [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4 }
        END { if (rc != 0 && f == 0) f = 1; printf "%s\t%d\t%d\t%d\n", name, p, f, s }' \
        "$logs/$name.log" >"$logs/$name.done"
    rm -f "$logs/$name.running"
    report "$name"
}
# report NAME: its line, and its failures under it
report() {
    IFS=$'\t' read -r name p f s <"$logs/$1.done"
    printf 'check:   %-10s %5d ok, %d failed (%d s)\n' "$name" "$p" "$f" "$s"
    [ "$f" -eq 0 ] || grep -E "FAIL|SURVIVED|STALE|:[EF]:|ERROR|runtime error" "$logs/$name.log" | head -20 | sed 's/^/    /'
}
suites_run() { # suites_run SUITE...: each Check suite in turn
    local t rc=0
    for t; do "$t" || rc=1; done
    return $rc
}
asan() {
    local t sanitized=()
    for t in "${suites[@]}"; do sanitized+=("$build/asan/tests/$(basename "$t")"); done
    make -s --no-print-directory BUILD="$build/asan" NO_CUDA=1 \
        OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
        "${sanitized[@]}" "$build/asan/tessera" || return 1
    suites_run "${sanitized[@]}"
    local rc=$?
    bash "$here/sanitized_cli_test.sh" "$build/asan/tessera" || rc=1
    return $rc
}

# lane B in the background
(
    if [ "$door" = fast ]; then
        part db bash "$here/db_test.sh" "$bin" 20
        part readme bash "$here/readme_test.sh" "$bin"
        # (the papers' figures: those cli_test's exp run papers --quick drew)
        PAPERS_OUT=$logs/papers part cli bash "$here/cli_test.sh" "$bin"
        part plan bash "$here/plan_test.sh" "$bin"
        part spec bash "$here/spec_test.sh" "$bin"
        part pricing bash "$here/pricing_test.sh" "$bin"
        part figures bash "$here/figures_test.sh" "$bin" "$([ -d "$logs/papers" ] && echo "$logs/papers")"
    else
        part asan asan
        BUILD=$build SHARD=1,3,5/5 part mutate-1 bash "$here/mutate.sh"
    fi
) &
lane_b=$!
# progress: what is running, every 30 s
(
    while sleep 30; do
        echo "check: ... $((SECONDS - start)) s: $(cat "$logs"/*.running 2>/dev/null | tr '\n' ' ')running$(
            n=$(cat "$logs"/mutate-*.log 2>/dev/null | grep -c '^mutate: .*: ') && echo ", $n mutations done")"
    done
) &
ticker=$!

if [ "$door" = fast ]; then
    echo "check: lane A: the unit suites, layers, functions, shellcheck, sql text, hostile, rules, interval, the changed files' planted bugs; lane B: db, readme, cli, plan, spec, pricing, figures"
    part unit suites_run "${suites[@]}"
    BUILD=$build part layers bash "$here/check_layers.sh"
    part functions bash "$here/check_functions.sh"
    part shellcheck bash "$here/shellcheck_test.sh"
    part sql-text bash "$here/sql_text_test.sh"
    part hostile bash "$here/hostile/hostile_test.sh" "$bin"
    part rules bash "$here/rules_test.sh" "$bin"
    part interval bash "$here/interval_test.sh" "$bin"
    # the planted bugs of the files this tree changes against the branch it started from (MUTATE_BASE,
    # else the branch's upstream, else HEAD: the working tree's own changes; a fresh clone: none), each
    # run against the test recorded as killing it
    if git -C "$here/.." rev-parse -q --is-inside-work-tree >/dev/null 2>&1; then
        base=${MUTATE_BASE:-$(git -C "$here/.." rev-parse -q --verify '@{upstream}' 2>/dev/null || echo HEAD)}
        BUILD=$build CHANGED=$base RECORDED=1 part planted bash "$here/mutate.sh"
    else
        echo "check:   planted    skipped (not a git checkout: no changes to plant bugs in)"
    fi
else
    echo "check: lane A: the longest and ../shared's command-line checks, 20 random plans, the database's 60 interrupted runs, two fifths of the planted bugs; lane B: the sanitizers, the other three fifths"
    part full-cli bash "$here/full_cli_test.sh" "$bin"
    part plan-random bash "$here/plan_random_test.sh" "$bin"
    part db bash "$here/db_test.sh" "$bin" 60
    BUILD=$build SHARD=2,4/5 part mutate-2 bash "$here/mutate.sh"
fi
wait $lane_b
kill $ticker 2>/dev/null
wait $ticker 2>/dev/null
# the failures again, last, where a log cut to its tail still shows them
failed=$(cat "$logs"/*.done | awk -F'\t' '$3 > 0 { print $1 }')
for n in $failed; do report "$n" | tail -n +2; done
cat "$logs"/*.done | awk -F'\t' -v s=$((SECONDS - start)) '{ p += $2; f += $3 }
    END { printf "check: %d parts in %d s\ncheck: %d passed, %d failed\n", NR, s, p, f; exit f > 0 }'
