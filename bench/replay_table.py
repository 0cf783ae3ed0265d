#!/usr/bin/env python3
"""replay_table.py — bench/replay.sh's replay.jsonl as a table: for each trace
and policy, the driver time measured on the GPU (median of N replays) beside
the time the shipped and the calibrated cost models predict; then, per trace,
whether each model ranks the policies as the GPU did.
    python3 bench/replay_table.py bench/replay/run3/replay.jsonl
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

# Pairs of policies on one trace: which the GPU ordered the same way in both
# of its replays with a gap of more than 20% in each (beyond the noise two
# replays of the same calls show), and whether each model orders them so.
print()
agree = {"h200": 0, "calibrated": 0}
clear = close = 0
for t in dict.fromkeys(k[0] for k in rows):
    pol = [p for (tt, p) in rows if tt == t]
    for i, a in enumerate(pol):
        for b in pol[i + 1:]:
            ma, mb = rows[(t, a)], rows[(t, b)]
            r1 = ma["h200"][0] / mb["h200"][0]
            r2 = ma["calibrated"][0] / mb["calibrated"][0]
            if not ((r1 > 1.2 and r2 > 1.2) or (r1 < 1 / 1.2 and r2 < 1 / 1.2)):
                close += 1
                continue
            clear += 1
            for g in agree:
                agree[g] += (ma[g][1] > mb[g][1]) == (r1 > 1)
print(f"policy pairs the GPU told apart (same order in both replays, > 20% apart in each): {clear} of {clear + close}")
for g, n in agree.items():
    print(f"  ordered the same way by the {'shipped h200' if g == 'h200' else 'calibrated'} model: {n} of {clear}")
