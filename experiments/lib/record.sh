# shellcheck shell=bash
# record.sh: where an experiment that compares with a record reads it (sourced by experiments/validate.sh
# and experiments/validate-mechanisms.sh):
#   rec=$(record_path EXP NAME TMP WHAT HOW) || exit 2
# prints the folder of record NAME: under TESSERA_RECORDS where it holds it, else unpacked into TMP/records
# (analysis/records.sh unpack). Where neither has it, EXP says so on stderr, naming WHAT the record holds
# and HOW it is made, and record_path fails.
record_path() {
    local exp=$1 name=$2 tmp=$3 what=$4 how=$5 src=${TESSERA_RECORDS:-}
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ -z "$src" ] || [ ! -d "$src/$name" ]; then
        src=$tmp/records
        bash "$root/analysis/records.sh" unpack "$src" "$name" >/dev/null 2>&1 || {
            echo "$exp: needs the record experiments/records/$name ($what); make it on a GPU machine with $how" >&2
            return 2
        }
    fi
    echo "$src/$name"
}
