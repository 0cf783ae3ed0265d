#!/bin/sh
# readme_tour.sh — README.md's "From your snapshot to settings" runs as written: its
# commands are taken from the README itself (an indented line starting ./pagetune, with
# its continuation lines), run in order in a folder where ./pagetune and traces/ are
# this build's, each must exit 0; the walk keeps every step (import, lint, sweep,
# report, diff, check, export) and what its comments claim (run 3 is the settings
# run today, run 9 the recommended one) holds.
. "${top_srcdir:-.}/tests/wb_setup.sh"
abs() { (cd "$1" && pwd); }
ln -s "$(abs "$top_builddir")/pagetune" "$tmp/pagetune"
ln -s "$(abs "$top_srcdir")/traces" "$tmp/traces"

python3 - "$top_srcdir/README.md" "$tmp/tour" <<'PY' || { fail "no tour in README.md"; exit 1; }
import sys
text = open(sys.argv[1]).read().splitlines()
start = text.index("## From your snapshot to settings")
end = next(i for i in range(start + 1, len(text)) if text[i].startswith("## "))
cmds, cur = [], None
for line in text[start:end]:
    if cur is not None:
        cur += "\n" + line
        if not line.endswith("\\"):
            cmds.append(cur)
            cur = None
    elif line.startswith("    ./pagetune "):
        if line.endswith("\\"):
            cur = line
        else:
            cmds.append(line)
steps = [c.split()[1] if c.split()[1] != "trace" else "trace " + c.split()[2] for c in cmds]
want = ["trace import", "lint", "sweep", "report", "diff", "explain", "check", "export"]
assert steps == want, steps
with open(sys.argv[2], "w") as f:
    for c in cmds:
        f.write(c.strip() + "\n\x00\n")
PY

# each command in its own shell, in order, in the tour's folder
python3 - "$tmp" <<'PY' || fail "a command of the tour failed"
import subprocess, sys
tmp = sys.argv[1]
cmds = [c.strip() for c in open(tmp + "/tour").read().split("\x00") if c.strip()]
for i, c in enumerate(cmds):
    p = subprocess.run(["sh", "-c", c], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open("%s/out%d" % (tmp, i), "w").write(p.stdout)
    if p.returncode != 0:
        print("FAIL: exit %d: %s\n%s" % (p.returncode, c, p.stdout[-2000:]))
        sys.exit(1)
PY

# what the tour's comments say
cd "$tmp" || exit 1
grep -q "^warning: garbage_collection_threshold" out1 || fail "lint: the no-op under no cap is not warned"
./pagetune report --db my.db --json >rep.json 2>/dev/null || fail "report --json"
python3 - <<'PY' || fail "the tour's comments do not hold"
import json
d = json.load(open("rep.json"))
runs = {r["run"]: r for r in d["runs"]}
p = runs[3]["params"]
assert runs[3]["policy"] == "pytorch_native" and p["max_split_size_mb"] == 128 and abs(p["garbage_collection_threshold"] - 0.6) < 1e-12, runs[3]
assert sorted(r for r in runs if runs[r]["policy"] == "pytorch_native") == [1, 2, 3, 4], runs
(rec,) = d["recommendations"]
assert sorted(r for r in runs if runs[r]["policy"] == "pytorch_expandable") == [5, 6, 7, 8], runs
assert rec["run"] == 9 and runs[9]["ooms"] == 0, rec
assert runs[rec["baseline_run"]]["params"]["max_split_size_mb"] is None, rec
PY
grep -q "^RECOMMENDED SETTINGS" out3 && [ -s my.html ] || fail "report: no recommendation, or no page"
grep -q "^A: run 3: pytorch_native" out4 && grep -q "^B: run 9: " out4 || fail "diff: not runs 3 and 9"
grep -q "^segments with free space" out5 && grep -q "^peak reserved: " out5 || fail "explain: no segments at the peak"
grep -q "^PASS peak reserved" out6 && grep -q "^PASS predicted time" out6 || fail "check: not two PASS lines"
grep -q "^baseline: .* run 3$" out6 || fail "check: the baseline is not run 3"
grep -q "^export PAGETUNE_ALLOC_CONF=\|^export PYTORCH_ALLOC_CONF=" out7 || fail "export: nothing to paste"

done_ok readme_tour
