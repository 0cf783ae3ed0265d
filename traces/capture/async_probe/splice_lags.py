#!/usr/bin/env python3
"""splice_lags.py — one trace's frees timed by another's, in a range of frees (docs/model.md, cnn_train).

usage: splice_lags.py BASE DONOR FIRST END OUT
       splice_lags.py BASE --map EXPR OUT
       splice_lags.py BASE --jitter J SEED OUT

BASE and DONOR are pagetune traces (gzip or plain) of the same workload, with the same frees in
the same order (e.g. one native capture imported twice: --gpu-frees, and --async-run with a
cudaMallocAsync run's log).  OUT is BASE with the +gpu line of every free numbered FIRST to END-1
(0-based, in trace order) taken from DONOR, so that `pagetune sim --policy cuda_async` tells which
frees' timing decides the peak.  With --map, every +gpu K of BASE becomes EXPR (a Python expression
in k, e.g. "2*k" or "k+1"); with --jitter, K + a whole number drawn evenly from -J to J (at least 0;
Python's random, seeded with SEED, one draw per timed free in order).  A free without a +gpu line in the source it takes its time from has
none in OUT.  Errors: one line, exit 1.
"""
import gzip
import random
import sys


def read(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return f.readlines()


def lags(lines, path):
    """Each free's +gpu K (None where it has none), in trace order."""
    out, pend = [], None
    for n, line in enumerate(lines, 1):
        if line.startswith("+gpu "):
            try:
                pend = int(line.split()[1])
            except (IndexError, ValueError):
                sys.exit("%s: line %d: a +gpu line without a count" % (path, n))
        elif line.startswith("f "):
            out.append(pend)
            pend = None
    return out


def main(argv):
    if len(argv) == 5 and argv[2] == "--map":
        base_path, expr, out_path = argv[1], argv[3], argv[4]
        try:
            fn = eval("lambda k: int(%s)" % expr, {"__builtins__": {"int": int, "max": max, "min": min}})
            fn(1)
        except Exception as e:  # an expression that does not map a count
            sys.exit("splice_lags.py: --map %r: %s" % (expr, e))
        base = read(base_path)
        times = [None if k is None else max(0, fn(k)) for k in lags(base, base_path)]
    elif len(argv) == 6 and argv[2] == "--jitter":
        base_path, out_path = argv[1], argv[5]
        try:
            j, rng = int(argv[3]), random.Random(int(argv[4]))
        except ValueError:
            sys.exit("splice_lags.py: --jitter J SEED: two whole numbers")
        base = read(base_path)
        times = [None if k is None else max(0, k + rng.randint(-j, j)) for k in lags(base, base_path)]
    elif len(argv) == 6:
        base_path, donor_path, first, end, out_path = argv[1:]
        base, donor = read(base_path), read(donor_path)
        mine, theirs = lags(base, base_path), lags(donor, donor_path)
        if len(mine) != len(theirs):
            sys.exit("%s: %d frees, %s has %d: not the same workload" % (donor_path, len(theirs), base_path, len(mine)))
        try:
            first, end = int(first), int(end)
        except ValueError:
            sys.exit("splice_lags.py: FIRST and END are free numbers")
        times = [theirs[i] if first <= i < end else mine[i] for i in range(len(mine))]
    else:
        sys.exit(__doc__.split("\n\n")[1].strip())
    out, fi = [], 0
    for line in base:
        if line.startswith("+gpu "):
            continue
        if line.startswith("f "):
            if times[fi] is not None:
                out.append("+gpu %d\n" % times[fi])
            fi += 1
        out.append(line)
    opener = gzip.open if out_path.endswith(".gz") else open
    with opener(out_path, "wt") as g:
        g.writelines(out)


if __name__ == "__main__":
    main(sys.argv)
