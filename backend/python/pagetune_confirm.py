"""pagetune_confirm: what `pagetune confirm` measures inside a Python workload.

    try:
        import pagetune_confirm       # on PYTHONPATH under `pagetune confirm`
    except ImportError:
        pagetune_confirm = None
    ...
    for batch in data:                # the workload's loop
        train_step(batch)
        if pagetune_confirm:
            pagetune_confirm.step()   # a step boundary

`pagetune confirm` runs the workload with PAGETUNE_CONFIRM_OUT naming a
file, and with a folder first on PYTHONPATH whose sitecustomize.py (a copy
of pagetune_confirm_sitecustomize.py) imports this module and calls
_start().  At interpreter exit (atexit: the program's end, sys.exit, an
uncaught exception; not os._exit or a signal) the process appends one JSON
line to that file, if it has something to say (torch initialised CUDA, or
steps were reported); several Python processes of one run append a line
each:

    {"pid": 4242, "allocator": "pytorch", "peak_reserved_bytes": 1126170624,
     "steps_s": [0.051, 0.049], "gpu_name": "NVIDIA H200",
     "torch_version": "2.11.0+cu130"}

allocator is "pagetune" when pagetune's allocator library was installed in
the process (pagetune_alloc.installed()), and peak_reserved_bytes is then
the library's own statistic (pagetune_alloc.stats()); otherwise "pytorch",
and the peak is torch.cuda.max_memory_reserved().  Both for the current
device.  A figure that cannot be read is null, with a "note" saying why
(under PYTORCH_NO_CUDA_MEMORY_CACHING PyTorch keeps no reserved counters).

step() marks a step boundary: the times between consecutive calls are the
step times (the first call starts the clock).  It first waits for the GPU
(torch.cuda.synchronize(), once torch has initialised CUDA), so that a
step's time holds its kernels; step(sync=False) does not wait.  Outside
confirm (no PAGETUNE_CONFIRM_OUT) step() does nothing, so a workload keeps
the calls.  This module imports nothing beyond the standard library.
"""
import os
import sys
import time

__all__ = ["step", "steps"]

_OUT = os.environ.get("PAGETUNE_CONFIRM_OUT") or None
_marks = []
_started = False


def step(sync=True):
    """A step boundary (a no-op outside `pagetune confirm`)."""
    if _OUT is None:
        return
    if sync:
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 -- a failed wait leaves the mark as it is
            pass
    _marks.append(time.perf_counter())


def steps():
    """The step times so far, in seconds."""
    return [b - a for a, b in zip(_marks, _marks[1:])]


def _measure():
    """This process's line, and whether it has something to say."""
    out = {"pid": os.getpid(), "allocator": None, "peak_reserved_bytes": None}
    notes = []
    torch = sys.modules.get("torch")
    cuda = False
    try:
        cuda = torch is not None and bool(torch.cuda.is_initialized())
    except Exception as e:  # noqa: BLE001
        notes.append("torch.cuda.is_initialized(): %s" % e)
    lib = sys.modules.get("pagetune_alloc")
    if lib is not None and getattr(lib, "installed", lambda: False)():
        out["allocator"] = "pagetune"
        try:
            dev = torch.cuda.current_device() if cuda else 0
            out["peak_reserved_bytes"] = int(lib.stats(dev)["peak_reserved_bytes"])
        except Exception as e:  # noqa: BLE001
            notes.append("pagetune_alloc.stats(): %s" % e)
    elif cuda:
        out["allocator"] = "pytorch"
        if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "") not in ("", "0"):
            notes.append("PYTORCH_NO_CUDA_MEMORY_CACHING: PyTorch's allocator keeps no reserved counters")
        else:
            try:
                out["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
            except Exception as e:  # noqa: BLE001
                notes.append("torch.cuda.max_memory_reserved(): %s" % e)
    if cuda:
        try:
            out["gpu_name"] = str(torch.cuda.get_device_name())
            out["torch_version"] = str(torch.__version__)
        except Exception as e:  # noqa: BLE001
            notes.append("torch.cuda.get_device_name(): %s" % e)
    s = steps()
    if s:
        out["steps_s"] = s
    if notes:
        out["note"] = "; ".join(notes)
    return out, cuda or bool(s) or out["allocator"] is not None


def _write():
    try:
        import json

        out, say = _measure()
        if not say:
            return
        line = (json.dumps(out) + "\n").encode()
        fd = os.open(_OUT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write of one line: processes appending at once do not interleave
        finally:
            os.close(fd)
    except Exception as e:  # noqa: BLE001 -- at exit: say it, and let the program's own status stand
        sys.stderr.write("pagetune_confirm: cannot write %s: %s\n" % (_OUT, e))


def _start():
    """Called by confirm's sitecustomize: write the line at exit."""
    global _started
    if _started or _OUT is None:
        return
    _started = True
    import atexit

    atexit.register(_write)


def _run_next_sitecustomize(this_file):
    """The sitecustomize this_file shadows (later on sys.path), if there is one, as
    pagetune_sitecustomize.py runs the one it shadows."""
    here = os.path.dirname(os.path.abspath(this_file))
    seen = False
    rest = []
    for p in sys.path:
        if seen:
            rest.append(p)
        elif os.path.abspath(p or ".") == here:
            seen = True
    for p in rest:
        f = os.path.join(p or ".", "sitecustomize.py")
        if os.path.abspath(f) != os.path.abspath(this_file) and os.path.isfile(f):
            with open(f, "rb") as src:
                code = compile(src.read(), f, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": f})
            return
