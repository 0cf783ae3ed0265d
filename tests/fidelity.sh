#!/bin/sh
# fidelity.sh — the acceptance that matters: on every real trace captured on
# the H200, `pagetune sim` with the pytorch_native policy, set as that
# capture's PYTORCH_CUDA_ALLOC_CONF and memory cap were (traces/NAME.json),
# reproduces the number of segments the real allocator created and its peak
# reserved bytes, exactly; and the expandable policy reproduces the peak
# mapped bytes of the expandable_segments:True capture.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR="$top_srcdir/policies"
fails=0
check() { # NAME POLICY [ARGS...]
  name=$1 policy=$2; shift 2
  out=$("$pt" sim --trace "$top_srcdir/traces/$name.pickle.gz" --policy "$policy" "$@" --json) ||
    { echo "FAIL: $name: sim failed"; fails=$((fails + 1)); return; }
  got=$(printf '%s' "$out" | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*"segments_allocated":\([0-9]*\).*/\1 \2/')
  want=$(printf '%s' "$out" | sed 's/.*"observed_segment_allocs":\([0-9]*\),"observed_peak_reserved_bytes":\([0-9]*\).*/\2 \1/')
  if [ "$got" = "$want" ]; then echo "ok: $name ($policy $*): peak reserved, segments = $got"
  else echo "FAIL: $name ($policy $*): model $got, recorded $want"; fails=$((fails + 1)); fi
}
for n in randn_loop cnn_train transformer_train varlen_infer llm_decode weights_load two_streams; do
  check $n pytorch_native
done
check rp2 pytorch_native --set roundup_power2_divisions=4
check gc_cap pytorch_native --set garbage_collection_threshold=0.6 --set max_split_size_mb=64 --capacity 378702643
check cap_retry pytorch_native --capacity 631171072
check cap_retry_oom pytorch_native --capacity 378702643
# expandable segments record maps, not segments: compare the peak mapped bytes
out=$("$pt" sim --trace "$top_srcdir/traces/expandable.pickle.gz" --policy pytorch_expandable --json)
got=$(printf '%s' "$out" | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
want=$(printf '%s' "$out" | sed 's/.*"observed_peak_reserved_bytes":\([0-9]*\).*/\1/')
if [ "$got" = "$want" ]; then echo "ok: expandable (pytorch_expandable): peak mapped bytes = $got"
else echo "FAIL: expandable: model peak $got, recorded $want"; fails=$((fails + 1)); fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
