"""sitecustomize for an image with pagetune's allocator: install it when torch is first imported.

`pagetune export --format dockerfile` copies this file into the image as
sitecustomize.py in a directory on PYTHONPATH (/opt/pagetune/python, beside
pagetune_alloc.py), so that Python's `site` runs it at every interpreter
start.  At start it only puts a finder at the front of sys.meta_path: it
imports neither torch (a second or more in every Python process of the
image) nor ctypes nor pagetune_alloc.  The finder acts once, when `torch` is
first imported (`import torch`, `import torch.nn`, `from torch import ...`):
it lets torch's own loader run the package, then

  - CUDA not available (torch.cuda.is_available() false): nothing;
  - otherwise, if CUDA memory was already allocated (torch.cuda.is_initialized()),
    it is too late to swap the allocator: a failure (below);
  - otherwise pagetune_alloc.install(): the library becomes PyTorch's CUDA
    allocator before the program has a torch to allocate with.

A process that never imports torch loads nothing more; PAGETUNE_DISABLE=1
(any value but empty and 0) leaves even the finder out, so the process runs
with PyTorch's allocator.

A failure (no library, a configuration the library refuses, no GPU driver,
CUDA initialised too early) is one line on stderr (after the library's own
line, when the library loaded and refused its configuration), then, by default, the
program stops (SystemExit, status 1) from its `import torch`.  Why stop: an
image built with a tuned allocator was built to run that allocator, with the
memory behaviour pagetune's model predicted; carrying on with PyTorch's
allocator would run a different policy under a line in a log that nobody
reads, and the first sign would be an out-of-memory error hours later.
PAGETUNE_ON_INSTALL_ERROR=continue chooses the other way: the line on
stderr, then the program goes on with PyTorch's allocator.  PAGETUNE_DISABLE=1
is the escape hatch for a process that must run anyway.

torch.cuda.is_available() is PyTorch's own check: by default it asks the
CUDA runtime for the device count, as the first CUDA call of any program
would; a program that forks workers which use CUDA should set
PYTORCH_NVML_BASED_CUDA_CHECK=1, the check that leaves CUDA uninitialised.

A sitecustomize the base image had (later on sys.path) is still run, after
the finder is in place: this one does not hide it.
"""
import os
import sys

_PREFIX = "pagetune_sitecustomize: "


def _disabled():
    return os.environ.get("PAGETUNE_DISABLE", "") not in ("", "0")


def _fail(reason):
    line = _PREFIX + "cannot install pagetune's allocator: " + reason.replace("\n", " ")
    if os.environ.get("PAGETUNE_ON_INSTALL_ERROR", "") == "continue":
        sys.stderr.write(line + "; going on with PyTorch's allocator\n")
        return
    sys.stderr.write(line + " (PAGETUNE_DISABLE=1 runs with PyTorch's allocator; PAGETUNE_ON_INSTALL_ERROR=continue goes on)\n")
    raise SystemExit(1)


def _after_torch(torch):
    """torch has just been imported: install the library where CUDA is there and untouched."""
    try:
        if not torch.cuda.is_available():
            return
        if torch.cuda.is_initialized():
            raise RuntimeError("CUDA was initialised while torch was imported: too late to swap the allocator")
        import pagetune_alloc

        pagetune_alloc.install()
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 -- any failure is the one line, then stop or go on
        _fail("%s: %s" % (type(e).__name__, e))


class _TorchFinder:
    """Finds nothing itself: for `torch`, wraps the spec the other finders give so that _after_torch runs once."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)  # once: later imports of torch are cached anyway
        except ValueError:
            pass
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None  # no torch here: the import fails as it would have
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None or isinstance(loader, type):  # a loader class (builtin, frozen) is shared: left alone
            return spec

        def exec_module(module):
            run(module)
            try:
                del loader.exec_module  # the loader as it was
            except AttributeError:
                pass
            _after_torch(module)

        loader.exec_module = exec_module
        return spec


def _run_next_sitecustomize():
    """The sitecustomize this one shadows (later on sys.path), if there is one."""
    here = os.path.dirname(os.path.abspath(__file__))
    seen = False
    rest = []
    for p in sys.path:
        if seen:
            rest.append(p)
        elif os.path.abspath(p or ".") == here:
            seen = True
    for p in rest:
        f = os.path.join(p or ".", "sitecustomize.py")
        if os.path.abspath(f) != os.path.abspath(__file__) and os.path.isfile(f):
            with open(f, "rb") as src:
                code = compile(src.read(), f, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": f})
            return


if not _disabled() and "torch" not in sys.modules:
    sys.meta_path.insert(0, _TorchFinder())
_run_next_sitecustomize()
