"""pagetune_alloc: pagetune's allocator library in a PyTorch program.

    import pagetune_alloc
    pagetune_alloc.install()          # before the first CUDA allocation
    ...                               # the workload
    pagetune_alloc.stats(0)           # {"reserved_bytes": ..., "peak_reserved_bytes": ..., ...}
    pagetune_alloc.empty_cache()      # torch.cuda.empty_cache() does not reach a pluggable allocator
    pagetune_alloc.reset_peak_stats()

The library (libpagetune_alloc.so) reads its configuration when it loads:
the file PAGETUNE_CONFIG names (what `pagetune export --format json`
writes), else PAGETUNE_ALLOC_CONF ("mechanism=caching,max_split_size_mb=64"),
else PyTorch's defaults.  Where the library is: install()'s argument, else
PAGETUNE_ALLOC_LIB, else libpagetune_alloc.so beside this file.

Under a pluggable allocator torch.cuda.memory_stats(), memory history and
empty_cache() are PyTorch's and see nothing of this one: use the functions
here.  A request the library cannot serve (out of memory, past the
configured cap) raises RuntimeError("pagetune_alloc: device D: out of
memory: N bytes asked, H held from the driver, L in live requests, ...");
it is not a torch.OutOfMemoryError, which only PyTorch's own allocator
raises.
"""
import ctypes
import json
import os

__all__ = ["install", "installed", "stats", "empty_cache", "reset_peak_stats", "library_path"]

_lib = None


def library_path(path=None):
    """Where the library is: path, PAGETUNE_ALLOC_LIB, or beside this module."""
    if path:
        return path
    env = os.environ.get("PAGETUNE_ALLOC_LIB")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libpagetune_alloc.so")


def _load(path):
    lib = ctypes.CDLL(path)
    lib.pagetune_status.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.pagetune_status.restype = ctypes.c_int
    lib.pagetune_stats_json.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.pagetune_stats_json.restype = ctypes.c_int
    lib.pagetune_empty_cache.argtypes = [ctypes.c_int]
    lib.pagetune_reset_peak_stats.argtypes = [ctypes.c_int]
    lib.pagetune_last_error.restype = ctypes.c_char_p
    return lib


def install(path=None):
    """Load the library, check its configuration, and make it PyTorch's CUDA allocator.

    Raises RuntimeError, saying why, when the library did not start (a bad
    configuration, no GPU driver); PyTorch raises if CUDA memory was already
    allocated in this process.  Returns what the library serves.
    """
    global _lib
    import torch

    path = library_path(path)
    if not os.path.exists(path):
        raise RuntimeError("pagetune_alloc: no library at %s (set PAGETUNE_ALLOC_LIB)" % path)
    lib = _load(path)
    buf = ctypes.create_string_buffer(1024)
    if not lib.pagetune_status(buf, len(buf)):
        raise RuntimeError("pagetune_alloc: %s" % buf.value.decode(errors="replace"))
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, "pagetune_malloc", "pagetune_free")
    torch.cuda.memory.change_current_allocator(alloc)
    _lib = lib
    return buf.value.decode(errors="replace")


def installed():
    return _lib is not None


def _need():
    if _lib is None:
        raise RuntimeError("pagetune_alloc: install() first")
    return _lib


def _devices(device):
    if device is not None:
        return [device]
    import torch

    return list(range(torch.cuda.device_count()))


def stats(device=0):
    """The library's statistics for one device: bytes reserved and allocated (now and peak), requests,
    OOMs, cache hits, retries, collections, driver calls by kind."""
    lib = _need()
    buf = ctypes.create_string_buffer(4096)
    n = lib.pagetune_stats_json(device, buf, len(buf))
    if n < 0 or n >= len(buf):
        raise RuntimeError("pagetune_alloc: no statistics for device %d" % device)
    return json.loads(buf.value.decode())


def empty_cache(device=None):
    """Cached memory back to the driver, on one device or all."""
    lib = _need()
    for d in _devices(device):
        if lib.pagetune_empty_cache(d) < 0:
            raise RuntimeError("pagetune_alloc: %s" % lib.pagetune_last_error().decode(errors="replace"))


def reset_peak_stats(device=None):
    lib = _need()
    for d in _devices(device):
        lib.pagetune_reset_peak_stats(d)
