#!/bin/sh
# image_check.sh — on a GPU machine with PyTorch: the image's start-up hook
# for real.  sitecustomize.py (backend/python/pagetune_sitecustomize.py) and
# pagetune_alloc.py in a directory on PYTHONPATH, as export's Dockerfile
# lines put them: a program that only imports torch and allocates must run
# under the library (its statistics count the request); with
# PAGETUNE_DISABLE=1 under PyTorch's allocator.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$here/backend/python/pagetune_sitecustomize.py" "$dir/sitecustomize.py"
cp "$here/backend/python/pagetune_alloc.py" "$dir/pagetune_alloc.py"
export PAGETUNE_ALLOC_LIB=${PAGETUNE_ALLOC_LIB:-$here/backend/.libs/libpagetune_alloc.so}
prog='import torch
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
import sys
m = sys.modules.get("pagetune_alloc")
if m is not None and m.installed():
    s = m.stats(0); print("under the library:", s["mechanism"], "allocs", s["allocs"], "reserved", s["reserved_bytes"])
else:
    print("under the default allocator: reserved", torch.cuda.memory_reserved())'
PYTHONPATH=$dir PAGETUNE_ALLOC_CONF=mechanism=stitch python3 -c "$prog"
echo "hook rc=$?"
PYTHONPATH=$dir PAGETUNE_DISABLE=1 python3 -c "$prog"
echo "disabled rc=$?"
