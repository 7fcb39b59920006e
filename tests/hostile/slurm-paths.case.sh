# shellcheck shell=bash disable=SC2154,SC2015 # bin: hostile_test.sh's; CHECK && ok || bad: one of them runs
# exp sweep --slurm's job file for OUT paths that would be code if pasted (quotes, $(...), backquotes,
# spaces, '#', '%'): the file parses (bash -n); its shell lines, run as a task of the array would run
# them, run that task's sim and nothing else (no PWNED); its #SBATCH --output line, read as sbatch
# reads it (the same scan as Slurm's src/sbatch/opt.c _get_argument: quotes group, a backslash escapes,
# an unquoted '#' ends the line; '%%' is a '%' in the file name pattern), names OUT/runs/slurm-%a.log.
# An OUT that line cannot carry (a newline; a backslash, which the pattern reads as an escape) is
# refused by name with exit 2, nothing made. Slurm itself is not needed: the file's text is checked.
# (Sourced by hostile_test.sh in a folder of its own.)
printf -- '--policy dual sparse\n--rps 1 4\n--requests 8\n' >grid.txt
# sbatch_output FILE: the --output value of FILE's #SBATCH lines as sbatch takes it
sbatch_output() {
    python3 - "$1" <<'PY'
import sys
def args(line):
    out, p = [], 0
    while True:
        while p < len(line) and line[p].isspace():
            p += 1
        if p >= len(line):
            return out
        a, quoted, q, esc = "", False, "", False
        while p < len(line) and (quoted or not line[p].isspace()):
            c = line[p]
            if esc:
                esc = False
            elif c == "\\":
                esc, p = True, p + 1
                continue
            elif quoted:
                if c == q:
                    quoted, p = False, p + 1
                    continue
            elif c in "\"'":
                quoted, q, p = True, c, p + 1
                continue
            elif c == "#":
                return out + ([a] if a else [])
            a, p = a + c, p + 1
        out.append(a)
for line in open(sys.argv[1], encoding="utf-8", errors="surrogateescape"):
    if line.startswith("#SBATCH"):
        for a in args(line[len("#SBATCH"):].rstrip("\n")):
            if a.startswith("--output="):
                print(a[len("--output="):].replace("%%", "%"))
PY
}
# shellcheck disable=SC2016 # $(...) and backquotes meant literally: they are the names
outs=("q'; touch PWNED; x" 'd"`touch PWNED`"' '$(touch PWNED)' 'sp ace/o' 'h#sh' '50%a%j' "a'\"\`\$(touch PWNED)#%")
for o in "${outs[@]}"; do
    q=$(printf %q "$o")
    expect 0 "exp sweep --slurm into $q" -- "$bin" exp sweep grid.txt "$o" --slurm
    f=$o/sweep.sbatch
    bash -n "$f" 2>/dev/null && ok || bad "the job file of $q does not parse: $(bash -n "$f" 2>&1 | head -2)"
    got=$(sbatch_output "$f")
    [ "$got" = "$o/runs/slurm-%a.log" ] && ok || bad "the job file of $q: sbatch reads --output as $(printf %q "$got")"
    [ "$(grep -c '^#SBATCH' "$f")" = 3 ] && ok || bad "the job file of $q: not its three #SBATCH lines"
    # the shell's part, as task 3 of the array runs it
    SLURM_ARRAY_TASK_ID=3 bash "$f" >/dev/null 2>"$o/task.err" && ok || bad "task 3 of $q failed: $(head -3 "$o/task.err")"
    [ -s "$o/runs/run-3.db" ] && ok || bad "task 3 of $q wrote no $(printf %q "$o/runs/run-3.db")"
done
# what a #SBATCH line cannot carry: refused by name, nothing made
for o in $'new\nline' 'back\slash'; do
    q=$(printf %q "$o")
    expect 2 "exp sweep --slurm into $q" -- "$bin" exp sweep grid.txt "$o" --slurm
    contains "exp sweep --slurm into $q names OUT" "OUT $q holds a"
    [ ! -e "$o" ] && ok || bad "exp sweep --slurm into $q made it"
done
