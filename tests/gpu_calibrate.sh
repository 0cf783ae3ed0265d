#!/bin/sh
# gpu_calibrate.sh — pagetune calibrate's measurements of the allocators'
# own work on a real GPU: every mechanism at every size, cached pairs that
# make no driver call and take 0-100 µs, the crowded loop's pairs looking at
# more keys than the cached loop's, direct's two calls a pair, the
# base description's bookkeeping lines replaced, PyTorch's three backends
# when torch imports (not measured, and said so, when it does not), and the
# description loading.  Skips (77) without a GPU or in a build without CUDA.
#   PT_PYTHON=python3   the Python calibrate runs torch with
. "${top_srcdir:-.}/tests/gpu_setup.sh"
py=${PT_PYTHON:-python3}
torch=0
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && torch=1
echo "torch with a GPU under $py: $([ $torch = 1 ] && echo yes || echo no)"

# the mechanisms, as JSON: every point, no driver call in a cached mechanism's timed batches
"$pt" calibrate --repeat 1 --no-torch --json >"$tmp/c.json" 2>"$tmp/err" || fail "calibrate --json: $(tail -3 "$tmp/err")"
python3 - "$tmp/c.json" <<'PY' || fail "calibrate --json: the mechanisms"
import json, sys
o = json.load(open(sys.argv[1]))
sizes = [512, 65536, 1048576, 8388608, 67108864, 536870912]
crowded = [s for s in sizes if s <= 8388608]  # the crowded loop, among 32 free blocks
pts, bad = o["mechanisms"]["points"], 0
if (o["mechanisms"]["crowd"], o["mechanisms"]["crowd_upto"]) != (32, 8388608):
    print("FAIL: the crowded loop's plan: %s" % o["mechanisms"]); bad += 1
for m in ["direct", "caching", "expandable", "async_pool", "stitch"]:
    got = [(p["bytes"], p["free_blocks"]) for p in pts.get(m, [])]
    if got != [(s, 0) for s in sizes] + [(s, 32) for s in crowded]:
        print("FAIL: %s: sizes and free blocks %s" % (m, got)); bad += 1; continue
    for p, c in zip(pts[m][len(sizes):], pts[m]):  # a search among 32 free blocks looks at more keys
        if m != "direct" and not p["visits"] > c["visits"]:
            print("FAIL: %s at %d: %g visits among 32 free blocks, %g cached" % (m, p["bytes"], p["visits"], c["visits"]))
            bad += 1
    for p in pts[m]:
        calls = 2 * p["pairs"] * p["batches"] if m == "direct" else 0
        ok = p["pair_us"] > 0 and p["pair_us_min"] <= p["pair_us"] <= p["pair_us_max"] and p["driver_calls"] == calls
        if m != "direct":
            ok = ok and p["pair_us"] < 100 and abs(p["bookkeeping_us"] - p["pair_us"] / 2) < 1e-3
        else:
            ok = ok and p["bookkeeping_us"] == 0
        if not ok:
            print("FAIL: %s at %d: %s" % (m, p["bytes"], p)); bad += 1
    print("ok: %-10s µs a pair: %s" % (m, " ".join("%d:%.3f" % (p["bytes"], p["pair_us"]) for p in pts[m][:len(sizes)])))
    print("    %-10s among 32 free blocks, µs a pair (visits a request): %s" % ("", " ".join(
        "%d:%.3f (%.3g)" % (p["bytes"], p["pair_us"], p["visits"]) for p in pts[m][len(sizes):])))
assert o["torch"] == {"measured": False, "skipped": "--no-torch"}, o["torch"]
sys.exit(1 if bad else 0)
PY

# the description, with PyTorch's allocators when torch imports
t0=$(date +%s)
"$pt" calibrate --repeat 3 --python "$py" -o "$tmp/c.gpu" 2>"$tmp/err" || fail "calibrate: $(tail -3 "$tmp/err")"
echo "calibrate with torch: $(($(date +%s) - t0)) s"
cat "$tmp/err"
python3 - "$tmp/c.gpu" "$torch" <<'PY' || fail "calibrate: the description's lines"
import sys
lines = open(sys.argv[1]).read().splitlines()
torch = sys.argv[2] == "1"
sizes = [512, 65536, 1048576, 8388608, 67108864, 536870912]
bad = 0
def points(words):
    return [(int(b), float(u)) for b, u in (w.split(":") for w in words)]
bk = {l.split()[1]: l.split()[2:] for l in lines if l.startswith("bookkeeping_us ") and len(l.split()) > 2}
for m in ["caching", "expandable", "async_pool", "stitch"]:
    p = points(bk.get(m, []))
    if [b for b, _ in p] != sizes or not all(0 < u < 50 for _, u in p):
        print("FAIL: bookkeeping_us %s: %s" % (m, p)); bad += 1
if bk.get("direct") != ["0"]:
    print("FAIL: bookkeeping_us direct: %s" % bk.get("direct")); bad += 1
loop = {l.split()[1]: l.split()[2:] for l in lines if l.startswith("bookkeeping_loop ")}
for m in ["caching", "expandable", "async_pool", "stitch"]:  # the cached loop's six points, then the crowded loop's four
    got = [int(w.split(":")[0]) for w in loop.get(m, [])]
    if got != sizes + sizes[:4] or not all(len(w.split(":")) == 5 for w in loop[m]):
        print("FAIL: bookkeeping_loop %s: %s" % (m, loop.get(m))); bad += 1
if sum(l.startswith("bookkeeping_us ") and l.split()[1] in bk for l in lines) != 5:
    print("FAIL: more than one bookkeeping_us line a mechanism (the base's are not commented out)"); bad += 1
for l in lines:
    if "WARNING" in l:
        print("FAIL: " + l); bad += 1
tp = {l.split()[1]: points(l.split()[2:]) for l in lines if l.startswith("torch_pair_us ")}
if torch:
    for b in ["native", "expandable", "cudaMallocAsync"]:
        p = tp.get(b, [])
        if [s for s, _ in p] != sizes or not all(0 < u < 1000 for _, u in p):
            print("FAIL: torch_pair_us %s: %s" % (b, p)); bad += 1
        else:
            print("ok: torch %-15s µs a pair: %s" % (b, " ".join("%d:%.3f" % x for x in p)))
    how = [l for l in lines if l.startswith("# measured from")]
    if not how:
        print("FAIL: no comment saying how PyTorch's pairs were measured"); bad += 1
    else:
        print("ok: " + how[0][2:])
elif tp or not any(l.startswith("# PyTorch's allocators: not measured") for l in lines):
    print("FAIL: torch does not import, yet the description does not say it was not measured"); bad += 1
sys.exit(1 if bad else 0)
PY
grep -v '^torch_pair_us ' "$tmp/c.gpu" >"$tmp/rest.gpu"
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native --gpu "$tmp/rest.gpu" >/dev/null 2>"$tmp/err" ||
  fail "the calibrated description (without torch_pair_us) does not load: $(cat "$tmp/err")"
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native --gpu "$tmp/c.gpu" >/dev/null 2>"$tmp/err" ||
  fail "the calibrated description does not load (the parser must take torch_pair_us BACKEND BYTES:US lines): $(cat "$tmp/err")"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all calibrate checks passed"
