#!/bin/sh
# lint.sh — pagetune lint: a known answer for each rule (PyTorch 2.11's
# PYTORCH_CUDA_ALLOC_CONF), its exit status (0 no error, 1 an error, 2 usage),
# one line on stderr for a refusal, and --json parsed by python3.
set -u
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC LINE ARGS...: lint exits RC and prints LINE (a fixed string) as a whole line of stdout
expect() {
  want=$1 line=$2
  shift 2
  env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF "$pt" lint "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq "$want" ] || fail "lint $*: exit $rc, not $want"
  [ -z "$line" ] || grep -qxF -- "$line" "$tmp/out" || { fail "lint $*: no line '$line'"; sed 's/^/  /' "$tmp/out"; }
  if [ "$want" -ne 0 ]; then
    [ "$(wc -l <"$tmp/err")" -le 2 ] || fail "lint $*: more than one message on stderr"
  else
    [ ! -s "$tmp/err" ] || fail "lint $*: stderr not empty"
  fi
}

# clean strings
expect 0 "ok: no findings (PyTorch 2.11)" "max_split_size_mb:128"
# the list form, read as 2.11's code reads it (a boundary B covers [B, 2B) MiB; an interval between two boundaries stays 0)
expect 0 "note: roundup_power2_divisions: as PyTorch 2.11 reads it: below 128 MiB 8 divisions; [128 MiB, 256 MiB) 512-byte rounding; [256 MiB, 512 MiB) 4 divisions; from 512 MiB 512-byte rounding (each boundary B covers [B, 2B) MiB: the documentation puts it an octave lower)" \
  "max_split_size_mb:128,roundup_power2_divisions:[64:8,256:4,>:1]"
expect 0 "note: roundup_power2_divisions: as PyTorch 2.11 reads it: below 512 MiB 512-byte rounding; [512 MiB, 1 GiB) 2 divisions; [1 GiB, 2 GiB) 4 divisions; from 2 GiB 8 divisions (each boundary B covers [B, 2B) MiB: the documentation puts it an octave lower)" \
  "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"
expect 0 "ok: no findings (PyTorch 2.11)" " backend : native , release_lock_on_cudamalloc:True,"
expect 0 "ok: no findings (PyTorch 2.11)" "roundup_power2_divisions:4,pinned_num_register_threads:8,graph_capture_record_stream_reuse:False"
expect 0 "ok: no findings (PyTorch 2.11)" ""
# errors: unknown key, bad value, out of range, malformed
expect 1 "error: foo: unknown key: PyTorch 2.11 refuses it" "foo:1"
expect 1 "error: max_split_size_mb: 10 MiB is too small: PyTorch requires >= 20" "max_split_size_mb:10"
expect 1 "error: max_split_size_mb: '1G' is not a whole number of MiB" "max_split_size_mb:1G"
expect 1 "error: garbage_collection_threshold: 1.5 is out of range: PyTorch requires 0 < x < 1" \
  "garbage_collection_threshold:1.5"
expect 1 "error: garbage_collection_threshold: 0 is out of range: PyTorch requires 0 < x < 1" \
  "garbage_collection_threshold:0,per_process_memory_fraction:0.5"
expect 1 "error: expandable_segments: 'true' is not True or False (capitalised)" "expandable_segments:true"
expect 1 "error: backend: unknown backend 'async' (native or cudaMallocAsync)" "backend:async"
expect 1 "error: roundup_power2_divisions: '3' is not a power of two (or a list [64:8,256:4,>:1])" "roundup_power2_divisions:3"
expect 1 "error: roundup_power2_divisions: interval boundary '63' is not a power of two (MiB) or '>'" "roundup_power2_divisions:[63:8]"
expect 1 "error: roundup_power2_divisions: divisions 3 in '256:3' are not 0 or a power of two" "roundup_power2_divisions:[256:3]"
expect 1 "error: pinned_num_register_threads: 256: PyTorch requires a power of two, at most 128" "pinned_num_register_threads:256"
expect 1 "error: per_process_memory_fraction: 1.5 is out of range: PyTorch requires 0 <= x <= 1" \
  "per_process_memory_fraction:1.5"
expect 1 "error: expandable_segments: no value" "expandable_segments:"
expect 1 "error: PYTORCH_CUDA_ALLOC_CONF: an empty entry (two commas, or one at the start)" "max_split_size_mb:64,,backend:native"
grep -qxF "pagetune: PYTORCH_CUDA_ALLOC_CONF: 1 error: PyTorch 2.11 would refuse it" "$tmp/err" ||
  fail "an error's one line on stderr"
# silent no-ops
expect 0 "warning: garbage_collection_threshold: acts only under a cap: without per_process_memory_fraction here it does nothing unless the program calls torch.cuda.set_per_process_memory_fraction" \
  "garbage_collection_threshold:0.6"
expect 0 "note: per_process_memory_fraction: the allocator's cap, int(fraction x device memory) bytes, as torch.cuda.set_per_process_memory_fraction sets it; garbage_collection_threshold is a fraction of it" \
  "garbage_collection_threshold:0.6,per_process_memory_fraction:0.9" --gpu none
grep -q "warning" "$tmp/out" && fail "garbage_collection_threshold with a cap warned"
expect 0 "warning: max_non_split_rounding_mb: does nothing without max_split_size_mb: it rounds only requests for blocks above that size" \
  "max_non_split_rounding_mb:64"
expect 0 "" "max_non_split_rounding_mb:64,max_split_size_mb:256"
grep -q "warning" "$tmp/out" && fail "max_non_split_rounding_mb with max_split_size_mb warned"
expect 0 "warning: max_split_size_mb: a native-allocator knob: backend:cudaMallocAsync ignores it" \
  "backend:cudaMallocAsync,max_split_size_mb:128"
expect 0 "warning: max_split_size_mb: given twice: the last one wins" "max_split_size_mb:64,max_split_size_mb:128"
# conflicts and notes
expect 0 "warning: expandable_segments: conflicts with backend:cudaMallocAsync: expandable segments are the native allocator's, so it is ignored" \
  "expandable_segments:True,backend:cudaMallocAsync"
expect 0 "" "expandable_segments:True"
grep -q "^note: expandable_segments: .*IPC.*NCCL.*CUDA graphs" "$tmp/out" || fail "expandable_segments: no note on IPC, NCCL, graphs"
expect 0 "note: per_process_memory_fraction: the allocator's cap: 0.5 x 150109880320 = 75054940160 bytes on h200" \
  "per_process_memory_fraction:0.5" --gpu h200
# the two variables
expect 0 "warning: PYTORCH_ALLOC_CONF: set and different from PYTORCH_CUDA_ALLOC_CONF: PyTorch 2.11 uses PYTORCH_CUDA_ALLOC_CONF (measured), so PYTORCH_ALLOC_CONF is ignored" \
  "max_split_size_mb:64" --env PYTORCH_ALLOC_CONF=expandable_segments:True
PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 PYTORCH_ALLOC_CONF=max_split_size_mb:32 "$pt" lint --from-env >"$tmp/out" 2>&1 ||
  fail "--from-env: exit $?"
grep -q "^warning: PYTORCH_ALLOC_CONF: set and different" "$tmp/out" || fail "--from-env: no warning on two variables"
PYTORCH_CUDA_ALLOC_CONF=a:b PYTORCH_ALLOC_CONF=a:b "$pt" lint --from-env >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "--from-env: an unknown key is not exit 1"
grep -q "PYTORCH_ALLOC_CONF: set and different" "$tmp/out" && fail "--from-env: equal variables warned"
env -u PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF=backend:x "$pt" lint --from-env --json >"$tmp/plain.json" 2>/dev/null
[ $? -eq 1 ] || fail "PYTORCH_ALLOC_CONF alone is not checked"
# a control character in the text stays on its line
expect 1 "error: f?o: unknown key: PyTorch 2.11 refuses it" "$(printf 'f\no:1')"
# an error past the findings shown still counts
many=$(i=0; while [ $i -lt 70 ]; do printf 'max_split_size_mb:64,'; i=$((i + 1)); done)
expect 1 "" "${many}foo:1"
grep -q "^note: -: [0-9]* more findings not shown" "$tmp/out" || fail "findings past the limit: not said"
# usage: exit 2, one line for the version
expect 2 "" --torch-version 2.10 "max_split_size_mb:64"
head -1 "$tmp/err" | grep -q "^pagetune lint: --torch-version '2.10': only PyTorch 2.11 is known" && grep -q "try 'pagetune lint --help'" "$tmp/err" ||
  fail "--torch-version 2.10: not bad usage naming 2.11, with the usage hint: $(cat "$tmp/err")"
expect 0 "ok: no findings (PyTorch 2.11)" --torch-version 2.11.0 "max_split_size_mb:64"
expect 2 ""
expect 2 "" --env FOO=1
expect 2 "" a:b c:d
expect 1 "" "max_split_size_mb:64" --gpu no_such_gpu

# --json: one object whose findings parse, with severities and keys as the text says
if command -v python3 >/dev/null 2>&1; then
  env -u PYTORCH_CUDA_ALLOC_CONF "$pt" lint --json "foo:1,garbage_collection_threshold:0.5,expandable_segments:True" \
    --env PYTORCH_ALLOC_CONF=x:y >"$tmp/j.json" 2>/dev/null
  [ $? -eq 1 ] || fail "--json with an error: not exit 1"
  python3 - "$tmp/j.json" "$tmp/plain.json" <<'PY' || fail "--json"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["torch_version"] == "2.11" and o["variable"] == "PYTORCH_CUDA_ALLOC_CONF", o
got = [(f["key"], f["severity"]) for f in o["findings"]]
want = [("PYTORCH_ALLOC_CONF", "warning"), ("foo", "error"), ("garbage_collection_threshold", "warning"),
        ("expandable_segments", "note")]
assert got == want, got
assert all(set(f) == {"key", "severity", "message"} and f["message"] for f in o["findings"]), o
assert o["errors"] == 1 and o["warnings"] == 2, o
p = json.load(open(sys.argv[2]))
assert p["variable"] == "PYTORCH_ALLOC_CONF" and p["findings"][0]["severity"] == "error", p
PY
else
  echo "python3 is missing: --json not parsed"
fi

[ $fails -eq 0 ] && echo "lint: all passed"
[ $fails -eq 0 ]
