#!/usr/bin/env python3
"""requests.py TRACE — a pagetune trace's requests as probe.cu's replay input: `a ID BYTES STREAM` and
`f ID` lines, in trace order (trace text, plain or gzip'd; other records are left out)."""
import gzip
import sys

if len(sys.argv) != 2:
    sys.exit("usage: requests.py TRACE")
with (gzip.open if sys.argv[1].endswith(".gz") else open)(sys.argv[1], "rt") as f:
    for line in f:
        p = line.split()
        if p and p[0] == "a":
            print("a", p[1], p[2], p[3])
        elif p and p[0] == "f":
            print("f", p[1])
