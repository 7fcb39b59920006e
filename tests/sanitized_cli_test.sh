#!/usr/bin/env bash
# sanitized_cli_test.sh: the command line built with AddressSanitizer + UBSan (leaks included) fed the
# inputs users hand it: run files of good and bad lines mixed (120 of them, drawn with a fixed seed:
# unknown options, bad values, outputs a run file may not name, long lines, a NUL byte, a byte-order
# mark, a run file naming another), and crafted databases at every db entry point. Each must end
# with status 0 or 2 and no sanitizer report.
# Usage: sanitized_cli_test.sh PATH/TO/SANITIZED/tessera   Prints "sanitized-cli: N passed, M failed".
set -u
bin=${1:?usage: sanitized_cli_test.sh PATH/TO/SANITIZED/tessera}
TEST=sanitized-cli
source "$(dirname "$0")/lib_cli.sh"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1
# clean CMD...: it ends with 0 or 2 and no sanitizer report
clean() {
    "$@" >/dev/null 2>"$tmp/err"
    local rc=$?
    if { [ $rc -eq 0 ] || [ $rc -eq 2 ]; } && ! grep -q "Sanitizer\|runtime error" "$tmp/err"; then ok; else
        bad "$* (exit $rc): $(grep -m1 "Sanitizer\|runtime error" "$tmp/err")"
    fi
}
python3 - "$tmp" <<'PY'
import random, sys
random.seed(104)
lines = ["rps 2", "--policy dual", "early-stop", "gen-len 32", "bogus 3", "rps -1", "rps abc", "policy nosuch",
         "config other.txt", "db out.db", "replace", "append", "gpu h200", "model nosuch", "decode fixed:2",
         "decode bogus:", "--scheduler phase", "max-batch 0", "trace /nonexistent", "seed 5", "block 0",
         "system sglang", "system nosuch", "lengths lognormal:5,1", "arrivals gamma:0", "v2-full-steps 3",
         "# a comment", "", "   ", "\ufeffrps 1", "x" * 5000, "rps 2\x00", "gpu-file /nonexistent.json"]
for i in range(120):
    body = "\n".join(random.choice(lines) for _ in range(random.randint(1, 6)))
    with open(f"{sys.argv[1]}/rf{i}.txt", "w") as f:
        f.write(body + "\n")
PY
for f in "$tmp"/rf*.txt; do clean "$bin" sim --config "$f" --requests 2 --quiet --no-progress; done
# crafted databases at every entry point
"$bin" sim --requests 3 --rps 4 --gen-len 32 --quiet --no-progress --db "$tmp/run.db" >/dev/null 2>&1
crafts=("ALTER TABLE summary ADD COLUMN g TEXT AS ('x')"
    "UPDATE step_runs SET last_step = 9000000000000000000 WHERE rowid = (SELECT max(rowid) FROM step_runs)"
    "UPDATE runs SET config_json = json_set(config_json, '\$.model', 'a' || char(10) || 'db x.db'), created = NULL"
    "UPDATE runs SET config_json = 'not json'"
    "CREATE INDEX segment_runs_first ON segment_runs(run_id, first_step, length(config_json))")
for i in "${!crafts[@]}"; do
    d=$tmp/c$i.db
    cp "$tmp/run.db" "$d" && sqlite3 "$d" "${crafts[$i]}" 2>/dev/null
    clean "$bin" db check "$d"
    clean "$bin" db show "$d" 1
    clean "$bin" db export "$d" steps
    clean "$bin" db merge "$tmp/m$i.db" "$d"
done
finish
