# shellcheck shell=bash disable=SC2154 # bin: hostile_test.sh's
# The clock's edge: arrivals at or past the limit of a trace's clock (2^62 ns) are refused by name
# or played within it, never past it; arrival_ns is a whole number of nanoseconds.
# (Sourced by hostile_test.sh in a folder of its own.)
printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,50\n4611686018427387904,10,10\n' >edge.csv
expect 2 "a trace ending at the clock's limit, played again" -- "$bin" sim --trace edge.csv --requests 3 --quiet
contains "a trace ending at the clock's limit, played again" "past the 146 years a trace's clock holds"
expect 0 "a trace ending at the clock's limit, played once" -- "$bin" sim --trace edge.csv --quiet --no-progress
# a third of the limit: a second pass fits (its last at the limit's two thirds), a third pass does not
printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,50\n1537228672809129301,10,10\n' >third.csv
expect 0 "a trace of a third of the clock, played twice" -- "$bin" sim --trace third.csv --requests 4 --quiet --no-progress
expect 2 "a trace of a third of the clock, played three times" -- "$bin" sim --trace third.csv --requests 5 --quiet
printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,50\n9223372036854775807,10,10\n' >max.csv
expect 2 "a trace ending at int64's largest" -- "$bin" sim --trace max.csv --quiet
contains "a trace ending at int64's largest" "max.csv: request 2 arrives"
for v in 1.5 0x10 -5 1e3 " " 99999999999999999999; do
    printf 'arrival_ns,prompt_tokens,output_tokens\n0,100,50\n%s,10,10\n' "$v" >bad.csv
    expect 2 "arrival_ns '$v'" -- "$bin" sim --trace bad.csv --quiet
    contains "arrival_ns '$v'" "bad.csv:3: arrival_ns"
done
