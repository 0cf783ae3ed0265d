#!/usr/bin/env python3
"""async_timeline.py — a native capture's free times, moved to the timeline of a cudaMallocAsync run (issue 12).

    python3 traces/capture/async_timeline.py CAPTURE.gpufrees.gz CAPTURE.gpufrees.times.gz OUT.gpufrees
        [--on SNAPSHOT.gpufrees.gz] [--keep-stalls] [--json]

A PT_GPU_FREES=1 capture (gpufrees.py) says, for each free, how many requests came before the GPU was seen past
it; the times file beside it says when, in microseconds: each request's and free's host time, each free's GPU
time, and the host's stalls in the native allocator's cudaMalloc and cudaFree and its synchronisation waits (the
shim's clocks).  A run under backend:cudaMallocAsync makes no cudaMalloc: its host runs on where the capture's
stalled, so at the next request the GPU is further behind than the capture saw.  This writes the capture's
gpufrees file again with each free's count of requests taken on that timeline:

- the host's time of each call less the stalls and synchronisation waits before it (the capture's), plus the
  waits a synchronisation makes on the new timeline (until the GPU passed the frees issued before it);
- the GPU's time of each free from its stream's queue: a free the GPU reached while still behind the host (it
  passed the free before the stream's next one was issued) keeps its distance from the one before; every free
  keeps its distance from its own issue (the work after its issue): g'_i = max(g'_prev + g_i - max(g_prev,
  h_i), h'_i + g_i - h_i), which is the capture's own time when nothing is taken out;
- the count: the requests after the free whose host time on the new timeline is before the free's GPU time,
  written as the tracker's own count moved by as many requests as taking the stalls out moves it (the times
  counted both ways, so that where the times and the tracker disagree, on a free or two, or on about a hundred
  of two_streams' (the host sees an event complete a few us after the GPU passed it), the disagreement does not
  reach the output; --json's
  check_counts_differ says on how many frees the times kept as they were disagree with the tracker).

--on takes the blocks' addresses from another capture of the same workload, by order (the same number of frees):
the one whose snapshot the output goes with.  The free times that match a cudaMallocAsync run best are a run
that records no history (capture.py --no-record, PT_GPU_FREES=1, the shim preloaded): recording slows the host
at every call, so its GPU catches up where the backend's does not (docs/model.md).
--keep-stalls takes nothing out and writes the counts the times give as they are (a check of the times file
against the tracker's own counts).
--json prints what it did.  Errors: one line (file, line, reason), exit 1.
"""
import argparse
import bisect
import gzip
import itertools
import json
import math
import sys


def fail(msg):
    sys.exit("async_timeline.py: " + msg)


def lines(path):
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            return f.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        fail("%s: %s" % (path, e))


def read_frees(path):
    """The gpufrees file: (header lines, [(addr, k, end)], sync lines)."""
    ls = lines(path)
    if not ls or not ls[0].startswith("pagetune-gpu-frees "):
        fail("%s: line 1: not a gpufrees file" % path)
    head, frees, syncs = [], [], []
    for n, l in enumerate(ls[1:], 2):
        w = l.split()
        if not w:
            continue
        if w[0] == "f" and len(w) in (3, 4):
            try:
                k = int(w[2])
            except ValueError:
                fail("%s: line %d: a count that is not a number" % (path, n))
            if k < 0:
                fail("%s: line %d: a count below 0" % (path, n))
            frees.append((w[1], k, len(w) == 4))
        elif w[0] == "s":
            try:
                syncs.append(int(w[1]))
            except (ValueError, IndexError):
                fail("%s: line %d: a sync line that is not 's N'" % (path, n))
        elif w[0] == "end":
            pass
        else:
            head.append(l)
    return ls[0], head, frees, syncs


def read_times(path):
    """The times file: the shim's state, [(kind, host, stall, sync, gpu, stream)] in call order, and the clocks'
    pairs at the end [(host, gpu)]."""
    ls = lines(path)
    if not ls or ls[0] != "pagetune-gpu-times 1":
        fail("%s: line 1: not a times file (pagetune-gpu-times 1)" % path)
    calls, shim, ends = [], None, []

    def num(x):
        v = float(x)
        if not math.isfinite(v):
            raise ValueError(x)
        return v
    for n, l in enumerate(ls[1:], 2):
        w = l.split()
        if not w:
            continue
        if w[0] == "shim":
            if len(w) != 2 or w[1] not in ("timed", "none"):
                fail("%s: line %d: a shim line that is not 'shim timed' or 'shim none'" % (path, n))
            shim = w[1]
            continue
        try:
            if w[0] == "p" and len(w) == 3:  # the clocks side by side at the end (the start is 0, 0)
                ends.append((num(w[1]), num(w[2])))
            elif w[0] == "r" and len(w) == 4:
                calls.append(("r", num(w[1]), num(w[2]), num(w[3]), None, None))
            elif w[0] == "f" and len(w) == 6:
                calls.append(("f", num(w[1]), num(w[2]), num(w[3]), num(w[4]), w[5]))
            elif w[0] != "end":
                fail("%s: line %d: not a record of a times file" % (path, n))
        except (ValueError, IndexError):
            fail("%s: line %d: a time that is not a number" % (path, n))
    return shim, calls, ends


def clock_line(calls, frees, req_at, free_at, first_req):
    """The GPU's clock against the host's: each stream's lead at host time 0, the most of them (for a stream with
    no bound), and the drift a us of host time.  The base event puts the clocks within tens of us of each other,
    and they drift apart by a few us a second; the tracker's own counts say how far.  A free it saw passed at a
    request was passed before that request's host time: each such free bounds the GPU's lead at its time from
    below.  The move is a line over the capture: its slope the median of those between the highest bounds of the
    capture's tenths of time (over half a second of frees or more; flat on a shorter one), then raised until it
    is at or above every bound of its stream (the host sees one stream's events later than another's:
    two_streams' default stream by a few us): the least move of that slope that agrees with every free seen
    passed."""
    bounds = []  # (host time, GPU time less the host time of the request it was seen passed at, stream)
    for (_, k, end), i, lo in zip(frees, free_at, first_req):
        c = calls[i]
        if not end and c[4] >= 0 and lo + k < len(req_at):
            bounds.append((c[1], c[4] - calls[req_at[lo + k]][1], c[5]))
    slope = 0.0
    span = bounds[-1][0] - bounds[0][0] if bounds else 0.0
    if span >= 500000:  # half a second or more: a drift of a few us a second shows
        bins = {}
        for t, d, _ in bounds:
            bins.setdefault(min(int(10 * (t - bounds[0][0]) / span), 9), []).append((t, d))
        tops = [max(v, key=lambda x: x[1]) for v in bins.values() if len(v) >= 5]
        # the median of the slopes between every two (Theil-Sen: a tenth whose frees all came long before a
        # request bounds the lead loosely, and would move a least-squares line)
        pair = sorted((d2 - d1) / (t2 - t1) for (t1, d1), (t2, d2) in itertools.combinations(sorted(tops), 2)
                      if t2 > t1)
        slope = pair[len(pair) // 2] if len(tops) >= 3 and pair else 0.0
    leads = {}
    for t, d, stream in bounds:
        leads[stream] = max(leads.get(stream, d - slope * t), d - slope * t)
    return leads, max(leads.values(), default=0.0), slope


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("frees")
    ap.add_argument("times")
    ap.add_argument("out")
    ap.add_argument("--on", metavar="SNAPSHOT.gpufrees.gz")
    ap.add_argument("--keep-stalls", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    first, head, frees, sync_lines = read_frees(a.frees)
    shim, calls, ends = read_times(a.times)
    if a.on:
        _, _, other, _ = read_frees(a.on)
        if len(other) != len(frees):
            fail("%s: %d frees, %s has %d: not a capture of the same workload" % (a.on, len(other), a.frees, len(frees)))
        frees = [(o[0], k, end) for o, (_, k, end) in zip(other, frees)]
    nf = sum(c[0] == "f" for c in calls)
    if nf != len(frees):
        fail("%s: %d frees, %s has %d: not the same capture" % (a.times, nf, a.frees, len(frees)))
    sync_before = set(sync_lines)  # call numbers (from 1) a synchronisation came before
    req_at = [i for i, c in enumerate(calls) if c[0] == "r"]  # the calls that are requests
    free_at = [i for i, c in enumerate(calls) if c[0] == "f"]  # ... and frees
    first_req = [bisect.bisect_right(req_at, i) for i in free_at]  # each free's first request after it (in req_at)
    leads, lead, slope = clock_line(calls, frees, req_at, free_at, first_req)
    keep = a.keep_stalls or shim != "timed"

    def timeline(take_out):
        """Each call's host time and each free's GPU time (None: not known), with the stalls taken out or not; and
        the waits its synchronisations added."""
        host2, gpu2, last, waited, gmax = [], [], {}, 0.0, 0.0
        for i, (kind, h, stall, sync, g, stream) in enumerate(calls, 1):
            h2 = h - stall - sync + waited if take_out else h
            if take_out and i in sync_before and gmax > h2:  # the host waits for the GPU to pass what came before
                waited += gmax - h2
                h2 = gmax
            if host2 and h2 < host2[-1]:
                h2 = host2[-1]
            host2.append(h2)
            if kind != "f":
                continue
            if g < 0:
                gpu2.append(None)
                continue
            g -= leads.get(stream, lead) + slope * h
            g2 = g + (h2 - h)  # its distance from its own issue (exact when nothing is taken out)
            if stream in last:
                gp, gp2 = last[stream]
                g2 = max(g2, gp2 + g - max(gp, h))
            last[stream] = (g, g2)
            gpu2.append(g2)
            gmax = max(gmax, g2)
        return host2, gpu2, waited

    def counts(host2, gpu2):
        """Each free's (requests before the GPU passed it, passed before the last request), None where not known."""
        req_host = [host2[j] for j in req_at]
        res = []
        for g2, lo in zip(gpu2, first_req):
            if g2 is None:
                res.append(None)
                continue
            p = bisect.bisect_left(req_host, g2 - 1e-3, lo)  # the file's precision: a tie is passed
            res.append((p - lo, p < len(req_host)))
        return res

    host_k, gpu_k, _ = timeline(False)
    kept = counts(host_k, gpu_k)
    checked = sum(1 for (_, k, end), c in zip(frees, kept) if c is not None and c != (k, not end))
    waited = 0.0
    if keep:
        new = kept
    else:
        host_a, gpu_a, waited = timeline(True)
        new = counts(host_a, gpu_a)
    out, moved, unknown = [], 0, 0
    for (addr, k, end), c0, c1 in zip(frees, kept, new):
        if c1 is None:
            out.append((addr, k, end))
            unknown += 1
            continue
        if keep:  # the counts the times give, to check against the tracker's
            n, passed = c1
        else:  # the tracker's counts moved by what taking the stalls out moves: the times' own errors cancel
            n = max(0, k + c1[0] - c0[0])
            passed = (not end) if c1[1] == c0[1] else c1[1]
        out.append((addr, n, not passed))
        moved += (n, not passed) != (k, end)
    try:
        with open(a.out, "w") as f:
            f.write(first + "\n" + "".join(l + "\n" for l in head))
            for addr, k, end in out:
                f.write("f %s %d%s\n" % (addr, k, " end" if end else ""))
            f.write("".join("s %d\n" % n for n in sync_lines))
            f.write("end %d\n" % len(out))
    except OSError as e:
        fail("%s: %s" % (a.out, e))
    taken = 0.0 if keep else (calls[-1][2] + calls[-1][3] if calls else 0.0)
    info = {"frees": len(out), "counts_changed": moved, "check_counts_differ": checked, "gpu_time_unknown": unknown,
            "stalls_taken_out_us": taken, "sync_waits_added_us": waited, "gpu_clock_moved_us": -lead,
            "gpu_clock_drift_ppm": -slope * 1e6,
            "tracker_drift_ppm": (ends[-1][0] - ends[-1][1]) / ends[-1][0] * 1e6 if ends and ends[-1][0] > 0 else None,
            "shim": shim, "kept_stalls": keep}
    if a.json:
        print(json.dumps(info))
    else:
        print("%d frees, %d counts changed (%d without a GPU time); %.0f us of stalls and waits taken out, %.0f us of "
              "waits added" % (len(out), moved, unknown, taken, waited))


if __name__ == "__main__":
    main()
