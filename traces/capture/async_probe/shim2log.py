#!/usr/bin/env python3
"""shim2log.py LOG — a shim.c log (plain text; zcat a .gz first) as fit.c's input: `a ID BYTES OFFSET RESERVED
STREAM`, `f ID RESERVED STREAM` (the stream in decimal), `s` (a synchronisation: an `n` line with S>0), `k ID K` (a free's GPU time),
`e EVENT STREAM` and `w STREAM EVENT` (an event record and a stream wait, PT_SHIM_EVENTS=1 logs; events numbered
from 1), the ids numbered by allocation, offsets from the first allocation's address.  `nosync`, `nok` or `noev`
after LOG leave those lines out."""
import sys

if len(sys.argv) < 2:
    sys.exit("usage: shim2log.py LOG [nosync] [nok] [noev]")
live, nid, base, nfree, freeid = {}, 0, None, 0, {}
nosync, nok, noev = "nosync" in sys.argv[2:], "nok" in sys.argv[2:], "noev" in sys.argv[2:]
events = {}
for line in open(sys.argv[1]):
    p = line.split()
    if not p:
        continue
    if p[0] == "n":
        d = dict(x.split("=") for x in p[1:])
        if int(d["S"]) > 0 and not nosync:
            print("s")
    elif p[0] == "a" and p[-1] != "failed":
        nid += 1
        a = int(p[2], 16)
        base = a if base is None else base
        live[a] = nid
        print("a", nid, p[1], a - base, p[4], int(p[3], 16))
    elif p[0] == "f":
        i = live.pop(int(p[1], 16))
        nfree += 1
        freeid[nfree] = i
        print("f", i, p[3], int(p[2], 16))
    elif p[0] == "e" and not noev:  # an event record: e EVENT STREAM, events numbered from 1 in order of first record
        print("e", events.setdefault(p[1], len(events) + 1), int(p[2], 16))
    elif p[0] == "w" and not noev:  # a stream wait: w STREAM EVENT (0: an event never recorded)
        print("w", int(p[1], 16), events.get(p[2], 0))
    elif p[0] == "k" and not nok:
        print("k", freeid[int(p[1])], p[2])
