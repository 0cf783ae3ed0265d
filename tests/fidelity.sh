#!/bin/sh
# fidelity.sh — the acceptance that matters: on every real trace captured on
# the H200, `pagetune sim` with the pytorch_native policy, set as that
# capture's PYTORCH_CUDA_ALLOC_CONF and memory cap were (traces/NAME.json),
# reproduces the number of segments the real allocator created and its peak
# reserved bytes, exactly; and the expandable policy reproduces the peak
# mapped bytes, the maps and the unmaps of the expandable_segments:True
# captures (with roundup, max_split_size_mb, and a GC threshold under a cap
# too, each set as captured); segments given back are compared as the
# snapshot counts them (segment_free and segment_unmap records).
# The sim's JSON is parsed (python3's json): each compared key must be there,
# an integer, and equal to its recorded twin, and the recorded peak must be
# above 0, so output without the figures (say `{}`) fails.  Skips (77)
# where python3 is missing.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR="$top_srcdir/policies"
fails=0
# compare WHAT MODEL_KEY RECORDED_KEY [MODEL_KEY RECORDED_KEY]...: the sim's JSON on stdin
compare() {
  python3 -c '
import json, sys
what, pairs = sys.argv[1], sys.argv[2:]
try:
    out = json.loads(sys.stdin.read())
except ValueError as e:
    sys.exit("FAIL: %s: output is not JSON (%s)" % (what, e))
if not isinstance(out, dict):
    sys.exit("FAIL: %s: output is not a JSON object" % what)
def value(k):
    v = out
    for part in k.split("."):  # driver_calls.mem_set_access: a member of a member
        v = v.get(part) if isinstance(v, dict) else None
    if type(v) is not int:
        sys.exit("FAIL: %s: %s" % (what, "no %s" % k if v is None else "%s is %r, not an integer" % (k, v)))
    return v
got, bad = [], []
for m, r in zip(pairs[0::2], pairs[1::2]):
    a, b = value(m), value(r)
    got.append("%s=%d" % (m, a))
    if a != b: bad.append("model %s=%d, recorded %s=%d" % (m, a, r, b))
if value("observed_peak_reserved_bytes") <= 0:
    bad.append("recorded peak reserved bytes is 0")
if bad: sys.exit("FAIL: %s: %s" % (what, "; ".join(bad)))
print("ok: %s: %s" % (what, ", ".join(got)))
' "$@"
}
check() { # NAME POLICY [ARGS...]
  name=$1 policy=$2; shift 2
  out=$("$pt" sim --trace "$top_srcdir/traces/$name.pickle.gz" --policy "$policy" "$@" --json) ||
    { echo "FAIL: $name: sim failed"; fails=$((fails + 1)); return; }
  printf '%s' "$out" | compare "$name ($policy $*)" peak_reserved_bytes observed_peak_reserved_bytes \
    segments_allocated observed_segment_allocs segment_releases observed_segment_releases || fails=$((fails + 1))
}
for n in randn_loop cnn_train transformer_train varlen_infer llm_decode weights_load two_streams; do
  check $n pytorch_native
done
check rp2 pytorch_native --set roundup_power2_divisions=4
check gc_cap pytorch_native --set garbage_collection_threshold=0.6 --set max_split_size_mb=64 --capacity 378702643
check cap_retry pytorch_native --capacity 631171072
check cap_retry_oom pytorch_native --capacity 378702643
# issue 12's captures (traces/knobs/README.md): the list form of roundup_power2_divisions
check knobs/rp2_list_decode pytorch_native --set "roundup_power2_divisions=[256:1,512:2,1024:4,>:8]"
check knobs/rp2_list_infer pytorch_native --set "roundup_power2_divisions=[256:1,512:2,1024:4,>:8]"
# a CUDA graph's private pool (segment_pool_id (1, 0)) and the empty_cache its capture begins with
check knobs/graph_pool pytorch_native
# expandable segments record maps, not segments: compare the peak mapped bytes, the maps as the
# snapshot counts them (one segment_map a growth, which the model makes accessible with one cuMemSetAccess)
# and the unmaps (one segment_unmap a range, however many handles: segment_releases)
check_maps() { # NAME [ARGS...]
  name=$1; shift
  if out=$("$pt" sim --trace "$top_srcdir/traces/$name.pickle.gz" --policy pytorch_expandable "$@" --json); then
    printf '%s' "$out" | compare "$name (pytorch_expandable $*), peak mapped bytes, maps and unmaps" \
      peak_reserved_bytes observed_peak_reserved_bytes driver_calls.mem_set_access observed_segment_allocs \
      segment_releases observed_segment_releases ||
      fails=$((fails + 1))
  else echo "FAIL: $name: sim failed"; fails=$((fails + 1)); fi
}
check_maps expandable
check_maps knobs/exp_rp2 --set roundup_power2_divisions=4
check_maps knobs/exp_split --set max_split_size_mb=64
cap=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["memory_cap_bytes"])' "$top_srcdir/traces/knobs/exp_gc_cap.json")
check_maps knobs/exp_gc_cap --set garbage_collection_threshold=0.6 --capacity "$cap"
# ... and the bytes those unmaps gave back: the sum of the snapshot's segment_unmap sizes
tmpd=$(mktemp -d)
"$pt" trace import "$top_srcdir/traces/knobs/exp_gc_cap.pickle.gz" -o "$tmpd/t" >/dev/null 2>&1 || { echo "FAIL: import"; fails=$((fails + 1)); }
want=$(awk '$1 == "U" { s += $3 } END { print s + 0 }' "$tmpd/t")
got=$("$pt" sim --trace "$tmpd/t" --policy pytorch_expandable --set garbage_collection_threshold=0.6 --capacity "$cap" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["driver_bytes"]["mem_unmap"])')
rm -rf "$tmpd"
if [ "$want" -gt 0 ] && [ "$got" = "$want" ]; then echo "ok: knobs/exp_gc_cap: unmapped bytes $got"
else echo "FAIL: knobs/exp_gc_cap: unmapped bytes model $got, recorded $want"; fails=$((fails + 1)); fi
# issue 12's captures from their own setting strings: sim --conf with the PYTORCH_CUDA_ALLOC_CONF the sidecar
# recorded (and its cap, memory_cap_bytes, where it had one): segments as the snapshot counts them (a cudaMalloc or
# a growth), releases (a cudaFree or an unmapped range) and peak reserved, each equal to its recorded twin
check_conf() { # NAME
  side=$top_srcdir/traces/knobs/$1.json
  set -- "$1" "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pytorch_cuda_alloc_conf"])' "$side")" \
    "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["memory_cap_bytes"] or "")' "$side")"
  if out=$("$pt" sim --trace "$top_srcdir/traces/knobs/$1.pickle.gz" --conf "$2" ${3:+--capacity "$3"} --json 2>/dev/null); then
    printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
segs = d["driver_calls"]["malloc"] + d["driver_calls"]["mem_set_access"]
got = (segs, d["segment_releases"], d["peak_reserved_bytes"])
want = (d["observed_segment_allocs"], d["observed_segment_releases"], d["observed_peak_reserved_bytes"])
if got != want or not want[2]:
    sys.exit("FAIL: knobs/%s (sim --conf %r): segments, releases, peak: model %r, recorded %r" % (sys.argv[1], sys.argv[2], got, want))
st = json.load(open(sys.argv[3]))["stats"]  # the allocator'"'"'s own counters, beside the trace
own = (st["num_device_alloc"], st["num_device_free"], st["reserved_bytes.all.peak"], st["num_alloc_retries"], st["num_ooms"])
mine = got + (d["alloc_retries"], d["ooms"])
if own != mine:
    sys.exit("FAIL: knobs/%s: model %r, the allocator'"'"'s counters (device allocs, frees, peak, retries, OOMs) %r" % (sys.argv[1], mine, own))
print("ok: knobs/%s (sim --conf %r): segments %d, releases %d, peak %d, retries %d, OOMs %d" % ((sys.argv[1], sys.argv[2]) + mine))' "$1" "$2" "$side" ||
      fails=$((fails + 1))
  else echo "FAIL: knobs/$1: sim --conf '$2' failed"; fails=$((fails + 1)); fi
}
for n in rp2_list_decode rp2_list_infer exp_rp2 exp_split exp_gc_cap graph_pool; do
  check_conf $n
done
# the second capture: workloads whose results depend on the knob (traces/knobs/README.md), each beside the same
# workload without it or with the closest single value; retries under the cap as the allocator counted them too
for n in rp2_list_sizes rp2_8_sizes rp2_none_sizes rp2_list_kv rp2_8_kv exp_mix exp_rp2_mix exp_rp2_list_mix \
  exp_split_mix exp_cap_mix exp_gc_cap_mix exp_gc_split_cap_mix; do
  check_conf $n
done
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
