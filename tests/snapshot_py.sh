#!/bin/sh
# snapshot_py.sh — every snapshot we ship (tests/data, traces/) read two ways:
# by pagetune's C importer and by Python's pickle module
# (tests/snapshot_stats.py); every key Python reports must agree.
# Skips (77) where python3 is missing.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
fails=0; n=0
for f in "$top_srcdir"/tests/data/*.pickle "$top_srcdir"/tests/data/*.pickle.gz "$top_srcdir"/traces/*.pickle.gz; do
  [ -f "$f" ] || continue
  case "$f" in *forbidden*|*negative*|*not_a_*|*two_devices*) continue ;; esac
  n=$((n + 1))
  py=$(python3 "$top_srcdir/tests/snapshot_stats.py" "$f") || { echo "FAIL: python cannot read $f"; fails=$((fails + 1)); continue; }
  c=$("$top_builddir/pagetune" trace stats --json "$f") || { echo "FAIL: pagetune cannot read $f"; fails=$((fails + 1)); continue; }
  if python3 - "$py" "$c" "$f" <<'PY'
import json, sys
py, c, f = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
bad = [(k, v, c.get(k)) for k, v in py.items() if c.get(k) != v]
for k, v, got in bad:
    print(f"FAIL: {f}: {k}: python {v}, pagetune {got}")
sys.exit(1 if bad else 0)
PY
  then echo "ok: $f"; else fails=$((fails + 1)); fi
done
# The real captures also carry the allocator's own counters (NAME.json,
# torch.cuda.memory_stats() at the end): the importer's observed peak reserved
# must equal reserved_bytes.all.peak, and where recording began before the
# first allocation its peak live bytes must equal requested_bytes.all.peak.
for f in "$top_srcdir"/traces/*.pickle.gz; do
  side=${f%.pickle.gz}.json
  [ -f "$side" ] || continue
  c=$("$top_builddir/pagetune" trace stats --json "$f") || { fails=$((fails + 1)); continue; }
  if python3 - "$c" "$side" <<'PY'
import json, sys
c, side = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
st = side["stats"]
checks = [("observed_peak_reserved_bytes", st["reserved_bytes.all.peak"])]
if not side.get("recording_started_after_allocations"):
    checks.append(("peak_live_bytes", st["requested_bytes.all.peak"]))
bad = [(k, v) for k, v in checks if c[k] != v]
for k, v in bad:
    print(f"FAIL: {sys.argv[2]}: {k}: pagetune {c[k]}, torch.cuda.memory_stats {v}")
sys.exit(1 if bad else 0)
PY
  then echo "ok: $side counters"; else fails=$((fails + 1)); fi
done
echo "$n snapshot(s), $fails failure(s)"
[ "$n" -gt 0 ] && [ "$fails" -eq 0 ]
