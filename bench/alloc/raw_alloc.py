"""raw_alloc.py: one cached allocate + free from C++, through whatever allocator PyTorch has now.

    python3 raw_alloc.py default|pagetune [--conf "mechanism=caching"] [--pairs N]

The timing is backend/calibrate_torch.py's (what `pagetune calibrate` runs): a
torch.utils.cpp_extension module times N pairs of
c10::cuda::CUDACachingAllocator::raw_alloc + raw_delete (the current
allocator: PyTorch's own, or pagetune's library once installed) at several
sizes, after warm-up pairs, five times; this prints one JSON line with the
median and spread in µs a pair.  The module is built into $PT_EXT_DIR (default
a temporary directory).  If it does not build, says so and exits 1 (the
Python-level figure is empty_del.py's).
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("allocator", choices=["default", "pagetune"])
ap.add_argument("--conf", default=None)
ap.add_argument("--pairs", type=int, default=200000)
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
    r = ct.measure("cpp", [512, 65536, 1 << 20, 16 << 20], batches=5, pairs=a.pairs,
                   build_dir=os.environ.get("PT_EXT_DIR") or tempfile.mkdtemp(prefix="raw_alloc-"))
except ct.Failure as e:
    print(json.dumps({"allocator": a.allocator, "error": str(e)}))
    sys.exit(1)
print(json.dumps({"allocator": a.allocator, "conf": a.conf, "pairs": a.pairs, "us_per_pair": r["us_per_pair"]}))
