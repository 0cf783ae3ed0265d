#!/bin/sh
# datadir.sh — the bundled policies and GPU descriptions are found wherever the
# program runs from (its build tree, the installed data, PAGETUNE_POLICY_DIR /
# PAGETUNE_GPU_DIR first), never in the current directory; a "not found" names
# the search path; --help documents the two variables.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt=$(cd "$top_builddir" && pwd)/pagetune
src=$(cd "$top_srcdir" && pwd)
trace=$src/tests/data/real_small.pickle.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; sed 's/^/  /' "$tmp/err"; fails=$((fails + 1)); }

# the tests run with both variables set (AM_TESTS_ENVIRONMENT): not here
unset PAGETUNE_POLICY_DIR PAGETUNE_GPU_DIR

# decoys in the current directory, where the old lookup looked first
mkdir -p "$tmp/cwd/policies" "$tmp/cwd/sim/gpus"
echo 'error("decoy policy read from the current directory")' >"$tmp/cwd/policies/pytorch_native.lua"
echo 'name decoy' >"$tmp/cwd/sim/gpus/h200.gpu"
echo 'name decoy' >"$tmp/cwd/sim/gpus/decoy.gpu"
cd "$tmp/cwd" || exit 99

if "$pt" sim --trace "$trace" --policy pytorch_native --gpu h200 >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^policy: *pytorch_native' "$tmp/out"; then echo "ok: bundled policy and GPU found from elsewhere, decoys ignored"
else fail "sim --policy pytorch_native --gpu h200 from another directory"; fi

if "$pt" sim --list-gpus >"$tmp/out" 2>"$tmp/err" && grep -q 'h200' "$tmp/out" && ! grep -q decoy "$tmp/out"; then
  echo "ok: --list-gpus from another directory"
else fail "--list-gpus from another directory: $(cat "$tmp/out")"; fi

# a path is a path: the decoy is read when asked for
if ! "$pt" sim --trace "$trace" --policy ./policies/pytorch_native.lua >"$tmp/out" 2>"$tmp/err" && grep -q decoy "$tmp/err"; then
  echo "ok: a policy given as a path is that file"
else fail "--policy ./policies/pytorch_native.lua did not read the file"; fi

# not found: exit 1, one line naming where it looked
"$pt" sim --trace "$trace" --policy no_such_policy >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'looked in .*PAGETUNE_POLICY_DIR' "$tmp/err"; then
  echo "ok: an unknown policy names the search path"
else fail "--policy no_such_policy: exit $rc"; fi
"$pt" sim --trace "$trace" --policy pytorch_native --gpu no_such_gpu >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && grep -q 'looked in .*PAGETUNE_GPU_DIR' "$tmp/err"; then echo "ok: an unknown GPU names the search path"
else fail "--gpu no_such_gpu: exit $rc"; fi

# the variables come first
mkdir -p "$tmp/mine"
cp "$src/sim/gpus/h200.gpu" "$tmp/mine/only_mine.gpu"
echo 'error("the policy in PAGETUNE_POLICY_DIR")' >"$tmp/mine/pytorch_native.lua"
if [ "$(PAGETUNE_GPU_DIR="$tmp/mine" "$pt" sim --list-gpus 2>"$tmp/err")" = only_mine ]; then echo "ok: PAGETUNE_GPU_DIR is searched first"
else fail "PAGETUNE_GPU_DIR not searched first"; fi
if ! PAGETUNE_POLICY_DIR="$tmp/mine" "$pt" sim --trace "$trace" --policy pytorch_native >"$tmp/out" 2>"$tmp/err" &&
   grep -q 'in PAGETUNE_POLICY_DIR' "$tmp/err"; then echo "ok: PAGETUNE_POLICY_DIR is searched first"
else fail "PAGETUNE_POLICY_DIR not searched first"; fi

# a program with no data beside it: --list-gpus lists the installed ones, or fails saying where it looked
mkdir "$tmp/empty"
cp "$pt" "$tmp/empty/alone"
(cd "$tmp/empty" && ./alone sim --list-gpus) >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && grep -q 'looked in' "$tmp/err"; then echo "ok: no GPU descriptions: exit 1, the search path"
elif [ $rc -eq 0 ] && grep -q '[a-z]' "$tmp/out"; then echo "ok: a lone program lists the installed descriptions"
else fail "--list-gpus with no descriptions: exit $rc, '$(cat "$tmp/out")'"; fi

"$pt" --help >"$tmp/out" 2>"$tmp/err"
if grep -q PAGETUNE_POLICY_DIR "$tmp/out" && grep -q PAGETUNE_GPU_DIR "$tmp/out"; then echo "ok: --help documents the variables"
else fail "--help does not document PAGETUNE_POLICY_DIR / PAGETUNE_GPU_DIR"; fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
