#!/bin/sh
# build.sh — build the libFuzzer targets with clang (ASan + UBSan) into
# tests/fuzz/ of the build tree.  Needs clang and libclang-rt-14-dev (Debian).
#   sh tests/fuzz/build.sh [SRCDIR]        then   sh tests/fuzz/run.sh [RUNS]
set -eu
src=${1:-.}
out=tests/fuzz
mkdir -p "$out"
cc=${CLANG:-clang}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$src/sim"
lib="$src/sim/error.c $src/sim/pickle.c $src/sim/u64map.c $src/sim/trace.c $src/sim/snapshot.c"
$cc $flags -o "$out/fuzz_trace" "$src/tests/fuzz/fuzz_trace.c" $lib -lz
$cc $flags -o "$out/fuzz_pickle" "$src/tests/fuzz/fuzz_pickle.c" "$src/sim/error.c" "$src/sim/pickle.c"
echo "built $out/fuzz_trace $out/fuzz_pickle"
