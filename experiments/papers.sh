#!/usr/bin/env bash
# experiments/papers.sh: every built paper experiment (experiments/papers.tsv), run in parallel
# (one process a core, a line on standard error as each finishes), each into OUT/NAME, and
# OUT/report.md: a line an experiment and a line a paper (how many of tessera's values land within
# 15% of the paper's numbers, how many lie inside the range its report gives over the experiment's assumptions,
# the median |log ratio| to them, the trends holding), each trend that does not hold with its reason, and
# then each experiment's report: its points beside the paper's numbers and each trend it checks.
# Usage: tessera exp run papers OUT [--force] [--quick] [--strict]
set -uo pipefail
out=${1:?usage: tessera exp run papers OUT [--force] [--quick] [--strict]}
shift
force=0 args=()
for a in "$@"; do
    case $a in
        --force) force=1; args+=("$a") ;;
        --quick|--strict) args+=("$a") ;;
        *) echo "papers: unexpected argument '$a' (--force, --quick, --strict)" >&2; exit 2 ;;
    esac
done
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ $force = 0 ] && [ -z "${TESSERA_EXP_OUT_CHECKED:-}" ]; then
    echo "papers: $out is not empty (--force writes over it)" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=experiments/lib/eta.sh
source "$here/lib/eta.sh"
mkdir -p "$out" || exit 2
mapfile -t names < <(awk -F'\t' '!/^#/ && NF >= 2 && $3 == "" { print $1 }' "$here/papers.tsv")
echo "papers: ${#names[@]} experiments, $(nproc 2>/dev/null || echo 2) at a time, into $out" >&2
# each experiment says when it is done, how long it took and how many of its trends hold; its name,
# OUT and the options reach the script as its arguments, never as its text
# shellcheck disable=SC2016 # the script's expansions are its own, at its run
# (their lines pass through eta_lines, which adds the time left)
{ printf '%s\n' "${names[@]}" | xargs -P "$(nproc 2>/dev/null || echo 2)" -I{} \
    bash -c 'n=$1 out=$2 s=$SECONDS
        shift 2
        bash "$0/$n.sh" "$out/$n" "$@" >"$out/$n.log" 2>&1 || { echo "papers: $n failed (its log: $out/$n.log)" >&2; exit 1; }
        echo "papers: $n done in $((SECONDS - s)) s, $(grep -c "holds$" "$out/$n/checks.tsv") of $(wc -l <"$out/$n/checks.tsv") trends holding" >&2' \
    "$here" {} "$out" "${args[@]}"; } 2>&1 | eta_lines "${#names[@]}" >&2
rc=${PIPESTATUS[0]}
{
    echo "# The papers' evaluations in tessera"
    echo
    # within: the points with a paper number that land within 15% of it (|log ratio| <= log 1.15)
    within() { awk '$1 <= log(1.15) { k++ } END { print (NR ? k + 0 : "-") }' "$1"; }
    # ranged FILE: "K N": of the N paper numbers whose metric has a range over the experiment's
    # assumptions (derived METRIC_lo and METRIC_hi at the same point), the K inside it (FILE on
    # sqlite3's stdin, its path never SQL text)
    ranged() {
        sqlite3 -separator ' ' :memory: "WITH r AS (SELECT json_extract(value, '\$.system') s,
                json_extract(value, '\$.workload') w, json_extract(value, '\$.x') x, json_extract(value, '\$.metric') m,
                json_extract(value, '\$.value') v, json_extract(value, '\$.paper_value') p
                FROM json_each('[' || replace(trim(readfile('/dev/stdin'), char(10)), char(10), ',') || ']'))
            SELECT coalesce(sum(lo.v <= r.p AND r.p <= hi.v), 0), count(*) FROM r
            JOIN r lo ON lo.s = r.s AND lo.w = r.w AND lo.x = r.x AND lo.m = r.m || '_lo'
            JOIN r hi ON hi.s = r.s AND hi.w = r.w AND hi.x = r.x AND hi.m = r.m || '_hi' WHERE r.p IS NOT NULL" <"$1"
    }
    of() { [ "$2" -gt 0 ] && echo "$1 of $2" || echo "-"; }
    echo "| experiment | points | with a paper number | within 15% of it | inside the range over its assumptions | median abs log ratio | trends holding |"
    echo "|---|---|---|---|---|---|---|"
    for n in "${names[@]}"; do
        [ -f "$out/$n/results.jsonl" ] || continue
        pts=$(wc -l <"$out/$n/results.jsonl")
        awk -F'"paper_value":' 'NF > 1 && $2 !~ /^null/ { split($1, a, "\"value\":"); v = a[2] + 0; p = $2 + 0;
              if (v > 0 && p > 0) { r = log(v / p); print (r < 0 ? -r : r) } }' "$out/$n/results.jsonl" | sort -g >"$out/$n/logratios.txt"
        k=$(wc -l <"$out/$n/logratios.txt")
        med=$( [ "$k" -gt 0 ] && awk -v k="$k" 'NR == int((k + 1) / 2) { printf "%.2f", $1 }' "$out/$n/logratios.txt" || echo "-")
        holds=$(grep -c $'\tholds$' "$out/$n/checks.tsv" || true)
        all=$(wc -l <"$out/$n/checks.tsv")
        ranged "$out/$n/results.jsonl" >"$out/$n/ranged.txt"
        # shellcheck disable=SC2046 # of K N: the file's two numbers, a word each
        echo "| [$n]($n/report.md) | $pts | $k | $(within "$out/$n/logratios.txt") | $(of $(cat "$out/$n/ranged.txt")) | $med | $holds of $all |"
    done
    echo
    echo "| paper | points with a paper number | within 15% of it | inside the range over its assumptions | median abs log ratio | trends holding |"
    echo "|---|---|---|---|---|---|"
    for paper in $(printf '%s\n' "${names[@]}" | sed 's/-\(fig\|table\).*//' | sort -u); do
        cat "$out/$paper"-*/logratios.txt 2>/dev/null | sort -g >"$out/$paper.logratios"
        k=$(wc -l <"$out/$paper.logratios")
        med=$( [ "$k" -gt 0 ] && awk -v k="$k" 'NR == int((k + 1) / 2) { printf "%.2f", $1 }' "$out/$paper.logratios" || echo "-")
        holds=$(cat "$out/$paper"-*/checks.tsv 2>/dev/null | grep -c $'\tholds$' || true)
        all=$(cat "$out/$paper"-*/checks.tsv 2>/dev/null | wc -l)
        # shellcheck disable=SC2046 # of K N: the two sums, a word each
        echo "| $paper | $k | $(within "$out/$paper.logratios") | $(of $(cat "$out/$paper"-*/ranged.txt 2>/dev/null |
            awk '{ k += $1; n += $2 } END { print k + 0, n + 0 }')) | $med | $holds of $all |"
        rm -f "$out/$paper.logratios"
    done
    if grep -qs . "$out"/*/failing.tsv; then
        echo
        echo "Trends that do not hold, and why:"
        echo
        for n in "${names[@]}"; do
            [ -s "$out/$n/failing.tsv" ] && awk -F'\t' -v n="$n" '{ printf "- %s, *%s*: %s\n", n, $1, $2 }' "$out/$n/failing.tsv"
        done
    fi
    waiting=$(awk -F'\t' '!/^#/ && NF >= 3 && $3 != "" { printf "- %s (%s): %s\n", $1, $2, $3 }' "$here/papers.tsv")
    if [ -n "$waiting" ]; then # (a heading only over a list)
        printf '\nWaiting on parts not built yet:\n\n%s\n' "$waiting"
    fi
    for n in "${names[@]}"; do
        [ -f "$out/$n/report.md" ] && { echo; sed -e 's/^# /## /' -e "s|](figure.png)|]($n/figure.png)|" "$out/$n/report.md"; }
    done
} >"$out/report.md"
echo "papers: $out/report.md" >&2
exit "$rc"
