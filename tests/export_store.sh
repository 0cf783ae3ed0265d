#!/bin/sh
# export_store.sh — export gives the advice the store holds: the policy text
# stored with the run, whatever the current directory or the files on disk now
# hold; no name read from the store is opened as a path (a policy or GPU named
# /dev/stdin must not be read); the memory-fraction line names its GPU.
# Exit 77 (SKIP) without the sqlite3 shell.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v sqlite3 >/dev/null 2>&1 || { echo "export_store: sqlite3 shell missing: skip"; exit 77; }
pt=$(cd "$top_builddir" && pwd)/pagetune
src=$(cd "$top_srcdir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
db=$tmp/t.db
mkdir "$tmp/elsewhere"

# a run of a bundled policy and one of a policy file, under a cap (so a fraction line)
cp "$src/policies/large_page_threshold.lua" "$tmp/mine.lua"
"$pt" sweep --db "$db" --trace "$src/traces/varlen_infer.pickle.gz" --policy pytorch_native --policy "$tmp/mine.lua" \
  --capacity 600M >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; exit 99; }

# export RUN FORMAT [ARGS]: stdout into $tmp/x; stdin is a FIFO held open and never written, so a read of it
# hangs (timeout: exit 124)
mkfifo "$tmp/fifo"
sleep 600 >"$tmp/fifo" &
holder=$!
trap 'kill $holder 2>/dev/null; rm -rf "$tmp"' EXIT
export_() {
  run=$1 fmt=$2; shift 2
  timeout 10 "$pt" export --db "$db" --trace varlen_infer.pickle.gz --run "$run" --format "$fmt" "$@" \
    <"$tmp/fifo" >"$tmp/x" 2>"$tmp/err"
}

# the same output from the source tree and from elsewhere, with the variables unset
unset PAGETUNE_POLICY_DIR PAGETUNE_GPU_DIR
for run in 1 2; do
  for fmt in env json; do
    (cd "$src" && export_ $run $fmt) && cp "$tmp/x" "$tmp/here.$run.$fmt"
    (cd "$tmp/elsewhere" && export_ $run $fmt) && cp "$tmp/x" "$tmp/there.$run.$fmt"
    if cmp -s "$tmp/here.$run.$fmt" "$tmp/there.$run.$fmt"; then echo "ok: run $run --format $fmt: the same from any directory"
    else fail "run $run --format $fmt differs by directory"; diff "$tmp/here.$run.$fmt" "$tmp/there.$run.$fmt" | head -5; fi
  done
done
grep -q 'set_per_process_memory_fraction(0[.0-9]*)  # on h200 (' "$tmp/here.1.env" && echo "ok: the fraction line names its GPU" ||
  fail "the fraction line does not say it is for h200: $(grep fraction "$tmp/here.1.env")"

# the policy file changed or gone: the stored text still gives the same advice
echo 'error("changed after the sweep")' >"$tmp/mine.lua"
(cd "$tmp/elsewhere" && export_ 2 env) && cmp -s "$tmp/x" "$tmp/here.2.env" && echo "ok: the policy file changed: the same export" ||
  fail "the policy file changed: the export changed"
rm -f "$tmp/mine.lua"
(cd "$tmp/elsewhere" && export_ 2 env) && cmp -s "$tmp/x" "$tmp/here.2.env" && echo "ok: the policy file gone: the same export" ||
  fail "the policy file gone: the export changed"

# names in the store that are paths are never opened: a policy called /dev/stdin or a missing file
for name in /dev/stdin /nonexistent/policy.lua; do
  for run in 1 2; do
    sqlite3 "$db" "UPDATE policies SET name = '$name' WHERE id = (SELECT policy_id FROM runs WHERE id = $run)"
    (cd "$tmp/elsewhere" && export_ $run env); rc=$?
    sed -e 1d -e "/^# note: policy name written as/d" "$tmp/x" >"$tmp/got"; sed 1d "$tmp/here.$run.env" >"$tmp/want"
    if [ $rc -eq 0 ] && cmp -s "$tmp/got" "$tmp/want"; then
      echo "ok: run $run, policy stored as $name: the same export"
    else fail "run $run, policy stored as $name: exit $rc"; sed 's/^/  /' "$tmp/err"; fi
  done
done
# a GPU called /dev/stdin: not read; the device's size is left to the machine
sqlite3 "$db" "UPDATE runs SET gpu = '/dev/stdin' WHERE id = 1"
(cd "$tmp/elsewhere" && export_ 1 env); rc=$?
if [ $rc -eq 0 ] && grep -q 'get_device_properties(0).total_memory' "$tmp/x"; then echo "ok: a GPU stored as /dev/stdin is not opened"
else fail "GPU stored as /dev/stdin: exit $rc"; sed 's/^/  /' "$tmp/err"; fi

# --gpu names the device the fraction is of; --gpu none leaves it to the machine; an unknown one is refused
(cd "$tmp/elsewhere" && export_ 1 env --gpu a100) && grep -q 'fraction(0[.0-9]*)  # on a100 (85899345920 B)' "$tmp/x" &&
  echo "ok: --gpu a100: the fraction of an A100's memory" || fail "--gpu a100: $(grep fraction "$tmp/x")"
(cd "$tmp/elsewhere" && export_ 1 env --gpu none) && grep -q 'get_device_properties(0).total_memory' "$tmp/x" &&
  echo "ok: --gpu none: computed on the machine" || fail "--gpu none"
(cd "$tmp/elsewhere" && export_ 1 env --gpu no_such_gpu); rc=$?
[ $rc -eq 1 ] && grep -q 'no such GPU description' "$tmp/err" && echo "ok: --gpu no_such_gpu: exit 1" || fail "--gpu no_such_gpu: exit $rc"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
