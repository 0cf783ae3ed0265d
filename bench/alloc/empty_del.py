"""empty_del.py: one cached allocate + free through PyTorch (torch.empty + del, Python included).

    python3 empty_del.py default|pagetune [--conf "mechanism=caching"] [--pairs N]

The timing is backend/calibrate_torch.py's (what `pagetune calibrate` runs
when its C++ extension does not build): for each size, after warm-up pairs,
N pairs (default 20000), five times; prints one JSON line with the median and
the spread (min, max) of the five, in µs a pair.  Under pagetune the request
goes through libpagetune_alloc.so.
"""
import argparse
import importlib.util
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("allocator", choices=["default", "pagetune"])
ap.add_argument("--conf", default=None)
ap.add_argument("--pairs", type=int, default=20000)
a = ap.parse_args()
if a.allocator == "pagetune":  # before torch is imported
    if a.conf:
        os.environ["PAGETUNE_ALLOC_CONF"] = a.conf
    sys.path.insert(0, os.path.join(here, "..", "..", "backend", "python"))
    import pagetune_alloc

    pagetune_alloc.install()
spec = importlib.util.spec_from_file_location("calibrate_torch", os.path.join(here, "..", "..", "backend", "calibrate_torch.py"))
ct = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ct)
try:
    r = ct.measure("python", [512, 65536, 1 << 20, 16 << 20], batches=5, pairs=a.pairs)
except ct.Failure as e:
    print(json.dumps({"allocator": a.allocator, "error": str(e)}))
    sys.exit(1)
print(json.dumps({"allocator": a.allocator, "conf": a.conf, "us_per_pair": r["us_per_pair"]}))
