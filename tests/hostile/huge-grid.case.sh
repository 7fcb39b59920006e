# shellcheck shell=bash disable=SC2154,SC2015 # bin: hostile_test.sh's; CHECK && ok || bad: one of them runs
# Sweep grids that would hang or misparse: 20 lines of two values (1,048,576 runs) and wider ones are
# refused at once, before anything runs or is written, naming the grid, the count and --max-runs; a
# grid holding a NUL byte, a carriage return or another control character is refused naming its file
# and line; a UTF-8 byte-order mark opening a grid is skipped, and said.
# (Sourced by hostile_test.sh in a folder of its own.)
for _ in $(seq 1 20); do echo "--rps 1 2"; done >huge.txt
expect 2 "a grid of 2^20 runs" -- timeout 20 "$bin" exp sweep huge.txt out
contains "a grid of 2^20 runs names the grid and the count" "huge.txt: 1048576 runs"
contains "a grid of 2^20 runs names --max-runs" "more than --max-runs 10000"
[ ! -e out ] && ok || bad "a grid of 2^20 runs made OUT"
# a product far past any integer: counted, not multiplied out
for _ in $(seq 1 40); do echo "--seed $(seq -s ' ' 1 1000)"; done >wide.txt
expect 2 "a grid of 1000^40 runs" -- timeout 20 "$bin" exp sweep wide.txt out
contains "a grid of 1000^40 runs names --max-runs" "more than --max-runs 10000"
# --max-runs: the cap as given; a count of 1 or more
printf -- '--policy dual sparse\n--rps 1 4\n--requests 8\n' >small.txt
expect 2 "4 runs over --max-runs 3" -- "$bin" exp sweep small.txt out --max-runs 3 --slurm
contains "4 runs over --max-runs 3" "small.txt: 4 runs"
expect 0 "4 runs within --max-runs 4" -- "$bin" exp sweep small.txt out4 --max-runs 4 --slurm
for v in 0 -1 x 99999999999; do
    expect 2 "--max-runs $v" -- "$bin" exp sweep small.txt out --max-runs "$v"
    contains "--max-runs $v is refused by name" "--max-runs: '$v'"
done
[ ! -e out ] && ok || bad "a refused grid made OUT"
# bytes a grid's text does not hold, each named by file and line
printf -- '--policy dual\0 sparse\n--rps 1 4\n' >nul.txt
expect 2 "a grid holding a NUL byte" -- "$bin" exp sweep nul.txt out
contains "a NUL byte is named by file and line" "nul.txt:1: a NUL byte"
printf -- '--policy dual sparse\r\n--rps 1 4\r\n' >crlf.txt
expect 2 "a grid of Windows line ends" -- "$bin" exp sweep crlf.txt out
contains "a carriage return is named by file and line" "crlf.txt:1: a carriage return"
printf -- '--rps 1 4\n--policy dual\033 sparse\n' >esc.txt
expect 2 "a grid holding an escape" -- "$bin" exp sweep esc.txt out
contains "a control character is named by file and line" "esc.txt:2: the control character 0x1b"
[ ! -e out ] && ok || bad "a refused grid made OUT"
# a byte-order mark: skipped and said, the grid read as without it
printf '\357\273\277--policy dual sparse\n--rps 1 4\n--requests 8\n' >bom.txt
expect 0 "a grid opening with a byte-order mark" -- "$bin" exp sweep bom.txt bom --slurm
contains "the byte-order mark is said" "bom.txt:1: a UTF-8 byte-order mark, skipped"
[ "$(sed 's|bom/runs/|out4/runs/|' bom/runs.txt)" = "$(cat out4/runs.txt)" ] && ok ||
    bad "the grid with a byte-order mark is not the grid without it"
