#!/bin/sh
# gpu.sh — the GPU commands on a real GPU: gpu info, calibrate and replay
# answer with sane numbers.  Without a GPU (or a build without CUDA) it
# skips (exit 77, automake's SKIP); the no-GPU behaviour is cli.sh's.
. "${top_srcdir:-.}/tests/gpu_setup.sh"
cat "$tmp/info"

# calibrate: a description that loads, with every call's points, all positive (PyTorch's allocators and
# the mechanisms' own work: gpu_calibrate.sh)
"$pt" calibrate --repeat 3 --no-torch -o "$tmp/c.gpu" 2>"$tmp/err" || fail "calibrate: $(cat "$tmp/err")"
[ -f "$tmp/c.gpu.tmp" ] && fail "calibrate left its .tmp file"
for call in malloc free mem_create mem_map mem_set_access mem_unmap mem_release address_reserve address_free; do
  grep -q "^cost $call [0-9]" "$tmp/c.gpu" || fail "calibrate: no cost line for $call"
done
grep '^cost ' "$tmp/c.gpu" | tr ' ' '\n' | grep ':' | awk -F: '$2 <= 0 { bad = 1 } END { exit bad }' ||
  fail "calibrate: a time <= 0"
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native --gpu "$tmp/c.gpu" >/dev/null 2>"$tmp/err" ||
  fail "the calibrated description does not load: $(cat "$tmp/err")"

# replay: the same calls as the model counted, measured > 0, for a cudaMalloc and a VMM policy
for p in pytorch_native pytorch_expandable cuda_async; do
  "$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy "$p" --repeat 2 --json >"$tmp/r.json" 2>"$tmp/err" ||
    { fail "replay $p: $(cat "$tmp/err")"; continue; }
  python3 - "$tmp/r.json" "$p" <<'PY' || fail "replay $p: output"
import json, sys
o = json.load(open(sys.argv[1]))
g = o["gpu_replay"]
assert g["driver_calls"] == o["driver_calls"], (g["driver_calls"], o["driver_calls"])
assert g["measured_total_us"] > 0 and g["predicted_total_us"] > 0
assert all(g["measured_us"][k] > 0 for k, n in g["driver_calls"].items() if n), g["measured_us"]
print("ok: replay %s: %d calls, measured %.0f us, predicted %.0f us" % (
    sys.argv[2], sum(g["driver_calls"].values()), g["measured_total_us"], g["predicted_total_us"]))
PY
done

# --db: the run and its measurements stored; calibrate's points too
"$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy cuda_async --repeat 1 --db "$tmp/r.db" >/dev/null 2>"$tmp/err" ||
  fail "replay --db: $(cat "$tmp/err")"
"$pt" calibrate --repeat 1 --no-torch --db "$tmp/r.db" -o "$tmp/c2.gpu" 2>"$tmp/err" || fail "calibrate --db: $(cat "$tmp/err")"
python3 - "$tmp/r.db" <<'PY' || fail "stored replay/calibration"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(n,) = db.execute("SELECT count(*) FROM measurements m JOIN runs r ON r.id = m.run_id "
                  "WHERE m.kind = 'replay_driver_us' AND m.value > 0").fetchone()
assert n == 1, n
(k,) = db.execute("SELECT count(*) FROM measurements WHERE kind LIKE 'replay_driver_us:%'").fetchone()
assert k >= 2, k
(c,) = db.execute("SELECT count(*) FROM calibrations WHERE gpu = 'h200-calibrated' AND us > 0").fetchone()
assert c >= 30, c
print("ok: replay and calibrate stored (%d measurements by call, %d calibration points)" % (k, c))
PY

# stitch on a trace where it stitches (one handle mapped at two addresses): replayed
"$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy stitch --repeat 1 >"$tmp/out" 2>"$tmp/err" ||
  fail "stitch replay: $(cat "$tmp/err")"
echo "ok: stitch replay"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all GPU checks passed"
