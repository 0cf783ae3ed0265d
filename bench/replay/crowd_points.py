#!/usr/bin/env python3
"""crowd_points.py: another calibrate output's crowded-loop points, added to a base that has only the cached loop's.

    python3 bench/replay/crowd_points.py BASE.gpu --from CALIBRATED.gpu -o OUT.gpu

pagetune calibrate times its crowded loop (the cached loop's pairs among 32 free blocks; `--crowd`) since session
14: its points follow the cached loop's on each `bookkeeping_loop` line.  Older calibrate outputs lack them, and
their times cannot be made up afterwards; the GPU session that measured them is gone.  This takes the crowded points
of CALIBRATED (a newer calibrate output, from another session on a GPU of the same kind) and appends them to BASE's
bookkeeping_loop lines, each µs scaled by BASE's host speed / CALIBRATED's (host_clock_read_us): gpu fit brings
the base's points from the base's speed to the fit's, so the points end at the speed they were measured at, as
they would be in CALIBRATED's own fit.  BASE must have bookkeeping_loop lines (bench/replay/loop_points.py adds
them to one older still) and no crowded points; every mechanism of BASE's lines must have crowded points in
CALIBRATED.  What this measures is whether one session's crowded loop serves another's fit; it is not a calibration
of BASE's session.
"""
import argparse
import sys


def split_loop(points):
    """A bookkeeping_loop line's points (after MECH) as (the cached loop's, the crowded loop's): calibrate writes the
    crowded ones after the cached ones, so they begin at the first point whose size does not grow."""
    sizes = [float(p.split(":")[0]) for p in points]
    k = next((i for i in range(1, len(sizes)) if sizes[i] <= sizes[i - 1]), len(sizes))
    return points[:k], points[k:]


def fail(msg):
    sys.exit("crowd_points.py: " + msg)


def host_speed(path, lines):
    v = [float(l.split()[1]) for l in lines if l.startswith("host_clock_read_us ")]
    if not v or not v[-1] > 0:
        fail("%s: no host_clock_read_us line: the points cannot be brought to another host speed" % path)
    return v[-1]


def loop_points(path, lines):
    """{mechanism: (cached points, crowded points)}."""
    out = {l.split()[1]: split_loop(l.split()[2:]) for l in lines if l.startswith("bookkeeping_loop ")}
    if not out:
        fail("%s: no bookkeeping_loop line" % path)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("--from", dest="source", required=True)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    base = open(a.base).read().splitlines()
    src = open(a.source).read().splitlines()
    mine, theirs = loop_points(a.base, base), loop_points(a.source, src)
    factor = host_speed(a.base, base) / host_speed(a.source, src)
    for mech, (_, crowded) in mine.items():
        if crowded:
            fail("%s: bookkeeping_loop %s has crowded points already" % (a.base, mech))
        if not theirs.get(mech, ((), ()))[1]:
            fail("%s: no crowded points for %s" % (a.source, mech))
    out = []
    for l in base:
        if l.startswith("bookkeeping_loop "):
            added = []
            for p in theirs[l.split()[1]][1]:
                q = p.split(":")
                q[1] = "%.4f" % (float(q[1]) * factor)
                added.append(":".join(q))
            l = l + " " + " ".join(added)
        out.append(l)
    with open(a.output, "w") as f:
        f.write("\n".join(out) + "\n# crowd_points.py: the crowded loop's points of %s, at this file's host speed (x %.4f)\n"
                % (a.source, factor))


if __name__ == "__main__":
    main()
