#!/usr/bin/env python3
"""attn_split_fit.py: the mma.sync attention's key-split cost model (attention launch rules 3,
k_attention_split_cost in kernels/kernels.h), fitted to attn_bench sweeps of forced key splits, and
each launch rule set against the best forced count.

The model prices a launch of s key splits, in keys:
    waves(s) x keys a block(s) + B x blocks x s + C x [s > 1]
waves: the blocks (query tiles x 32 heads x s) over two slots an SM (four when an unsplit launch of
tiles of at most 32 rows on average takes 32-key K/V tiles), 132 SMs; keys a block: the longest
segment's keys split as the kernel splits them (in 64-key tiles, or 32), at most all of them. B and
C come from a non-negative least-squares fit of every forced timing of the FIT files, weighted by
1/time (relative error), after the time per key-wave is taken out. The rules are then applied to
every shape of every file and each choice's forced timing compared with the shape's best.

Sweep files (engine/results): lines "SPLITS SHAPE MS ..." (SPLITS 0: the rule of the build that ran
them, left out here) or "ROUND SPLITS SHAPE MS ..." (the median over rounds); SHAPE is
nseq:q:kv[+nseq:q:kv...] (q query rows over kv cached keys); '#' starts a comment.

Prints the fitted B and C beside kernels.h's (K_ATTN_SPLIT_BLOCK_16THS / 16 and
K_ATTN_SPLIT_COMBINE_KEYS), and per file the geometric mean and worst of (the chosen count's time /
the best count's) for rules 2 (floor(2 SMs / blocks)), rules 3 with kernels.h's constants, and rules
3 with the fitted ones; and a candidate no engine runs ("LPT"), fitted the same way: its first term
the makespan of the blocks, each as long as its own segment's keys a block, laid longest first onto
the slots, which sees that a short segment's blocks finish early (rules 3 counts every block as
long as the longest segment's).

Usage: analysis/attn_split_fit.py [--kernels KERNELS.h] FIT.txt... [--eval EVAL.txt...]
       (no files: the tenth and eleventh sessions' sweeps fitted, the thirteenth's ops-h200 steps
       evaluated too, from engine/results/)
"""
import heapq, math, os, re, statistics, sys
from itertools import combinations

SMS, HEADS, MAX_SPLITS = 132, 32, 16
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_shape(text, path, lineno):
    groups = []
    for g in text.split("+"):
        parts = g.split(":")
        if len(parts) != 3 or not all(p.isdigit() for p in parts) or int(parts[0]) < 1 or int(parts[1]) < 1:
            sys.exit(f"{path}:{lineno}: shape: '{text}' is not nseq:q:kv[+nseq:q:kv...]")
        groups.append(tuple(int(p) for p in parts))
    return tuple(groups)


def read_sweep(path, keep_rule=False):
    """{shape: {splits: median ms}} of one sweep file, the rule's own timings (0) left out unless
    keep_rule"""
    times = {}
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"{path}: cannot open: {e.strerror}")
    with f:
        for lineno, line in enumerate(f, 1):
            tok = line.split("#", 1)[0].split()
            if not tok:
                continue
            if len(tok) >= 4 and tok[0].isdigit() and tok[1].isdigit() and ":" in tok[2]:
                tok = tok[1:]  # ROUND SPLITS SHAPE MS
            if len(tok) < 3 or not tok[0].isdigit():
                sys.exit(f"{path}:{lineno}: expected 'SPLITS SHAPE MS' or 'ROUND SPLITS SHAPE MS'")
            try:
                ms = float(tok[2])
            except ValueError:
                sys.exit(f"{path}:{lineno}: ms: '{tok[2]}' is not a number")
            if not ms > 0:
                sys.exit(f"{path}:{lineno}: ms: {tok[2]} is not positive")
            splits = int(tok[0])
            if splits > 0 or keep_rule:
                times.setdefault(parse_shape(tok[1], path, lineno), {}).setdefault(splits, []).append(ms)
    if not times:
        sys.exit(f"{path}: no forced-split timings")
    return {shape: {s: statistics.median(v) for s, v in d.items()} for shape, d in times.items()}


def launch(shape):
    """query tiles, query rows and the longest segment's keys of a step"""
    tiles = sum(n * math.ceil(q / 64) for n, q, kv in shape)
    rows = sum(n * q for n, q, kv in shape)
    return tiles, rows, max(q + kv for n, q, kv in shape)


def slots_tile(tiles, rows, s):
    """block slots of the GPU and keys a K/V tile of a launch of s splits (kernels.h's
    k_attention_short_kv_tiles: 32-key tiles, four blocks an SM, when unsplit and short)"""
    short_kv = s == 1 and rows <= 32 * tiles
    return (4 if short_kv else 2) * SMS, 32 if short_kv else 64


def keys_a_block(keys, s, tile):
    """keys of one block when `keys` keys are split s ways in whole tiles, at most all of them"""
    return min(-(-(-(-keys // s)) // tile) * tile, keys)


def terms(shape, s):
    """(waves x keys a block, blocks x s, [s > 1]) of s splits, as kernels/kernels.h counts them"""
    tiles, rows, keys = launch(shape)
    slots, tile = slots_tile(tiles, rows, s)
    blocks = tiles * HEADS
    waves = -(-blocks * s // slots)
    return waves * keys_a_block(keys, s, tile), blocks * s, 1 if s > 1 else 0


def terms_lpt(shape, s):
    """terms() with the waves replaced by the longest-first makespan of the blocks over the slots"""
    tiles, rows, _ = launch(shape)
    slots, tile = slots_tile(tiles, rows, s)
    lengths = []
    for n, q, kv in shape:
        lengths += [keys_a_block(q + kv, s, tile)] * (n * math.ceil(q / 64) * HEADS * s)
    lengths.sort(reverse=True)
    load = [0] * min(slots, len(lengths))
    heapq.heapify(load)
    for length in lengths:
        heapq.heapreplace(load, load[0] + length)
    return max(load), tiles * HEADS * s, 1 if s > 1 else 0


def most_splits(shape):
    return max(1, min(MAX_SPLITS, -(-launch(shape)[2] // 64)))


def rule2(shape):
    tiles = launch(shape)[0]
    return max(1, min(2 * SMS // (tiles * HEADS), most_splits(shape)))


def rule3(shape, per_block, combine, terms=terms):
    cost = lambda s: (lambda wk, bs, split: wk + per_block * bs + combine * split)(*terms(shape, s))
    return min(range(1, most_splits(shape) + 1), key=lambda s: (cost(s), s))


def solve(a, b):
    """a x = b by Gaussian elimination with partial pivoting (None if singular)"""
    n = len(b)
    m = [row[:] + [v] for row, v in zip(a, b)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-300:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def nnls(rows, y):
    """non-negative least squares by trying every subset of the columns (few columns)"""
    k, best = len(rows[0]), None
    for size in range(1, k + 1):
        for cols in combinations(range(k), size):
            a = [[sum(r[i] * r[j] for r in rows) for j in cols] for i in cols]
            b = [sum(r[i] * v for r, v in zip(rows, y)) for i in cols]
            x = solve(a, b)
            if x is None or min(x) < 0:
                continue
            coef = [0.0] * k
            for c, v in zip(cols, x):
                coef[c] = v
            res = sum((sum(c * v for c, v in zip(coef, r)) - t) ** 2 for r, t in zip(rows, y))
            if best is None or res < best[0]:
                best = (res, coef)
    return best[1]


def fit(sweeps, terms=terms):
    rows, y = [], []
    for times in sweeps:
        for shape, d in times.items():
            for s, ms in d.items():
                rows.append([t / ms for t in terms(shape, s)])  # 1/time weights
                y.append(1.0)
    wk, blk, split = nnls(rows, y)
    if wk <= 0:
        sys.exit("attn_split_fit.py: the fit gives the key-waves no weight; no model")
    return blk / wk, split / wk


def kernels_constants(path):
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(f"{path}: cannot open: {e.strerror}")
    got = {}
    for name in ("K_ATTN_SPLIT_BLOCK_16THS", "K_ATTN_SPLIT_COMBINE_KEYS"):
        m = re.search(r"#define\s+" + name + r"\s+(\d+)", text)
        if not m:
            sys.exit(f"{path}: no #define {name}")
        got[name] = int(m.group(1))
    return got["K_ATTN_SPLIT_BLOCK_16THS"] / 16, got["K_ATTN_SPLIT_COMBINE_KEYS"]


def against_best(times, rule):
    """geometric mean and worst (ratio, shape) of the rule's choice over the best forced count, and
    the shapes whose choice the sweep did not time"""
    ratios, untimed = [], []
    for shape, d in times.items():
        s = rule(shape)
        if s not in d:
            untimed.append(shape)
            continue
        ratios.append((d[s] / min(d.values()), shape))
    if not ratios:
        return None, None, untimed
    geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    return geo, max(ratios), untimed


def name_shape(shape):
    return "+".join(f"{n}:{q}:{kv}" for n, q, kv in shape)


def main(argv):
    kernels = os.path.join(ROOT, "kernels", "kernels.h")
    if argv[:1] == ["--kernels"]:
        if len(argv) < 2:
            sys.exit(__doc__.strip().splitlines()[-3])
        kernels, argv = argv[1], argv[2:]
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return
    if not argv:
        res = os.path.join(ROOT, "engine", "results")
        fit_files = [os.path.join(res, f) for f in ("attn-splits.session10g.h200.txt",
                                                  "attn-splits-oos.session11.h200.txt")]
        eval_files = [os.path.join(res, "attn-splits-ops.session13.h200.txt")]
    else:
        cut = argv.index("--eval") if "--eval" in argv else len(argv)
        fit_files, eval_files = argv[:cut], argv[cut + 1:]
        if not fit_files:
            sys.exit(__doc__.strip().splitlines()[-3])
    sweeps = {f: read_sweep(f) for f in fit_files + eval_files}
    per_block, combine = fit([sweeps[f] for f in fit_files])
    k_block, k_combine = kernels_constants(kernels)
    n_fit = sum(len(sweeps[f]) for f in fit_files)
    print(f"fitted on {n_fit} shapes of {len(fit_files)} file(s): cost = waves x keys a block "
          f"+ {per_block:.4f} x blocks + {combine:.1f} x [split]   (keys)")
    print(f"kernels.h (rules 3):                                 + {k_block:.4f} x blocks + {k_combine:.1f} x [split]")
    lpt_block, lpt_combine = fit([sweeps[f] for f in fit_files], terms_lpt)
    print(f"LPT candidate, fitted the same way: cost = longest-first makespan of the blocks + {lpt_block:.4f} x blocks "
          f"+ {lpt_combine:.1f} x [split]")
    rules = [("rules 2", rule2), ("rules 3, kernels.h", lambda sh: rule3(sh, k_block, k_combine)),
             ("rules 3, fitted", lambda sh: rule3(sh, per_block, combine)),
             ("LPT, fitted", lambda sh: rule3(sh, lpt_block, lpt_combine, terms_lpt))]
    print(f"\n{'sweep':40s} {'shapes':>6s}  " + "  ".join(f"{n + ': geo, worst':>26s}" for n, _ in rules))
    for f in fit_files + eval_files:
        cells = []
        for _, rule in rules:
            geo, worst, untimed = against_best(sweeps[f], rule)
            cell = "—" if geo is None else f"{geo:.3f}, {worst[0]:.3f}"
            cells.append(cell + (f" ({len(untimed)} untimed)" if untimed else ""))
        tag = "fit" if f in fit_files else "eval"
        print(f"{os.path.basename(f) + ' (' + tag + ')':40s} {len(sweeps[f]):6d}  " +
              "  ".join(f"{c:>26s}" for c in cells))
    for f in fit_files + eval_files:
        geo, worst, _ = against_best(sweeps[f], rules[1][1])
        if worst:
            print(f"worst under kernels.h's rules 3 in {os.path.basename(f)}: {name_shape(worst[1])} "
                  f"({rules[1][1](worst[1])} splits, {worst[0]:.3f} x the best count)")


if __name__ == "__main__":
    main(sys.argv[1:])
