#!/usr/bin/env python3
"""costprobe.py: would a new term in the cost model explain issue 11's misses?  Prototypes on the replays'
JSON lines (bench/replay/mechanism.sh), judged as accept.py judges: fitted on one half of the traces (split
alternately by name), predicted on the other, both ways; runs within 25% of measured and the pairs the GPU
separates by more than 20% within a trace ordered the same.

    python3 bench/replay/costprobe.py MECHANISM.jsonl[.gz] [--base GPU] [--pagetune ./pagetune]

The one-class fit and prediction of `pagetune gpu fit --one-class` and `pagetune sim --gpu` are redone here
(a size class's mean, classes of 5 or more, the base's points outside the sizes measured; each call and
request priced by the line at its class's mean size), from a run's own measured counts (the first process's)
instead of the model's: the same figures as accept.py's within a run or two.  Then, each beside it:

  live      the own work of requests served without a driver call times a factor of the blocks live when each
            was made (replay's requests_by_live): per mechanism a weighted least-squares line in log2(live + 2)
            of (a bin's measured cost / the run's size-line cost), fitted on the calibration half
  live-only the same requests priced by such a line of their cost alone (no size axis)
  segments  the same factor, of log2(the segments the mechanism made in the run + 2), a run-level stand-in for
            the size of its structures (free set, spans)
  pages     direct's cuMemAlloc / cuMemFree of <= 1 MiB through a model of the driver's sub-allocator: 2 MiB
            pages, first fit by free bytes, a page given back when empty; a call that needs a new page (or
            empties one) priced as a 2 MiB call, the rest by a hit line fitted from the calibration half's
            small calls less their page calls (the traces' records, by `pagetune trace import`)

Every row but the first leaves the calls no request made (the initial state, the try of an out-of-memory
record) out of the prediction, as the replay leaves them out of its timing and pagetune sim does since engine
model-4; here from the measurement: the outside-request share of the run's measured call time (every call
less those inside requests) taken off its predicted calls.  The first row prices them, as model-3 did.
"""
import argparse, gzip, itertools, json, math, os, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("jsonl")
ap.add_argument("--base", default=None, help="the description fits start from (default: calibrated.gpu beside the lines)")
ap.add_argument("--pagetune", default="./pagetune")
a = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
base = a.base or os.path.join(os.path.dirname(os.path.abspath(a.jsonl)), "calibrated.gpu")
opener = gzip.open if a.jsonl.endswith(".gz") else open
top, procs = {}, {}
for line in opener(a.jsonl, "rt"):
    if not line.strip():
        continue
    r = json.loads(line)
    g = r["gpu_mechanism_replay"]
    key = (os.path.basename(g["trace"]).replace(".pickle.gz", ""), g["policy"])
    procs.setdefault(key, []).append(g)
    top[key] = r
traces = sorted({t for t, _ in procs})
halves = (traces[0::2], traces[1::2])
PAGE = 2 << 20


def read_gpu(path):
    cost, bk, bkc = {}, {}, {}
    for line in open(path):
        w = line.split("#")[0].split()
        if not w:
            continue
        pts = lambda ws: ([(0.0, float(ws[0]))] if len(ws) == 1 and ":" not in ws[0]
                          else sorted((float(x), float(y)) for x, y in (v.split(":") for v in ws)))
        if w[0] == "cost":
            cost[w[1]] = pts(w[2:])
        elif w[0] in ("bookkeeping_us", "bookkeeping_call_us"):
            d = bk if w[0] == "bookkeeping_us" else bkc
            d[None if len(w) == 2 else w[1]] = pts(w[1:] if len(w) == 2 else w[2:])
    return cost, bk, bkc


def ev(pts, b):  # cost.c's pt_cost_eval
    if not pts:
        return 0.0
    if len(pts) == 1 or b <= pts[0][0]:
        return pts[0][1]
    i = 1
    while i < len(pts) - 1 and pts[i][0] < b:
        i += 1
    (x0, y0), (x1, y1) = pts[i - 1], pts[i]
    t = y0 + (y1 - y0) / (x1 - x0) * (b - x0)
    if b > pts[-1][0] and t < pts[-1][1]:
        t = pts[-1][1]
    return max(t, 0.0)


cls = lambda n, b: ((b // n if n else 0) | 1).bit_length() - 1


def fit_points(sums, basepts):  # fit.c's fitted_points
    ks = sorted(sums)
    enough = any(sums[k][0] >= 5 for k in ks)
    ok = [k for k in ks if (sums[k][0] >= 5 if enough else sums[k][0] > 0)]
    if not ok:
        return list(basepts or [])
    mb = lambda k: math.floor(sums[k][1] / sums[k][0] + 0.5)
    lo, hi = mb(ok[0]), mb(ok[-1])
    return ([p for p in (basepts or []) if p[0] < lo] + [(mb(k), max(round(sums[k][2] / sums[k][0], 4), 0.001)) for k in ok] +
            [p for p in (basepts or []) if p[0] > hi])


def add(d, key, n, b, us):
    v = d.setdefault(key, [0, 0, 0.0])
    v[0] += n; v[1] += b; v[2] += us


def fit(cal):
    cost0, bk0, bkc0 = read_gpu(base)
    calls, req, reqc = {}, {}, {}
    for (t, _), gs in procs.items():
        if t in cal:
            for g in gs:
                mc, m = g["measured_costs"], g["mechanism"]
                for k, pts in mc["calls"].items():
                    for n, b, us in pts:
                        add(calls.setdefault(k, {}), cls(n, b), n, b, us)
                for src, d in ((mc["requests"], req), (mc["requests_with_calls"], reqc)):
                    for n, b, us in src:
                        add(d.setdefault(m, {}), cls(n, b), n, b, us)
    cost = dict(cost0, **{k: fit_points(s, cost0.get(k)) for k, s in calls.items()})
    bk, bkc = dict(bk0), dict(bkc0)
    for m in set(req) | set(reqc):
        bk[m] = fit_points(req.get(m) or reqc[m], None)
        bkc[m] = fit_points(reqc.get(m) or req[m], None)
    return cost, bk, bkc


def outside(g):
    """The measured time of the calls no request made (every call less those inside requests), and of every call."""
    mc = g["measured_costs"]
    calls = sum(p[2] for k in mc["calls"].values() for p in k)
    own = sum(p[2] for p in mc["requests"]) + sum(p[2] for p in mc["requests_with_calls"])
    return max(calls - (g["measured_total_us"] - own), 0.0), calls


UNTIMED = [True]  # leave the calls no request made out (engine model-4); False: engine model-3


def parts(model, g):
    """Predicted (driver calls, own work without calls, own work with calls), us, from run g's counts."""
    cost, bk, bkc = model
    mc, m = g["measured_costs"], g["mechanism"]
    line = bk.get(m, bk.get(None))
    linec = bkc.get(m) or (bkc.get(None) if m not in bk else None) or line
    pc = sum(n * ev(cost.get(k, []), b / n) for k, pts in mc["calls"].items() for n, b, _ in pts)
    if UNTIMED[0]:
        o, c = outside(g)
        pc *= 1 - o / c if c else 1
    return (pc, sum(n * ev(line, b / n) for n, b, _ in mc["requests"]),
            sum(n * ev(linec, b / n) for n, b, _ in mc["requests_with_calls"]))


measured = lambda gs: statistics.median(g["measured_total_us"] for g in gs)


def judge(jt, pred):
    rows, same, pairs = [], 0, 0
    for t in jt:
        meas, pr = {}, {}
        for (tt, pol), gs in sorted(procs.items()):
            if tt == t:
                meas[pol], pr[pol] = measured(gs), pred(t, pol, gs)
                rows.append((t, pol, (pr[pol] - meas[pol]) / meas[pol]))
        for x, y in itertools.combinations(sorted(meas), 2):
            if max(meas[x], meas[y]) > 1.2 * min(meas[x], meas[y]):
                pairs += 1
                same += (meas[x] < meas[y]) == (pr[x] < pr[y])
    return rows, same, pairs


def wlsq(pts):  # y = a + c x, weighted
    sw = sum(w for _, _, w in pts)
    mx, my = sum(x * w for x, _, w in pts) / sw, sum(y * w for _, y, w in pts) / sw
    sxx = sum(w * (x - mx) ** 2 for x, _, w in pts)
    c = sum(w * (x - mx) * (y - my) for x, y, w in pts) / sxx if sxx > 0 else 0.0
    return my - c * mx, c


XL = lambda lo: math.log2(lo + 2)  # a live bin [lo, 2 lo + 1], log-shaped
XS = lambda key: math.log2(top[key]["segments_allocated"] + 2)


def live_terms(model, cal):
    mult, alone, segs = {}, {}, {}
    for key, gs in procs.items():
        if key[0] not in cal or gs[0]["mechanism"] == "direct":
            continue
        m = gs[0]["mechanism"]
        po = parts(model, gs[0])[1]
        mo = statistics.median(sum(p[2] for p in g["measured_costs"]["requests"]) for g in gs)
        segs.setdefault(m, []).append((XS(key), mo / po, po))
        for g in gs:
            n = sum(x[0] for x in g["measured_costs"]["requests"])
            for lo, nb, us in g["measured_costs"]["requests_by_live"]:
                mult.setdefault(m, []).append((XL(lo), us / nb / (parts(model, g)[1] / n), nb))
                alone.setdefault(m, []).append((XL(lo), us / nb, nb))
    return ({m: wlsq(p) for m, p in mult.items()}, {m: wlsq(p) for m, p in alone.items()},
            {m: wlsq(p) for m, p in segs.items()})


def driver_pages(t, T=1 << 20):
    """Per kind and log2 class of direct's calls of <= T bytes: [calls, bytes, page calls]."""
    pages, where, sizes, out = [], {}, {}, {"malloc": {}, "free": {}}
    for line in open(os.path.join(tmp, t + ".trace")):
        w = line.split()
        if w and w[0] == "a":
            i, b = int(w[1]), (int(w[2], 0) + 511) // 512 * 512
            sizes[i] = b
            if b > T:
                continue
            for p, fr in enumerate(pages):
                if fr is not None and fr >= b:
                    pages[p] -= b; where[i] = p; new = 0
                    break
            else:
                pages.append(PAGE - b); where[i] = len(pages) - 1; new = 1
            add(out["malloc"], cls(1, b), 1, b, new)
        elif w and w[0] == "f" and int(w[1]) in where:
            i = int(w[1]); b = sizes[i]; p = where.pop(i); pages[p] += b
            empty = pages[p] == PAGE
            if empty:
                pages[p] = None
            add(out["free"], cls(1, b), 1, b, empty)
    return out


def by_live(model, lines, alone_line, t, pol, gs):
    """A run priced with a live-blocks line (live: a factor on the size line; live-only: the cost alone)."""
    g = gs[0]
    pc, po, pw = parts(model, g)
    bl, m = g["measured_costs"]["requests_by_live"], g["mechanism"]
    if m not in lines or not bl:
        return pc + po + pw
    ca, cc = lines[m]
    if alone_line:
        return pc + pw + sum(nb * max(ca + cc * XL(lo), 0.005) for lo, nb, _ in bl)
    return pc + pw + po * sum(nb * max(ca + cc * XL(lo), 0.05) for lo, nb, _ in bl) / sum(x[1] for x in bl)


def by_segs(model, segs, t, pol, gs):
    """A run priced with the segments factor on the size line."""
    pc, po, pw = parts(model, gs[0])
    m = gs[0]["mechanism"]
    return pc + pw + (po * max(segs[m][0] + segs[m][1] * XS((t, pol)), 0.1) if m in segs else po)


tmp = tempfile.mkdtemp()
for t in traces:
    subprocess.run([a.pagetune, "trace", "import", os.path.join(HERE, "..", "..", "traces", t + ".pickle.gz"), "-o",
                    os.path.join(tmp, t + ".trace"), "--strip-frames"], check=True, stdout=subprocess.DEVNULL)
sims = {t: driver_pages(t) for t in traces}


print("# Cost-model terms probed on %s\n" % os.path.relpath(a.jsonl))
print("`python3 bench/replay/costprobe.py %s --base %s`; fitted on one half, judged on the other, as accept.py.\n"
      % (os.path.relpath(a.jsonl), os.path.relpath(base)))
print("| fit on -> judged | term | runs within 25% | median abs. error | worst | pairs > 20% apart ordered the same | traces with misses | slopes (per mechanism) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for cal, jt in (halves, halves[::-1]):
    model = fit(cal)
    mult, alone, segs = live_terms(model, cal)
    cost = model[0]
    cpage = {k: ev(cost[k], PAGE) for k in ("malloc", "free")}
    hit = {"malloc": {}, "free": {}}
    for t in cal:
        for g in procs[(t, "direct")]:
            for k in hit:
                for n, b, us in g["measured_costs"]["calls"].get(k, []):
                    s = sims[t][k].get(cls(n, b))
                    if s and s[0] == n:  # a class the driver sub-allocates whole
                        add(hit[k], cls(n, b), n - s[2], b, us - s[2] * cpage[k])

    def one(t, pol, gs):
        return sum(parts(model, gs[0]))

    def pages(t, pol, gs):
        g = gs[0]
        p = sum(parts(model, g))
        if g["mechanism"] != "direct":
            return p
        for k in hit:
            for n, b, us in g["measured_costs"]["calls"].get(k, []):
                s = sims[t][k].get(cls(n, b))
                if s and s[0] == n:
                    h = hit[k].get(cls(n, b))
                    hu = max(h[2] / h[0], 0.001) if h and h[0] >= 5 else ev(cost[k], b / n)
                    p += (n - s[2]) * hu + s[2] * cpage[k] - n * ev(cost[k], b / n)
        return p

    def model3(t, pol, gs):
        UNTIMED[0] = False
        p = sum(parts(model, gs[0]))
        UNTIMED[0] = True
        return p

    slope = lambda d: ", ".join("%s %+.3f" % (m, v[1]) for m, v in sorted(d.items()))
    for label, f, sl in (("engine model-3 (untimed calls priced)", model3, ""), ("one line, model-4", one, ""),
                         ("live", lambda t, p, gs: by_live(model, mult, 0, t, p, gs), slope(mult)),
                         ("live-only", lambda t, p, gs: by_live(model, alone, 1, t, p, gs), slope(alone)),
                         ("segments", lambda t, p, gs: by_segs(model, segs, t, p, gs), slope(segs)),
                         ("pages (direct)", pages, "")):
        rows, same, pairs = judge(jt, f)
        e = [r[2] for r in rows]
        print("| %s -> %s | %s | %d of %d | %.1f%% | %+.0f%% | %d of %d (%.1f%%) | %s | %s |" % (
            "A" if cal is halves[0] else "B", "B" if cal is halves[0] else "A", label, sum(abs(x) <= .25 for x in e), len(e),
            100 * statistics.median(abs(x) for x in e), 100 * max(e, key=abs), same, pairs, 100.0 * same / pairs,
            ", ".join("%s %d" % (t, sum(abs(r[2]) > .25 for r in rows if r[0] == t)) for t in jt
                      if any(abs(r[2]) > .25 for r in rows if r[0] == t)), sl))
print("\nA: %s; B: %s.\n" % (", ".join(halves[0]), ", ".join(halves[1])))

print("## Leave one trace out\n")
print("Fitted on the eleven other traces, judged on each in turn (every term on top of model-4); misses by trace.\n")
print("| term | runs within 25% | median abs. error | pairs > 20% apart ordered the same | traces with misses |")
print("| --- | --- | --- | --- | --- |")
loto = {}
for t in traces:
    cal = [x for x in traces if x != t]
    model = fit(cal)
    mult, _, segs = live_terms(model, cal)
    for label, f in (("one line, model-4", lambda tt, pol, gs: sum(parts(model, gs[0]))),
                     ("live", lambda tt, pol, gs: by_live(model, mult, 0, tt, pol, gs)),
                     ("segments", lambda tt, pol, gs: by_segs(model, segs, tt, pol, gs))):
        rows, same, pairs = judge([t], f)
        v = loto.setdefault(label, [[], 0, 0])
        v[0] += rows
        v[1] += same
        v[2] += pairs
for label, (rows, same, pairs) in loto.items():
    e = [r[2] for r in rows]
    print("| %s | %d of %d | %.1f%% | %d of %d (%.1f%%) | %s |" % (
        label, sum(abs(x) <= .25 for x in e), len(e), 100 * statistics.median(abs(x) for x in e), same, pairs,
        100.0 * same / pairs, ", ".join("%s %d" % (t, sum(abs(r[2]) > .25 for r in rows if r[0] == t)) for t in traces
                                        if any(abs(r[2]) > .25 for r in rows if r[0] == t))))
print()

print("## direct's small calls by size class: measured us a call / the sub-allocator's share of page calls\n")
print("Every process pooled; the share is of the class's calls of at most 1 MiB (2^20: those of exactly 1 MiB; a\n"
      "free's page call empties a page); `pages` above prices a page call as a 2 MiB call of the same kind, in\n"
      "the classes the driver sub-allocates whole.\n")
for k in ("malloc", "free"):
    ks = sorted({cls(n, b) for t in traces for g in procs[(t, "direct")] for n, b, _ in g["measured_costs"]["calls"].get(k, [])
                 if cls(n, b) <= 20})
    print("| %s | " % k + " | ".join("2^%d" % c for c in ks) + " |")
    print("| --- |" + " --- |" * len(ks))
    for t in traces:
        s = {}
        for g in procs[(t, "direct")]:
            for n, b, us in g["measured_costs"]["calls"].get(k, []):
                add(s, cls(n, b), n, b, us)
        cell = lambda c: ("%.2f / %.3f" % (s[c][2] / s[c][0], sims[t][k][c][2] / sims[t][k][c][0]) if c in sims[t][k]
                          else "%.2f / -" % (s[c][2] / s[c][0])) if c in s else ""
        print("| %s | " % t + " | ".join(cell(c) for c in ks) + " |")
    print()
for f in os.listdir(tmp):
    os.remove(os.path.join(tmp, f))
os.rmdir(tmp)
