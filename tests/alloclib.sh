#!/bin/sh
# alloclib.sh — libpagetune_alloc.so loaded as PyTorch loads it (dlopen, here
# through Python's ctypes), without a GPU: a bad configuration is one line on
# stderr at load and in pagetune_status(), a good one without a driver says
# there is no GPU, and every allocation then fails instead of running
# something else.  The library needs nothing but libc (and the C++ runtime
# every PyTorch process has).  Skips (77) in a
# build without CUDA, where the library is not built.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
lib=$top_builddir/backend/.libs/libpagetune_alloc.so
[ -f "$lib" ] || { echo "SKIP: no libpagetune_alloc.so (a build without CUDA)"; exit 77; }
# a sanitizer build's library needs the sanitizer runtimes loaded first
if [ -n "${SAN_FLAGS:-}" ]; then
  pre=
  case $SAN_FLAGS in *address*) pre=$(${CC:-cc} -print-file-name=libasan.so) ;; esac
  case $SAN_FLAGS in *undefined*) pre="$pre $(${CC:-cc} -print-file-name=libubsan.so)" ;; esac
  LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0
  export LD_PRELOAD ASAN_OPTIONS
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for n in $needed; do
  # libstdc++ and libgcc_s for the one exception it throws (oomthrow.cc): every PyTorch process has them
  case $n in libc.so.*|libm.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*|libasan.so.*|libubsan.so.*) ;; *) fail "the library needs $n" ;; esac
done
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ && $3 !~ /^pagetune_/ {print $3}' | tr '\n' ' ')
[ -z "$others" ] || fail "the library exports more than its pagetune_* entry points: $others"
probe() { # ENV... : load the library, print status, the status text and what malloc(1024) gave
  # (PAGETUNE_ON_FAILURE=null: a C++ exception cannot cross ctypes)
  env PAGETUNE_ON_FAILURE=null "$@" python3 - "$lib" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.pagetune_status.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.pagetune_malloc.restype = ctypes.c_void_p
lib.pagetune_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
buf = ctypes.create_string_buffer(1024)
ok = lib.pagetune_status(buf, len(buf))
p = lib.pagetune_malloc(1024, 0, None)
print("%d|%s|%s" % (ok, buf.value.decode(), "null" if not p else "ptr"))
PY
}
check() { # WANT-STATUS WANT-TEXT ENV...
  want=$1 text=$2
  shift 2
  out=$(probe "$@" 2>"$tmp.err") || { fail "$*: the probe failed: $(cat "$tmp.err")"; return; }
  case $out in "$want|"*"$text"*"|null") ;; *) fail "$*: got '$out', wanted status $want with '$text' and a NULL allocation" ;; esac
  [ "$want" = 1 ] || grep -q "^pagetune_alloc: .*$text.*; every allocation will fail$" "$tmp.err" ||
    fail "$*: no one-line message at load (stderr: $(cat "$tmp.err"))"
  [ "$(wc -l <"$tmp.err")" -le 2 ] || fail "$*: more than one line at load and one at malloc"
}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.err"' EXIT
check 0 "PAGETUNE_ALLOC_CONF: " PAGETUNE_ALLOC_CONF=mechanism=nonesuch
check 0 "max_split_size_mb" PAGETUNE_ALLOC_CONF=mechanism=caching,max_split_size_mb=abc
check 0 "/nonexistent/conf.json: cannot open: No such file" PAGETUNE_CONFIG=/nonexistent/conf.json
check 0 "large_page_threshold" PAGETUNE_CONFIG="$top_srcdir/tests/data/libconf/large_page_threshold.json"
# PAGETUNE_RECORD is part of the configuration: refused at load, before the driver is looked for
check 0 "PAGETUNE_RECORD=$tmp.trace.gz: the allocator records plain text" PAGETUNE_RECORD="$tmp.trace.gz"
check 0 "PAGETUNE_RECORD=/nonexistent/run.trace: cannot write in /nonexistent" PAGETUNE_RECORD=/nonexistent/run.trace
if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  check 0 "no GPU" PAGETUNE_CONFIG="$top_srcdir/tests/data/libconf/stitch.json"
  check 0 "no GPU" PAGETUNE_ALLOC_CONF=
  check 0 "no GPU" PAGETUNE_RECORD="$tmp.trace" # a good one: the driver is what is missing
fi
[ $fails -eq 0 ] && echo "ok: the library refuses bad configurations at load, in one line"
[ $fails -eq 0 ]
