#!/usr/bin/env python3
"""attn_pack_eval.py: the key split of GQA-packed attention launches (attention launch rules 4:
k_attention_head_pack_v and k_attention_split_rule_pv in kernels/kernels.h) against the best
forced count, from an attn_bench sweep that timed every shape under the rule (SPLITS 0) and under
forced counts (ATTN_SPLITS), as engine/results/attn-gqa-splits.session18.h200.txt does.

Sweep lines as analysis/attn_split_fit.py reads them ("[ROUND] SPLITS SHAPE MS ..."); comment lines
"#   SHAPE P=N splits=N" name the rule's choice of each shape (printed beside it), and
"# unpacked SHAPE MS ..." the shape's time with packing off (ATTN_PACK=1), set against the rule's.

Prints each shape's rule time, its best forced count and time and their ratio (the best of the
forced counts and the rule's own time, so never below 1), and the geometric mean and worst of the
ratios; and the unpacked launch's time over the packed rule's.

Usage: analysis/attn_pack_eval.py [SWEEP.txt]   (default: the eighteenth session's sweep)
"""
import math, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attn_split_fit import name_shape, parse_shape, read_sweep  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_notes(path):
    """{shape: 'P=.. splits=..'} and {shape: unpacked ms} from the sweep's comment lines"""
    choice, unpacked = {}, {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            m = re.match(r"#\s+(\S+:\S+)\s+(P=\d+ splits=\d+)\s*$", line)
            if m:
                choice[parse_shape(m.group(1), path, lineno)] = m.group(2)
                continue
            m = re.match(r"# unpacked\s+(\S+)\s+(\S+)", line)
            if m:
                try:
                    ms = float(m.group(2))
                except ValueError:
                    sys.exit(f"{path}:{lineno}: ms: '{m.group(2)}' is not a number")
                if not ms > 0:
                    sys.exit(f"{path}:{lineno}: ms: {m.group(2)} is not positive")
                unpacked[parse_shape(m.group(1), path, lineno)] = ms
    return choice, unpacked


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    path = argv[1] if len(argv) == 2 else os.path.join(ROOT, "engine", "results", "attn-gqa-splits.session18.h200.txt")
    times = read_sweep(path, keep_rule=True)
    choice, unpacked = read_notes(path)
    ratios, gains = [], []
    print(f"{'shape':<12} {'rule':<16} {'rule ms':>9} {'best forced':>12} {'ms':>9} {'rule/best':>9} {'unpacked/rule':>14}")
    for shape in sorted(times, key=lambda sh: sh[0]):
        t = times[shape]
        if 0 not in t:
            sys.exit(f"{path}: {name_shape(shape)}: no timing under the rule (SPLITS 0)")
        forced = {s: ms for s, ms in t.items() if s > 0}
        if not forced:
            sys.exit(f"{path}: {name_shape(shape)}: no forced-split timing")
        best = min(forced, key=forced.get)
        r = t[0] / min(t[0], forced[best])
        ratios.append(r)
        gain = f"{unpacked[shape] / t[0]:.2f}" if shape in unpacked else "-"
        if shape in unpacked:
            gains.append(unpacked[shape] / t[0])
        print(f"{name_shape(shape):<12} {choice.get(shape, '?'):<16} {t[0]:>9.4f} {best:>12} {forced[best]:>9.4f} "
              f"{r:>9.3f} {gain:>14}")
    print(f"the rule against the best forced count over {len(ratios)} shapes: geometric mean {geo(ratios):.3f}, "
          f"worst {max(ratios):.3f}, {sum(r > 1.05 for r in ratios)} above 1.05")
    if gains:
        print(f"unpacked over packed (rules 3's split against the rule's), {len(gains)} shapes: geometric mean "
              f"{geo(gains):.2f}, {min(gains):.2f}-{max(gains):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
