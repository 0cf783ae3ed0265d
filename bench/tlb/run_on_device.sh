#!/bin/bash
# Build bench/tlb/probe and run the translation probes; CSVs and a log go to
# $OUT (or ./tlb-out when OUT is unset). Each memory kind runs in its own
# process, so one failing kind does not lose the others; rows are appended as
# they are measured.
# Usage: bash bench/tlb/run_on_device.sh [part] [total_budget_s]
#   part 1 (default): gather + all chase variants, 5 memory kinds, to 64 GiB
#   part 2: 2 MiB-stride chase to 128 GiB at 4 points an octave; several
#           chasers on disjoint footprints (per-SM or shared?); pinned host
#           memory (4 KiB GPU pages) to see a real page walk
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/tlb-out}
mkdir -p "$OUT"
PART=${1:-1}
BUDGET=${2:-420}
LOG=$OUT/log.txt
exec > >(tee -a "$LOG") 2>&1
echo "== $(date -u +%FT%TZ) run_on_device.sh part $PART budget ${BUDGET}s"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,pstate,power.limit --format=csv
nvidia-smi | sed -n 1,12p
nvcc --version | tail -2
SECONDS=0
nvcc -O3 -arch=sm_90 -o bench/tlb/probe bench/tlb/probe.cu -lcuda || { echo "BUILD FAILED"; exit 1; }
echo "built in ${SECONDS}s"

run_kind() {   # name, per-kind cap (s), probe args...
    local name=$1 cap=$2; shift 2
    local left=$((BUDGET - SECONDS - 10))
    if [ $left -lt 20 ]; then echo "== skip $name: ${left}s left"; return 1; fi
    local dl=$cap; [ $dl -gt $left ] && dl=$left
    echo "== $name (deadline ${dl}s, t=${SECONDS}s): $*"
    timeout $((dl + 60)) ./bench/tlb/probe --out "$OUT" --deadline "$dl" "$@"
    local rc=$?
    echo "== $name exit $rc (t=${SECONDS}s)"
    return $rc
}
if [ "$PART" = 1 ]; then
    run_kind cudaMalloc 80 --kind malloc
    run_kind vmm_2M     80 --kind vmm --handle 2M
    run_kind vmm_512M   80 --kind vmm --handle 512M
    run_kind vmm_2G     80 --kind vmm --handle 2G
    run_kind vmm_32M    80 --kind vmm --handle 32M
    # repeat of cudaMalloc gather and 2 MiB-stride chase, to see run-to-run drift
    run_kind cudaMalloc_repeat 40 --kind malloc --label cudaMalloc_repeat --only gather,line2m
else
    F="--only line2m --steps 4 --min-fp 64M --max-fp 128G --max-gather 0"
    run_kind cudaMalloc 60 --kind malloc $F ||
        run_kind cudaMalloc 60 --kind malloc --only line2m --steps 4 --min-fp 64M --max-fp 120G --max-gather 0
    run_kind vmm_2M   60 --kind vmm --handle 2M $F
    run_kind vmm_512M 60 --kind vmm --handle 512M $F
    run_kind vmm_2G   60 --kind vmm --handle 2G $F
    for B in 8 32; do
        run_kind chasers_$B 40 --kind malloc --label cudaMalloc_x$B --chasers $B \
            --only line2m --steps 4 --min-fp 64M --max-fp 64G --max-gather 0
    done
    run_kind host 100 --kind host --only line4k,line64k,line2m --min-fp 64K --max-fp 4G \
        --max-fp4k 256M --max-gather 0
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
echo "== all done in ${SECONDS}s"
