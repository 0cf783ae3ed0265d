"""summarise.py: the table of bench/confirm/run_on_device.sh's confirms, in Markdown.

    python3 bench/confirm/summarise.py OUT

Reads OUT/W_expressible.json and OUT/W_library.json (`pagetune confirm --json`) for each
workload W, and the warm-up run's sidecar (OUT/work/W/warmup_W.json: torch, transformers,
the device), and prints one row a confirm: the tuned run, how it ran, the runs, and for time
and peak reserved the predicted gain, the measured gain with its 95% interval, the verdict.
"""
import json
import os
import sys

out = sys.argv[1]
workloads = ["transformer_train", "varlen_infer"]


def pct(v):
    return "-" if v is None else "%+.2f%%" % (100 * v)


def measured(g):
    iv = g.get("interval")
    if g.get("measured_gain") is None:
        return "-"
    return "%s [%s, %s]" % (pct(g["measured_gain"]), pct(iv[0]), pct(iv[1]))


def med(g, key):
    v = g.get(key)
    if v is None:
        return "-"
    return "%.1f MiB" % (v / 2**20) if key.endswith("bytes") else ("%.2f ms" % (v * 1e3) if v < 1 else "%.3f s" % v)


env = None
for w in workloads:
    side = os.path.join(out, "work", w, "warmup_%s.json" % w)
    if env is None and os.path.exists(side):
        m = json.load(open(side))
        env = "%s, torch %s (CUDA %s), transformers %s" % (m.get("device_name"), m.get("torch_version"),
                                                          m.get("torch_cuda_version"),
                                                          (m.get("workload_info") or {}).get("transformers_version"))
print("# pagetune confirm on %s\n" % (env or "an unknown device"))
print("Gain = (baseline - tuned) / baseline of the arms' medians, 95% bootstrap interval over runs;"
      " baseline: pytorch_native's defaults under PyTorch's allocator (no PYTORCH_CUDA_ALLOC_CONF).\n")
print("| workload | tuned (run) | runs under | N | time | predicted | measured [95%] | verdict "
      "| peak predicted | peak measured [95%] | verdict |")
print("| --- | --- | --- | ---: | --- | ---: | --- | --- | ---: | --- | --- |")
rows = []
for w in workloads:
    for kind in ("expressible", "library"):
        p = os.path.join(out, "%s_%s.json" % (w, kind))
        if not os.path.exists(p) or not os.path.getsize(p):
            print("| %s | %s: not run (skipped for time, or failed: the script's output says) | | | | | | | | | |" % (w, kind))
            continue
        d = json.load(open(p))
        t, k, u = d["time"], d["peak_reserved"], d["tuned"]
        how = "PyTorch (%s)" % (u["env"].get("PYTORCH_CUDA_ALLOC_CONF") or "defaults") if u["allocator"] == "pytorch" \
            else "pagetune's library"
        metric = "median step" if t["metric"] == "median_step_s" else "wall"
        print("| %s | %s (%d) | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            w, u["policy"], u["run"], how, d["runs_per_arm"], metric, pct(t["predicted_gain"]), measured(t), t["verdict"],
            pct(k["predicted_gain"]), measured(k), k["verdict"]))
        rows.append((w, kind, d))
print()
for w, kind, d in rows:
    t, k = d["time"], d["peak_reserved"]
    us = lambda v: "-" if v is None else "%.2f ms" % (v / 1e3)  # noqa: E731
    print("- %s, %s: measured (baseline -> tuned, medians) %s %s -> %s, peak reserved %s -> %s; predicted allocator time %s -> %s, "
          "peak %s -> %s MiB; confirmation %d in stores/%s.db%s" % (
              w, kind, t["metric"], med(t, "baseline_median_s"), med(t, "tuned_median_s"), med(k, "baseline_median_bytes"),
              med(k, "tuned_median_bytes"), us(d["baseline"]["predicted_alloc_us"]), us(d["tuned"]["predicted_alloc_us"]),
              "%.1f" % (d["baseline"]["predicted_peak_reserved_bytes"] / 2**20),
              "%.1f" % (d["tuned"]["predicted_peak_reserved_bytes"] / 2**20), d["confirmation"], w,
              "".join("; note: " + n for n in d["notes"])))
