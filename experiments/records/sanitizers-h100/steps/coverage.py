#!/usr/bin/env python3
"""coverage.py: which checks of `engine check --only steps` ran under racecheck, over the logs here.

plain-steps.txt lists every check of the steps half (a plain run). A part `steps:K/N` deals the
half's groups of checks in turn, so the N parts of one split hold the half's checks between them;
each racecheck-PART.txt holds the checks a racecheck run passed before its time limit (or all of
them), and plain-PART.txt that part's whole list. Checks are compared by name (numbers aside) and
counted as a multiset: several groups run checks of the same name. Prints each log's count and
hazard reports, each split's coverage of the half, and the checks the best split left.
"""
import collections, glob, os, re, sys

here = os.path.dirname(os.path.abspath(__file__))


def checks(path):
    norm = lambda l: re.sub(r"[-+]?\d[\d.]*(e[-+]?\d+)?", "#", l.rstrip("\n"))
    return [norm(l) for l in open(path) if l.rstrip().endswith("  ok")]


half = collections.Counter(checks(os.path.join(here, "plain-steps.txt")))
splits = collections.defaultdict(collections.Counter)  # N -> the checks its parts ran under racecheck
hazards = 0
for log in sorted(glob.glob(os.path.join(here, "racecheck-steps*.txt"))):
    name = os.path.basename(log)[len("racecheck-"):]
    m = re.fullmatch(r"steps(?:-(\d+)-(\d+))?\.txt", name)
    if not m:
        sys.exit(f"coverage.py: {name}: not a part of the steps half")
    text, ran = open(log).read(), checks(log)
    plain = checks(os.path.join(here, "plain-" + name))
    if plain[: len(ran)] != ran:
        sys.exit(f"coverage.py: {name}: the racecheck run's checks are not its plain run's")
    splits[int(m.group(2) or 1)].update(ran)
    found = len(re.findall(r"Race reported|hazards displayed \([1-9]", text))
    hazards += found
    print(f"{name:22s} {len(ran):4d} of {len(plain):4d} checks under racecheck, hazard reports {found}")
total = sum(half.values())
best = None
for n in sorted(splits):
    got = sum((splits[n] & half).values())
    print(f"in {n} part(s): {got} of {total} checks of the steps half under racecheck")
    if best is None or got > best[1]:
        best = (n, got)
print(f"covered {best[1]} of {total} checks of the steps half; hazard reports {hazards}")
for c, k in sorted((half - splits[best[0]]).items()):
    print(f"  not yet ({k}): {c[:96]}")
