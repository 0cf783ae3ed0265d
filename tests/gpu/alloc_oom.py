"""alloc_oom.py: what a PyTorch program sees when pagetune's library runs out of memory.

    PAGETUNE_ALLOC_CONF="mechanism=caching,capacity=1073741824" python3 alloc_oom.py

Installs the library with a 1 GiB cap, allocates 512 MiB (fits), then 1 GiB
(past the cap), and prints one JSON line: what happened to the second
request (an exception and its text, or a tensor and its data_ptr), whether a
kernel on it then worked, and the library's statistics.
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backend", "python"))
import pagetune_alloc  # noqa: E402

out = {"served": pagetune_alloc.install()}
import torch  # noqa: E402

a = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
out["first_ptr_nonzero"] = a.data_ptr() != 0
try:
    b = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    out["second"] = {"raised": None, "data_ptr": b.data_ptr()}
    try:
        b.fill_(1)
        torch.cuda.synchronize()
        out["kernel_on_it"] = "ran"
    except Exception as e:  # noqa: BLE001
        out["kernel_on_it"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
except Exception as e:  # noqa: BLE001
    out["second"] = {"raised": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                     "message": str(e).splitlines()[:3]}
try:  # the program goes on: a request that fits still works, and the GPU with it
    c = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    c.fill_(3)
    torch.cuda.synchronize()
    out["after"] = "a 256 MiB tensor allocated and filled"
except Exception as e:  # noqa: BLE001
    out["after"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
try:
    out["stats"] = pagetune_alloc.stats(0)
except Exception:  # noqa: BLE001
    out["stats"] = traceback.format_exc().splitlines()[-1]
print(json.dumps(out))
