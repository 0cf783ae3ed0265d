#!/usr/bin/env python3
"""loop_points.py: bookkeeping_loop lines for a calibrate output made before calibrate wrote them.

    python3 bench/replay/loop_points.py CALIBRATED.gpu [--pagetune ./pagetune] -o OUT.gpu

pagetune calibrate writes `bookkeeping_loop MECH SIZE:US:OPS:CHUNKS:VISITS ...` beside each mechanism's
`bookkeeping_us MECH SIZE:US ...` line: the same cached allocate + free loop (one 512 B block held), with the
free-set work a request or free did in it, which gpu fit --work adds to the mechanism's runs.  The calibrated.gpu
files of bench/replay/mechanism7-11 are older: they have the times, not the work.  This counts the work the way
the engine counts it for a replay: the loop written as a trace (the block held, then pairs of SIZE) and simulated
under the mechanism's bundled policy at its defaults (calibrate's mechanisms run at theirs), twice, with 1000 and
2000 pairs, so that the difference is the steady loop calibrate times after its warm-up.  OUT is CALIBRATED with
the lines appended; the times are the bookkeeping_us lines after calibrate's "own work, measured" heading.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

POLICY = {"caching": "pytorch_native", "expandable": "pytorch_expandable", "async_pool": "cuda_async",
          "stitch": "stitch"}
HEADING = "the allocator's own work, measured"

ap = argparse.ArgumentParser()
ap.add_argument("calibrated")
ap.add_argument("--pagetune", default="./pagetune")
ap.add_argument("-o", "--output", required=True)
a = ap.parse_args()

text = open(a.calibrated).read()
if HEADING not in text:
    sys.exit("loop_points.py: %s: no \"%s\" heading: not a pagetune calibrate output" % (a.calibrated, HEADING))
if re.search(r"^bookkeeping_loop ", text, re.M):
    sys.exit("loop_points.py: %s: has bookkeeping_loop lines already" % a.calibrated)
measured = text.split(HEADING)[-1]


def loop_trace(path, size, pairs):
    recs = ["a 1 512 0x0 0"]
    for i in range(pairs):
        recs += ["a %d %d 0x0 %d" % (i + 2, size, 2 * i + 1), "f %d %d" % (i + 2, 2 * i + 2)]
    recs.append("f 1 %d" % (2 * pairs + 1))
    with open(path, "w") as f:
        f.write("pagetune-trace 1\n@source loop_points.py: calibrate's cached loop\n" + "\n".join(recs) +
                "\nend %d\n" % len(recs))


def work(path, policy):
    r = subprocess.run([a.pagetune, "sim", "--trace", path, "--policy", policy, "--gpu", a.calibrated, "--json"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("loop_points.py: pagetune sim: %s" % (r.stderr.strip().splitlines() or ["failed"])[-1])
    w = json.loads(r.stdout)["work"]
    return [w["requests"], w["set_ops"], w["set_chunks"], w["visits"]]


lines = []
with tempfile.TemporaryDirectory() as tmp:
    for m in re.finditer(r"^bookkeeping_us (\w+) (.*)$", measured, re.M):
        mech = m.group(1)
        if mech not in POLICY:
            continue
        points = []
        for p in m.group(2).split():
            size, us = p.split(":")
            counts = []
            for pairs in (1000, 2000):
                path = os.path.join(tmp, "loop_%s_%d.trace" % (size, pairs))
                loop_trace(path, int(size), pairs)
                counts.append(work(path, POLICY[mech]))
            reqs = counts[1][0] - counts[0][0]
            ops, chunks, visits = ((counts[1][k] - counts[0][k]) / reqs for k in (1, 2, 3))
            points.append("%s:%s:%.4g:%.4g:%.4g" % (size, us, ops, chunks, visits))
        lines.append("bookkeeping_loop %s %s" % (mech, " ".join(points)))
if not lines:
    sys.exit("loop_points.py: %s: no mechanism's bookkeeping_us line after the heading" % a.calibrated)
with open(a.output, "w") as f:
    f.write(text.rstrip("\n") + "\n\n# bookkeeping_loop: the work counted by bench/replay/loop_points.py (the loop "
            "simulated), the times calibrate's above\n" + "\n".join(lines) + "\n")
