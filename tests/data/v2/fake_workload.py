"""The workload tests/data/v2/confirm.db was confirmed with: no GPU, numbers fixed by the arm.

It writes the measurement file `pagetune confirm` names (PAGETUNE_CONFIRM_OUT) itself, in the
form the hook writes (backend/python/pagetune_confirm.py): the tuned arm (pytorch_expandable)
reserves 2 MiB less and steps 1% faster than the baseline (pytorch_native).
"""
import json
import os

arm = os.environ["PAGETUNE_CONFIRM_ARM"]
tuned = arm == "tuned"
line = {"pid": os.getpid(), "allocator": "pytorch",
        "peak_reserved_bytes": (264 if tuned else 266) << 20,
        "steps_s": [0.099, 0.1, 0.101] if tuned else [0.1, 0.101, 0.102],
        "gpu_name": "none (tests/data/v2/fake_workload.py)"}
with open(os.environ["PAGETUNE_CONFIRM_OUT"], "a") as f:
    f.write(json.dumps(line) + "\n")
