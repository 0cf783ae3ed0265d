#!/bin/sh
# explain.sh — pagetune explain on committed snapshots: tests/data/frames.pickle
# (made by tests/data/make_snapshots.py with stack frames: a 2 MiB weight pins
# 18 MiB of a 20 MiB segment at the 42 MiB peak) and a real capture without
# frames; the figures add up, agree with sim, and bad input is refused.
# Skips (77) without python3 (the JSON is read with it).
. "${top_srcdir:-.}/tests/py_setup.sh"
snap=$top_srcdir/tests/data/frames.pickle

# text: the largest waste first, its block's frames, the summary last
"$pt" explain --trace "$snap" >"$tmp/out" 2>"$tmp/err" || fail "explain: $(cat "$tmp/err")"
sed -n '/segments with free space/{n;p;}' "$tmp/out" | grep -q '18.00 MiB free of  20.00 MiB  segment 0x7f1000000000  pinned by 1 live block (2.00 MiB)' ||
  fail "text: the first segment: $(cat "$tmp/out")"
grep -A1 'allocated at record 2$' "$tmp/out" | grep -q 'load_weights (/home/user/project/model.py:42)' || fail "text: the weight's frame"
tail -1 "$tmp/out" | grep -q '^summary: 42.00 MiB reserved at the peak, 21.00 MiB live: 21.00 MiB free, 21.00 MiB of it in 3 segments that live blocks pin; the most, 18.00 MiB, held by a 2.00 MiB block from load_weights' ||
  fail "text: summary: $(tail -1 "$tmp/out")"

# JSON: the figures, and every one adds up
"$pt" explain --trace "$snap" --json >"$tmp/j" || fail "explain --json"
python3 - "$tmp/j" <<'PY' || fails=$((fails + 1))
import json, sys
j = json.load(open(sys.argv[1]))
MiB = 1 << 20
want = {"peak_reserved_bytes": 42 * MiB, "live_bytes": 21 * MiB + 4096, "live_blocks": 3, "segments": 3,
        "pinned_segments": 3, "cached_segments": 0, "record_at_peak": 8, "frames_recorded": True}
bad = [(k, v, j.get(k)) for k, v in want.items() if j.get(k) != v]
segs = j["segments_with_free_space"]
if [s["free_bytes"] for s in segs] != [18 * MiB, 2 * MiB - 4096, MiB]:
    bad.append(("free_bytes by segment", None, [s["free_bytes"] for s in segs]))
b = segs[0]["blocks"][0]
if (b["bytes"], b["record"], [f["name"] for f in b["frames"]]) != (2 * MiB, 2, ["load_weights", "setup", "<module>"]):
    bad.append(("first block", None, b))
if segs[0]["blocks"][0]["frames"][0] != {"name": "load_weights", "file": "/home/user/project/model.py", "line": 42}:
    bad.append(("frame", None, segs[0]["blocks"][0]["frames"][0]))
if j["free_bytes"] != j["peak_reserved_bytes"] - j["live_bytes"] or j["pinned_free_bytes"] != sum(s["free_bytes"] for s in segs):
    bad.append(("sums", None, j))
for k, v, got in bad:
    print(f"FAIL: json: {k}: want {v}, got {got}")
sys.exit(1 if bad else 0)
PY

# without frames: the same figures, "no frames recorded"
"$pt" trace import "$snap" -o "$tmp/s.trace" --strip-frames >/dev/null || fail "import --strip-frames"
"$pt" explain --trace "$tmp/s.trace" >"$tmp/s.out" || fail "explain stripped"
grep -q 'the trace has no stack frames' "$tmp/s.out" && grep -q '(no frames recorded)' "$tmp/s.out" || fail "stripped: frames said"
"$pt" explain --trace "$tmp/s.trace" --json >"$tmp/sj" || fail "explain stripped --json"
python3 - "$tmp/j" "$tmp/sj" <<'PY' || fail "stripped: other figures than with frames"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for j in (a, b):
    for k in ("trace", "frames_recorded", "summary"):
        j.pop(k)
    for g in j["segments_with_free_space"]:
        for bl in g["blocks"]:
            bl.pop("frames")
sys.exit(0 if a == b else 1)
PY

# a real capture (no frames) under two policies: explain's peak is sim's, the segments add up
for pol in pytorch_native pytorch_expandable; do
  tr=$top_srcdir/traces/llm_decode.pickle.gz
  "$pt" explain --trace "$tr" --policy "$pol" --json >"$tmp/e.json" || { fail "explain $pol"; continue; }
  "$pt" sim --trace "$tr" --policy "$pol" --json >"$tmp/s.json" || { fail "sim $pol"; continue; }
  python3 - "$tmp/e.json" "$tmp/s.json" "$pol" <<'PY' || fails=$((fails + 1))
import json, sys
e, s, pol = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
bad = []
if e["peak_reserved_bytes"] != s["peak_reserved_bytes"]:
    bad.append(f"peak {e['peak_reserved_bytes']} != sim's {s['peak_reserved_bytes']}")
segs = e["segments_with_free_space"]
for g in segs:
    if g["free_bytes"] != g["bytes"] - sum(b["bytes"] for b in g["blocks"]) or g["live_bytes"] != sum(b["bytes"] for b in g["blocks"]):
        bad.append(f"segment {g['addr']}: bytes {g['bytes']}, free {g['free_bytes']}, blocks don't add up")
if e["pinned_free_bytes"] + e["cached_free_bytes"] != sum(g["free_bytes"] for g in segs):
    bad.append("pinned + cached != the segments' free bytes")
if sorted((g["free_bytes"] for g in segs), reverse=True) != [g["free_bytes"] for g in segs]:
    bad.append("not the most free space first")
if e["frames_recorded"]:
    bad.append("frames in a capture without them")
for b in bad:
    print(f"FAIL: {pol}: {b}")
sys.exit(1 if bad else 0)
PY
done

# under a cap that some requests cannot fit, explain says how many failed, as sim counts them
for cap in 300M 1; do
  "$pt" explain --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --capacity $cap --json >"$tmp/oe.json" || fail "explain --capacity $cap"
  "$pt" sim --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy pytorch_native --capacity $cap --json >"$tmp/os.json" ||
    fail "sim --capacity $cap"
  python3 - "$tmp/oe.json" "$tmp/os.json" <<'PY' || fail "explain --capacity $cap: ooms not sim's, or 0"
import json, sys
e, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sys.exit(0 if s["ooms"] > 0 and e.get("ooms") == s["ooms"] and ("ran out of memory" in e["summary"]) == (e["peak_reserved_bytes"] == 0) else 1)
PY
  "$pt" explain --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --capacity $cap >"$tmp/ot" || fail "explain --capacity $cap text"
  grep -q "request.* failed under the cap\|requests ran out of memory under the cap" "$tmp/ot" || fail "explain --capacity $cap: no word of the OOMs"
done

# bad input: one line, exit 1; bad usage: exit 2
"$pt" explain --trace "$tmp/nope.trace" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'nope.trace' "$tmp/err" || fail "missing trace: exit $rc, $(cat "$tmp/err")"
"$pt" explain >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "no --trace: exit $rc, not 2"
"$pt" explain --trace "$snap" --set no_such_knob=1 >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "bad --set: exit $rc, not 2"
"$pt" --help | grep -q '^  explain ' || fail "pagetune --help does not list explain"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
