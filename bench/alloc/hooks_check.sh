#!/bin/sh
# hooks_check.sh — on a GPU machine with PyTorch: a policy with Lua hooks,
# exported with its hooks resolved into tables (results/large_page_threshold.json,
# from `pagetune export --format json`), run by the allocator library in the
# training loop of tests/gpu/alloc_loop.py, beside PyTorch's allocator: the
# losses must be equal.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
export PAGETUNE_ALLOC_LIB=${PAGETUNE_ALLOC_LIB:-$here/backend/.libs/libpagetune_alloc.so}
python3 "$here/tests/gpu/alloc_loop.py" default --steps 20 >/tmp/hc_default.json
PAGETUNE_CONFIG=$here/bench/alloc/results/large_page_threshold.json python3 "$here/tests/gpu/alloc_loop.py" pagetune --steps 20 >/tmp/hc_lpt.json
python3 - <<'PY'
import json
d = json.load(open("/tmp/hc_default.json")); p = json.load(open("/tmp/hc_lpt.json"))
print("served:", p["served"])
print("losses", "equal" if d["losses"] == p["losses"] else "DIFFER", "; peak reserved default %d, library %d; segments %s" % (
    d["peak_reserved_bytes"], p["peak_reserved_bytes"], p["stats"]["driver_calls"]["malloc"]))
PY
