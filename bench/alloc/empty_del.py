"""empty_del.py: one cached allocate + free through PyTorch (torch.empty + del, Python included).

    python3 empty_del.py default|pagetune [--conf "mechanism=caching"]

For each size, after a warm-up, times 20000 pairs, five times; prints one
JSON line with the median and the spread (min, max) of the five, in µs a
pair.  Under pagetune the request goes through libpagetune_alloc.so.
"""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("allocator", choices=["default", "pagetune"])
ap.add_argument("--conf", default=None)
ap.add_argument("--pairs", type=int, default=20000)
a = ap.parse_args()
if a.allocator == "pagetune":
    if a.conf:
        os.environ["PAGETUNE_ALLOC_CONF"] = a.conf
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backend", "python"))
    import pagetune_alloc

    pagetune_alloc.install()
import torch  # noqa: E402

out = {"allocator": a.allocator, "conf": a.conf, "us_per_pair": {}}
for size in [512, 65536, 1 << 20, 16 << 20]:
    t = torch.empty(size, dtype=torch.uint8, device="cuda")
    del t
    reps = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(a.pairs):
            t = torch.empty(size, dtype=torch.uint8, device="cuda")
            del t
        reps.append((time.perf_counter() - t0) / a.pairs * 1e6)
    reps.sort()
    out["us_per_pair"][str(size)] = {"median": reps[2], "min": reps[0], "max": reps[-1]}
print(json.dumps(out))
