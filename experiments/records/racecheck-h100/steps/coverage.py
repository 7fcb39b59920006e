#!/usr/bin/env python3
"""coverage.py: which checks of `engine check --only steps` ran under racecheck, over the logs here.

plain-steps.txt lists every check of the steps half in order (a plain run); each racecheck-PART.txt
holds the checks a racecheck run passed before its time limit, and plain-PART.txt that part's whole
list (a part's checks keep the half's order: its groups are dealt in turn). A part's checks are
matched to the half's by name (numbers aside), then the first ones its racecheck passed are marked.
Prints each log's count and hazard reports, the checks covered, and the ones left.
"""
import glob, os, re, sys

here = os.path.dirname(os.path.abspath(__file__))


def checks(path):
    norm = lambda l: re.sub(r"[-+]?\d[\d.]*(e[-+]?\d+)?", "#", l.rstrip("\n"))
    return [norm(l) for l in open(path) if l.rstrip().endswith("  ok")]


half = checks(os.path.join(here, "plain-steps.txt"))
covered = [False] * len(half)


def mark(part, done):
    j, at = 0, []
    for c in part:
        while j < len(half) and half[j] != c:
            j += 1
        if j == len(half):
            sys.exit("coverage.py: a part's checks do not follow the half's order")
        at.append(j)
        j += 1
    for i in at[:done]:
        covered[i] = True


hazards = 0
for log in sorted(glob.glob(os.path.join(here, "racecheck-steps*.txt"))):
    name = os.path.basename(log)[len("racecheck-"):]
    text, ran = open(log).read(), checks(log)
    plain = checks(os.path.join(here, "plain-" + name))
    if plain[: len(ran)] != ran:
        sys.exit(f"coverage.py: {name}: the racecheck run's checks are not its plain run's")
    mark(plain, len(ran))
    found = len(re.findall(r"Race reported|hazards displayed \([1-9]", text))
    hazards += found
    print(f"{name:22s} {len(ran):4d} of {len(plain):4d} checks under racecheck, hazard reports {found}")
left = [i for i, c in enumerate(covered) if not c]
print(f"covered {sum(covered)} of {len(half)} checks of the steps half; hazard reports {hazards}")
for i in left:
    print(f"  not yet: {half[i][:96]}")
