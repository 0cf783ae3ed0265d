#!/usr/bin/env python3
"""Print the markdown tables of docs/h200-translation.md from the CSVs here.
Usage: python3 bench/tlb/tables.py  (run from anywhere)"""
import csv, os, collections
D = os.path.dirname(os.path.abspath(__file__))

def load(name):
    with open(os.path.join(D, name)) as f:
        return list(csv.DictReader(f))

def fsize(b):
    b = int(b)
    if b >= 2**30:
        return ("%.2f" % (b / 2**30)).rstrip("0").rstrip(".") + " G"
    if b >= 2**20:
        return ("%.1f" % (b / 2**20)).rstrip("0").rstrip(".") + " M"
    if b >= 1024:
        return "%d K" % (b // 1024)
    return "%d B" % b

def chase_table(rows, variant, stride, kinds, title):
    tab = collections.OrderedDict()
    for r in rows:
        if r["variant"] == variant and int(r["stride_bytes"]) == stride and r["kind"] in kinds:
            tab.setdefault(int(r["footprint_bytes"]), {})[r["kind"]] = r
    ks = [k for k in kinds if any(k in v for v in tab.values())]
    print("\n" + title + "\n")
    print("| footprint | pages | data | " + " | ".join(ks) + " |")
    print("| ---: | ---: | ---: | " + " | ".join("---:" for _ in ks) + " |")
    for fp, v in sorted(tab.items()):
        any_r = next(iter(v.values()))
        cells = []
        for k in ks:
            if k in v:
                r = v[k]
                spread = float(r["ns_max"]) - float(r["ns_min"])
                c = "%.1f" % float(r["ns_per_load"])
                if spread >= 2.0:
                    c += " (±%.0f)" % (spread / 2)
                cells.append(c)
            else:
                cells.append("–")
        print("| %s | %s | %s | %s |" % (fsize(fp), any_r["pages"], fsize(any_r["data_bytes"]), " | ".join(cells)))

r1 = load("chase_run1.csv")
K1 = ["cudaMalloc", "vmm_2M", "vmm_32M", "vmm_512M", "vmm_2G", "cudaMalloc_repeat"]
chase_table(r1, "line", 2 * 2**20, K1, "#### Run 1, variant line (1 line a page), stride 2 MiB — ns per load")
chase_table(r1, "line", 64 * 2**10, K1, "#### Run 1, variant line, stride 64 KiB — ns per load")
chase_table(r1, "line", 4 * 2**10, K1, "#### Run 1, variant line, stride 4 KiB — ns per load")
chase_table(r1, "data", 64 * 2**10, K1, "#### Run 1, variant data (≥ 512 MiB of distinct lines), stride 64 KiB — ns per load")
chase_table(r1, "data", 2 * 2**20, K1, "#### Run 1, variant data, stride 2 MiB — ns per load")
r2 = load("chase_run2.csv")
K2 = ["cudaMalloc", "vmm_2M", "vmm_512M", "vmm_2G"]
chase_table(r2, "line", 2 * 2**20, K2, "#### Run 2, variant line, stride 2 MiB, 4 points an octave, to 128 GiB — ns per load")
chase_table(r2, "line", 2 * 2**20, ["cudaMalloc_x8", "cudaMalloc_x32"],
            "#### Run 2, B chasers on disjoint footprint/B each (cudaMalloc), stride 2 MiB — ns per load (footprint = total of all B)")
for s, t in [(4 * 2**10, "4 KiB"), (64 * 2**10, "64 KiB"), (2 * 2**20, "2 MiB")]:
    chase_table(r2, "line", s, ["host_pinned"], "#### Run 2, pinned host memory, variant line, stride " + t + " — ns per load")

g = load("gather_run1.csv")
KG = ["cudaMalloc", "vmm_2M", "vmm_32M", "vmm_512M", "vmm_2G", "cudaMalloc_repeat"]
tab = collections.OrderedDict()
for r in g:
    tab.setdefault(int(r["buffer_bytes"]), {})[r["kind"]] = r
print("\n#### Gather, G loads/s: median of 5 (min–max)\n")
print("| buffer | " + " | ".join(KG) + " |")
print("| ---: | " + " | ".join("---:" for _ in KG) + " |")
for b, v in sorted(tab.items()):
    print("| %s | %s |" % (fsize(b), " | ".join("%.2f (%.2f–%.2f)" % (float(v[k]["median_gloads"]), float(v[k]["min_gloads"]), float(v[k]["max_gloads"])) for k in KG)))
print("\n#### Gather, percent difference of the median vs cudaMalloc\n")
print("| buffer | " + " | ".join(KG[1:]) + " |")
print("| ---: | " + " | ".join("---:" for _ in KG[1:]) + " |")
for b, v in sorted(tab.items()):
    base = float(v["cudaMalloc"]["median_gloads"])
    print("| %s | %s |" % (fsize(b), " | ".join("%+.2f %%" % (100 * (float(v[k]["median_gloads"]) / base - 1)) for k in KG[1:])))
