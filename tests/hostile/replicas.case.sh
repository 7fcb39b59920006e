# shellcheck shell=bash disable=SC2154,SC2015 # bin: hostile_test.sh's; CHECK && ok || bad: one of them runs
# replicas.case.sh: the advertised maximum of replicas against the open-file limit. Each replica keeps
# two files open (its spills), so under `ulimit -n 1024` (set here, in the case's own subshell, so that
# the result is the same on every machine) --replicas 65536, or a fleet file's groups adding up past
# the limit, is refused at once, before any work, naming the count, the limit and `ulimit -n` (exit
# 2); a count that fits runs.
# shellcheck shell=bash
ulimit -n 1024
start=$(date +%s)
expect 2 "--replicas 65536 under ulimit -n 1024" -- "$bin" sim --replicas 65536 --quiet
took=$(($(date +%s) - start))
contains "--replicas 65536: the count" "--replicas 65536: 65536 replicas"
contains "--replicas 65536: the limit" "ulimit -n: 1024"
contains "--replicas 65536: what fits" "at most 480 replicas"
[ "$took" -le 3 ] && ok || bad "--replicas 65536: refused after $took s"
printf '400 --gpu h100\n400 --gpu h200\n' >big.fleet
expect 2 "a fleet file past ulimit -n 1024" -- "$bin" sim --fleet big.fleet --quiet
contains "a fleet file past the limit: its line" "big.fleet:2: 800 replicas"
expect 0 "--replicas 100 under ulimit -n 1024" -- "$bin" sim --replicas 100 --requests 20 --quiet
contains "--replicas 100: the fleet ran" "a fleet of 100 replicas"
