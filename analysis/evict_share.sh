#!/usr/bin/env bash
# analysis/evict_share.sh: where the attention op's time goes in FOCUS's evicting steps, from Nsight
# Compute's per-kernel times of an engine replay. The engine times FOCUS's eviction (each front
# layer's importance, the pick, the kept rows' gather) within the attention op; this splits that op
# into the front layers' attention, the eviction's kernels and the later layers' attention.
#
# A layer's attention is one attention kernel launch (mma.sync or wgmma) and the split-key combines
# after it; a layer whose attention an importance kernel follows is a front layer; the layers after
# the gather are later ones until the next front layer. Steps without an evicting segment count as
# later layers.
#
# Usage: analysis/evict_share.sh NCU.csv[.gz] ...   (each the CSV of
#   ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
#       -k regex:"focus_|gather_kernel|attention_kernel|combine_kernel|attention_wgmma" \
#       tessera engine replay --db RUN.db --steps N)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: analysis/evict_share.sh NCU.csv[.gz] ..." >&2; exit 2; }
for f in "$@"; do
    [ -r "$f" ] || { echo "evict_share.sh: cannot read $f" >&2; exit 1; }
done
python3 - "$@" <<'PY'
import csv, gzip, sys

UNIT = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}

def kernels(path):
    """(kernel class, ms) in launch order; exits naming the file and line on a malformed row"""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        lines = [(n, l) for n, l in enumerate(fh, 1) if l.startswith('"')]
    if not lines:
        sys.exit(f"evict_share.sh: {path}: no ncu CSV rows")
    head = next(csv.reader([lines[0][1]]))
    try:
        ki, vi, ui = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
    except ValueError as e:
        sys.exit(f"evict_share.sh: {path}:{lines[0][0]}: not an ncu CSV header ({e})")
    out = []
    for n, l in lines[1:]:
        row = next(csv.reader([l]))
        try:
            ms = float(row[vi].replace(",", "")) * UNIT[row[ui]]
        except (IndexError, KeyError, ValueError):
            sys.exit(f"evict_share.sh: {path}:{n}: field Metric Value/Unit: not a time")
        name = row[ki]
        kind = ("imp" if "focus_imp" in name else "pick" if "focus_pick" in name else
                "gather" if "gather_kernel" in name else "combine" if "combine_kernel" in name else
                "attn" if "attention" in name else None)
        if kind:
            out.append((kind, ms))
    return out

def split(seq):
    """ms of front-layer attention, later-layer attention, importance, pick and gather"""
    t = dict(front=0.0, later=0.0, imp=0.0, pick=0.0, gather=0.0)
    layer = 0.0
    for kind, ms in seq:
        if kind in ("attn", "combine"):
            if kind == "attn" and layer:
                t["later"] += layer
                layer = 0.0
            layer += ms
            continue
        if kind == "imp" and layer:
            t["front"] += layer
            layer = 0.0
        elif layer:
            t["later"] += layer
            layer = 0.0
        t[kind] += ms
    t["later"] += layer
    return t

rows = []
for path in sys.argv[1:]:
    t = split(kernels(path))
    total = sum(t.values())
    if total <= 0:
        sys.exit(f"evict_share.sh: {path}: no attention or eviction kernel times")
    rows.append((path.rsplit("/", 1)[-1], t, 100 * (t["imp"] + t["pick"] + t["gather"]) / total))
print(f"{'replay':36s} {'front attn':>11s} {'later attn':>11s} {'importance':>11s} {'pick':>8s} {'gather':>8s}"
      f" {'eviction':>9s}")
for name, t, share in rows:
    print(f"{name:36s} {t['front']:9.1f}ms {t['later']:9.1f}ms {t['imp']:9.1f}ms {t['pick']:6.1f}ms "
          f"{t['gather']:6.1f}ms {share:8.1f}%")
print("(ms summed over the replay's kernels, each timed alone by ncu; eviction: the importance, pick "
      "and gather\nkernels' share of the attention op's kernels)")
PY
