"""sitecustomize for `pagetune confirm`: the measurement hook, then the sitecustomize it shadows.

`pagetune confirm` copies this file as sitecustomize.py, with
pagetune_confirm.py beside it, into a folder it puts first on the
workload's PYTHONPATH, so that Python's `site` runs it when each Python
process of the workload starts.  It imports pagetune_confirm (the standard
library only: no torch) and has it write its line at exit (see
pagetune_confirm.py), then runs the sitecustomize next on sys.path: for an
arm under pagetune's allocator library, the one that installs the library
(pagetune_sitecustomize.py, in the folder `pagetune export --context`
writes, which confirm puts second), which runs the next in turn; for an arm
under PyTorch's allocator, the environment's own, if there is one.
"""
import sys

try:
    import pagetune_confirm

    pagetune_confirm._start()
except Exception as e:  # noqa: BLE001 -- the workload runs on, unmeasured: say so
    sys.stderr.write("pagetune_confirm: the measurement hook did not load: %s: %s\n" % (type(e).__name__, e))
    pagetune_confirm = None
if pagetune_confirm is not None:
    pagetune_confirm._run_next_sitecustomize(__file__)  # its errors are the shadowed file's, reported as site does
