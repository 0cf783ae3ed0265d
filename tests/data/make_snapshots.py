#!/usr/bin/env python3
"""make_snapshots.py — writes the small hand-made snapshots the tests read.

They have the shape torch.cuda.memory._dump_snapshot writes (docs/design.md,
"PyTorch facts") and cover what a small real capture may not: a segment and a
block alive before recording began, a second device, expandable segments,
an OOM, and a pickle that asks to call a function.  Run from tests/data/:
  python3 make_snapshots.py
"""
import collections
import gzip
import pickle

MiB = 1 << 20


def entry(action, addr, size, stream=0, t=0):
    return {"action": action, "addr": addr, "size": size, "stream": stream,
            "time_us": t, "frames": [], "compile_context": "N/A", "user_metadata": ""}


def block(addr, size, req, state):
    return {"address": addr, "size": size, "requested_size": req, "state": state, "frames": []}


def segment(addr, total, blocks, device=0, stream=0, expandable=False, kind="large"):
    return {"device": device, "address": addr, "total_size": total, "allocated_size": 0,
            "active_size": 0, "requested_size": 0, "stream": stream, "segment_type": kind,
            "segment_pool_id": (0, 0), "is_expandable": expandable, "frames": [], "blocks": blocks}


def synthetic():
    """Initial segment A (20 MiB) with a live block freed in the trace, and a
    second initial segment B (2 MiB) freed in the trace; new segment C."""
    A, B, C = 0x7f0000000000, 0x7f0002000000, 0x7f0004000000
    side = 0x55aa00
    tr = [
        entry("alloc", A + 4 * MiB, 1000, 0, 100),          # inside initial segment A
        entry("free_requested", A, 3 * MiB, 0, 101),
        entry("free_completed", A, 3 * MiB, 0, 102),        # block live before recording
        entry("segment_alloc", C, 20 * MiB, side, 110),
        entry("alloc", C, 5 * MiB, side, 111),
        entry("alloc", C + 5 * MiB, 7 * MiB + 3, side, 112),
        entry("free_completed", C, 5 * MiB, side, 120),
        entry("segment_free", B, 2 * MiB, 0, 130),          # initial segment, gone
        entry("oom", 0, 64 * MiB, 0, 140),
        entry("snapshot", 0, 0, 0, 141),
        entry("alloc", C, 512, side, 150),
        entry("free_completed", C, 512, side, 160),
    ]
    segs = [
        segment(A, 20 * MiB, [block(A, 3 * MiB, 3 * MiB, "inactive"),
                              block(A + 3 * MiB, MiB, MiB - 8, "active_allocated"),  # never freed
                              block(A + 4 * MiB, 1024, 1000, "active_allocated")]),
        segment(C, 20 * MiB, [block(C + 5 * MiB, 7 * MiB + 512, 7 * MiB + 3, "active_allocated")],
                stream=side),
    ]
    return {"segments": segs, "device_traces": [tr],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0,
                                   "expandable_segments": False,
                                   "roundup_power2_divisions": [1] * 64}}


def two_devices():
    s = synthetic()
    other = [entry("alloc", 0x100000, 4096, 0, 5), entry("free_completed", 0x100000, 4096, 0, 6)]
    s["device_traces"] = [s["device_traces"][0], other]
    return s


def expandable():
    """An expandable segment with 40 MiB mapped at the end; the trace mapped
    40 MiB and unmapped 20 MiB, so 20 MiB were mapped when recording began."""
    X = 0x7e0000000000
    tr = [entry("segment_map", X + 20 * MiB, 40 * MiB, 0, 1),
          entry("alloc", X + 20 * MiB, 30 * MiB, 0, 2),
          entry("free_completed", X + 20 * MiB, 30 * MiB, 0, 3),
          entry("segment_unmap", X + 40 * MiB, 20 * MiB, 0, 4)]
    return {"segments": [segment(X, 40 * MiB, [], expandable=True)], "device_traces": [tr],
            "allocator_settings": {"expandable_segments": True}}


def expandable_hole():
    """One reservation mapped whole by one growth (120 MiB), then a hole unmapped in its middle: the
    end state lists two mapped ranges, [X, X+60 MiB) and [X+80, X+120 MiB), and nothing was mapped
    when recording began (the map crosses from the first range into the second)."""
    X = 0x7d0000000000
    tr = [entry("segment_map", X, 120 * MiB, 0, 1),
          entry("alloc", X, 100 * MiB, 0, 2),
          entry("free_completed", X, 100 * MiB, 0, 3),
          entry("segment_unmap", X + 60 * MiB, 20 * MiB, 0, 4)]
    segs = [segment(X, 60 * MiB, [], expandable=True), segment(X + 80 * MiB, 40 * MiB, [], expandable=True)]
    return {"segments": segs, "device_traces": [tr], "allocator_settings": {"expandable_segments": True}}
_frames = {}


def frame(filename, line, name):
    """One frame dict, shared by every entry that names it, as PyTorch's
    symbolizer shares them (so the pickle refers back to it through the memo)."""
    return _frames.setdefault((filename, line, name), {"filename": filename, "line": line, "name": name})


def with_frames():
    """A snapshot recorded with stack frames (context="all"): a 2 MiB weight
    loaded first pins an otherwise free 20 MiB segment when a 19 MiB request
    needs a second one; a 4 KiB buffer pins the small pool's 2 MiB segment.
    At the peak (42 MiB reserved): 18 MiB free in the first segment (held by
    the weight), 2 MiB - 4 KiB in the small one, 1 MiB inside the 19 MiB block."""
    S1, S2, SM = 0x7f1000000000, 0x7f1002000000, 0x7f1004000000
    main_f = frame("/home/user/project/train.py", 88, "<module>")
    load = [frame("/home/user/project/model.py", 42, "load_weights"),
            frame("/home/user/project/train.py", 12, "setup"), main_f]
    fwd = [frame("/home/user/project/model.py", 97, "forward"),
           frame("/home/user/project/train.py", 30, "step"), main_f]
    big = [frame("/home/user/project/model.py", 120, "attention"),
           frame("/home/user/project/model.py", 97, "forward"),
           frame("/home/user/project/train.py", 30, "step"), main_f]
    small = [frame("/home/user/project/data.py", 7, "collate"),
             frame("/home/user/project/train.py", 28, "step"), main_f]

    def e(action, addr, size, t, frames):
        d = entry(action, addr, size, 0, t)
        d["frames"] = list(frames)
        return d
    tr = [
        e("segment_alloc", S1, 20 * MiB, 1, load),
        e("alloc", S1, 2 * MiB, 2, load),
        e("alloc", S1 + 2 * MiB, 16 * MiB, 3, fwd),
        e("free_requested", S1 + 2 * MiB, 16 * MiB, 4, fwd),
        e("free_completed", S1 + 2 * MiB, 16 * MiB, 4, fwd),
        e("segment_alloc", SM, 2 * MiB, 5, small),
        e("alloc", SM, 4096, 6, small),
        e("segment_alloc", S2, 20 * MiB, 7, big),
        e("alloc", S2, 19 * MiB, 8, big),
        e("free_requested", S2, 19 * MiB, 9, big),
        e("free_completed", S2, 19 * MiB, 9, big),
    ]
    segs = [segment(S1, 20 * MiB, [block(S1, 2 * MiB, 2 * MiB, "active_allocated"),
                                   block(S1 + 2 * MiB, 18 * MiB, 0, "inactive")]),
            segment(SM, 2 * MiB, [block(SM, 4096, 4096, "active_allocated"),
                                  block(SM + 4096, 2 * MiB - 4096, 0, "inactive")], kind="small"),
            segment(S2, 20 * MiB, [block(S2, 20 * MiB, 0, "inactive")])]
    for sg in segs:
        for b in sg["blocks"]:
            b["frames"] = list(load if b["address"] == S1 and b["state"] != "inactive" else
                               small if b["address"] == SM and b["state"] != "inactive" else [])
    return {"segments": segs, "device_traces": [tr],
            "allocator_settings": {"expandable_segments": False}}


def main():
    with open("frames.pickle", "wb") as f:
        pickle.dump(with_frames(), f, protocol=4)
    with open("synthetic_snapshot.pickle", "wb") as f:
        pickle.dump(synthetic(), f, protocol=4)
    with gzip.GzipFile("synthetic_snapshot.pickle.gz", "wb", mtime=0) as f:
        pickle.dump(synthetic(), f, protocol=2)
    with open("two_devices.pickle", "wb") as f:
        pickle.dump(two_devices(), f, protocol=4)
    with open("expandable.pickle", "wb") as f:
        pickle.dump(expandable(), f, protocol=5)
    with open("expandable_hole.pickle", "wb") as f:
        pickle.dump(expandable_hole(), f, protocol=5)
    neg = synthetic()
    neg["device_traces"][0][4]["size"] = -4096
    with open("negative_size.pickle", "wb") as f:
        pickle.dump(neg, f, protocol=4)
    neg = synthetic()
    neg["device_traces"][0][4]["stream"] = -1  # 2^64 - 1 as a stream: past 2^63
    with open("negative_stream.pickle", "wb") as f:
        pickle.dump(neg, f, protocol=4)
    with open("not_a_snapshot.pickle", "wb") as f:
        pickle.dump([1, 2, {"segments": []}], f, protocol=4)
    bad = synthetic()
    bad["allocator_settings"] = collections.OrderedDict(a=1)  # GLOBAL + REDUCE
    with open("forbidden_opcode.pickle", "wb") as f:
        pickle.dump(bad, f, protocol=4)


if __name__ == "__main__":
    main()
