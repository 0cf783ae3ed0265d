#!/bin/sh
# gpu_mreplay.sh — pagetune replay --mechanism on a real GPU: a trace that
# begins with segments alive replays under every bundled policy (touch clean,
# the model fed the GPU's addresses makes the same driver calls, free memory
# back, the total at the description's host speed the median of the timed runs
# each brought to it by its clock read), and running out of GPU memory for real
# mid-replay ends the run with one line, everything given back.  Without a GPU
# it skips (exit 77).
. "${top_srcdir:-.}/tests/gpu_setup.sh"

# randn_loop begins with two segments alive (recording started late)
for p in pytorch_native pytorch_expandable cuda_async direct stitch large_page_threshold tunable_caching; do
  if ! "$pt" replay --mechanism --touch --repeat 3 --json --trace "$top_srcdir/traces/randn_loop.pickle.gz" --policy "$p" \
      >"$tmp/r.json" 2>"$tmp/err"; then
    fail "randn_loop $p: $(cat "$tmp/err")"
    continue
  fi
  python3 - "$tmp/r.json" "$p" <<'PY' || fail "randn_loop $p: checks"
import json, sys
o = json.load(open(sys.argv[1])); g = o["gpu_mechanism_replay"]; c = g["check"]
assert g["mismatches"] == 0 and g["checked"] > 0, (g["touched"], g["checked"], g["mismatches"])
assert g["free_after"] == g["free_before"], (g["free_before"], g["free_after"])
assert c["fed_model_calls_equal"], (c["driver_calls"], c["fed_model_driver_calls"])
assert c["fed_model_peak_reserved_bytes"] == c["peak_reserved_bytes"], c
assert c["peak_reserved_bytes"] >= 23068672, c  # the initial segments are held from the start
# the total at the description's host speed: each timed run brought to it by the clock read before it, the one of
# rank n / 2 (pt_clock_at_speed); the reported total is the median run's, with its read
runs, reads, hs = g["measured_total_us_runs"], g["clock_read_us_runs"], g["host_clock_read_us"]
assert len(runs) == len(reads) == g["repeat"] == 3 and min(reads) > 0 and hs > 0, (runs, reads, hs)
at = sorted(x * hs / r for x, r in zip(runs, reads))[len(runs) // 2]
assert abs(g["measured_total_us_at_host_speed"] - at) <= 2e-3 + 1e-4 * at, (g["measured_total_us_at_host_speed"], at)
i = runs.index(g["measured_total_us"])
assert abs(g["clock_read_us_median_run"] - reads[i]) <= 1e-5 * reads[i], (g["clock_read_us_median_run"], reads)
mc = g["measured_costs"]  # the requests without calls, by size and again by live blocks ([fewest live, n, us])
assert sum(r[1] for r in mc["requests_by_live"]) == sum(r[0] for r in mc["requests"]), mc
assert abs(sum(r[2] for r in mc["requests_by_live"]) - sum(r[2] for r in mc["requests"])) < 1e-3 * len(mc["requests"]) + 1e-2, mc
# the class axis: the repeats and the rest add up to the totals, kind by kind and size class by size class,
# and the repeats are as many as the model counted (the same classes, decided from the trace)
assert mc["repeat_window"] == o["request_classes"]["repeat_window"] == 6, mc.get("repeat_window")
bc = mc["by_class"]
def by_class(part, key=None):
    sums = {}
    for cls in ("other", "repeat"):
        pts = bc[cls][part] if key is None else bc[cls][part].get(key, [])
        for n, b, us in pts:
            s = sums.setdefault(max(b // n, 1).bit_length() - 1, [0, 0, 0.0])  # the size class of the point
            s[0] += n; s[1] += b; s[2] += us
    return sorted((v[0], v[1]) for v in sums.values()), sum(v[2] for v in sums.values())
for part in ("requests", "requests_with_calls"):
    got, us = by_class(part)
    assert got == sorted((n, b) for n, b, _ in mc[part]), (part, got, mc[part])
    assert abs(us - sum(r[2] for r in mc[part])) < 1e-3 * len(mc[part]) + 1e-2, (part, us)
for kind in mc["calls"]:
    got, us = by_class("calls", kind)
    assert got == sorted((n, b) for n, b, _ in mc["calls"][kind]), (kind, got, mc["calls"][kind])
    assert abs(us - sum(r[2] for r in mc["calls"][kind])) < 1e-3 * len(mc["calls"][kind]) + 1e-2, (kind, us)
rep = sum(r[0] for r in bc["repeat"]["requests"] + bc["repeat"]["requests_with_calls"])
assert rep == o["request_classes"]["repeat_requests"] > 0, (rep, o["request_classes"])
print("ok: randn_loop %s: peak %d (driver saw %d), calls %s" % (sys.argv[2], c["peak_reserved_bytes"],
      c["driver_peak_used_bytes"], {k: v for k, v in c["driver_calls"].items() if v}))
PY
done

# out of memory for real: only about 256 MiB left free, a trace that needs ~1 GiB
for p in pytorch_native pytorch_expandable stitch cuda_async direct; do
  "$pt" replay --mechanism --repeat 1 --leave-free 256M --trace "$top_srcdir/traces/transformer_train.pickle.gz" --policy "$p" \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "out of memory under $p: exit $rc, wanted 1: $(cat "$tmp/err")"
  else
    # stderr: the progress line, then the error in one line
    tail -1 "$tmp/err" >"$tmp/last"
    if [ "$(grep -c 'pagetune: ' "$tmp/err")" -ne 1 ] || ! grep -q "out of GPU memory" "$tmp/last" ||
        ! grep -q "everything the run took was given back" "$tmp/last"; then
      fail "out of memory under $p: $(cat "$tmp/err")"
    else
      echo "ok: out of memory under $p: $(cat "$tmp/last")"
    fi
  fi
done
"$pt" gpu info >"$tmp/after" 2>&1 || fail "the GPU after the out-of-memory runs: $(cat "$tmp/after")"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all real-mechanism replay checks passed"
