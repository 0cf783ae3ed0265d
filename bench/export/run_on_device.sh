#!/bin/bash
# The GPU check of issue 5: PyTorch accepts each conf string sim/work/export.c
# exports, and the allocator behaves as the string says.
# The strings come from sim/work/export.c itself (bench/export/emit_confs.c, built
# here with gcc); if no C compiler is found, the strings the unit tests pin
# (tests/test_export.c) are used and the log says so.
# Log and JSON go to $OUT (or ./export-out).  Usage: bash bench/export/run_on_device.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/export-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
echo "== $(date -u +%FT%TZ) bench/export/run_on_device.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
TOTAL=$(python3 -c 'import torch; print(torch.cuda.get_device_properties(0).total_memory)')
echo "total_memory $TOTAL"
SRC="sim/work/export.c $(echo sim/base/*.c sim/device/*.c sim/mech/*.c) sim/gpu/pagetable.c"
INC=$(for d in sim/*/; do printf -- "-I%s " "$d"; done)
if command -v gcc >/dev/null && gcc -O1 $INC -o /tmp/emit_confs bench/export/emit_confs.c $SRC -lm; then
    /tmp/emit_confs "$TOTAL" > "$OUT/confs.tsv" || { echo "emit_confs failed"; exit 1; }
    echo "conf strings from sim/work/export.c (emit_confs, device total $TOTAL):"
else
    echo "no C compiler: using the strings tests/test_export.c pins (fraction for the H200's 150109880320 B)"
    printf 'knobs\tgarbage_collection_threshold:0.6,max_split_size_mb:64\nrp2\troundup_power2_divisions:4\nexpandable\texpandable_segments:True\nasync\tbackend:cudaMallocAsync\nmerged\tpinned_use_cuda_host_register:True,max_split_size_mb:64,release_lock_on_cudamalloc:True,garbage_collection_threshold:0.6\nfraction\t0.00716\ncap\t1073741824\n' > "$OUT/confs.tsv"
fi
cat "$OUT/confs.tsv"
get() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$OUT/confs.tsv"; }
timeout 170 python3 bench/export/check_conf.py \
    --fraction "$(get fraction)" --cap "$(get cap)" \
    --bad "max_split_size_mb:64,bogus_key:1" \
    --probe "large_segment_size_mb:40" --probe "per_process_memory_fraction:0.5" \
    --probe "pinned_use_background_threads:True" \
    --precedence --direct \
    --log "$OUT/check_conf.log" --json "$OUT/check_conf.json" \
    "$(get knobs)" "$(get rp2)" "$(get expandable)" "$(get async)" "$(get merged)"
echo "== check_conf.py exit $?"
