#!/usr/bin/env bash
# sglang.sh: on the GPU machine, SGLang's own dLLM serving (sglang_driver.py) over the validation traces,
# into OUT/MODE/ for each mode: what the record sglang-h200 holds.
#
# BUNDLE is the folder of sglang_bundle.sh's parts (part.*, md5), unpacked once into SITE
# [/tmp/sglang-site]; where SITE holds sglang already, BUNDLE may be "-". The first engine start on a
# machine compiles FlashInfer's and Triton's kernels (README.md, "How long things take").
#
# Usage: experiments/validate/sglang.sh BUNDLE TRACES OUT   (MODES="fdfo sync" [fdfo], MRR [8],
#        TRACE_NAMES="fixed-rps2 fixed-rps1" [those two, in that order], DRIVER_OPTS)
set -euo pipefail
bundle=${1:?usage: sglang.sh BUNDLE TRACES OUT} traces=${2:?usage: sglang.sh BUNDLE TRACES OUT}
out=${3:?usage: sglang.sh BUNDLE TRACES OUT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
site=${SITE:-/tmp/sglang-site}
if [ ! -d "$site/sglang" ]; then
    [ -f "$bundle/md5" ] || { echo "sglang.sh: $bundle: no bundle (sglang_bundle.sh DIR makes one)" >&2; exit 2; }
    sum=$(cat "$bundle"/part.* | md5sum | cut -c1-32)
    [ "$sum" = "$(cat "$bundle/md5")" ] || { echo "sglang.sh: $bundle: parts do not add up to the archive (md5 $sum)" >&2; exit 2; }
    mkdir -p "$site"
    cat "$bundle"/part.* | xz -d | tar -C "$site" -x
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
args=()
for t in ${TRACE_NAMES:-fixed-rps2 fixed-rps1}; do args+=(--trace "$traces/$t.csv"); done
mkdir -p "$out"
for mode in ${MODES:-fdfo}; do
    case $mode in fdfo) f=1 ;; sync) f=0 ;; *) echo "sglang.sh: MODES: $mode: fdfo or sync" >&2; exit 2 ;; esac
    # shellcheck disable=SC2086 # DRIVER_OPTS are words
    python3 "$here/sglang_driver.py" --model "$here/llada2-mini" "${args[@]}" --out "$out/$mode" --fdfo $f \
        --mrr "${MRR:-8}" ${DRIVER_OPTS:-} >"$out/$mode.log" 2>&1 || { tail -20 "$out/$mode.log" >&2; exit 1; }
    grep "requests, mean latency" "$out/$mode.log"
    rm -f "$out/$mode"/rounds.[0-9]*
done
