# shellcheck shell=bash
# paper.sh: what the paper experiments share (sourced by experiments/<paper>-<figure>.sh).
#
# An experiment script sets EXP (its name) and calls, in order:
#   paper_init OUT [--force] [--quick] [--strict]
#                                        OUT must be missing or empty unless --force (tessera exp run
#                                        checks it before the script starts); --quick (or
#                                        QUICK=1) runs the reduced version make check runs;
#                                        --strict: exit 1 when a trend does not hold
#   point SYSTEM WORKLOAD X SIM-ARGS...   one `tessera sim` run (its summary as JSON in
#                                        OUT/points/), its metrics appended to OUT/points.tsv
#                                        (overloaded among them: 1 or 0, empty where too few
#                                        requests arrived to tell), and how its system is known
#                                        (validated, measured or modelled) to OUT/points.known
#   derived METRIC SYSTEM WORKLOAD X V   a number computed from the points (value, ratio, ratio_of)
#   derived_range METRIC SYSTEM WORKLOAD X V...   its range over the experiment's assumptions
#   paper METRIC SYSTEM WORKLOAD X VALUE a number the paper prints, beside tessera's point
#   check "TEXT" AWK-CONDITION           a trend the paper reports, evaluated over OUT/points.tsv
#                                        (columns: system workload x metric value)
#   why "TEXT" "REASON"                  why the trend whose text starts with TEXT does not hold
#                                        here, from the run's own numbers (printed only where it
#                                        does not; a trend that fails with no reason says so)
#   paper_finish "TITLE" XLABEL METRIC [logx]   (SHOW_METRICS="M ...": more metrics in the report)
#                                        OUT/results.jsonl, OUT/figure.png and its gnuplot script
#                                        OUT/figure.gp (as the experiment's fig_* calls describe it,
#                                        lib/figure.sh; else METRIC against x, a curve a system, with
#                                        PANELS="W ..." a panel a workload), OUT/report.md (a trend that does not hold is a
#                                        finding the report states with its reason, an error only
#                                        with --strict), OUT/failing.tsv (each trend that does not
#                                        hold and its reason)
# results.jsonl has one object a point: experiment system model gpu workload x metric value
# paper_value (null where the paper gives no number).
set -uo pipefail
bin=${TESSERA:?paper experiments run from tessera exp run (TESSERA names the binary)}
for tool in sqlite3 gnuplot; do
    command -v $tool >/dev/null || { echo "$EXP: $tool not found (apt-get install sqlite3 gnuplot-nox)" >&2; exit 2; }
done
source "$(dirname "${BASH_SOURCE[0]}")/figure.sh"

paper_init() {
    out=${1:?usage: tessera exp run $EXP OUT [--force] [--quick] [--strict]}
    shift
    local force=0
    QUICK=${QUICK:-0} STRICT=${STRICT:-0}
    while [ $# -gt 0 ]; do
        case $1 in
            --force) force=1 ;;
            --quick) QUICK=1 ;;
            --strict) STRICT=1 ;;
            *) echo "$EXP: unexpected argument '$1' (--force, --quick, --strict)" >&2; exit 2 ;;
        esac
        shift
    done
    # tessera exp run keeps OUT's rule itself (TESSERA_EXP_OUT_CHECKED): refused where it holds
    # something unless --force, marked INCOMPLETE while the run is under way
    if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ $force = 0 ] && [ -z "${TESSERA_EXP_OUT_CHECKED:-}" ]; then
        echo "$EXP: $out is not empty (--force writes over it)" >&2
        exit 2
    fi
    [ -e "$out" ] && [ ! -d "$out" ] && { echo "$EXP: $out is not a folder" >&2; exit 2; }
    mkdir -p "$out/points" || exit 2
    rm -f "$out"/points/* "$out/points.tsv" "$out/points.known" "$out/points.idx" "$out/paper.tsv" "$out/checks.tsv" "$out/whys.tsv" \
        "$out/failing.tsv"
    : >"$out/points.tsv"
    : >"$out/points.known"
    : >"$out/paper.tsv"
    : >"$out/checks.tsv"
    : >"$out/whys.tsv"
    npoints=0
}

# json FILE KEY: a number from a summary tessera sim --json wrote (empty where FILE is missing); the
# file reaches sqlite3 on stdin, so that its path is never SQL text; KEY is a name or refused
json() {
    [[ $2 =~ ^[A-Za-z][A-Za-z0-9_]*$ ]] || { echo "$EXP: json: '$2' is not a key's name" >&2; exit 2; }
    if [ -r "$1" ]; then sqlite3 :memory: "SELECT json_extract(readfile('/dev/stdin'), '\$.$2')" <"$1"; else echo; fi
}

point() {
    local sys=$1 wl=$2 x=$3
    shift 3
    npoints=$((npoints + 1))
    local f="$out/points/$npoints.json"
    if ! "$bin" sim "$@" --quiet --no-progress --json >"$f" 2>"$out/points/$npoints.log"; then
        echo "$EXP: point $npoints ($sys, $wl, x = $x) failed: $(head -3 "$out/points/$npoints.log")" >&2
        exit 1
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$wl" "$x" "$(json "$f" model)" "$(json "$f" gpu)" "$npoints" >>"$out/points.idx"
    local m
    for m in throughput_tok_s content_tok_s lat_mean_s lat_p99_s lat_std_s lat_span_s redundancy rows_processed \
             missed_decodes tokens_decoded static_batch overloaded; do
        printf '%s\t%s\t%s\t%s\t%s\n' "$sys" "$wl" "$x" "$m" "$(json "$f" $m)" >>"$out/points.tsv"
    done
    local known
    known=$(json "$f" known)
    printf '%s\t%s\t%s\t%s\n' "$sys" "$wl" "$x" "${known%%:*}" >>"$out/points.known"
    printf '%s %-12s %-10s x = %-6s %s tok/s\n' "$EXP" "$sys" "$wl" "$x" "$(json "$f" throughput_tok_s)" >&2
}

# shipped_calib_dir: the folder of the shipped calibrations (tessera list calibrations' first)
shipped_calib_dir() {
    "$bin" list calibrations | sed -n 's/^calibrations in \(.*\), shipped.*/\1/p' | head -1
}

# carry_calib FROM TO MODEL IMPL: the shipped calibration of MODEL with IMPL measured on FROM, carried
# to TO by tessera calib transfer once a run: CARRIED names it (OUT/calib-TO-MODEL-IMPL.csv),
# CARRIED_BAND the transfer's band there (tessera calib show --gpu TO, OUT/band-TO-MODEL-IMPL.txt)
carry_calib() {
    local tag="$2-$3-$4"
    CARRIED="$out/calib-$tag.csv" CARRIED_BAND="$out/band-$tag.txt"
    [ -s "$CARRIED" ] && return 0
    "$bin" calib transfer "$(shipped_calib_dir)/$1-$3-$4.csv" --from "$1" --to "$2" --impl "$4" --out "$CARRIED" \
        >"$out/points/transfer-$tag.log" 2>&1 ||
        { echo "$EXP: tessera calib transfer to $2 failed: $(head -3 "$out/points/transfer-$tag.log")" >&2; exit 1; }
    "$bin" calib show --gpu "$2" --model "$3" --impl "$4" --from "$1" 2>&1 |
        sed -n '/^uncertainty band/,/^calibration of/p' | sed '$d' >"$CARRIED_BAND"
}

# carried_gemm_band: the low and high ends of the last carried calibration's transfer band for a
# Refresh step (CARRIED_BAND's "(-18% / +3%)" gives 0.82 1.03), as GEMM-time factors
carried_gemm_band() {
    sed -n 's/.*Refresh.*(\([-+][0-9]*\)% \/ \([-+][0-9]*\)%).*/\1 \2/p' "$CARRIED_BAND" | head -1 |
        awk '{ printf "%.2f %.2f", 1 + $1 / 100, 1 + $2 / 100 }'
}
# gemm_scale_opts F: the options that price the GEMMs (QKV, O, FFN, LM head) F times over (none at 1)
gemm_scale_opts() {
    awk -v f="$1" 'BEGIN { if (f != 1) printf "--op-scale qkv=%s,o_proj=%s,gate_up=%s,down=%s,lm_head=%s", f, f, f, f, f }'
}

# roofline_ms GPU MODEL STEP: tessera's roofline of one step (SEGS,Q,KV,LOGIT_ROWS, calib price
# --step) on GPU, the GPU's time alone (its host time left out), in ms
roofline_ms() {
    "$bin" calib price --roofline --gpu "$1" --model "$2" --step "$3" |
        awk '$1 == "host" { h = $2 } $1 == "step" { s = $2 } END { printf "%.6g", s - h }'
}

# point_json KEY SYSTEM WORKLOAD X: a key of a point's summary (the JSON tessera sim --json wrote)
point_json() {
    local k
    k=$(awk -F'\t' -v s="$2" -v w="$3" -v x="$4" '$1 == s && $2 == w && $3 == x { print $6; exit }' "$out/points.idx")
    [ -n "$k" ] && json "$out/points/$k.json" "$1"
}

# mean_batch SYSTEM WORKLOAD X: the requests a step of a point runs on average
mean_batch() { ratio "$(point_json request_steps "$@")" "$(point_json num_steps "$@")"; }

# derived METRIC SYSTEM WORKLOAD X VALUE: a number computed from the points (a ratio, a reduction)
derived() { printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$1" "$5" >>"$out/points.tsv"; }
# derived_range METRIC SYSTEM WORKLOAD X VALUE...: METRIC's range over an experiment's assumptions, the
# least and the largest of the VALUEs, recorded as METRIC_lo and METRIC_hi (exp run papers counts the
# paper numbers inside) and left in RANGE_LO and RANGE_HI
derived_range() {
    local m=$1 s=$2 w=$3 x=$4
    shift 4
    RANGE_LO=$(printf '%s\n' "$@" | sort -g | head -1) RANGE_HI=$(printf '%s\n' "$@" | sort -g | tail -1)
    derived "${m}_lo" "$s" "$w" "$x" "$RANGE_LO"
    derived "${m}_hi" "$s" "$w" "$x" "$RANGE_HI"
}

# value METRIC SYSTEM WORKLOAD X: a point's value
value() { awk -F'\t' -v m="$1" -v s="$2" -v w="$3" -v x="$4" '$1 == s && $2 == w && $3 == x && $4 == m { print $5 }' "$out/points.tsv"; }

# ratio A B: A / B
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }

# ratio_of METRIC SYSTEM BASE WORKLOAD X: SYSTEM's value over BASE's at one point (a speedup)
ratio_of() { ratio "$(value "$1" "$2" "$4" "$5")" "$(value "$1" "$3" "$4" "$5")"; }

paper() { printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$1" "$5" >>"$out/paper.tsv"; }

check() {
    local text=$1 cond=$2 ok
    if ! ok=$(awk -F'\t' -v OFS='\t' "
        { v[\$1 \"|\" \$2 \"|\" \$3 \"|\" \$4] = \$5 }
        function val(s, w, x, m) { return v[s \"|\" w \"|\" x \"|\" m] + 0 }
        END { print (($cond) ? \"holds\" : \"does not hold\") }" "$out/points.tsv" 2>"$out/points/check.err"); then
        echo "$EXP: the check '$text' does not evaluate: $(head -2 "$out/points/check.err")" >&2
        exit 1
    fi
    printf '%s\t%s\n' "$text" "$ok" >>"$out/checks.tsv"
}

# why TEXT REASON: why the trend whose text starts with TEXT does not hold, where it does not (one
# line of OUT/whys.tsv; the longest TEXT a trend starts with is its reason)
why() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\n\t' '  ' | tr -s ' ')" >>"$out/whys.tsv"; }

paper_finish() {
    local title=$1 xlabel=$2 metric=$3 logx=${4:-}
    # results.jsonl: every point's metric, the paper's number beside it where it prints one
    : >"$out/results.jsonl"
    while IFS=$'\t' read -r sys wl x m v; do
        local model gpu pv
        model=$(awk -F'\t' -v s="$sys" -v w="$wl" -v x="$x" '$1 == s && $2 == w && $3 == x { print $4; exit }' "$out/points.idx")
        gpu=$(awk -F'\t' -v s="$sys" -v w="$wl" -v x="$x" '$1 == s && $2 == w && $3 == x { print $5; exit }' "$out/points.idx")
        pv=$(awk -F'\t' -v s="$sys" -v w="$wl" -v x="$x" -v m="$m" '$1 == s && $2 == w && $3 == x && $4 == m { print $5; exit }' "$out/paper.tsv")
        printf '{"experiment":"%s","system":"%s","model":"%s","gpu":"%s","workload":"%s","x":%s,"metric":"%s","value":%s,"paper_value":%s}\n' \
            "$EXP" "$sys" "${model:-}" "${gpu:-}" "$wl" "$(num "$x")" "$m" "$(num "$v")" "${pv:-null}" >>"$out/results.jsonl"
    done <"$out/points.tsv"
    # the figure, as the experiment described it (lib/figure.sh); else the metric against x, a panel a
    # workload of PANELS, a curve a system
    [ "$FIG_NPANELS" -gt 0 ] || [ -n "$FIG_TABLE_TITLE" ] || fig_default "$xlabel" "$metric" "$logx"
    fig_draw "$title"
    # each trend that does not hold, with its reason
    awk -F'\t' -v OFS='\t' 'FILENAME == ARGV[1] { w[$1] = $2; next }
        $2 == "does not hold" { r = ""; n = -1
            for (k in w) if (index($1, k) == 1 && length(k) > n) { r = w[k]; n = length(k) }
            print $1, (r == "" ? "no reason recorded" : r) }' "$out/whys.tsv" "$out/checks.tsv" >"$out/failing.tsv"
    # the report: the points, the paper's numbers beside tessera's, the trends
    {
        echo "# $EXP: $title"
        echo
        [ -f "$out/figure.png" ] && { echo "![$EXP](figure.png)"; echo; }
        echo "| system | workload | x | metric | tessera | paper | tessera / paper |"
        echo "|---|---|---|---|---|---|---|"
        while IFS=$'\t' read -r sys wl x m v; do
            local pv
            pv=$(awk -F'\t' -v s="$sys" -v w="$wl" -v x="$x" -v m="$m" '$1 == s && $2 == w && $3 == x && $4 == m { print $5; exit }' "$out/paper.tsv")
            case $m in "$metric"|speedup*|*reduction*|*gain*|redundancy) ;;
                *) [ -n "$pv" ] || [[ " ${SHOW_METRICS:-} " == *" $m "* ]] || continue ;; esac
            printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$sys" "$wl" "$x" "$m" "$(fmt "$v")" "${pv:-}" \
                "$([ -n "$pv" ] && awk -v a="$v" -v b="$pv" 'BEGIN { printf "%.2f", a / b }')"
        done <"$out/points.tsv"
        echo
        echo "| trend the paper reports | in tessera |"
        echo "|---|---|"
        awk -F'\t' '{ printf "| %s | %s |\n", $1, $2 }' "$out/checks.tsv"
        if [ -s "$out/failing.tsv" ]; then
            printf '\nWhy each trend that does not hold fails here:\n\n'
            awk -F'\t' '{ printf "- *%s*: %s\n", $1, $2 }' "$out/failing.tsv"
        fi
        [ -n "${NOTES:-}" ] && printf '\n%s\n' "$NOTES"
    } >"$out/report.md"
    echo "$EXP: $out/report.md, $out/results.jsonl$([ -f "$out/figure.png" ] && echo ", $out/figure.png")" >&2
    [ "$STRICT" = 0 ] || ! grep -q "does not hold" "$out/checks.tsv"
}

num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && echo "$1" || echo "\"$1\""; }
fmt() { awk -v a="$1" 'BEGIN { if (a == a + 0) printf (a >= 100 ? "%.0f" : "%.3g"), a; else printf "%s", a }'; }
