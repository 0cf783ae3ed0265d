#!/usr/bin/env python3
"""cross_session.py: costs calibrated on half the traces in one GPU session, judged on the other half in another.

    python3 bench/replay/cross_session.py [--host-speed US [--each-run]] [--base GPU] [--pagetune ./pagetune] --out DIR \\
        SESSION.jsonl.gz SESSION.jsonl.gz ...

For each session (mechanism.sh's JSON lines), accept.py --work fits the two halves' descriptions (half A: the
sorted traces 1st, 3rd, ...; half B the others; all costs, with request classes where the replays have them)
into DIR/<session>/; then every session's descriptions judge every session's runs of the half they were not
fitted on (accept.py --judge, the same --host-speed): runs within 25% of measured, and within each trace, of the
policy pairs the GPU separates by more than 20%, how many the prediction orders the same way.  A session judged
by its own fits is accept.py's section 2.  Beside each cell, the fitted-in session's own measurements (the median
over its processes of each configuration, at the same host speed) taken as the prediction of the judged session's:
how far the measurement itself repeats between sessions, which no description fitted in one session can beat by
more than luck.  Then the runs missed most often.  Errors: one line, exit 1.

--own-base fits each session from its own calibrate output (calibrated.gpu beside its JSON lines) in place of
--base, so that the work fit takes that session's bookkeeping_loop points (calibrate's cached loop; where the
file is older than them, bench/replay/loop_points.py adds them into DIR/<session>/base.gpu); --no-loop fits
without them (accept.py --no-loop).
"""
import argparse
import collections
import itertools
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("sessions", nargs="+")
ap.add_argument("--out", required=True)
ap.add_argument("--host-speed", default=None)
ap.add_argument("--each-run", action="store_true",
                help="accept.py --each-run: with --host-speed, each timed repeat scaled by its own clock read")
ap.add_argument("--base", default=os.path.join(HERE, "mechanism2", "calibrated.gpu"))
ap.add_argument("--pagetune", default="./pagetune")
ap.add_argument("--no-after-large", action="store_true", help="accept.py --no-after-large: no cost_after_large lines")
ap.add_argument("--own-base", action="store_true",
                help="fit each session from its own calibrated.gpu (with bookkeeping_loop lines), not --base")
ap.add_argument("--no-loop", action="store_true", help="accept.py --no-loop: the work fit without calibrate's loop")
a = ap.parse_args()
speed = (["--host-speed", a.host_speed] if a.host_speed else []) + (["--no-after-large"] if a.no_after_large else [])
speed += ["--each-run"] if a.each_run else []


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("cross_session.py: %s: %s" % (what, (r.stderr.strip().splitlines() or ["failed"])[-1]))
    return r.stdout


def own_base(jsonl, out):
    """The session's calibrate output, with bookkeeping_loop lines (loop_points.py adds them to an older one)."""
    cal = os.path.join(os.path.dirname(os.path.abspath(jsonl)), "calibrated.gpu")
    if not os.path.exists(cal):
        sys.exit("cross_session.py: --own-base: %s: no such file" % cal)
    if "\nbookkeeping_loop " in open(cal).read():
        return cal
    base = os.path.join(out, "base.gpu")
    run([sys.executable, os.path.join(HERE, "loop_points.py"), cal, "--pagetune", a.pagetune, "-o", base],
        "loop_points.py on %s" % cal)
    return base


def accept(jsonl, out, extra, base=None):
    os.makedirs(out, exist_ok=True)
    return run([sys.executable, os.path.join(HERE, "accept.py"), jsonl, "--base", base or a.base, "--pagetune",
                a.pagetune, "--out", out] + speed + extra, "accept.py on %s" % jsonl)


labels = {}  # session -> its name: its folder's (mechanism5), numbered where two are the same
for i, s in enumerate(a.sessions):
    name = os.path.basename(os.path.dirname(os.path.abspath(s))) or "session"
    labels[s] = name if name not in labels.values() else "%s-%d" % (name, i + 1)


def label(path):
    return labels[path]


fits = {}  # session -> (description fitted on half A, on half B)
for s in a.sessions:
    d = os.path.join(a.out, label(s))
    for old in ("fit%dw%s.gpu" % (k, c) for k in (1, 2) for c in ("", "c", "b", "bc")):  # none left from another run
        if os.path.exists(os.path.join(d, old)):
            os.remove(os.path.join(d, old))
    os.makedirs(d, exist_ok=True)
    accept(s, d, ["--work"] + (["--no-loop"] if a.no_loop else []), own_base(s, d) if a.own_base else None)
    fits[s] = tuple(os.path.join(d, "fit%dwc.gpu" % k) if os.path.exists(os.path.join(d, "fit%dwc.gpu" % k))
                    else os.path.join(d, "fit%dw.gpu" % k) for k in (1, 2))

measured = {}  # session -> {(trace, policy): measured us, at the host speed}, from its judgement's rows
cells = {}
halves = {}  # session -> its half A (the sorted traces 1st, 3rd, ...)
missed = collections.Counter()
for x, y in itertools.product(a.sessions, a.sessions):
    text = accept(y, os.path.join(a.out, label(y)), ["--judge", fits[x][0], "--judge", fits[x][1]])
    rows = [[c.strip() for c in l.split("|")[1:-1]] for l in text.splitlines() if l.startswith("| ") and "%" in l]
    measured[y] = {(r[0], r[1]): float(r[2]) for r in rows}
    traces = sorted({r[0] for r in rows})
    half_a = set(traces[0::2])
    cells[x, y] = []
    for judged_a, col in ((False, 3), (True, 5)):  # A's fit judges B; B's fit judges A
        sel = [r for r in rows if (r[0] in half_a) == judged_a]
        within = 0
        for r in sel:
            if abs(float(r[col + 1].rstrip("%"))) <= 25:
                within += 1
            else:
                missed[(r[0], r[1])] += 1
        same = pairs = 0
        for t in {r[0] for r in sel}:
            mp = [(float(r[2]), float(r[col])) for r in sel if r[0] == t]
            for (m1, p1), (m2, p2) in itertools.combinations(mp, 2):
                if max(m1, m2) > 1.2 * min(m1, m2):
                    pairs += 1
                    same += (m1 < m2) == (p1 < p2)
        cells[x, y] += ["%d of %d" % (within, len(sel)), "%d of %d (%.1f%%)" % (same, pairs, 100.0 * same / pairs if pairs else 100)]
    halves[y] = half_a

# The measurement itself as the prediction: the fitted-in session's own measured time of each configuration
# (the median over its processes, at the same host speed) for the judged session's.  How well one session's
# measurement repeats in another bounds how well any description fitted in one session can judge another: a
# cell the measurement itself does not get whole is not a cell a model can be asked to.
def repeat(x, y, sel):
    ks = [k for k in measured[y] if k[0] in sel and k in measured[x]]
    return "%d of %d" % (sum(measured[y][k] > 0 and abs(measured[x][k] / measured[y][k] - 1) <= 0.25 for k in ks), len(ks))


print("| fitted in | judged in | half A -> B: within 25% | ordered | half B -> A: within 25% | ordered | "
      "the fitted-in session's measurement as the prediction: B | A |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for x, y in itertools.product(a.sessions, a.sessions):
    c, half_a = cells[x, y], halves[y]
    traces = {k[0] for k in measured[y]}
    oracle = ["(itself)"] * 2 if x == y else [repeat(x, y, traces - half_a), repeat(x, y, half_a)]
    print("| %s | %s | %s |" % (label(x), label(y), " | ".join(c + oracle)))
print("\nmissed most often (trace, policy: judgements over 25%% off, of %d):" % len(a.sessions) ** 2)
for (t, p), n in missed.most_common(8):
    print("- %s %s: %d" % (t, p, n))
