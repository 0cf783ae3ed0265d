#!/usr/bin/env python3
"""smallcalls.py — direct's small driver calls: what llm_decode's cost against the other traces' (issue 11).

    python3 bench/replay/smallcalls.py per-trace SESSION/mechanism.jsonl.gz [--host-speed 0.035]
    python3 bench/replay/smallcalls.py distance SESSION/calls [--half-a cap_retry,cnn_train,...]

per-trace: each direct replay's cuMemAlloc and cuMemFree calls below 1 MiB (the JSON lines' measured_costs.calls),
per call, at the host speed (each process's times by --host-speed over the median of its runs' clock reads), one
figure a process.

distance: the per-call logs of `mechanism.sh CALLS=1` (TRACE.direct.PROC.txt.gz, each process's median run, as
measured): (1) the median cuMemAlloc of at most 8 KiB by how many calls after the last call of 1 MiB or more it
came; (2) for windows W of 8 to 256 calls, the small calls' total predicted from half A's calls (each call priced
by the mean of half A's calls of its kind, power-of-two size class and tier: within W calls of a large one, or
not; a cell of fewer than 5 calls takes its kind and size class over both tiers), against half B's measured total.
W = 8 is the present cost_after_large window (device.h); a single tier is the plain line alone.
"""
import argparse
import collections
import glob
import gzip
import json
import math
import os
import statistics

LARGE = 1 << 20
HALF_A = "cap_retry,cnn_train,gc_cap,randn_loop,transformer_train,varlen_infer"  # accept.py's halves


def per_trace(a):
    rows = collections.defaultdict(list)
    for line in gzip.open(a.path, "rt"):
        g = json.loads(line)["gpu_mechanism_replay"]
        if g["policy"] != "direct":
            continue
        reads = g.get("clock_read_us_runs")
        scale = a.host_speed / statistics.median(reads) if reads else 1.0
        for kind in ("malloc", "free"):
            small = [(n, us) for n, b, us in g["measured_costs"]["calls"].get(kind, []) if b / n < LARGE]
            n = sum(x[0] for x in small)
            if n:
                rows[(os.path.basename(g["trace"]).replace(".pickle.gz", ""), kind)].append(
                    (n, sum(x[1] for x in small) / n * scale))
    print("| trace | call | calls a run | µs a call at the host speed, each process |")
    print("| --- | --- | --- | --- |")
    for (t, kind), procs in sorted(rows.items()):
        print("| %s | %s | %d | %s |" % (t, kind, procs[0][0], ", ".join("%.2f" % us for _, us in procs)))


def read_log(path):
    """[(kind, bytes, us, calls since the last large call or None for a large one)], the untimed calls left out."""
    calls, last, i = [], None, 0
    for line in gzip.open(path, "rt"):
        if line.startswith("#"):
            continue
        kind, b, us, req = line.split()
        b, i = int(b), i + 1
        if b >= LARGE:
            last = i
            dist = None
        else:
            dist = i - last if last is not None else math.inf
        if req != "0":
            calls.append((kind, b, float(us), dist))
    return calls


def distance(a):
    half_a = set(a.half_a.split(","))
    logs = {os.path.basename(p)[:-len(".txt.gz")].replace(".direct", ""): read_log(p)
            for p in sorted(glob.glob(os.path.join(a.path, "*.direct.*.txt.gz")))}
    if not logs:
        raise SystemExit("smallcalls.py: %s: no TRACE.direct.PROC.txt.gz call logs (mechanism.sh CALLS=1)" % a.path)
    bins = ((1, 8), (9, 16), (17, 64), (65, 256), (257, math.inf))
    print("| process | %s |" % " | ".join("%s–%s after" % (lo, hi if hi < math.inf else "") for lo, hi in bins))
    print("| --- |" + " --- |" * len(bins))
    for name, calls in logs.items():
        cells = []
        for lo, hi in bins:
            us = [c[2] for c in calls if c[0] == "malloc" and c[1] <= 8192 and c[3] is not None and lo <= c[3] <= hi]
            cells.append("%d, %.2f µs" % (len(us), statistics.median(us)) if us else "-")
        print("| %s | %s |" % (name, " | ".join(cells)))
    print("\nhalf B's small calls, predicted from half A's against measured:\n")
    for w in (None, 8, 16, 32, 64, 128, 256):  # None: one tier, the plain line alone
        def key(c):
            return (c[0], int(math.log2(c[1])), w is not None and c[3] <= w)
        price = collections.defaultdict(list)
        for name, calls in logs.items():
            if name.split(".")[0] in half_a:
                for c in calls:
                    if c[3] is not None:
                        price[key(c)].append(c[2])
                        price[key(c)[:2]].append(c[2])
        mean = {k: (len(v), statistics.mean(v)) for k, v in price.items()}
        out = []
        for name, calls in logs.items():
            if name.split(".")[0] not in half_a:
                small = [c for c in calls if c[3] is not None]
                # a kind and size class half A never made has no price: nan, not the call's own measured cost
                pred = sum(mean[key(c)][1] if mean.get(key(c), (0,))[0] >= 5 else
                           mean.get(key(c)[:2], (0, math.nan))[1] for c in small)
                out.append("%s %+.0f%%" % (name, 100 * (pred / sum(c[2] for c in small) - 1)))
        print("- %s: %s" % ("one tier" if w is None else "window %d" % w, "; ".join(out)))


ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=("per-trace", "distance"))
ap.add_argument("path", help="per-trace: a session's mechanism.jsonl.gz; distance: its calls/ folder")
ap.add_argument("--host-speed", type=float, default=0.035, help="per-trace: µs a clock read (default 0.035)")
ap.add_argument("--half-a", default=HALF_A, help="distance: the traces priced from (default accept.py's half A)")
a = ap.parse_args()
if not os.path.exists(a.path):
    raise SystemExit("smallcalls.py: %s: no such file or folder" % a.path)
if a.mode == "per-trace":
    per_trace(a)
else:
    distance(a)
