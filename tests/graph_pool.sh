#!/bin/sh
# graph_pool.sh — a CUDA graph's private pool from import to model, on the
# committed capture traces/knobs/graph_pool (H200, PyTorch 2.11): `trace
# import` writes the pool (+pool lines) and the capture's start (+capture),
# `trace stats` shows them, the imported trace reads back to the same model
# run as the snapshot (exact: 13 segments, 1 release, peak 136314880), the
# same trace without those lines (what a reader that skips them sees) still
# reads and gives the model without graph pools (12 segments, no release), and a
# malformed +pool line is one error naming the file and line, exit 1; explain
# does not count the pool's empty segment among those empty_cache gives back.
. "${top_srcdir:-.}/tests/wb_setup.sh"
snap=$top_srcdir/traces/knobs/graph_pool.pickle.gz
tr=$tmp/g.trace
"$pt" trace import "$snap" -o "$tr" >/dev/null 2>"$tmp/e" || fail "import: $(cat "$tmp/e")"
[ "$(grep -c '^+pool 1 0$' "$tr")" = 8 ] || fail "+pool lines: $(grep -c '^+pool' "$tr"), not 8 (5 requests, 3 segment_allocs)"
[ "$(grep -c '^+capture$' "$tr")" = 1 ] || fail "+capture lines: $(grep -c '^+capture' "$tr"), not 1"
grep -A1 '^+capture$' "$tr" | grep -q '^F 0x7f40bee00000 ' || fail "+capture is not on the empty_cache's segment_free"

# stats: the pool and the capture, from the snapshot and from the imported trace alike
for t in "$snap" "$tr"; do
  "$pt" trace stats --json "$t" >"$tmp/s.json" || fail "stats $t"
  python3 - "$tmp/s.json" <<'PY' || fail "stats of $t"
import json, sys
s = json.load(open(sys.argv[1]))
want = {"private_pools": 1, "private_pool_allocs": 5, "private_pool_segment_allocs": 3, "captures": 1, "allocs": 133}
bad = {k: (s.get(k), v) for k, v in want.items() if s.get(k) != v}
sys.exit("stats (got, want): %r" % bad if bad else 0)
PY
done
"$pt" trace stats "$tr" | grep -Eq '^private_pools +1 ' || fail "stats text has no private_pools line"
# a trace without pools says nothing of them
"$pt" trace stats --json "$top_srcdir/traces/llm_decode.pickle.gz" | grep -Eq "private_pool|captures" && fail "pool figures on a trace without"

# the model: exact from either, and the same figures
figures() { # TRACE -> "segments releases peak"
  "$pt" sim --trace "$1" --policy pytorch_native --json |
    python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["segments_allocated"], d["segment_releases"], d["peak_reserved_bytes"], d["observed_segment_allocs"], d["observed_segment_releases"], d["observed_peak_reserved_bytes"])'
}
[ "$(figures "$snap")" = "13 1 136314880 13 1 136314880" ] || fail "sim on the snapshot: $(figures "$snap")"
[ "$(figures "$tr")" = "13 1 136314880 13 1 136314880" ] || fail "sim on the imported trace: $(figures "$tr")"

# a reader that skips the lines: the same records, the model without graph pools
grep -v -e '^+pool' -e '^+capture' "$tr" >"$tmp/old.trace"
"$pt" trace stats --json "$tmp/old.trace" >"$tmp/o.json" || fail "the trace without +pool/+capture does not read"
grep -Eq "private_pool|captures" "$tmp/o.json" && fail "pool figures without +pool lines"
[ "$(figures "$tmp/old.trace")" = "12 0 136314880 13 1 136314880" ] || fail "sim without pools: $(figures "$tmp/old.trace")"

# explain: the graph pool's empty segment at the peak is not one empty_cache gives back
"$pt" explain --trace "$tr" --policy pytorch_native --json >"$tmp/x.json" || fail "explain --json"
python3 - "$tmp/x.json" <<'PY' || fail "explain on the graph pool"
import json, sys
x = json.load(open(sys.argv[1]))
segs = {g["addr"]: g for g in x["segments_with_free_space"]}
bad = []
if (x["pool_segments"], x["pool_free_bytes"], x["cached_segments"]) != (1, 2097152, 2):
    bad.append("pool_segments, pool_free_bytes, cached_segments: %r" % ((x["pool_segments"], x["pool_free_bytes"], x["cached_segments"]),))
if not segs.get(0x7f40b7e00000, {}).get("private_pool") or segs.get(0x7f40bee00000, {}).get("private_pool") is not False:
    bad.append("private_pool of 0x7f40b7e00000 (pool (1, 0)) and 0x7f40bee00000 (default)")
if x["pinned_free_bytes"] + x["cached_free_bytes"] + x["pool_free_bytes"] != sum(g["free_bytes"] for g in segs.values()):
    bad.append("pinned + cached + pool != the segments' free bytes")
sys.exit("; ".join(bad) if bad else 0)
PY
"$pt" explain --trace "$tr" --policy pytorch_native | grep -q "0x7f40b7e00000  no live block: cached in a CUDA graph's private pool" ||
  fail "explain text on the pool's segment"

# malformed: one line naming the file and the line, exit 1
n=$(grep -n '^+pool 1 0$' "$tr" | head -1 | cut -d: -f1)
sed "${n}s/.*/+pool 1/" "$tr" >"$tmp/bad.trace"
"$pt" sim --trace "$tmp/bad.trace" --policy pytorch_native >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] || fail "malformed +pool: exit $rc, not 1"
[ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "$tmp/bad.trace: line $n: missing field" "$tmp/e" || fail "malformed +pool: $(cat "$tmp/e")"
done_ok graph_pool
