#!/usr/bin/env python3
"""classprobe.py: would the request-class axis explain issue 11's misses?  A probe on replays made
before the axis (no measured_costs.by_class): per mechanism, the allocator's own work of a run (every
request's own time, summed) is fitted by least squares as

    one class:    own = c * requests
    two classes:  own = a * others + b * repeats        (repeats: pagetune sim's request_classes;
                                                          a, b >= 0)

on the calibration half of the traces, and judged on the other half, as accept.py splits them.  A
configuration's figure is the median over its processes.  (Driver calls are left out: without the
size axis their time is the calls' sizes, not their class.)  Constants a request, no size axis: a probe
of the class, not the cost model.

    python3 bench/replay/classprobe.py MECHANISM.jsonl[.gz] [--pagetune ./pagetune]
"""
import argparse, gzip, json, os, statistics, subprocess

ap = argparse.ArgumentParser()
ap.add_argument("jsonl")
ap.add_argument("--pagetune", default="./pagetune")
a = ap.parse_args()
runs = [json.loads(l) for l in (gzip.open(a.jsonl, "rt") if a.jsonl.endswith(".gz") else open(a.jsonl)) if l.strip()]
HERE = os.path.dirname(os.path.abspath(__file__))
name = lambda g: os.path.basename(g["trace"]).replace(".pickle.gz", "")
procs = {}
for r in runs:
    g = r["gpu_mechanism_replay"]
    procs.setdefault((name(g), g["policy"]), []).append(g)
traces = sorted({t for t, _ in procs})
halves = (traces[0::2], traces[1::2])


def sim(t, pol):
    o = subprocess.run([a.pagetune, "sim", "--trace", os.path.join(HERE, "..", "..", "traces", t + ".pickle.gz"),
                        "--policy", pol, "--gpu", "h200", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(o)


rows = []  # (trace, policy, mechanism, own us, calls us, requests, repeats, calls, repeat calls)
for (t, pol), gs in sorted(procs.items()):
    own = statistics.median(sum(p[2] for p in g["measured_costs"]["requests"] + g["measured_costs"]["requests_with_calls"]) for g in gs)
    calls = statistics.median(sum(p[2] for k in g["measured_costs"]["calls"].values() for p in k) for g in gs)
    o = sim(t, pol)
    c = o["request_classes"]
    ncalls = sum(o["driver_calls"].values())
    rows.append((t, pol, gs[0]["mechanism"], own, calls, o["allocs"] + o["frees"], c["repeat_requests"], ncalls,
                 sum(c["repeat_driver_calls"].values())))


def lsq1(xs, ys):
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


def lsq2(x1, x2, ys):
    s11, s22, s12 = sum(x * x for x in x1), sum(x * x for x in x2), sum(x * y for x, y in zip(x1, x2))
    b1, b2 = sum(x * y for x, y in zip(x1, ys)), sum(x * y for x, y in zip(x2, ys))
    det = s11 * s22 - s12 * s12
    ca, cb = ((b1 * s22 - b2 * s12) / det, (b2 * s11 - b1 * s12) / det) if det else (lsq1(x1, ys), lsq1(x1, ys))
    if cb < 0:  # a cost is not negative: the other class alone
        return lsq1(x1, ys), 0.0
    if ca < 0:
        return 0.0, lsq1(x2, ys)
    return ca, cb


def probe(title, pick, val, n, rep):
    print("## %s\n" % title)
    print("| judged trace | policy | mechanism | measured us | one class | error | two classes | error | repeats |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    tally = {"one": [0, 0], "two": [0, 0]}
    per = {}
    for cal, judge in (halves, halves[::-1]):
        for mech in sorted({r[2] for r in rows if pick(r)}):
            fit = [r for r in rows if r[0] in cal and r[2] == mech and pick(r) and n(r)]
            if len(fit) < 2:
                continue
            c = lsq1([n(r) for r in fit], [val(r) for r in fit])
            ca, cb = lsq2([n(r) - rep(r) for r in fit], [rep(r) for r in fit], [val(r) for r in fit])
            for r in rows:
                if r[0] not in judge or r[2] != mech or not pick(r) or not n(r) or not val(r):
                    continue
                p1, p2 = c * n(r), ca * (n(r) - rep(r)) + cb * rep(r)
                e1, e2 = (p1 - val(r)) / val(r), (p2 - val(r)) / val(r)
                for k, e in (("one", e1), ("two", e2)):
                    tally[k][0] += abs(e) <= 0.25
                    tally[k][1] += 1
                    v = per.setdefault(r[0], {"one": [], "two": []})[k]
                    v.append(abs(e))
                print("| %s | %s | %s | %.0f | %.0f | %+.0f%% | %.0f | %+.0f%% | %.2f |" % (
                    r[0], r[1], mech, val(r), p1, 100 * e1, p2, 100 * e2, rep(r) / n(r)))
    print("\nwithin 25%%: one class %d of %d, two classes %d of %d\n" % (*tally["one"], *tally["two"]))
    print("| trace | median abs. error, one class | two classes |")
    print("| --- | --- | --- |")
    for t in traces:
        if t in per:
            print("| %s | %.0f%% | %.0f%% |" % (t, 100 * statistics.median(per[t]["one"]), 100 * statistics.median(per[t]["two"])))
    print()


probe("the allocator's own work, by mechanism", lambda r: True, lambda r: r[3], lambda r: r[5], lambda r: r[6])
