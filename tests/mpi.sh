#!/bin/sh
# mpi.sh — issue 14's acceptance under MPI (pagetune-mpi, mpirun
# --oversubscribe: this machine has fewer cores than ranks):
#  - a sweep of 2000 runs on 4 ranks stores exactly the runs the same sweep
#    stores alone (pagetune, no MPI), row for row (tests/store_dump.sh);
#  - mpirun's whole process group killed with SIGKILL mid-sweep, every rank
#    waited for, then rerun: every run stored exactly once, integrity_check ok;
#  - tune on 3 ranks prints and stores what tune alone does;
#  - --broadcast-traces (rank 0 sends the trace) gives the same rows;
#  - the plain pagetune as one of several launched processes refuses (exit 2).
# Skips (77) without pagetune-mpi (configure --with-mpi), mpirun or sqlite3.
# As root (CI), Open MPI needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM): set here; the sanitizer
# build gets tests/openmpi.supp (LeakSanitizer: what Open MPI leaves at MPI_Finalize).
. "${top_srcdir:-.}/tests/farm_setup.sh"
ptm="$top_builddir/pagetune-mpi"
MPIRUN=${MPIRUN:-mpirun}
[ -x "$ptm" ] || { echo "no pagetune-mpi (configure --with-mpi): skip"; exit 77; }
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "no mpirun: skip"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none # containers refuse CMA; shared memory without it
if [ -n "${SAN_FLAGS:-}" ]; then # the sanitizer build: Open MPI's own leaks suppressed, by library (openmpi.supp)
  export OMPI_MCA_mca_base_component_disable_dlclose=1 ASAN_OPTIONS=fast_unwind_on_malloc=0
  export LSAN_OPTIONS="suppressions=$top_srcdir/tests/openmpi.supp:print_suppressions=0"
fi
mpi() { "$MPIRUN" --oversubscribe "$@"; }
gc=$(values 50 0.0198)
args() { # 2 traces x 50 x 4 x 5 = 2000 cheap runs
  echo --trace "$tr1" --trace "$tr2" --policy tunable_caching --grid "garbage_collection_threshold=$gc" \
    --grid max_split_size_mb=64,128,256,512 --grid roundup_power2_divisions=0,1,2,4,8 --capacity 64M
}

# 2000 runs on 4 ranks = the same sweep alone
# shellcheck disable=SC2046
"$pt" sweep --db "$tmp/alone.db" $(args) --json >"$tmp/alone.out" 2>/dev/null || fail "the sweep alone failed"
# shellcheck disable=SC2046
mpi -n 4 "$ptm" sweep --db "$tmp/mpi.db" $(args) --json >"$tmp/mpi.out" 2>"$tmp/mpi.err" || { fail "mpirun -n 4 sweep failed"; tail -n 5 "$tmp/mpi.err"; }
grep -q '"runs":2000,"stored":2000,"skipped":0' "$tmp/mpi.out" || fail "mpirun -n 4 sweep: $(cat "$tmp/mpi.out")"
[ "$(wc -l <"$tmp/mpi.out")" = 1 ] || fail "the summary came $(wc -l <"$tmp/mpi.out") times (rank 0 alone says it)"
[ "$(grep -c ': stored$' "$tmp/mpi.err")" = 2000 ] || fail "progress lines: $(grep -c ': stored$' "$tmp/mpi.err"), wanted 2000 (rank 0's)"
sh "$top_srcdir/tests/store_dump.sh" "$tmp/alone.db" >"$tmp/alone.dump"
sh "$top_srcdir/tests/store_dump.sh" "$tmp/mpi.db" >"$tmp/mpi.dump"
[ "$(wc -l <"$tmp/alone.dump")" -eq 2000 ] || fail "alone: $(wc -l <"$tmp/alone.dump") runs"
cmp -s "$tmp/alone.dump" "$tmp/mpi.dump" || fail "4 ranks stored other rows than the sweep alone"

# --broadcast-traces: the same rows
# shellcheck disable=SC2046
mpi -n 3 "$ptm" sweep --db "$tmp/bc.db" $(args) --broadcast-traces >/dev/null 2>&1 || fail "--broadcast-traces sweep failed"
sh "$top_srcdir/tests/store_dump.sh" "$tmp/bc.db" | cmp -s - "$tmp/alone.dump" || fail "--broadcast-traces stored other rows"

# kill -9 mpirun's process group mid-sweep, wait for every rank, rerun
kargs="--trace $top_srcdir/traces/llm_decode.pickle.gz --policy tunable_caching --policy pytorch_native
  --grid garbage_collection_threshold=$gc --grid max_split_size_mb=32,64,128,256,512,1024,2048,4096
  --grid roundup_power2_divisions=0,1,2,4 --capacity 64M" # 3200 runs of the largest bundled trace
# shellcheck disable=SC2086
setsid "$MPIRUN" --oversubscribe -n 4 "$ptm" sweep --db "$tmp/kill.db" $kargs >/dev/null 2>&1 &
pid=$!
kill_mid "$pid" "$tmp/kill.db" 3200
# shellcheck disable=SC2086
mpi -n 4 "$ptm" sweep --db "$tmp/kill.db" $kargs --json >"$tmp/k.out" 2>/dev/null || fail "the rerun after the kill failed"
grep -q "\"skipped\":$before" "$tmp/k.out" || fail "the rerun did not skip the $before stored runs: $(cat "$tmp/k.out")"
stored_once "$tmp/kill.db" 3200

# tune on 3 ranks = tune alone
"$pt" tune --db "$tmp/t1.db" --trace "$tr2" --policy tunable_caching --budget 30 --capacity 64M \
  --objective weighted:0.5 --json 2>/dev/null | sed "s|$tmp/t1.db||" >"$tmp/t1.out" || fail "tune alone failed"
mpi -n 3 "$ptm" tune --db "$tmp/t3.db" --trace "$tr2" --policy tunable_caching --budget 30 --capacity 64M \
  --objective weighted:0.5 --json 2>/dev/null | sed "s|$tmp/t3.db||" >"$tmp/t3.out" || fail "tune on 3 ranks failed"
grep -q '"evaluations":30' "$tmp/t1.out" || fail "tune alone: $(cat "$tmp/t1.out")"
cmp -s "$tmp/t1.out" "$tmp/t3.out" || { fail "tune on 3 ranks printed other than tune alone"; diff "$tmp/t1.out" "$tmp/t3.out"; }
sh "$top_srcdir/tests/store_dump.sh" "$tmp/t1.db" >"$tmp/t1.dump"
sh "$top_srcdir/tests/store_dump.sh" "$tmp/t3.db" | cmp -s - "$tmp/t1.dump" || fail "tune on 3 ranks stored other runs"

# the plain pagetune under the launcher: refused, nothing stored
mpi -n 2 "$pt" sweep --db "$tmp/plain.db" --trace "$tr1" --policy direct >/dev/null 2>"$tmp/plain.err"
rc=$?
[ "$rc" -ne 0 ] && grep -q 'run pagetune-mpi' "$tmp/plain.err" && [ ! -e "$tmp/plain.db" ] ||
  fail "plain pagetune under mpirun: exit $rc, $(head -n 1 "$tmp/plain.err")"
command -v ldd >/dev/null 2>&1 && ldd "$pt" | grep -q libmpi && fail "pagetune links libmpi (only pagetune-mpi may)"
"$ptm" --version | grep -q '^mpi: yes' || fail "pagetune-mpi --version: $("$ptm" --version | grep mpi)"
"$pt" --version | grep -q '^mpi: in pagetune-mpi' || fail "pagetune --version: $("$pt" --version | grep mpi)"

done_ok mpi.sh
