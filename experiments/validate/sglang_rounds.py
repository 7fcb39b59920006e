#!/usr/bin/env python3
"""sglang_rounds.py: SGLang's rounds measured whole, for tessera's runtime profile `--impl sglang`
(sim/data/rounds/GPU-MODEL-sglang.csv, read by sim/cost/rounds.c).

  sglang_rounds.py GPU MODEL MODE=DIR [MODE=DIR ...]

Each DIR is a mode's folder of sglang_driver.py's runs over the profile's bursts (burst-nN-pP: N
requests of P prompt tokens and 64 generated, all arriving at once; the record sglang-h200's
profile/), MODE fdfo or sync. A round counts where it holds all N requests: its time, its requests'
sequence lengths (kv_tokens, summed) and the gap to the trace's next round (the scheduler's host work;
a gap of 50 ms or more is the scheduler idle). A round is a prefill one while its requests' sequences
are no longer than the prompt, else a denoising one. Rounds are grouped by burst, phase and 256
tokens of sequence length a request, and each group of at least 3 (a sync denoising round: 1) becomes
a row of medians:
  fdfo  a round is one forward: forward_ms its time, host_ms the gap after it;
  sync  a denoising round runs a block's forwards back to back: forward_ms its time over its
        forwards, host_ms the gap after it (a round's, not a forward's); a prefill round is one
        forward whose results are not read back, so the forward runs on into the gap: forward_ms
        the round and the gap together, host_ms 0.
The graph column is the captured decode batch SGLang ran the round as (its sizes 1, 2, 4, 8, 12, 16,
24, 32 at --max-running-requests 32). Writes the CSV to stdout.
"""
import csv, glob, os, re, statistics as st, sys

GRAPHS = [1, 2, 4, 8, 12] + list(range(16, 257, 8))


def graph(n):
    return next(g for g in GRAPHS if g >= n)


def rows(mode, d):
    out = []
    for run in sorted(glob.glob(os.path.join(d, "burst-n*-p*"))):
        n, p = (int(x) for x in re.search(r"burst-n(\d+)-p(\d+)", run).groups())
        rounds = list(csv.DictReader(open(os.path.join(run, "rounds.csv"))))
        groups = {}
        for a, b in zip(rounds, rounds[1:]):
            reqs, fw = int(a["reqs"]), int(a["forwards"])
            if reqs != n:
                continue
            gap = (float(b["start_s"]) - float(a["start_s"])) * 1e3 - float(a["ms"])
            if not 0 <= gap < 50:
                continue
            kv = int(a["kv_tokens"]) / n
            prefill = kv <= p
            if prefill != (fw == 1) and mode == "sync":
                continue
            if mode == "sync" and prefill:
                t, host = float(a["ms"]) + gap, 0.0
            else:
                t, host = float(a["ms"]) / fw, gap
            groups.setdefault((prefill, int(kv // 256)), []).append((t, host, kv))
        for (prefill, _), v in sorted(groups.items(), key=lambda kv: (not kv[0][0], kv[0][1])):
            if len(v) < (1 if mode == "sync" and not prefill else 3):  # (a sync round: a block's forwards)
                continue
            out.append((mode, "prefill" if prefill else "denoise", n, graph(n), round(st.median(x[2] for x in v)),
                        len(v), st.median(x[0] for x in v), st.median(x[1] for x in v)))
    return out


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    gpu, model = sys.argv[1], sys.argv[2]
    print("device,model,impl,mode,phase,requests,graph,kv_per_request,rounds,forward_ms,host_ms")
    for arg in sys.argv[3:]:
        mode, d = arg.split("=", 1)
        if mode not in ("fdfo", "sync"):
            sys.exit(f"sglang_rounds.py: {arg}: MODE fdfo or sync")
        for r in rows(mode, d):
            print("%s,%s,sglang,%s,%s,%d,%d,%d,%d,%.3f,%.3f" % ((gpu, model) + r))


if __name__ == "__main__":
    main()
