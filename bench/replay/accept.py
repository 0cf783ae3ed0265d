#!/usr/bin/env python3
"""accept.py: issue 11's acceptance figures from bench/replay/mechanism.sh's JSON lines.

    python3 bench/replay/accept.py MECHANISM.jsonl[.gz] [--pagetune ./pagetune] [--out DIR]

1. Per run (trace x policy): --touch clean; free GPU memory back; the model fed
   the GPU's addresses makes the same driver calls and reaches the same peak;
   the books' peak against the driver's (cuMemGetInfo, polled at every change
   of reserved bytes): equal within one 2 MiB granule for the VMM mechanisms;
   for direct and caching the driver sub-allocates small cuMemAlloc calls, so
   they are compared on the books (the model) only, the driver's view shown.
2. Costs calibrated on some traces and judged on the others: `pagetune gpu fit`
   on the calibration traces' runs (every policy), from a base no replay was
   fitted into (--base: calibrate's description from the same session), then
   `pagetune sim --gpu FITTED` predicts each judged run; predicted against measured allocator time
   (the sum of the requests' times), within 25%; and, within each judged trace,
   the policy pairs the GPU separates by more than 20%: how many the
   prediction orders the same way (goal 95%).  Both splits are reported
   (calibrate on A, judge B; calibrate on B, judge A).  Each fit is made twice,
   side by side: one class (gpu fit --one-class, as before issue 11's cost
   axis) and with the request classes (repeats priced by their own lines);
   replays without measured_costs.by_class (older ones) fall back to one class.
   Then the misses by trace and each trace's share of repeats.
3. The measurement's own reproducibility.
4. The allocator's own work per request by how many blocks were live.
5. With the class axis: the measured own work and driver-call time by request class, by trace.

With --work, section 2's fits price each mechanism's own work (direct's aside) by what it did:
`gpu fit --work --traces <this checkout>/traces` (a bookkeeping_work line: requests and frees, free-set
operations, the sets' chunks at each insert, the keys and blocks searches and walks look at, each at a fitted
cost); the fitted descriptions are named
fitNw*.gpu, so the ones without it are left as they are.  --no-loop fits without the base's bookkeeping_loop
points, --no-crowd with its cached loop's only (calibrate's crowded loop left out).

Two ways to stop after section 1: --fit-all FILE fits on every trace (what a bundled description's lines are
taken from: sim/gpus/h200.gpu's bookkeeping_work lines), and --judge GPU (repeatable) predicts every run by each
description given and prints them side by side with the figures of section 2 (no held-out half: a description
fitted on these runs is judged on what it was fitted on).

--host-speed US expresses every measured time at one host speed (US µs a read of the replay's clock, the
speed pagetune replay measures in the same process): the same replays run up to 1.6 times slower from one
process or session to the next, the allocator's own work and its driver calls alike, and the clock read with
them (bench/RESULTS.md, "the host's speed").

With several processes a configuration (mechanism.sh PROCS=N), each check of 1
must hold in every process, and a configuration's measured time is the median
over its processes of each process's median of its timed repeats.
"""
import argparse
import gzip
import itertools
import json
import os
import statistics
import subprocess
import tempfile
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crowd_points  # noqa: E402 (split_loop: a bookkeeping_loop line's cached and crowded points)

ap = argparse.ArgumentParser()
ap.add_argument("jsonl")
ap.add_argument("--pagetune", default="./pagetune")
ap.add_argument("--base", default=None,
                help="the description the fits start from: not one fitted on these runs (default: calibrated.gpu "
                     "beside the JSON lines, pagetune calibrate's output from the same GPU session)")
ap.add_argument("--out", default=None, help="where the fitted descriptions go (default: beside the JSON lines)")
ap.add_argument("--statistic", choices=("median", "min"), default="median",
                help="a configuration's measured time over its processes (each process's figure is the median of "
                     "its timed repeats): median (default), or min, the least disturbed process")
ap.add_argument("--work", action="store_true",
                help="fit own work by what each mechanism did (gpu fit --work: bookkeeping_work lines)")
ap.add_argument("--fit-all", metavar="FILE", default=None,
                help="after section 1, fit on every trace's runs (the processes --statistic chooses; --work as given; "
                     "every request class) into FILE and stop: what a bundled description's lines are taken from")
ap.add_argument("--judge", metavar="GPU", action="append", default=[],
                help="after section 1, judge each description given (a name or a .gpu file, fitted on nothing here "
                     "or on everything: no held-out half) on every trace, side by side, and stop")
ap.add_argument("--no-loop", action="store_true",
                help="with --work: fit without the base's bookkeeping_loop points (gpu fit --no-loop), on the replays "
                     "alone, as before calibrate's loop was a point of the work fit")
ap.add_argument("--no-crowd", action="store_true",
                help="with --work: fit with the base's cached-loop points only (each bookkeeping_loop line up to the "
                     "first point whose size does not grow: calibrate's crowded loop follows), as before calibrate "
                     "timed its crowded loop")
ap.add_argument("--no-after-large", action="store_true",
                help="fit without the replays' calls after a large one (gpu fit --no-after-large): no "
                     "cost_after_large line, as before those were counted apart")
ap.add_argument("--host-speed", metavar="US", type=float, default=None,
                help="express every measured time at one host speed: scaled by US / the cost of one read of the "
                     "replay's clock, measured in the same process (clock_read_us_median_run, just before the run "
                     "the figures are from, where the replay has it; else clock_read_us, after the runs): a host "
                     "that runs slower reads its clock slower too (bench/RESULTS.md, the host's speed); the fits "
                     "and judgements then see the scaled figures")
ap.add_argument("--each-run", action="store_true",
                help="with --host-speed: scale each timed repeat by the clock read just before it "
                     "(clock_read_us_runs) and take the median of the scaled repeats as the process's figure, the "
                     "run's other times scaled with it; the host's speed moves between the repeats of one process "
                     "too (bench/RESULTS.md, session 16)")
a = ap.parse_args()
if a.each_run and not a.host_speed:
    sys.exit("accept.py: --each-run needs --host-speed")
out = a.out or os.path.dirname(os.path.abspath(a.jsonl))
os.makedirs(out, exist_ok=True)
base = a.base or os.path.join(os.path.dirname(os.path.abspath(a.jsonl)), "calibrated.gpu")
if a.no_crowd:  # the base without the crowded loop's points, into --out
    lines = []
    for l in open(base).read().splitlines():
        if l.startswith("bookkeeping_loop "):
            w = l.split()
            l = " ".join(w[:2] + crowd_points.split_loop(w[2:])[0])
        lines.append(l)
    base = os.path.join(out, "base_no_crowd.gpu")
    with open(base, "w") as f:
        f.write("\n".join(lines) + "\n")
runs = [json.loads(l) for l in (gzip.open(a.jsonl, "rt") if a.jsonl.endswith(".gz") else open(a.jsonl)) if l.strip()]


def at_host_speed(g, ref):
    """g's measured times (total, repeats, requests, driver calls, by class) scaled by ref / its clock read."""
    f = ref / g.get("clock_read_us_median_run", g["clock_read_us"])
    each = g.get("clock_read_us_runs") or [ref / f] * len(g.get("measured_total_us_runs", []))  # each run's own
    g["measured_total_us_runs"] = [x * ref / c for x, c in zip(g.get("measured_total_us_runs", []), each)]
    if a.each_run and g.get("clock_read_us_runs") and g["measured_total_us"] > 0:
        f = statistics.median(g["measured_total_us_runs"]) / g["measured_total_us"]
    g["measured_total_us"] *= f
    for k in ("alloc_us", "free_us"):
        g[k]["total"] *= f
    def points(mc):
        for v in list(mc.get("calls", {}).values()) + list(mc.get("calls_after_large", {}).values()):
            for p in v:
                p[2] *= f
        for k in ("requests", "requests_with_calls", "requests_by_live"):
            for p in mc.get(k, []):
                p[2] *= f
    mc = g["measured_costs"]
    points(mc)
    for c in mc.get("by_class", {}).values():
        points(c)
    mc["failed_calls_us"] = mc.get("failed_calls_us", 0) * f
    # and it says so, so that gpu fit on a base with a host_clock_read_us line scales it from there, not again
    g["clock_read_us"] = g["clock_read_us_median_run"] = ref
    g["clock_read_us_runs"] = [ref] * len(g["measured_total_us_runs"])


if a.host_speed:
    for i, r in enumerate(runs):
        g = r["gpu_mechanism_replay"]
        if not g.get("clock_read_us_median_run", g.get("clock_read_us")):
            sys.exit("accept.py: %s: line %d: no clock read (clock_read_us): --host-speed needs replays that measured "
                     "one" % (a.jsonl, i + 1))
        at_host_speed(g, a.host_speed)
procs = {}  # (trace, policy) -> its runs, one per process
for r in runs:
    procs.setdefault((os.path.basename(r["gpu_mechanism_replay"]["trace"]).replace(".pickle.gz", ""),
                      r["gpu_mechanism_replay"]["policy"]), []).append(r)


def measured(rs):
    """A configuration's measured allocator time: the median (or, --statistic min, the least) over processes
    of their medians."""
    pick = min if a.statistic == "min" else statistics.median
    return pick([r["gpu_mechanism_replay"]["measured_total_us"] for r in rs])
VMM = {"expandable", "async_pool", "stitch"}
GRANULE = 2 << 20


def name(r):
    return os.path.basename(r["gpu_mechanism_replay"]["trace"]).replace(".pickle.gz", "")


print("## 1. every run: touch, memory back, the model fed the GPU's addresses, peaks\n")
print("| trace | policy | mechanism | processes | touch | free back | fed calls | fed peak | books peak | driver peak | driver - books |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
bad = 0
for (t, pol), rs in procs.items():
    g0 = rs[0]["gpu_mechanism_replay"]
    touch = back = fed = fedpeak = peak_ok = True
    peaks, dpeaks = set(), set()
    for r in rs:
        g = r["gpu_mechanism_replay"]; c = g["check"]
        touch &= g["mismatches"] == 0 and g["checked"] > 0
        back &= g["free_after"] == g["free_before"]
        fed &= c["fed_model_calls_equal"]
        fedpeak &= c["fed_model_peak_reserved_bytes"] == c["peak_reserved_bytes"]
        diff = c["driver_peak_used_bytes"] - c["peak_reserved_bytes"]
        peak_ok &= abs(diff) <= GRANULE if g["mechanism"] in VMM else True
        peaks.add(c["peak_reserved_bytes"]); dpeaks.add(c["driver_peak_used_bytes"])
    ok = touch and back and fed and fedpeak and peak_ok
    bad += not ok
    show = lambda v: "/".join("%d" % x for x in sorted(v))
    print("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s%s |" % (
        t, pol, g0["mechanism"], len(rs), "ok" if touch else "BAD", "yes" if back else "NO",
        "equal" if fed else "DIFFER", "equal" if fedpeak else "DIFFER", show(peaks), show(dpeaks),
        "/".join("%+d" % (d - b) for d in sorted(dpeaks) for b in sorted(peaks)), "" if peak_ok else " (over a granule)"))
print("\n%d configurations (%d runs), %d with a failed check\n" % (len(procs), len(runs), bad))

HERE = os.path.dirname(os.path.abspath(__file__))
traces = sorted({name(r) for r in runs})
halves = (traces[0::2], traces[1::2])


def at_fit_speed(r):
    """r as gpu fit is to read it: with --host-speed its times are at that speed already (at_host_speed), so
    without its runs, whose reads gpu fit would bring them to the speed by again (pagetune gpu fit --help)."""
    if not a.host_speed:
        return r
    g = {k: v for k, v in r["gpu_mechanism_replay"].items() if k not in ("measured_total_us_runs", "clock_read_us_runs")}
    return dict(r, gpu_mechanism_replay=g)


def fit(cal, path, extra):
    """Fits path on the runs of the traces in cal; the runs go to gpu fit through a temporary file
    (they are the JSON lines' own, so nothing is kept of them)."""
    if a.statistic == "min":  # fit on the process each configuration's figure comes from
        chosen = [min(rs, key=lambda r: r["gpu_mechanism_replay"]["measured_total_us"])
                  for (t, _), rs in procs.items() if t in cal]
    else:
        chosen = [r for r in runs if name(r) in cal]
    lines = [json.dumps(at_fit_speed(r)) for r in chosen]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        work = ["--work", "--traces", os.path.join(HERE, "..", "..", "traces")] if a.work else []
        work += ["--no-loop"] if a.work and a.no_loop else []
        # the replays are at one host speed already (--host-speed) or as measured: gpu fit is told which, so that
        # a base with a host_clock_read_us line does not scale them again
        speed = ["--host-speed", str(a.host_speed) if a.host_speed else "measured"]
        speed += ["--no-after-large"] if a.no_after_large else []
        r = subprocess.run([a.pagetune, "gpu", "fit", "--gpu", base, "--name", os.path.basename(path)[:-4], "-o", path] +
                           extra + work + speed + [f.name], capture_output=True, text=True)
        if r.returncode:
            sys.exit("accept.py: gpu fit: %s" % (r.stderr.strip().splitlines() or ["failed"])[-1])


if a.fit_all:
    fit(traces, a.fit_all, [])
    sys.exit(0)


def trace_path(p):
    """The trace a replay named, in this checkout: the JSON holds the path on the GPU machine."""
    if os.path.exists(p):
        return p
    return os.path.join(HERE, "..", "..", "traces", os.path.basename(p))


def sim(r, gpu):
    g = r["gpu_mechanism_replay"]
    cmd = [a.pagetune, "sim", "--trace", trace_path(g["trace"]), "--policy", g["policy"], "--gpu", gpu, "--json"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def predict(r, gpu):
    return sim(r, gpu)["predicted_alloc_us"]


# the class axis (measured_costs.by_class, pagetune replay --mechanism since issue 11's cost axis): replays
# without it are fitted whole into the plain lines, so the "with classes" fit is then the one-class fit
classed = sum("by_class" in r["gpu_mechanism_replay"]["measured_costs"] for r in runs)
print("## 2. predicted against measured allocator time, costs calibrated on other traces\n")
print("Two fits: every cost in context (driver calls and the allocator's own work), and the\n"
      "allocator's own work only (driver calls from the base description's calibration points).\n"
      "Each fitted twice: one class (every request in the plain lines, as before the class axis) and\n"
      "with the request classes (a repeat: a request or free whose size was freed among the last few\n"
      "frees, priced by its own lines), side by side.  The last column is the prediction the replay made\n"
      "with the description it ran with (the GPU's bundled one: fitted on every trace of one session, which\n"
      "may be this one, so not a held-out judgement; the assumed costs before 2026-12-01), for comparison.\n")
if not classed:
    print("These replays carry no request classes (no measured_costs.by_class: made before the class\n"
          "axis): the class fit falls back to the one-class fit, and only the one-class figures are shown.\n")
elif classed < len(runs):
    print("%d of %d replays carry request classes; the others go whole into the plain lines.\n" % (classed, len(runs)))


def judge(judge_traces, gpu):
    """Per judged run (trace, policy, measured, predicted, error), and the pairs the GPU separates by > 20%."""
    rows, pairs_same, pairs = [], 0, 0
    for t in judge_traces:
        meas, pred = {}, {}
        for (tt, pol), rs in procs.items():
            if tt != t:
                continue
            m, p = measured(rs), predict(rs[0], gpu)
            meas[pol], pred[pol] = m, p
            rows.append((t, pol, m, p, (p - m) / m, rs[0]["gpu_mechanism_replay"]["predicted_total_us"]))
        for x, y in itertools.combinations(sorted(meas), 2):
            lo, hi = sorted((meas[x], meas[y]))
            if hi > 1.2 * lo:
                pairs += 1
                pairs_same += (meas[x] < meas[y]) == (pred[x] < pred[y])
    return rows, pairs_same, pairs


def summary(rows, pairs_same, pairs):
    errs = [r[4] for r in rows]
    return ("%d of %d judged runs within 25%% (median |error| %.1f%%, worst %+.1f%%); pairs the GPU separates by > 20%%: "
            "%d of %d ordered the same (%.1f%%)" % (sum(abs(e) <= 0.25 for e in errs), len(errs),
                                                    100 * statistics.median(abs(e) for e in errs), 100 * max(errs, key=abs),
                                                    pairs_same, pairs, 100.0 * pairs_same / pairs if pairs else 100.0))


if a.judge:
    res = [judge(traces, g) for g in a.judge]
    print("### every trace, predicted by %s\n" % ", ".join(a.judge))
    print("| trace | policy | measured us | " + " | ".join("%s us | error" % os.path.basename(g) for g in a.judge) + " |")
    print("| --- | --- | --- |" + " --- | --- |" * len(a.judge))
    for i, (t, pol, m, _, _, _) in enumerate(res[0][0]):
        print("| %s | %s | %.0f | " % (t, pol, m) +
              " | ".join("%.0f | %+.1f%%" % (r[0][i][3], 100 * r[0][i][4]) for r in res) + " |")
    print()
    for g, r in zip(a.judge, res):
        print("%s: %s" % (os.path.basename(g), summary(*r)))
    sys.exit(0)

misses = {}  # (fit, classes) -> trace -> [misses, judged]
for (k, (cal, judge_traces)), (label, extra) in itertools.product(enumerate((halves, halves[::-1])),
                                                                  (("all costs", []), ("own work only", ["--bookkeeping-only"]))):
    stem = os.path.join(out, "fit%d%s%s" % (k + 1, "w" if a.work else "", "b" if extra else ""))
    fit(cal, stem + ".gpu", extra + ["--one-class"])
    old = judge(judge_traces, stem + ".gpu")
    new = None
    if classed:
        fit(cal, stem + "c.gpu", extra)
        new = judge(judge_traces, stem + "c.gpu")
    print("### %s, calibrated on %s; judged on %s\n" % (label, ", ".join(cal), ", ".join(judge_traces)))
    if new:
        print("| trace | policy | measured us | one class us | error | with classes us | error | replay's own prediction us |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for (t, pol, m, p, e, assumed), (_, _, _, pc, ec, _) in zip(old[0], new[0]):
            print("| %s | %s | %.0f | %.0f | %+.1f%% | %.0f | %+.1f%% | %.0f |" % (t, pol, m, p, 100 * e, pc, 100 * ec, assumed))
    else:
        print("| trace | policy | measured us | predicted us | error | replay's own prediction us |")
        print("| --- | --- | --- | --- | --- | --- |")
        for t, pol, m, p, e, assumed in old[0]:
            print("| %s | %s | %.0f | %.0f | %+.1f%% | %.0f |" % (t, pol, m, p, 100 * e, assumed))
    print("\none class: %s" % summary(*old))
    if new:
        print("with classes: %s" % summary(*new))
    print()
    for cls, res in (("one class", old), ("with classes", new)):
        for t, pol, m, p, e, _ in (res[0] if res else []):
            v = misses.setdefault((label, cls), {}).setdefault(t, [0, 0])
            v[0] += abs(e) > 0.25
            v[1] += 1

print("### the misses (> 25%) by trace, both splits together\n")
cols = [key for key in misses]
print("| trace | " + " | ".join("%s, %s" % key for key in cols) + " |")
print("| --- |" + " --- |" * len(cols))
for t in traces:
    print("| %s | " % t + " | ".join("%d of %d" % tuple(misses[key].get(t, [0, 0])) for key in cols) + " |")
print()

print("### the repeat class by trace (pagetune sim's request_classes, the first policy's run)\n")
print("| trace | requests and frees | repeats | share | by frees back (1..8, none) |")
print("| --- | --- | --- | --- | --- |")
for t in traces:
    rs = next(rs for (tt, _), rs in procs.items() if tt == t)
    o = sim(rs[0], base)
    c = o.get("request_classes")
    if not c:
        print("| %s | %d | - | - | (this pagetune has no request classes) |" % (t, o["allocs"] + o["frees"]))
        continue
    n = sum(c["by_free_distance"])
    print("| %s | %d | %d | %.2f | %s |" % (t, n, c["repeat_requests"], c["repeat_requests"] / n if n else 0,
                                           " ".join(str(x) for x in c["by_free_distance"])))
print()

print("## 3. the measurement's own reproducibility\n")
print("pytorch_native and tunable_caching at its defaults are the same mechanism with the same parameters,\n"
      "each measured as the median over its processes: how far one is from the other bounds what any\n"
      "prediction can be held to.  Spread: (max - min) / median, over the processes' medians (over one\n"
      "process's timed repeats when there is one process).\n")
print("| trace | pytorch_native us | tunable_caching us | tunable / native | spread native | spread tunable |")
print("| --- | --- | --- | --- | --- | --- |")


def spread(rs):
    v = [r["gpu_mechanism_replay"]["measured_total_us"] for r in rs]
    if len(v) == 1:
        v = rs[0]["gpu_mechanism_replay"].get("measured_total_us_runs") or v
    return (max(v) - min(v)) / statistics.median(v)


ratios = []
spreads = [spread(rs) for rs in procs.values()]
for t in traces:
    x, y = procs.get((t, "pytorch_native")), procs.get((t, "tunable_caching"))
    if not x or not y:
        continue
    q = measured(y) / measured(x)
    ratios.append(q)
    print("| %s | %.0f | %.0f | %.2f | %.0f%% | %.0f%% |" % (t, measured(x), measured(y), q, 100 * spread(x), 100 * spread(y)))
if ratios:
    off = [abs(q - 1) for q in ratios]
    print("\nidentical configurations: %d of %d within 25%% of each other (median %.0f%% apart, worst %.0f%%); "
          "spread of a configuration: median %.0f%%, worst %.0f%%\n" % (
              sum(o <= 0.25 for o in off), len(off), 100 * statistics.median(off), 100 * max(off),
              100 * statistics.median(spreads), 100 * max(spreads)))

print("## 4. the allocator's own work per request, by blocks live\n")
print("Requests served without a driver call, every trace and process pooled, by mechanism: mean us a\n"
      "request for the blocks live when it was made (bins of powers of two).\n")
bins = {}
for r in runs:
    g = r["gpu_mechanism_replay"]
    for lo, n, us in g["measured_costs"].get("requests_by_live", []):
        b = bins.setdefault(g["mechanism"], {}).setdefault(lo, [0, 0.0])
        b[0] += n; b[1] += us
if bins:
    los = sorted({lo for m in bins.values() for lo in m})
    print("| mechanism | " + " | ".join("%d+" % lo for lo in los) + " |")
    print("| --- |" + " --- |" * len(los))
    for mech in sorted(bins):
        print("| %s | " % mech + " | ".join("%.3f (%d)" % (bins[mech][lo][1] / bins[mech][lo][0], bins[mech][lo][0])
                                           if lo in bins[mech] else "" for lo in los) + " |")
    print()

print("## 5. measured costs by request class, by trace\n")
if not classed:
    print("No replay here carries request classes (measured_costs.by_class).\n")
else:
    print("Every process pooled: the allocator's own work a request or free served without a driver call\n"
          "(mean us, count), other against repeat, and the mean time of a driver call made in each class;\n"
          "repeat / other below 1 is what the hypothesis (exact-size reuse is cheaper) predicts.\n")
    print("| trace | mechanism | own other | own repeat | repeat / other | call other | call repeat | repeat / other |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    pool = {}
    for r in runs:
        g = r["gpu_mechanism_replay"]
        bc = g["measured_costs"].get("by_class")
        if not bc:
            continue
        v = pool.setdefault((name(r), g["mechanism"]), {c: [0, 0.0, 0, 0.0] for c in ("other", "repeat")})
        for c in ("other", "repeat"):
            for n, b, us in bc[c]["requests"]:
                v[c][0] += n; v[c][1] += us
            for pts in bc[c]["calls"].values():
                for n, b, us in pts:
                    v[c][2] += n; v[c][3] += us
    mean = lambda n, us: us / n if n else float("nan")
    show = lambda n, us: "%.3f (%d)" % (us / n, n) if n else "-"
    ratio = lambda x, y: "%.2f" % (x / y) if x == x and y == y and y > 0 else "-"
    for (t, mech), v in sorted(pool.items()):
        o, p = v["other"], v["repeat"]
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            t, mech, show(o[0], o[1]), show(p[0], p[1]), ratio(mean(p[0], p[1]), mean(o[0], o[1])),
            show(o[2], o[3]), show(p[2], p[3]), ratio(mean(p[2], p[3]), mean(o[2], o[3]))))
    print()
