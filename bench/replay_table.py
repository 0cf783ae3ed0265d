#!/usr/bin/env python3
"""replay_table.py — bench/replay.sh's replay.jsonl as a table: for each trace
and policy, the driver time measured on the GPU (median of N replays) beside
the time the shipped and the calibrated cost models predict; then, per trace,
whether each model ranks the policies as the GPU did.
    python3 bench/replay_table.py bench/replay/replay.jsonl
"""
import json
import sys

rows = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if not o["run"]:
        continue
    g = "calibrated" if o["gpu"].endswith(".gpu") else o["gpu"]
    r = o["run"]["gpu_replay"]
    key = (o["trace"], o["policy"])
    rows.setdefault(key, {})[g] = (r["measured_total_us"], r["predicted_total_us"])

print("| trace | policy | measured µs (h200 run / calibrated run) | predicted, shipped h200 | predicted, calibrated in the run |")
print("| --- | --- | ---: | ---: | ---: |")
for (t, p), v in rows.items():
    mh, ph = v["h200"]
    mc, pc = v["calibrated"]
    print(f"| {t} | {p} | {mh:.0f} / {mc:.0f} | {ph:.0f} ({ph / mh:.2f}×) | {pc:.0f} ({pc / mc:.2f}×) |")

print()
print("| trace | measured order (fastest first) | shipped h200's order | calibrated order |")
print("| --- | --- | --- | --- |")
for t in dict.fromkeys(k[0] for k in rows):
    pol = [p for (tt, p) in rows if tt == t]
    meas = sorted(pol, key=lambda p: (rows[(t, p)]["h200"][0] + rows[(t, p)]["calibrated"][0]) / 2)
    by_h = sorted(pol, key=lambda p: rows[(t, p)]["h200"][1])
    by_c = sorted(pol, key=lambda p: rows[(t, p)]["calibrated"][1])
    def show(order):
        return " < ".join(order) + (" ✓" if order == meas else "")
    print(f"| {t} | {' < '.join(meas)} | {show(by_h)} | {show(by_c)} |")
