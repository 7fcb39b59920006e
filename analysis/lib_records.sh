# shellcheck shell=bash
# analysis/lib_records.sh: sourced by the scripts that price each card's recorded fidelity runs again
# (transfer_fidelity.sh, refresh_error.sh; no GPU needed).
#
# records_setup NAME [OUT]: root (the checkout), bin (tessera in build/ or TESSERA), tmp (a
# directory removed on exit), out (OUT, or one in tmp), rec (the records unpacked: TESSERA_RECORDS,
# or those the runs name unpacked into tmp by analysis/records.sh) and runs, the
# recorded runs one a line: GPU IMPL MODEL RECORD, each RECORD/all-steps.csv.gz holding MODEL's
# fidelity matrix as the card measured it (the tessera engine's out of sample; the tessera-fused
# engine's with the fused FFN's small-row forms: on the H200 in sample for its own calibration, on
# both its profiles' start; on the H100 out of sample). NAME names the script in its messages.
records_setup() {
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    bin=${TESSERA:-$root/build/tessera}
    [ -x "$bin" ] || { echo "$1: $bin not found: make first, or set TESSERA" >&2; exit 2; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    out=${2:-$tmp/out}
    mkdir -p "$out"
    runs="h100 tessera llada-8b fidelity-h100-oos
h100 tessera sdar-8b fidelity-h100-oos
h100 tessera dream-7b fidelity-h100-oos
h200 tessera llada-8b fidelity-h200-oos
h200 tessera sdar-8b fidelity-h200-sdar-oos
h200 tessera dream-7b fidelity-h200-dream-rules4-oos
h200 tessera-fused llada-8b fused-small-h200
h200 tessera-fused sdar-8b fused-small-h200
h200 tessera-fused dream-7b fused-small-h200
h100 tessera-fused llada-8b fidelity-h100-fused-oos
h100 tessera-fused sdar-8b fidelity-h100-fused-oos
h100 tessera-fused dream-7b fidelity-h100-fused-oos"
    rec=${TESSERA_RECORDS:-}
    if [ -z "$rec" ]; then
        rec=$tmp/records
        # shellcheck disable=SC2046
        bash "$root/analysis/records.sh" unpack "$rec" $(echo "$runs" | awk '{ print $4 }' | sort -u) ||
            { echo "$1: cannot unpack the records" >&2; exit 2; }
    fi
}
