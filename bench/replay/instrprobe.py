#!/usr/bin/env python3
"""instrprobe.py — is the allocator's own work per request what the mechanism's code executes? (issue 11)

For every configuration of a real-mechanism replay dataset (bench/replay/mechanismN/mechanism.jsonl.gz; the
least disturbed process of each, as accept.py --statistic min), the measured own work (the process's
measured_total_us less the time of its driver calls) beside three predictors, each fitted per mechanism on one
half of the traces (accept.py's halves) and judged on the other:

  per record     own = c x records                   (what the size lines amount to: sizes move own work little)
  replay time    own = c x the replay's time here    (pagetune sim --repeat 21 on this machine, taskset -c 1)
  instructions   own = c x the replay's instructions (valgrind --tool=callgrind: --repeat 5 less --repeat 1, / 4)

direct is left out (its own work is its calls). Deterministic: the instruction counts; the replay time is this
machine's. Needs valgrind and the traces in traces/.

With --counts, also how well the engine's work counts (pagetune sim --gpu h200 --json's work: requests and frees,
free-set operations, chunks at each insert, visits) stand in for the instruction counts: for each mechanism, the
instructions a replay fitted over all its configurations (least squares on the relative error, no cost negative:
the closest fit over every subset of the features, as gpu fit --work) from nested sets of features, each with the
records (the engine's own per-record work), and the largest and median relative error of the fit.

    python3 bench/replay/instrprobe.py bench/replay/mechanism5/mechanism.jsonl.gz [--pagetune ./pagetune] [--counts]
        [--policy P ...]
"""
import itertools
import argparse
import gzip
import json
import os
import re
import statistics
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("jsonl")
ap.add_argument("--pagetune", default="./pagetune")
ap.add_argument("--policy", action="append", default=[],
                help="probe only this policy's configurations (repeatable; default: every policy), and show them all in "
                     "the table of own work per record (default: pytorch_native's)")
ap.add_argument("--counts", action="store_true", help="also fit the work counts to the instruction counts, per mechanism")
a = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "traces")

procs = {}
for line in gzip.open(a.jsonl, "rt"):
    if line.strip():
        r = json.loads(line)
        g = r["gpu_mechanism_replay"]
        procs.setdefault((os.path.basename(g["trace"]).replace(".pickle.gz", ""), g["policy"]), []).append(g)


def sim(trace, policy, *extra, tool=None):
    cmd = (tool or []) + [a.pagetune, "sim", "--trace", os.path.join(TRACES, trace + ".pickle.gz"), "--policy", policy,
                          "--json"] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, check=True)


def instructions(trace, policy, repeat):
    e = sim(trace, policy, "--repeat", str(repeat), tool=["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"])
    return int(re.search(r"Collected : (\d+)", e.stderr).group(1))


rows = []  # trace, policy, mechanism, own us, records, replay us here, instructions a replay, work counts
for (t, p), gs in sorted(procs.items()):
    g = min(gs, key=lambda g: g["measured_total_us"])
    if g["mechanism"] == "direct" or (a.policy and p not in a.policy):
        continue
    own = g["measured_total_us"] - sum(x[2] for calls in g["measured_costs"]["calls"].values() for x in calls)
    j = json.loads(sim(t, p, "--repeat", "21", tool=["taskset", "-c", "1"]).stdout)
    ins = (instructions(t, p, 5) - instructions(t, p, 1)) / 4
    work = json.loads(sim(t, p, "--gpu", "h200").stdout)["work"] if a.counts else None
    rows.append((t, p, g["mechanism"], own, j["events"], j["replay_seconds_median"] * 1e6, ins, work))

traces = sorted({r[0] for r in rows})
halves = (traces[0::2], traces[1::2])
models = (("per record", 4), ("replay time", 5), ("instructions", 6))
print("| predictor | runs within 25% of the measured own work | misses (judged on the other half) |")
print("| --- | --- | --- |")
for label, col in models:
    within = n = 0
    misses = []
    for cal, judged in ((halves[0], halves[1]), (halves[1], halves[0])):
        c = {m: statistics.median([r[3] / r[col] for r in rows if r[2] == m and r[0] in cal and r[3] > 0])
             for m in {r[2] for r in rows}}
        for r in rows:
            if r[0] in judged:
                e = c[r[2]] * r[col] / r[3] - 1 if r[3] > 0 else float("inf")
                n += 1
                within += abs(e) <= 0.25
                if abs(e) > 0.25:
                    misses.append("%s %s %+.0f%%" % (r[0], r[1], 100 * e))
    print("| %s | %d of %d | %s |" % (label, within, n, "; ".join(misses)))
print("\n| trace | policy | own us | records | own us a record | instructions a record | own us a 1 000 instructions |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    if r[1] in (a.policy or ["pytorch_native"]):
        print("| %s | %s | %.1f | %d | %.3f | %.0f | %.3f |" % (r[0], r[1], r[3], r[4], r[3] / r[4], r[6] / r[4],
                                                           1000 * r[3] / r[6] if r[6] else 0))


def nnls(xs, ys):
    """Least squares on the relative error (each row x / y aiming at 1), no coefficient negative: the closest fit
    over every subset of the columns whose fit leaves none negative."""
    k = len(xs[0])
    best = None
    for n in range(1, k + 1):
        for cols in itertools.combinations(range(k), n):
            a = [[x[c] / y for c in cols] for x, y in zip(xs, ys)]
            m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] for r in a)] for i in range(n)]
            try:
                for c in range(n):  # Gauss-Jordan with partial pivoting
                    piv = max(range(c, n), key=lambda i: abs(m[i][c]))
                    m[c], m[piv] = m[piv], m[c]
                    for i in range(n):
                        if i != c:
                            q = m[i][c] / m[c][c]
                            m[i] = [u - q * v for u, v in zip(m[i], m[c])]
                b = [m[i][n] / m[i][i] for i in range(n)]
            except ZeroDivisionError:
                continue
            if min(b) < 0:
                continue
            full = [0.0] * k
            for c, v in zip(cols, b):
                full[c] = v
            res = sum((sum(u * v for u, v in zip(x, full)) / y - 1) ** 2 for x, y in zip(xs, ys))
            if best is None or res < best[0]:
                best = (res, full)
    return best[1]


if a.counts:
    feats = (("records", ("records",)), ("records, free-set operations", ("records", "set_ops")),
             ("records, free-set operations, chunks at each insert", ("records", "set_ops", "set_chunks")),
             ("records, free-set operations, chunks at each insert, visits",
              ("records", "set_ops", "set_chunks", "visits")))
    mechs = sorted({r[2] for r in rows})
    print("\n| features | %s (|error| max, at; median) |" % " | ".join(mechs))
    print("| --- |%s" % (" --- |" * len(mechs)))
    for label, names in feats:
        cells = []
        for mech in mechs:
            rs = [r for r in rows if r[2] == mech]
            xs = [[r[4] if f == "records" else r[7][f] for f in names] for r in rs]
            ys = [r[6] for r in rs]
            b = nnls(xs, ys)
            errs = [abs(sum(u * v for u, v in zip(x, b)) / y - 1) for x, y in zip(xs, ys)]
            worst = max(range(len(rs)), key=lambda i: errs[i])
            cells.append("%.0f%%, %s %s; %.1f%%" % (100 * errs[worst], rs[worst][0], rs[worst][1],
                                                   100 * statistics.median(errs)))
        print("| %s | %s |" % (label, " | ".join(cells)))
