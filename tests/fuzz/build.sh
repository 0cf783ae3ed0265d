#!/bin/sh
# build.sh — build the libFuzzer targets with clang (ASan + UBSan) into
# tests/fuzz/ of the build tree.  Needs clang and libclang-rt-14-dev (Debian).
#   sh tests/fuzz/build.sh [SRCDIR]        then   sh tests/fuzz/run.sh [RUNS]
set -eu
src=${1:-.}
out=tests/fuzz
mkdir -p "$out"
cc=${CLANG:-clang}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$src/sim/base -I$src/sim/trace"
lib="$src/sim/base/error.c $src/sim/base/file.c $src/sim/trace/pickle.c $src/sim/base/u64map.c $src/sim/trace/trace.c $src/sim/trace/snapshot.c \
  $src/sim/trace/frames.c"
$cc $flags -o "$out/fuzz_trace" "$src/tests/fuzz/fuzz_trace.c" $lib -lz
$cc $flags -o "$out/fuzz_pickle" "$src/tests/fuzz/fuzz_pickle.c" "$src/sim/base/error.c" "$src/sim/trace/pickle.c" \
  "$src/sim/base/u64map.c"
# the configuration reader with the layers it stands on: base, device and every mechanism file
conf="$src/sim/base/error.c $src/sim/base/jsonread.c $src/sim/base/clock.c $src/backend/libconf.c $src/sim/base/u64map.c \
  $(echo "$src"/sim/device/*.c "$src"/sim/mech/*.c)"
# shellcheck disable=SC2086
$cc $flags -I$src/sim/device -I$src/sim/mech -I$src/backend -o "$out/fuzz_libconf" "$src/tests/fuzz/fuzz_libconf.c" $conf -lm
rec="$src/sim/base/error.c $src/sim/base/file.c $src/sim/base/u64map.c $src/sim/base/clock.c $src/backend/record.c $src/sim/trace/pickle.c \
  $src/sim/trace/trace.c $src/sim/trace/snapshot.c $src/sim/trace/frames.c"
# shellcheck disable=SC2086
$cc $flags -I$src/sim/device -I$src/sim/mech -I$src/backend -o "$out/fuzz_record" "$src/tests/fuzz/fuzz_record.c" $rec -lz
$cc $flags -o "$out/fuzz_timing" "$src/tests/fuzz/fuzz_timing.c" "$src/sim/base/error.c" "$src/sim/base/u64map.c" \
  "$src/sim/trace/gpufrees.c" -lz
echo "built $out/fuzz_trace $out/fuzz_pickle $out/fuzz_libconf $out/fuzz_record $out/fuzz_timing"
