#!/bin/sh
# run_on_device.sh — `pagetune confirm` on the H200 (issue 11): the two workloads behind
# traces/transformer_train.pickle.gz (a GPT-2-style training loop: 6 layers, d=384, AdamW,
# 6 steps of 8 x 256 tokens) and traces/varlen_infer.pickle.gz (variable-length GPT-2
# inference: 24 forwards, batch 1..16 x 16..512 tokens), run again by the command that made
# them, without recording,
#     python3 traces/capture/capture.py --worker W --name confirm_W --out DIR --no-record
# each confirmed against PyTorch's own allocator (pytorch_native's defaults, no
# PYTORCH_CUDA_ALLOC_CONF) twice, N=5 runs an arm, alternating:
#   expressible  the best run by weighted:0.5 of the policies PyTorch can express
#                (tunable_caching, tuned by `pagetune tune`; pytorch_expandable), run under
#                PYTORCH_CUDA_ALLOC_CONF;
#   library      the best run by weighted:0.5 of the policies only pagetune's allocator
#                library runs (stitch; cuda_async, whose pool releases memory; direct), run
#                under libpagetune_alloc.so.
#
# From the repository root, ./pagetune built (with CUDA), its libraries on LD_LIBRARY_PATH:
#     export LD_LIBRARY_PATH=$PWD/.devlibs; OUT=out sh bench/confirm/run_on_device.sh
# (the device tool: carry ["pagetune", ".devlibs", "backend/.libs"]).  Everything goes under
# $OUT: env.txt (torch's and transformers' versions are in the workers' sidecars,
# work/W/*.json), stores/W.db (the store, with the confirmations in it), W_warmup.log,
# W_expressible.{json,log}, W_library.{json,log} (confirm's --json object, its progress and the
# workload's output), W_report.txt, W.report.html, summary.md (the table, also printed).
#
# The stores: made beforehand on the CPU machine (the model is deterministic: the same runs
# anywhere) by
#     pagetune tune  --db bench/confirm/stores/W.db --trace traces/W.pickle.gz \
#         --policy tunable_caching --objective weighted:0.5 --budget 40
#     pagetune sweep --db bench/confirm/stores/W.db --trace traces/W.pickle.gz --policy pytorch_native \
#         --policy pytorch_expandable --policy stitch --policy cuda_async --policy direct
# for W in transformer_train varlen_infer; *.db is ignored by git, so carry bench/confirm/stores
# to use those; without them this script makes them here (a second each) in $OUT/stores.
# A store found is copied to $OUT/stores first: the confirmations go into the copy, which comes back.
#
# Time: one worker run takes about 11 s (transformer_train) and 13 s (varlen_infer) on the
# H200, imports included (worker_seconds of the --no-record runs in traces/capture/logs/); the
# workload is the traced one as it is (its fixed costs, imports and CUDA start, dominate: more
# or fewer steps would change little but the trace's match).  The script times one warm-up run
# of each workload (which also warms the file cache, so the first baseline run is not the only
# cold one), then gives each confirm N=5 runs an arm unless the budget left (BUDGET_S, default
# 480 s for the whole script) cannot hold them: then fewer (at least 3), said in the log.  With
# two GPUs or more the two workloads run at once, one a GPU (CUDA_VISIBLE_DEVICES), each within
# the budget; alone on one GPU they run in turn.
# PT_CONFIRM_DRY=1: no GPU, no torch: the workload is `python3 -c pass` (for checking the script).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 1
OUT=${OUT:-$here/out/confirm}
mkdir -p "$OUT/stores" "$OUT/work"
pt=$here/pagetune
export PAGETUNE_POLICY_DIR=$here/policies PAGETUNE_GPU_DIR=$here/sim/gpus PYTHONUNBUFFERED=1
unset PAGETUNE_ALLOC_LIB
BUDGET_S=${BUDGET_S:-480}
RUNS=${RUNS:-5}
DRY=${PT_CONFIRM_DRY:-0}
t_start=$(date +%s)
WORKLOADS="varlen_infer transformer_train"

{
  echo "== $(date -u +%FT%TZ) bench/confirm/run_on_device.sh (budget ${BUDGET_S}s, ${RUNS} runs an arm)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1
  "$pt" --version
  python3 --version
  git -C "$here" log -1 --format='source %H %s' 2>/dev/null
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# the stores: carried, or made now
for w in $WORKLOADS; do
  db=$OUT/stores/$w.db
  if [ -f "$here/bench/confirm/stores/$w.db" ]; then
    cp "$here/bench/confirm/stores/$w.db" "$db"
    echo "store $w: bench/confirm/stores/$w.db (made beforehand), copied to $db"
  elif [ ! -f "$db" ]; then
    t0=$(date +%s)
    "$pt" tune --db "$db" --trace "traces/$w.pickle.gz" --policy tunable_caching --objective weighted:0.5 --budget 40 \
      >"$OUT/stores/$w.tune.txt" 2>&1 &&
      "$pt" sweep --db "$db" --trace "traces/$w.pickle.gz" --policy pytorch_native --policy pytorch_expandable \
        --policy stitch --policy cuda_async --policy direct >"$OUT/stores/$w.sweep.txt" 2>&1 ||
      echo "store $w: FAILED, see $OUT/stores/$w.*.txt"
    echo "store $w: made here in $(($(date +%s) - t0)) s"
  fi
done

now() { echo $(($(date +%s) - t_start)); }

# warm W: one timed run of workload W (imports included), into tw_W
warm() {
  w=$1
  mkdir -p "$OUT/work/$w"
  t0=$(date +%s)
  if [ "$DRY" = 1 ]; then python3 -c pass
  else python3 traces/capture/capture.py --worker "$w" --name "warmup_$w" --out "$OUT/work/$w" --no-record; fi \
    >"$OUT/${w}_warmup.log" 2>&1
  rc=$?
  t=$(($(date +%s) - t0))
  [ "$t" -lt 1 ] && t=1
  eval "tw_$w=$t"
  echo "$w: warm-up run: exit $rc, ${t} s, imports included"
  [ $rc -eq 0 ] || { tail -5 "$OUT/${w}_warmup.log"; eval "tw_$w=0"; }
}

# confirm_one W KIND NEED: one confirm of workload W; NEED is the seconds one run of every arm of the
# confirms left (this one included) takes, so that each gets the same number of runs from what is left
confirm_one() {
  w=$1 kind=$2 need=$3
  case $kind in
    expressible) pols="--policy tunable_caching --policy pytorch_expandable" ;;
    library) pols="--policy stitch --policy cuda_async --policy direct" ;;
  esac
  left=$((BUDGET_S - $(now)))
  n=$RUNS
  [ $((RUNS * need)) -gt "$left" ] && n=$((left / need))
  if [ "$n" -lt 3 ]; then
    echo "$w $kind: SKIPPED: ${left} s left of the budget, not enough for 3 runs an arm"
    return 0
  fi
  [ "$n" -lt "$RUNS" ] && echo "$w $kind: $n runs an arm, not $RUNS: ${left} s left of the budget"
  if [ "$DRY" = 1 ]; then set -- python3 -c pass
  else set -- python3 traces/capture/capture.py --worker "$w" --name "confirm_$w" --out "$OUT/work/$w" --no-record; fi
  t0=$(date +%s)
  # shellcheck disable=SC2086
  "$pt" confirm --db "$OUT/stores/$w.db" --trace "$w.pickle.gz" $pols --objective weighted:0.5 --runs "$n" --json -- "$@" \
    >"$OUT/${w}_$kind.json" 2>"$OUT/${w}_$kind.log"
  rc=$?
  echo "$w $kind: exit $rc, $n runs an arm, $(($(date +%s) - t0)) s ($(now) s into the script)"
  [ $rc -eq 0 ] || tail -3 "$OUT/${w}_$kind.log"
}

# one workload alone (on its own GPU): warm-up, then its two confirms
workload() {
  warm "$1"
  eval "t=\$tw_$1"
  [ "$t" -gt 0 ] || return 1
  confirm_one "$1" expressible $((4 * t))
  confirm_one "$1" library $((2 * t))
}

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$DRY" != 1 ] && [ "$ngpu" -ge 2 ]; then
  echo "$ngpu GPUs: the two workloads at once, one a GPU, each within the budget"
  i=0
  for w in $WORKLOADS; do
    (export CUDA_VISIBLE_DEVICES=$i; workload "$w") >"$OUT/$w.driver.log" 2>&1 &
    i=$((i + 1))
  done
  wait
  cat "$OUT"/*.driver.log
else
  # one GPU: the warm-ups, then the four confirms in turn, sharing what is left of the budget
  for w in $WORKLOADS; do warm "$w"; done
  need=0
  for w in $WORKLOADS; do eval "need=\$((need + 4 * tw_$w))"; done
  for w in $WORKLOADS; do
    eval "t=\$tw_$w"
    [ "$t" -gt 0 ] || continue
    for kind in expressible library; do
      confirm_one "$w" "$kind" "$need"
      need=$((need - 2 * t))
    done
  done
fi

for w in $WORKLOADS; do
  "$pt" report --db "$OUT/stores/$w.db" --trace "$w.pickle.gz" >"$OUT/${w}_report.txt" 2>&1
  "$pt" report --db "$OUT/stores/$w.db" --trace "$w.pickle.gz" --html "$OUT/$w.report.html" >/dev/null 2>&1
done
python3 "$here/bench/confirm/summarise.py" "$OUT" | tee "$OUT/summary.md"
# the device tool brings back a limited number of files: everything else in one archive
(cd "$OUT" && tar -czf confirm.tar.gz --exclude=confirm.tar.gz --exclude=summary.md --exclude=env.txt -- *)
echo "== done in $(now) s (everything in $OUT/confirm.tar.gz)"
