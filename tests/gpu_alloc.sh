#!/bin/sh
# gpu_alloc.sh — pagetune's allocator library in a real PyTorch loop on a
# GPU: the same deterministic training loop (tests/gpu/alloc_loop.py) under
# PyTorch's allocator twice (it must repeat itself), then under the library
# with each mechanism: every run's losses must equal the default's bit for
# bit (a lost or overlapping mapping would show), and the library's
# statistics must be sane.  Prints each run's peak reserved bytes and median
# step time.  Skips (77) without a GPU, without torch, or in a build without
# the library.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
lib=$top_builddir/backend/.libs/libpagetune_alloc.so
loop=$top_srcdir/tests/gpu/alloc_loop.py
[ -f "$lib" ] || { echo "SKIP: no libpagetune_alloc.so (a build without CUDA)"; exit 77; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { echo "SKIP: no torch with a GPU here"; exit 77; }
export PAGETUNE_ALLOC_LIB=$lib
unset PAGETUNE_CONFIG PAGETUNE_ALLOC_CONF
steps=${PT_GPU_STEPS:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { # NAME ARGS...: one process, its JSON line in $tmp/NAME.json
  name=$1
  shift
  python3 "$loop" "$@" --steps "$steps" >"$tmp/$name.json" 2>"$tmp/$name.err" || { fail "$name: $(tail -3 "$tmp/$name.err")"; return 1; }
}
run default1 default
run default2 default
for m in caching expandable stitch direct async_pool; do run "$m" pagetune --conf "mechanism=$m"; done
python3 - "$tmp" <<'PY' || fails=$((fails + 1))
import json, os, sys
d = sys.argv[1]
runs = {f[:-5]: json.load(open(os.path.join(d, f))) for f in os.listdir(d) if f.endswith(".json") and os.path.getsize(os.path.join(d, f))}
base = runs.get("default1")
bad = 0
if not base:
    print("FAIL: the default run did not finish"); sys.exit(1)
for name in ["default1", "default2", "caching", "expandable", "stitch", "direct", "async_pool"]:
    r = runs.get(name)
    if not r:
        continue
    same = r["losses"] == base["losses"]
    line = "%-10s peak reserved %12d  peak allocated %12d  median step %.2f ms  losses %s" % (
        name, r["peak_reserved_bytes"], r["peak_allocated_bytes"], r["median_step_s"] * 1e3, "equal" if same else "DIFFER")
    print(("ok: " if same else "FAIL: ") + line)
    bad += not same
    s = r.get("stats")
    if s:
        if s["allocated_bytes"] < 0 or s["peak_reserved_bytes"] < s["peak_allocated_bytes"] or s["allocs"] == 0 or s["ooms"]:
            print("FAIL: %s: statistics %s" % (name, s)); bad += 1
sys.exit(1 if bad else 0)
PY
[ $fails -eq 0 ] && echo "all allocator-library checks passed"
[ $fails -eq 0 ]
