#!/bin/sh
# pic.sh — the lower layers (base, device, mech) link into a shared object
# that needs nothing but libc: what an allocator library loaded into PyTorch
# builds on.  Links their PIC objects with -z defs (no symbol left undefined)
# and reads the object's NEEDED entries; a sanitizer build may also need the
# sanitizers' runtimes.
set -u
top_builddir=${top_builddir:-.}
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
libs=
for l in base/libpt_base device/libpt_device mech/libpt_mech; do
  a=$top_builddir/sim/${l%/*}/.libs/${l#*/}.a
  [ -f "$a" ] || { echo "pic.sh: $a not built (a libtool convenience library)" >&2; exit 1; }
  libs="$libs $a"
done
# shellcheck disable=SC2086
if ! $cc ${SAN_FLAGS:-} -shared -o "$tmp/lower.so" -Wl,--whole-archive $libs -Wl,--no-whole-archive -Wl,-z,defs \
    2>"$tmp/err"; then
  echo "FAIL: base, device and mech do not link into a shared object on their own:" >&2
  cat "$tmp/err" >&2
  exit 1
fi
needed=$(readelf -d "$tmp/lower.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
bad=0
for n in $needed; do
  case $n in
    libc.so.*|libm.so.*) ;;
    libasan.so.*|libubsan.so.*) [ -n "${SAN_FLAGS:-}" ] || bad=1 ;;
    *) bad=1 ;;
  esac
  [ $bad -eq 0 ] || { echo "FAIL: the lower layers need $n" >&2; exit 1; }
done
echo "ok: base, device and mech link into a shared object needing only: $(echo $needed)"
