#!/bin/sh
# policies.sh — pagetune policies lists every bundled policy with its mechanism,
# its parameters as the policy declares them and the mechanism bounds them, its
# hooks and its doc; a policy that does not load is listed with its error, not
# fatal; no policy at all is exit 1; bad usage exit 2.
. "${top_srcdir:-.}/tests/wb_setup.sh"
export PAGETUNE_POLICY_DIR="$top_srcdir/policies"

"$pt" policies >"$tmp/list.txt" 2>"$tmp/err" || { fail "policies: exit $?"; cat "$tmp/err"; }
for f in "$top_srcdir"/policies/*.lua; do
  name=$(basename "$f" .lua)
  mech=$(sed -n 's/^ *mechanism *= *"\([a-z_]*\)".*/\1/p' "$f" | head -1)
  grep -q "^$name (.*): mechanism $mech\$" "$tmp/list.txt" || fail "policies does not list $name with mechanism $mech"
done

# a broken policy in a --dir is listed with its one-line error; a good one beside it loads
mkdir "$tmp/mine"
printf -- '-- broken.lua — a syntax error\nreturn {name = "broken",\n' >"$tmp/mine/broken.lua"
printf -- '-- mine.lua — my own\n-- second line\nreturn {name = "mine", doc = "mine", mechanism = "direct", params = {}}\n' \
  >"$tmp/mine/mine.lua"
"$pt" policies --dir "$tmp/mine" --json >"$tmp/list.json" 2>"$tmp/err" || { fail "policies --dir --json: exit $?"; cat "$tmp/err"; }
python3 - "$tmp/list.json" "$top_srcdir/policies" <<'PY' || fail "policies --json"
import json, os, sys
d = json.load(open(sys.argv[1]))
by = {p["name"]: p for p in d["policies"]}
for f in os.listdir(sys.argv[2]):
    if f.endswith(".lua"):
        assert f[:-4] in by and by[f[:-4]]["bundled"] and "error" not in by[f[:-4]], f
t = by["tunable_caching"]
assert t["mechanism"] == "caching" and t["hooks"] == [], t
assert t["doc"].startswith("tunable_caching.lua — PyTorch's caching allocator"), t["doc"]
ps = {p["name"]: p for p in t["params"]}
g = ps["garbage_collection_threshold"]
assert g["source"] == "policy" and g["default"] == 0 and g["range"] == [0, 0.99] and g["tunable"], g
m = ps["max_split_size_mb"]
assert m["default"] == 4096 and m["range"] == [20, 4096] and m["scale"] == "log", m
r = ps["roundup_power2_divisions"]
assert r["kind"] == "pow2" and r["list"] and r["choices"] == [0, 1, 2, 4, 8, 16, "[256:1,512:2,1024:4,>:8]", "[64:8,>:1]", "[256:1,>:4]"], r
n = ps["max_non_split_rounding_mb"]  # the mechanism's, undeclared by the policy
assert n["source"] == "mechanism" and n["default"] == 20 and n["range"] == [0, None] and not n["tunable"], n
assert by["pytorch_native"]["params"][0]["default"] is None  # inf as null
assert by["direct"]["params"] == [] and by["direct"]["mechanism"] == "direct"
assert "round" in by["large_page_threshold"]["hooks"] or by["large_page_threshold"]["hooks"], by["large_page_threshold"]
b = by["broken"]
assert not b["bundled"] and "broken.lua" in b["error"] and "\n" not in b["error"], b
assert "mechanism" not in b and b["doc"] == "broken.lua — a syntax error", b
assert by["mine"]["doc"] == "mine.lua — my own\nsecond line" and not by["mine"]["bundled"], by["mine"]
PY
grep -q '^large_page_threshold (' "$tmp/list.txt" && grep -q 'hooks: .*page_size' "$tmp/list.txt" ||
  fail "text output lacks a policy's hooks"
"$pt" policies --dir "$tmp/mine" >"$tmp/mine.txt" || fail "policies --dir: a broken policy is fatal"
grep -q '^  error: .*broken.lua' "$tmp/mine.txt" || fail "the broken policy's error is not listed"

# no policy anywhere: exit 1, one line (a copy of the program outside any build tree finds only
# the installed data; where pagetune is installed there is nothing to check)
mkdir "$tmp/empty" "$tmp/bin"
cp "$pt" "$tmp/bin/pagetune" || fail "cannot copy the program"
PAGETUNE_POLICY_DIR="$tmp/empty" "$tmp/bin/pagetune" policies >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -ne 0 ]; then
  [ $rc -eq 1 ] || fail "no policy: exit $rc, not 1"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'no policy found' "$tmp/err" || { fail "no policy: not one line"; cat "$tmp/err"; }
fi
"$pt" policies --dir "$tmp/nonesuch" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "--dir of a missing folder: exit $rc, not 1"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "--dir of a missing folder: not one line"

# usage
"$pt" policies extra >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "a positional argument: exit $rc, not 2"
"$pt" policies --nonesuch >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "an unknown option: exit $rc, not 2"
"$pt" policies --dir >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--dir without a value: exit $rc, not 2"
"$pt" policies --help | grep -q -- '--dir DIR' || fail "--help lacks --dir"

[ $fails -eq 0 ] || exit 1
echo "policies: ok"
