#!/usr/bin/env python3
"""snapshot_stats.py — the reference reading of a PyTorch memory snapshot.

Reads SNAPSHOT (pickle, plain or gzip'd) with Python's own pickle module and
computes the same stats `pagetune trace stats --json` reports, following the
rules in sim/snapshot.h, written independently of the C code.  Used to check
the C importer (tests/snapshot_py.sh) and to produce tests/data/*.expected.json.

usage: snapshot_stats.py SNAPSHOT [--device N]
"""
import gzip
import json
import pickle
import sys


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return pickle.load(f)


def stats(snap, device=None):
    traces = snap["device_traces"]
    if device is None:
        busy = [d for d, t in enumerate(traces) if t]
        device = busy[0] if busy else 0
    trace = traces[device]
    live = {}          # addr -> requested size, allocated in the trace
    segs = {}          # addr -> size, segments known to exist
    init_allocs, init_segs = [], []
    events = []        # (kind, size, stream, time)
    for e in trace:
        a = e["action"]
        size, addr = e["size"], e.get("addr", 0)
        stream, t = e.get("stream", 0), e.get("time_us", 0)
        if a == "alloc":
            live[addr] = size
            events.append(("alloc", size, stream, t))
        elif a == "free_completed":
            if addr in live:
                del live[addr]
            else:
                init_allocs.append(size)
            events.append(("free", size, stream, t))
        elif a == "segment_alloc":
            segs[addr] = size
            events.append(("seg_alloc", size, stream, t))
        elif a == "segment_free":
            if addr not in segs:
                init_segs.append(size)
            segs.pop(addr, None)
            events.append(("seg_free", size, stream, t))
        elif a in ("segment_map", "segment_unmap"):
            events.append((a, size, stream, t, addr))
        elif a == "oom":
            events.append(("oom", size, stream, t))
    segments = [s for s in snap.get("segments", []) if s.get("device", 0) == device]
    # expandable: the mapped ranges at the end, the trace's maps taken out and unmaps put back, latest first
    mapped = []  # [lo, hi, stream], disjoint

    def cut(lo, hi):
        out = []
        for a, b, st in mapped:
            if b <= lo or a >= hi:
                out.append([a, b, st])
                continue
            if a < lo:
                out.append([a, lo, st])
            if b > hi:
                out.append([hi, b, st])
        mapped[:] = out

    for s in segments:
        for b in s.get("blocks", []):
            if b["state"] in ("active_allocated", "active_pending_free") and b["address"] not in live:
                req = b.get("requested_size", b["size"])
                init_allocs.append(req if 0 <= req <= b["size"] else b["size"])
        if s.get("is_expandable"):
            cut(s["address"], s["address"] + s["total_size"])
            mapped.append([s["address"], s["address"] + s["total_size"], s.get("stream", 0)])
            continue
        if s["address"] in segs:
            continue
        if s["total_size"]:
            init_segs.append(s["total_size"])
    for ev in reversed(events):
        if ev[0] in ("segment_map", "segment_unmap"):
            cut(ev[4], ev[4] + ev[1])
            if ev[0] == "segment_unmap":
                mapped.append([ev[4], ev[4] + ev[1], ev[2]])
    runs = []  # touching ranges of one stream are one initial segment
    for a, b, st in sorted(mapped):
        if runs and runs[-1][1] == a and runs[-1][2] == st:
            runs[-1][1] = b
        else:
            runs.append([a, b, st])
    init_segs += [b - a for a, b, st in runs]
    out = dict(allocs=0, frees=0, streams=0, distinct_sizes=0, peak_live_bytes=0,
               bytes_allocated_total=0, initial_segments=len(init_segs),
               initial_reserved_bytes=sum(init_segs), initial_allocs=len(init_allocs),
               observed_segment_allocs=0, observed_segment_frees=0, observed_peak_reserved_bytes=0,
               duration_us=0)
    live_b = sum(init_allocs)
    reserved = sum(init_segs)
    out["peak_live_bytes"], out["observed_peak_reserved_bytes"] = live_b, reserved
    sizes, streams, times = set(), set(), []
    for ev in events:
        kind, size, stream, t = ev[:4]
        streams.add(stream)
        times.append(t)
        if kind == "alloc":
            out["allocs"] += 1
            out["bytes_allocated_total"] += size
            sizes.add(size)
            live_b += size
        elif kind == "free":
            out["frees"] += 1
            live_b -= size
        elif kind in ("seg_alloc", "segment_map"):
            out["observed_segment_allocs"] += kind == "seg_alloc"
            reserved += size
        elif kind in ("seg_free", "segment_unmap"):
            out["observed_segment_frees"] += kind == "seg_free"
            reserved = max(0, reserved - size)
        out["peak_live_bytes"] = max(out["peak_live_bytes"], live_b)
        out["observed_peak_reserved_bytes"] = max(out["observed_peak_reserved_bytes"], reserved)
    out["streams"], out["distinct_sizes"] = len(streams), len(sizes)
    out["duration_us"] = max(times) - min(times) if times else 0
    out["events"] = len(init_allocs) + len(init_segs) + len(events)
    return out


def main():
    args = sys.argv[1:]
    device = None
    if "--device" in args:
        i = args.index("--device")
        device = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    print(json.dumps(stats(load(args[0]), device), sort_keys=True))


if __name__ == "__main__":
    main()
