#!/bin/sh
# calibrate_fake.sh — pagetune calibrate from end to end without a GPU: the
# driver is tests/fakecuda.c (a stand-in libcuda.so.1 built here with $CC)
# and python a stand-in that speaks calibrate_torch.py's protocol.  Checks
# the description (cost, bookkeeping_us, bookkeeping_loop with and without
# the crowded loop (--crowd) and torch_pair_us lines, the base's bookkeeping
# lines replaced, the rest of it loading), the JSON, torch that
# does not import (reported, exit 0), a torch run that fails (one error,
# exit 1), and that nothing is left held in the driver at exit.  Skips (77)
# in a build without CUDA.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
cc=${CC:-cc}
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$top_srcdir/sim/gpus}
"$pt" --version | grep -q '^cuda: yes' || { echo "SKIP: a build without CUDA"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/lib"
# shellcheck disable=SC2086
$cc ${SAN_FLAGS:-} -shared -fPIC -o "$tmp/lib/libcuda.so.1" "$top_srcdir/tests/fakecuda.c" 2>"$tmp/err" ||
  { echo "FAIL: tests/fakecuda.c does not build: $(cat "$tmp/err")"; exit 1; }
export LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FAKECUDA_REPORT="$tmp/held"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
held() { # what the driver still held when the program exited
  grep -q '^allocs 0 handles 0 reservations 0 maps 0 ctx_refs 0 ' "$tmp/held" ||
    fail "$1: the driver still held at exit: $(cat "$tmp/held" 2>/dev/null)"
}

# python: calibrate_torch.py's protocol, answered (MODE: ok, nocpp, crash)
cat >"$tmp/python" <<'PY'
#!/usr/bin/env python3
import json, os, sys
mode = os.environ.get("FAKE_TORCH", "ok")
what, args = sys.argv[2], sys.argv[3:]
opt = lambda k: args[args.index(k) + 1]
if what == "probe":
    print(json.dumps({"torch": "2.11.0", "cuda": True, "device": "Fake GPU"}))
elif what == "build":
    if mode == "nocpp":
        print(json.dumps({"error": "the C++ extension did not build: no g++"})); sys.exit(1)
    print(json.dumps({"built": True, "seconds": 0.1}))
else:
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if mode == "crash" and "cudaMallocAsync" in conf:
        print("Segmentation fault", file=sys.stderr); os.kill(os.getpid(), 11)
    sizes = [int(s) for s in opt("--sizes").split(",")]
    pairs = {str(s): {"median": 0.5, "min": 0.4, "max": 0.7, "pairs": int(opt("--pairs"))} for s in sizes}
    print(json.dumps({"from": "cpp_extension" if opt("--from") == "cpp" else "python",
                      "allocator_backend": "cudaMallocAsync" if "cudaMallocAsync" in conf else "native",
                      "expandable_segments": None if "cudaMallocAsync" in conf else "expandable" in conf,
                      "batches": int(opt("--batches")), "us_per_pair": pairs}))
PY
chmod +x "$tmp/python"

"$pt" gpu info >"$tmp/out" 2>&1 || fail "gpu info on the stand-in driver: $(cat "$tmp/out")"
quick="--repeat 2 --batches 3 --pairs 50 --torch-build $tmp/ext"

# the description
# shellcheck disable=SC2086
"$pt" calibrate $quick --python "$tmp/python" -o "$tmp/c.gpu" 2>"$tmp/err" || fail "calibrate: $(cat "$tmp/err")"
held "calibrate"
python3 - "$tmp/c.gpu" <<'PY' || fail "the description's lines"
import sys
lines = open(sys.argv[1]).read().splitlines()
sizes = [512, 65536, 1048576, 8388608, 67108864, 536870912]
bad = []
words = lambda l: l.split()
def points(ws):
    return [(int(b), float(u)) for b, u in (w.split(":") for w in ws)]
bk = [words(l) for l in lines if l.startswith("bookkeeping_us ")]
mech = {w[1]: w[2:] for w in bk if len(w) > 2}
if [w[1] for w in bk if len(w) > 2] != ["direct", "caching", "expandable", "async_pool", "stitch"]:
    bad.append("bookkeeping_us lines: %s" % bk)
if mech.get("direct") != ["0"]:
    bad.append("direct: %s" % mech.get("direct"))
for m in ["caching", "expandable", "async_pool", "stitch"]:
    p = points(mech.get(m, []))
    if [b for b, _ in p] != sizes or not all(u > 0 for _, u in p):
        bad.append("%s: %s" % (m, p))
# the cached loop's six points, then the crowded loop's four (the sizes up to 8 MiB, among 32 free blocks)
loop = {words(l)[1]: [w.split(":") for w in words(l)[2:]] for l in lines if l.startswith("bookkeeping_loop ")}
if list(loop) != ["caching", "expandable", "async_pool", "stitch"] or \
        any([int(w[0]) for w in p] != sizes + sizes[:4] or any(len(w) != 5 for w in p) for p in loop.values()):
    bad.append("bookkeeping_loop: %s" % loop)
if "# caching among 32 free blocks:" not in "\n".join(lines):
    bad.append("no comment with the crowded loop's pairs")
if not any(l.startswith("# replaced by the measurement below: bookkeeping_us stitch ") for l in lines):
    bad.append("the base's bookkeeping_us stitch line is not commented out")
if "bookkeeping_us 1.0" not in lines:
    bad.append("the base's constant bookkeeping_us went")
tp = {words(l)[1]: points(words(l)[2:]) for l in lines if l.startswith("torch_pair_us ")}
if list(tp) != ["native", "expandable", "cudaMallocAsync"] or any(p != [(s, 0.5) for s in sizes] for p in tp.values()):
    bad.append("torch_pair_us: %s" % tp)
if "# measured from C++ (cpp_extension): c10::cuda::CUDACachingAllocator raw_alloc + raw_delete" not in lines:
    bad.append("no comment saying the torch pairs are from C++")
if not any(l.startswith("# not used by the model") for l in lines):
    bad.append("no comment saying the model does not use torch_pair_us")
if any("WARNING" in l for l in lines):
    bad.append("a timed batch made driver calls: %s" % [l for l in lines if "WARNING" in l])
# the host's speed it measured at, in place of the base's (h200 says 0.035)
hs = [l for l in lines if l.startswith("host_clock_read_us ")]
if len(hs) != 1 or not 0 < float(hs[0].split()[1]) < 100:
    bad.append("host_clock_read_us lines: %s" % hs)
if "# replaced by the measurement below: host_clock_read_us 0.035" not in lines:
    bad.append("the base's host_clock_read_us is not commented out")
for call in ["malloc", "free", "mem_create", "mem_map", "mem_set_access", "mem_unmap", "mem_release",
             "address_reserve", "address_free"]:
    if not any(l.startswith("cost %s " % call) for l in lines):
        bad.append("no cost line for %s" % call)
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
grep -q '^calibrating PyTorch.s allocators through .*torch 2.11.0 on Fake GPU; the C++ extension (in .*/ext; about a minute the first time): ready' "$tmp/err" ||
  fail "calibrate's progress: $(cat "$tmp/err")"
# the description loads without its torch_pair_us lines (bookkeeping_us MECH BYTES:US is the parser's); with
# them once the parser takes them (the model does not use them)
grep -v '^torch_pair_us ' "$tmp/c.gpu" >"$tmp/rest.gpu"
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native --gpu "$tmp/rest.gpu" >/dev/null 2>"$tmp/err" ||
  fail "the calibrated description without its torch_pair_us lines does not load: $(cat "$tmp/err")"
if ! "$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native --gpu "$tmp/c.gpu" >/dev/null 2>"$tmp/err"; then
  if grep -q "unknown setting 'torch_pair_us'" "$tmp/err"; then
    echo "note: the GPU description parser does not take torch_pair_us lines yet: $(cat "$tmp/err")"
  else
    fail "the calibrated description does not load: $(cat "$tmp/err")"
  fi
fi

# the JSON, and the C++ extension not building: from Python, saying why
# shellcheck disable=SC2086
FAKE_TORCH=nocpp "$pt" calibrate $quick --python "$tmp/python" --json >"$tmp/c.json" 2>"$tmp/err" ||
  fail "calibrate --json: $(cat "$tmp/err")"
held "calibrate --json"
python3 - "$tmp/c.json" <<'PY' || fail "calibrate --json: its content"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["device"] == "Fake GPU" and o["points_us"]["malloc"] and 0 < o["host_clock_read_us"] < 100, o
m = o["mechanisms"]
assert m["batches"] == 3 and m["pairs"] == 50 and m["held_bytes"] == 512, m
assert m["crowd"] == 32 and m["crowd_upto"] == 8388608, m
assert list(m["points"]) == ["direct", "caching", "expandable", "async_pool", "stitch"], list(m["points"])
sizes = [512, 65536, 1048576, 8388608, 67108864, 536870912]
for name, pts in m["points"].items():
    assert [(p["bytes"], p["free_blocks"]) for p in pts] == [(s, 0) for s in sizes] + [(s, 32) for s in sizes[:4]], \
        (name, pts)
    assert name == "direct" or all(p["visits"] > c["visits"] for p, c in zip(pts[6:], pts)), (name, pts)
    for p in pts:
        want = 2 * p["pairs"] * p["batches"] if name == "direct" else 0
        assert p["driver_calls"] == want and p["pair_us"] > 0, (name, p)
        assert abs(p["bookkeeping_us"] - (0 if name == "direct" else p["pair_us"] / 2)) < 2e-4, (name, p)
t = o["torch"]
assert t["measured"] and not t["used_by_model"] and t["torch_version"] == "2.11.0", t
assert "no g++" in t["cpp_extension_error"], t
assert all(b["from"] == "python" and len(b["points"]) == 6 for b in t["backends"].values()), t["backends"]
print("ok: calibrate --json: %d mechanisms, %d torch backends from Python" % (len(m["points"]), len(t["backends"])))
PY

# torch that does not import: said, not an error
# shellcheck disable=SC2086
"$pt" calibrate $quick --python /bin/false -o "$tmp/f.gpu" 2>"$tmp/err" || fail "calibrate --python /bin/false: $(cat "$tmp/err")"
grep -q "^# PyTorch's allocators: not measured (torch is not importable with /bin/false: " "$tmp/f.gpu" ||
  fail "calibrate --python /bin/false: no comment saying torch was not measured"
grep -q '^torch_pair_us' "$tmp/f.gpu" && fail "calibrate --python /bin/false: torch_pair_us lines"
grep -q 'torch is not importable with /bin/false' "$tmp/err" || fail "calibrate --python /bin/false: nothing on stderr"
# --no-torch: nothing run
# shellcheck disable=SC2086
"$pt" calibrate $quick --no-torch --python /nonexistent -o "$tmp/n.gpu" 2>"$tmp/err" || fail "calibrate --no-torch: $(cat "$tmp/err")"
grep -q "^# PyTorch's allocators: not measured (--no-torch)" "$tmp/n.gpu" || fail "calibrate --no-torch: no comment"
# --crowd: 0 leaves the crowded loop out; 1 is refused before anything is measured
# shellcheck disable=SC2086
"$pt" calibrate $quick --no-torch --crowd 0 -o "$tmp/n0.gpu" 2>"$tmp/err" || fail "calibrate --crowd 0: $(cat "$tmp/err")"
[ "$(grep '^bookkeeping_loop caching ' "$tmp/n0.gpu" | wc -w)" -eq 8 ] ||
  fail "calibrate --crowd 0: $(grep '^bookkeeping_loop caching ' "$tmp/n0.gpu")"
grep -q "among .* free blocks" "$tmp/n0.gpu" && fail "calibrate --crowd 0: a comment on the crowded loop"
# shellcheck disable=SC2086
"$pt" calibrate $quick --no-torch --crowd 1 -o "$tmp/n1.gpu" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "pagetune: calibrate: --crowd is 0 (none) or 2..64" ] && [ ! -e "$tmp/n1.gpu" ] ||
  fail "calibrate --crowd 1: exit $rc, $(cat "$tmp/err")"

# a torch run that fails: exit 1, its last line the error, no description written
# shellcheck disable=SC2086
FAKE_TORCH=crash "$pt" calibrate $quick --python "$tmp/python" -o "$tmp/x.gpu" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "calibrate with a torch that crashes: exit $rc"
tail -n 1 "$tmp/err" | grep -q "^pagetune: calibrate: PyTorch's cudaMallocAsync allocator: .* measure: was killed by signal 11: 'Segmentation fault' (--no-torch leaves PyTorch out)$" ||
  fail "calibrate with a torch that crashes: $(tail -n 1 "$tmp/err")"
[ -e "$tmp/x.gpu" ] || [ -e "$tmp/x.gpu.tmp" ] && fail "calibrate with a torch that crashes wrote a description"
held "calibrate with a torch that crashes"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all calibrate checks on the stand-in driver passed"
