"""raw_alloc.py: one cached allocate + free from C++, through whatever allocator PyTorch has now.

    python3 raw_alloc.py default|pagetune [--conf "mechanism=caching"]

Builds a small extension with torch.utils.cpp_extension that times N pairs
of c10::cuda::CUDACachingAllocator::raw_alloc + raw_delete (the current
allocator: PyTorch's own, or pagetune's library once installed) at several
sizes, after one warm-up pair each, five times; prints one JSON line with
the median and spread in µs a pair.  If the extension does not build, says
so and exits 1 (the Python-level figure is empty_del.py's).
"""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("allocator", choices=["default", "pagetune"])
ap.add_argument("--conf", default=None)
ap.add_argument("--pairs", type=int, default=200000)
a = ap.parse_args()
if a.allocator == "pagetune":
    if a.conf:
        os.environ["PAGETUNE_ALLOC_CONF"] = a.conf
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backend", "python"))
    import pagetune_alloc

    pagetune_alloc.install()
import torch  # noqa: E402
from torch.utils.cpp_extension import load_inline  # noqa: E402

src = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <chrono>
double pairs_us(int64_t bytes, int64_t n) {
  auto *a = c10::cuda::CUDACachingAllocator::get();
  void *p = a->raw_alloc(bytes);
  a->raw_delete(p);
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; i++) {
    p = a->raw_alloc(bytes);
    a->raw_delete(p);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / (double)n;
}
"""
try:
    ext = load_inline("pt_raw_alloc_bench", cpp_sources=src, functions=["pairs_us"], with_cuda=True,
                      extra_cflags=["-O2"], build_directory=os.environ.get("PT_EXT_DIR") or None, verbose=False)
except Exception as e:  # noqa: BLE001
    print(json.dumps({"allocator": a.allocator, "error": "the C++ extension did not build: %s" % str(e).splitlines()[-1:]}))
    sys.exit(1)
torch.empty(1, device="cuda")  # the context, before timing
out = {"allocator": a.allocator, "conf": a.conf, "pairs": a.pairs, "us_per_pair": {}}
for size in [512, 65536, 1 << 20, 16 << 20]:
    reps = sorted(ext.pairs_us(size, a.pairs) for _ in range(5))
    out["us_per_pair"][str(size)] = {"median": reps[2], "min": reps[0], "max": reps[-1]}
print(json.dumps(out))
