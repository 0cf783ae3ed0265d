# gpu_setup.sh — sourced by the GPU test scripts (gpu.sh, gpu_calibrate.sh,
# gpu_mreplay.sh): the build's program and data folders, a temporary folder
# removed at exit ($tmp), fail() counting into $fails, and a skip (exit 77,
# automake's SKIP) where `pagetune gpu info` finds no GPU or the build has no
# CUDA; the no-GPU behaviour is cli.sh's.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$top_srcdir/sim/gpus}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$pt" gpu info >"$tmp/info" 2>&1; then
  echo "SKIP: no GPU here: $(cat "$tmp/info")"
  exit 77
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
