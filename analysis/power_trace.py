"""power_trace.py: experiments/power.sh's runs read back, for its comparison and analysis/power-plot.sh.

A power.sh folder (or its raw.tgz unpacked) holds windows.txt (the workloads, in order), each
workload's power-NAME.csv (nvidia-smi's "timestamp, watts" samples) and sim-NAME.json (tessera sim's
summary of the live run: busy_s, busy_energy_j, live_t0_unix, live_t1_unix), and gpu-power.json.
"""
import datetime
import json
import os


def when(stamp):
    """nvidia-smi's timestamp (local time, 2026/11/26 19:20:01.123) as Unix seconds"""
    return datetime.datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()


def card(folder):
    """the card's entry of gpu-power.json: tdp_w and idle_w"""
    return next(iter(json.load(open(os.path.join(folder, "gpu-power.json"))).values()))


def runs(folder, margin=0.0):
    """each workload: (name, its summary, its samples as (seconds from its first step, watts) from
    margin seconds before its first step to margin after its last, the energy (J) and the span (s) of
    the samples inside that window)"""
    for name in open(os.path.join(folder, "windows.txt")).read().split():
        m = json.load(open(os.path.join(folder, f"sim-{name}.json")))
        a, b = m["live_t0_unix"], m["live_t1_unix"]  # the first step's start, the last step's end
        pts = []
        for line in open(os.path.join(folder, f"power-{name}.csv")):
            f = line.split(",")
            if len(f) == 2 and f[1].strip() not in ("", "[N/A]"):
                t = when(f[0])
                if a - margin <= t <= b + margin:
                    pts.append((t - a, float(f[1])))
        inside = [p for p in pts if 0 <= p[0] <= b - a]
        energy = sum((q[0] - p[0]) * (q[1] + p[1]) / 2 for p, q in zip(inside, inside[1:]))
        yield name, m, pts, energy, inside[-1][0] - inside[0][0], len(inside)
