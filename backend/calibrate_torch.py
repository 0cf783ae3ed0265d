"""calibrate_torch.py — a cached allocate + free pair through PyTorch's CUDA allocator, timed.

`pagetune calibrate` runs it (backend/torchcal.c): once to see whether torch imports and sees a GPU, once to
build the C++ extension, then once per allocator backend, each in a fresh process with PYTORCH_CUDA_ALLOC_CONF
set by the caller (the allocator reads it when CUDA initialises, so it cannot change inside a process).
bench/alloc/raw_alloc.py and bench/alloc/empty_del.py import it and call measure().

    python3 calibrate_torch.py probe
    python3 calibrate_torch.py build --build-dir DIR
    python3 calibrate_torch.py measure --from cpp|python [--build-dir DIR] [--sizes 512,65536,...]
                                       [--batches 5] [--pairs 2000]

Each prints one JSON object, the last line of its standard output, and exits 0; a failure is one line
{"error": "..."} and exit 1.  Everything else (the build's output, warnings) goes to standard error.

measure's pair: from C++ ("cpp"), c10::cuda::CUDACachingAllocator::raw_alloc + raw_delete of the current
allocator in a torch.utils.cpp_extension module built once into DIR and loaded from there after; from
Python, torch.empty(size, dtype=torch.uint8, device="cuda") + del.  For each size: a first pair and 5 ms of
warm-up pairs, then `batches` batches of `pairs` pairs back to back, garbage collection off; each batch's
mean µs a pair, and the median, least and most of those ("us_per_pair").
"""
import argparse
import gc
import json
import os
import sys
import time

EXT_NAME = "pagetune_calibrate_pairs"
WARM_PAIRS = 20  # warm-up pairs in rounds of these, until WARM_S has passed
WARM_S = 0.005
DEFAULT_SIZES = [512, 64 << 10, 1 << 20, 8 << 20, 64 << 20, 512 << 20]

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <chrono>
// The mean us of n pairs of raw_alloc + raw_delete of `bytes`, back to back, through the current allocator.
double pairs_us(int64_t bytes, int64_t n) {
  auto *a = c10::cuda::CUDACachingAllocator::get();
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; i++) a->raw_delete(a->raw_alloc((size_t)bytes));
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / (double)n;
}
"""


class Failure(Exception):
    """What went wrong, in one line."""


def last_line(e):
    """The last non-empty line of an exception's text (a build's error is at its end)."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    return "%s: %s" % (type(e).__name__, lines[-1] if lines else "(no message)")


def import_torch():
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001 (ImportError, or a broken install's own error)
        raise Failure("torch is not importable: %s" % last_line(e))
    return sys.modules["torch"]


def build_extension(build_dir):
    """The C++ module (built into build_dir once; later calls load it from there)."""
    torch = import_torch()
    from torch.utils.cpp_extension import load_inline

    os.makedirs(build_dir, exist_ok=True)
    try:
        return load_inline(EXT_NAME, cpp_sources=CPP_SOURCE, functions=["pairs_us"], with_cuda=True,
                           extra_cflags=["-O2"], build_directory=build_dir, verbose=False)
    except Exception as e:  # noqa: BLE001
        raise Failure("the C++ extension did not build (torch %s): %s" % (torch.__version__, last_line(e)))


def python_pairs_us(torch, size, n):
    empty, u8, dev = torch.empty, torch.uint8, torch.device("cuda")
    t0 = time.perf_counter()
    for _ in range(n):
        t = empty(size, dtype=u8, device=dev)
        del t
    return (time.perf_counter() - t0) / n * 1e6


def allocator_backend(torch):
    """What torch says its CUDA allocator is ("native", "cudaMallocAsync", a pluggable one's name), or None."""
    try:
        return torch.cuda.get_allocator_backend()
    except Exception:  # noqa: BLE001
        return None


def expandable_segments(torch):
    """Whether the allocator's segments are expandable, as its snapshot says (None when it cannot say)."""
    try:
        segs = torch.cuda.memory_snapshot()
    except Exception:  # noqa: BLE001 (cudaMallocAsync keeps no snapshot)
        return None
    seen = {bool(s["is_expandable"]) for s in segs if isinstance(s, dict) and "is_expandable" in s}
    return all(seen) if seen else None


def measure(mode, sizes=None, batches=5, pairs=2000, build_dir=None):
    """Pairs at each size through the allocator torch has now ("cpp" or "python"): a dict, or Failure."""
    sizes = sizes or DEFAULT_SIZES
    torch = import_torch()
    if not torch.cuda.is_available():
        raise Failure("torch %s sees no GPU" % torch.__version__)
    if mode == "cpp":
        if not build_dir:
            raise Failure("measure --from cpp needs --build-dir")
        ext = build_extension(build_dir)
        pair = ext.pairs_us
    elif mode == "python":
        def pair(size, n):
            return python_pairs_us(torch, size, n)
    else:
        raise Failure("unknown mode %r (cpp, python)" % mode)
    torch.empty(1, device="cuda")  # the context and the allocator, before anything is timed
    out = {"from": "cpp_extension" if mode == "cpp" else "python",
           "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0),
           "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
           "allocator_backend": allocator_backend(torch),
           "batches": batches, "pairs": pairs, "us_per_pair": {}}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for size in sizes:
            pair(size, 1)
            t0 = time.perf_counter()
            while True:
                pair(size, WARM_PAIRS)
                if time.perf_counter() - t0 >= WARM_S:
                    break
            reps = sorted(pair(size, pairs) for _ in range(batches))
            k = len(reps)
            median = reps[k // 2] if k % 2 else (reps[k // 2 - 1] + reps[k // 2]) / 2
            out["us_per_pair"][str(size)] = {"median": median, "min": reps[0], "max": reps[-1], "pairs": pairs}
    except Exception as e:  # noqa: BLE001 (out of memory, a driver error)
        raise Failure("timing pairs: %s" % last_line(e))
    finally:
        if enabled:
            gc.enable()
    out["expandable_segments"] = expandable_segments(torch)
    return out


def probe():
    torch = import_torch()
    out = {"torch": torch.__version__, "python": sys.version.split()[0], "cuda": bool(torch.cuda.is_available())}
    if out["cuda"]:
        out["device"] = torch.cuda.get_device_name(0)
    return out


def build(build_dir):
    # calibrate runs one of these at a time, so a lock left in the directory is a killed build's
    lock = os.path.join(build_dir, "lock")
    if os.path.exists(lock):
        os.remove(lock)
    t0 = time.monotonic()
    build_extension(build_dir)
    return {"built": True, "seconds": round(time.monotonic() - t0, 1)}


def sizes_arg(text):
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("sizes are bytes, comma-separated")
    if not v or min(v) < 1:
        raise argparse.ArgumentTypeError("sizes are positive")
    return v


def main(argv):
    ap = argparse.ArgumentParser(prog="calibrate_torch.py", description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["probe", "build", "measure"])
    ap.add_argument("--build-dir", default=None)
    ap.add_argument("--from", dest="mode", choices=["cpp", "python"], default="cpp")
    ap.add_argument("--sizes", type=sizes_arg, default=DEFAULT_SIZES)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=2000)
    a = ap.parse_args(argv)
    # the result line is the only thing on standard output: whatever else writes to fd 1 goes to stderr
    result = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    try:
        if a.what == "probe":
            out = probe()
        elif a.what == "build":
            if not a.build_dir:
                raise Failure("build needs --build-dir")
            out = build(a.build_dir)
        else:
            if a.batches < 1 or a.pairs < 1:
                raise Failure("--batches and --pairs must be at least 1")
            out = measure(a.mode, a.sizes, a.batches, a.pairs, a.build_dir)
        code = 0
    except Failure as e:
        out, code = {"error": str(e)}, 1
    result.write(json.dumps(out) + "\n")
    result.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
