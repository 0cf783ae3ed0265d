#!/bin/sh
# sitecustomize.sh — backend/python/pagetune_sitecustomize.py, as an image
# made by `pagetune export --format dockerfile` runs it (sitecustomize.py in a
# directory on PYTHONPATH), against a fake torch package: importing torch
# installs the allocator exactly once, before the program sees torch; a
# process that never imports torch loads nothing (no torch, no ctypes, no
# pagetune_alloc); PAGETUNE_DISABLE=1 and a process without CUDA do nothing;
# a failure is one line on stderr and stops the program (exit 1), or with
# PAGETUNE_ON_INSTALL_ERROR=continue goes on; the real library's refusal of a
# policy with hooks comes through as that one line; a base image's own
# sitecustomize still runs.  Skips (77) without python3 or a C compiler.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
cc=${CC:-cc}
command -v "${cc%% *}" >/dev/null 2>&1 || { echo "SKIP: no C compiler"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# the image's /opt/pagetune/python, and a base image's own sitecustomize further down the path
mkdir -p "$tmp/site" "$tmp/base" "$tmp/fake/torch/cuda" "$tmp/fake/torch/nn"
cp "$top_srcdir/backend/python/pagetune_sitecustomize.py" "$tmp/site/sitecustomize.py"
cp "$top_srcdir/backend/python/pagetune_alloc.py" "$tmp/site/pagetune_alloc.py"
cat >"$tmp/base/sitecustomize.py" <<'PY'
import os
open(os.environ["FAKE_TORCH_LOG"], "a").write("base sitecustomize\n")
PY

# a fake torch: CUDA available unless FAKE_CUDA=0; already initialised when FAKE_CUDA=init; calls logged
cat >"$tmp/fake/torch/__init__.py" <<'PY'
import os
from . import cuda
def _log(line):
    with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
        f.write(line + "\n")
PY
cat >"$tmp/fake/torch/cuda/__init__.py" <<'PY'
import os
from . import memory
def is_available():
    return os.environ.get("FAKE_CUDA", "1") != "0"
def is_initialized():
    return os.environ.get("FAKE_CUDA") == "init"
def device_count():
    return 1
PY
cat >"$tmp/fake/torch/cuda/memory.py" <<'PY'
import os
def _log(line):
    with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
        f.write(line + "\n")
class CUDAPluggableAllocator:
    def __init__(self, path, alloc_fn, free_fn):
        self.args = (path, alloc_fn, free_fn)
        _log("CUDAPluggableAllocator %s %s %s" % self.args)
def change_current_allocator(a):
    _log("change_current_allocator %s" % (a.args,))
PY
: >"$tmp/fake/torch/nn/__init__.py"

# a fake library that serves (the real one needs a GPU): the functions pagetune_alloc.py binds
cat >"$tmp/fake.c" <<'C'
#include <stddef.h>
#include <stdio.h>
int pagetune_status(char *b, size_t n) { if (b && n) snprintf(b, n, "serving: fake"); return 1; }
int pagetune_stats_json(int d, char *b, size_t n) { (void)d; return snprintf(b, n, "{}"); }
int pagetune_empty_cache(int d) { (void)d; return 0; }
int pagetune_reset_peak_stats(int d) { (void)d; return 0; }
const char *pagetune_last_error(void) { return ""; }
void *pagetune_malloc(long s, int d, void *st) { (void)s, (void)d, (void)st; return NULL; }
void pagetune_free(void *p, long s, int d, void *st) { (void)p, (void)s, (void)d, (void)st; }
C
$cc -shared -fPIC -o "$tmp/fake.so" "$tmp/fake.c" || { echo "SKIP: cannot build a shared object with $cc"; exit 77; }

log=$tmp/log
# run ENV... -- PROGRAM: python3 -c PROGRAM with the image's PYTHONPATH; status in $rc, output in $tmp/out, $tmp/err
run() {
  : >"$log"
  envs=
  while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
  shift
  # shellcheck disable=SC2086
  env -u PYTHONSTARTUP PYTHONPATH="$tmp/site:$tmp/fake:$tmp/base" FAKE_TORCH_LOG="$log" PAGETUNE_ALLOC_LIB="$tmp/fake.so" $envs \
    python3 -c "$1" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
lines() { grep -c "$1" "$2"; }

# 1. import torch (three ways): installed once, with the library's function names, before the program has torch
run -- 'import os, torch, torch.nn
from torch import cuda
import torch
n = open(os.environ["FAKE_TORCH_LOG"]).read().count("change_current_allocator")
import pagetune_alloc
print("installed before the program: %d, installed(): %s" % (n, pagetune_alloc.installed()))'
[ $rc -eq 0 ] || fail "import torch: exit $rc: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "import torch: stderr: $(cat "$tmp/err")"
[ "$(lines "^CUDAPluggableAllocator $tmp/fake.so pagetune_malloc pagetune_free$" "$log")" = 1 ] || fail "import torch: CUDAPluggableAllocator not made once: $(cat "$log")"
[ "$(lines "^change_current_allocator ('$tmp/fake.so', 'pagetune_malloc', 'pagetune_free')$" "$log")" = 1 ] || fail "import torch: not installed once: $(cat "$log")"
grep -q "installed before the program: 1, installed(): True" "$tmp/out" || fail "import torch: $(cat "$tmp/out")"
grep -q "^base sitecustomize$" "$log" || fail "the base image's sitecustomize did not run"

# 2. a process that never imports torch loads nothing: only the finder is there
run -- 'import sys
print(sorted(m for m in ("torch", "ctypes", "pagetune_alloc", "json") if m in sys.modules),
      [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_TorchFinder"])'
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] || fail "no torch: exit $rc: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "[] ['_TorchFinder']" ] || fail "no torch: loaded $(cat "$tmp/out")"
grep -q "allocator" "$log" && fail "no torch: something was installed"

# 3. PAGETUNE_DISABLE=1: not even the finder; torch imported, nothing installed
run PAGETUNE_DISABLE=1 -- 'import sys, torch
print([type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_TorchFinder"], "pagetune_alloc" in sys.modules)'
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] || fail "PAGETUNE_DISABLE=1: exit $rc: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "[] False" ] || fail "PAGETUNE_DISABLE=1: $(cat "$tmp/out")"
grep -q "allocator" "$log" && fail "PAGETUNE_DISABLE=1: installed anyway"
run PAGETUNE_DISABLE=0 -- 'import torch'
[ "$(lines change_current_allocator "$log")" = 1 ] || fail "PAGETUNE_DISABLE=0 is not disabled"

# 4. no CUDA: torch imported, nothing installed, nothing said
run FAKE_CUDA=0 -- 'import sys, torch; print("pagetune_alloc" in sys.modules)'
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(cat "$tmp/out")" = False ] || fail "no CUDA: exit $rc, $(cat "$tmp/out") $(cat "$tmp/err")"
grep -q "allocator" "$log" && fail "no CUDA: installed anyway"

# 5. failures: one line, then exit 1 from import torch; with continue, the program goes on
one_failure() { # WHAT PATTERN [OTHER]: stderr is one line matching PATTERN (after OTHER lines: the library's own, at load)
  [ "$(wc -l <"$tmp/err")" -eq $((1 + ${3:-0})) ] || fail "$1: stderr is not one line: $(cat "$tmp/err")"
  tail -n 1 "$tmp/err" | grep -q "^pagetune_sitecustomize: cannot install pagetune's allocator: .*$2" || fail "$1: stderr: $(cat "$tmp/err")"
}
run PAGETUNE_ALLOC_LIB="$tmp/none.so" -- 'import torch
print("went on")'
[ $rc -eq 1 ] || fail "no library: exit $rc, wanted 1"
one_failure "no library" "no library at $tmp/none.so"
grep -q "went on" "$tmp/out" && fail "no library: the program went on"
run PAGETUNE_ALLOC_LIB="$tmp/none.so" PAGETUNE_ON_INSTALL_ERROR=continue -- 'import torch
print("went on")'
[ $rc -eq 0 ] && grep -q "went on" "$tmp/out" || fail "continue: exit $rc, $(cat "$tmp/out")"
one_failure "continue" "going on with PyTorch's allocator$"
run FAKE_CUDA=init -- 'import torch'
[ $rc -eq 1 ] || fail "CUDA initialised: exit $rc"
one_failure "CUDA initialised" "too late to swap the allocator"

# 6. the real library, where built: its refusal of a policy with hooks is that one line (no GPU needed: it refuses at load)
lib=$top_builddir/backend/.libs/libpagetune_alloc.so
if [ -f "$lib" ] && [ -z "${SAN_FLAGS:-}" ]; then
  run PAGETUNE_ALLOC_LIB="$lib" PAGETUNE_CONFIG="$top_srcdir/tests/data/libconf/large_page_threshold.json" -- 'import torch'
  [ $rc -eq 1 ] || fail "real library, hooks: exit $rc"
  one_failure "real library, hooks" "RuntimeError: pagetune_alloc: .*large_page_threshold.json.*hooks=policy" 1
  head -n 1 "$tmp/err" | grep -q "^pagetune_alloc: .*hooks=policy.*; every allocation will fail$" || fail "real library: its own line: $(cat "$tmp/err")"
fi

[ $fails -eq 0 ] && echo "ok: sitecustomize installs once on import torch, loads nothing without it, and fails in one line"
[ $fails -eq 0 ]
