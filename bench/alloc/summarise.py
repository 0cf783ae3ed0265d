"""summarise.py: the acceptance table from workloads.py's JSON lines (acceptance.sh)."""
import json
import statistics
import sys

runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and '"workload"' in l]
for wl in ["train", "infer"]:
    rs = [r for r in runs if r["workload"] == wl]
    if not rs:
        continue
    base = [r for r in rs if r["allocator"] == "default"]
    key = "losses" if wl == "train" else "outputs_sha256"
    ref = base[0][key] if base else None
    print("== %s (%d parameters)" % (wl, rs[0]["params"]))
    for r in rs:
        print("%-8s %-22s median step %7.2f ms  peak reserved %12d  %s" % (
            r["allocator"], r["conf"] or "", r["median_step_s"] * 1e3, r["peak_reserved_bytes"],
            "same result" if r[key] == ref else "RESULT DIFFERS"))
    d = [r["median_step_s"] for r in base]
    p = [r["median_step_s"] for r in rs if r["conf"] == "mechanism=caching"]
    if d and p:
        print("step time, median of the runs' medians: default %.2f ms (%s), library caching %.2f ms (%s): ratio %.3f" % (
            statistics.median(d) * 1e3, " ".join("%.2f" % (x * 1e3) for x in d),
            statistics.median(p) * 1e3, " ".join("%.2f" % (x * 1e3) for x in p),
            statistics.median(p) / statistics.median(d)))
        pr = max(r["peak_reserved_bytes"] for r in rs if r["conf"] == "mechanism=caching")
        dr = min(r["peak_reserved_bytes"] for r in base)
        print("peak reserved: default %d, library caching %d (%s)" % (dr, pr, "<=" if pr <= dr else "MORE"))
