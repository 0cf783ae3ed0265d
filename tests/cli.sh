#!/bin/sh
# cli.sh — the command line's contract: exit codes (0 ok, 1 bad input, 2 bad
# usage), one-line errors, no partial output files, --help for each command.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
data="$top_srcdir/tests/data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect CODE DESCRIPTION -- COMMAND...: run, check exit code; stderr kept in $tmp/err
expect() {
  want=$1; what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, wanted $want"; sed 's/^/  stderr: /' "$tmp/err"; fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
}
# one_line PATTERN: stderr is exactly one line and matches PATTERN
one_line() {
  if [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q -- "$1" "$tmp/err"; then
    echo "FAIL: stderr is not one line matching '$1':"; sed 's/^/  /' "$tmp/err"; fails=$((fails + 1))
  fi
}
absent() {
  if ls "$1"* >/dev/null 2>&1; then echo "FAIL: $1 left behind"; fails=$((fails + 1)); fi
}

expect 0 "--version" -- "$pt" --version
grep -q '^cuda: ' "$tmp/out" || { echo "FAIL: --version lacks cuda:"; fails=$((fails + 1)); }
expect 0 "--help" -- "$pt" --help
expect 2 "no command" -- "$pt"
expect 2 "unknown command" -- "$pt" frobnicate
for c in "trace" "trace import" "trace stats" "trace gen" "gpu"; do
  # shellcheck disable=SC2086
  expect 0 "$c --help" -- "$pt" $c --help
  grep -q '^usage: pagetune' "$tmp/out" || { echo "FAIL: $c --help has no usage line"; fails=$((fails + 1)); }
done
expect 2 "trace stats without a file" -- "$pt" trace stats
expect 2 "trace stats unknown option" -- "$pt" trace stats --bogus x
expect 2 "trace gen without --seed" -- "$pt" trace gen --kind train -o "$tmp/g.trace"
expect 2 "trace gen bad kind" -- "$pt" trace gen --kind nope --seed 1 -o "$tmp/g.trace"
expect 2 "trace import without -o" -- "$pt" trace import "$data/synthetic_snapshot.pickle"

# no driver here (or a GPU there): either a description or one clear line
"$pt" gpu info >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ]; then one_line "no GPU"; echo "ok: gpu info without a GPU: one line, exit 1"
elif [ $rc -ne 0 ]; then echo "FAIL: gpu info exit $rc"; fails=$((fails + 1)); fi
"$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy pytorch_native --repeat 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ]; then one_line "no GPU"; echo "ok: replay without a GPU: one line, exit 1"
elif [ $rc -ne 0 ]; then echo "FAIL: replay exit $rc"; cat "$tmp/err"; fails=$((fails + 1)); fi
"$pt" calibrate --repeat 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ]; then one_line "no GPU"; echo "ok: calibrate without a GPU: one line, exit 1"
elif [ $rc -ne 0 ]; then echo "FAIL: calibrate exit $rc"; cat "$tmp/err"; fails=$((fails + 1)); fi
expect 2 "calibrate --repeat 0" -- "$pt" calibrate --repeat 0
expect 1 "calibrate from an unknown description" -- "$pt" calibrate --base nope
one_line "nope: no such GPU description"
expect 2 "sim with replay's --db" -- "$pt" sim --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy direct --db "$tmp/x.db"
expect 2 "replay without a policy" -- "$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz"
expect 2 "replay with sim's --tlb" -- "$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy direct --tlb
expect 2 "replay --leave-free without --mechanism" -- "$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy direct --leave-free 1G
expect 2 "replay --touch without --mechanism" -- "$pt" replay --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy direct --touch
"$pt" replay --mechanism --trace "$top_srcdir/traces/randn_loop.pickle.gz" --policy stitch --repeat 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ]; then one_line "no GPU"; echo "ok: replay --mechanism without a GPU: one line, exit 1"
elif [ $rc -ne 0 ]; then echo "FAIL: replay --mechanism exit $rc"; cat "$tmp/err"; fails=$((fails + 1)); fi

# imports: good, and bad ones leaving nothing behind
expect 0 "import a snapshot" -- "$pt" trace import "$data/synthetic_snapshot.pickle.gz" -o "$tmp/s.trace.gz" --json
grep -q '"peak_live_bytes":13632483' "$tmp/out" || { echo "FAIL: import --json"; cat "$tmp/out"; fails=$((fails + 1)); }
expect 0 "stats of the import" -- "$pt" trace stats "$tmp/s.trace.gz"
# frees that waited for the other stream: counted from the snapshot and from the imported trace alike
# (its +deferred lines), and not shown for a trace without
ts="$top_srcdir/traces/two_streams.pickle.gz"
expect 0 "import two_streams" -- "$pt" trace import "$ts" -o "$tmp/ts.trace"
for src in "$ts" "$tmp/ts.trace"; do
  expect 0 "stats of $(basename "$src")" -- "$pt" trace stats "$src" --json
  grep -q '"deferred_frees":855' "$tmp/out" || { echo "FAIL: deferred_frees of $src"; cat "$tmp/out"; fails=$((fails + 1)); }
done
[ "$(grep -c '^+deferred$' "$tmp/ts.trace")" -eq 855 ] || { echo "FAIL: +deferred lines"; fails=$((fails + 1)); }
expect 0 "stats of llm_decode" -- "$pt" trace stats "$top_srcdir/traces/llm_decode.pickle.gz"
grep -q deferred "$tmp/out" && { echo "FAIL: deferred_frees shown for a trace without"; fails=$((fails + 1)); }
for bad in forbidden_opcode negative_size negative_stream not_a_snapshot; do
  expect 1 "import $bad" -- "$pt" trace import "$data/$bad.pickle" -o "$tmp/$bad.trace"
  one_line "$bad.pickle: "
  absent "$tmp/$bad.trace"
done
expect 1 "import a missing file" -- "$pt" trace import "$tmp/nope.pickle" -o "$tmp/nope.trace"
one_line "cannot open"
absent "$tmp/nope.trace"
printf 'pagetune-trace 1\na 1 10 0 5\nf 1 6\nf 1 7\nend 3\n' >"$tmp/df.trace"
expect 1 "double free" -- "$pt" trace stats "$tmp/df.trace"
one_line "df.trace: line 4: double free of id 1"
expect 1 "import of a bad native trace" -- "$pt" trace import "$tmp/df.trace" -o "$tmp/df2.trace"
absent "$tmp/df2.trace"
expect 1 "import into a missing directory" -- "$pt" trace import "$data/synthetic_snapshot.pickle" -o "$tmp/no/dir.trace"
one_line "cannot create"

# an output path that is a symbolic link (-o /dev/stdout) or a FIFO: refused, left as it was (each writer
# writes beside the path and renames over it, which would replace the link or the FIFO with a file)
echo keep >"$tmp/target"
ln -s "$tmp/target" "$tmp/link"
expect 1 "trace gen -o a symbolic link" -- "$pt" trace gen --kind train --seed 1 -o "$tmp/link"
one_line "link: a symbolic link: -o writes a new file and renames it into place"
expect 1 "trace import -o a symbolic link" -- "$pt" trace import "$data/synthetic_snapshot.pickle" -o "$tmp/link"
one_line "link: a symbolic link"
expect 1 "report --html a symbolic link" -- "$pt" report --db "$tmp/nodb.db" --html "$tmp/link"
one_line "link: a symbolic link: --html writes"
if mkfifo "$tmp/fifo" 2>/dev/null; then
  expect 1 "report --html a FIFO" -- "$pt" report --db "$tmp/nodb.db" --html "$tmp/fifo"
  one_line "fifo: not a regular file: --html"
  [ -p "$tmp/fifo" ] || { echo "FAIL: the FIFO was replaced"; fails=$((fails + 1)); }
fi
expect 1 "gpu fit -o a symbolic link" -- "$pt" gpu fit -o "$tmp/link" "$data/synthetic_snapshot.expected.json"
one_line "link: a symbolic link"
[ -L "$tmp/link" ] && [ "$(cat "$tmp/target")" = keep ] || { echo "FAIL: the link or its target changed"; fails=$((fails + 1)); }

# a pickle nested a million deep: a clean error, not a crash
python_ok=0; command -v python3 >/dev/null 2>&1 && python3 -c 'import sys' 2>/dev/null && python_ok=1
if [ $python_ok -eq 1 ]; then
  python3 -c 'import sys; sys.stdout.buffer.write(b"\x80\x04" + b"]" * 1000000 + b"a" * 999999 + b".")' >"$tmp/deep.pickle"
  expect 1 "pickle nested a million deep" -- "$pt" trace import "$tmp/deep.pickle" -o "$tmp/deep.trace"
  one_line "deep.pickle: top level: not a PyTorch memory snapshot"
  absent "$tmp/deep.trace"
  python3 -c 'import sys; sys.stdout.buffer.write(b"\x80\x04" + b"]" * 3000000 + b"a" * 2999999 + b".")' >"$tmp/deeper.pickle"
  expect 1 "pickle nested three million deep" -- "$pt" trace stats "$tmp/deeper.pickle"
  one_line "deeper.pickle: byte [0-9]*: "
fi

# gen is reproducible from the command line too
expect 0 "gen" -- "$pt" trace gen --kind infer --seed 5 --steps 10 -o "$tmp/a.trace"
expect 0 "gen again" -- "$pt" trace gen --kind infer --seed 5 --steps 10 -o "$tmp/b.trace"
cmp -s "$tmp/a.trace" "$tmp/b.trace" || { echo "FAIL: gen not reproducible"; fails=$((fails + 1)); }

# sim: usage, policies, the sandbox from the command line
export PAGETUNE_POLICY_DIR="$top_srcdir/policies"
pol="$data/policies"
snap="$data/synthetic_snapshot.pickle"
expect 0 "sim --help" -- "$pt" sim --help
expect 2 "sim without --policy" -- "$pt" sim --trace "$snap"
expect 2 "sim --tlb without --gpu" -- "$pt" sim --trace "$snap" --policy pytorch_native --tlb
expect 2 "sim bad --set" -- "$pt" sim --trace "$snap" --policy pytorch_native --set max_split_size_mb=5
one_line "pytorch_native.lua: --set max_split_size_mb=5"
expect 2 "sim --set of an undeclared parameter" -- "$pt" sim --trace "$snap" --policy pytorch_native --set nope=1
expect 0 "sim on a snapshot" -- "$pt" sim --trace "$snap" --policy pytorch_native --json
grep -q '"peak_reserved_bytes":' "$tmp/out" || { echo "FAIL: sim --json lacks peak_reserved_bytes"; fails=$((fails + 1)); }
expect 1 "sim with an unknown GPU" -- "$pt" sim --trace "$snap" --policy pytorch_native --gpu nosuchgpu
one_line "no such GPU description"
rm -f /tmp/pagetune-pwned
for bad in os_execute:3 io_open:2 require:2 bytecode_load:3 infinite_loop:[345] huge_table:4 wrong_shape unknown_mechanism syntax_error; do
  name=${bad%%:*}
  expect 1 "sim with policy $name" -- "$pt" sim --trace "$snap" --policy "$pol/$name.lua"
  case $bad in *:*) one_line "$name.lua:${bad#*:}" ;; *) one_line "$name.lua" ;; esac
done
[ -e /tmp/pagetune-pwned ] && { echo "FAIL: a policy executed a command"; fails=$((fails + 1)); }

# what the page-table model refuses came from the input (a recorded address past the VA, a policy's page
# size), not from the command line: exit 1, one line
printf 'pagetune-trace 1\nA 0xfffffffffff00000 2097152 0x0 1\na 1 2097152 0x0 2 0xfffffffffff00000\nf 1 3\nend 3\n' >"$tmp/high.trace"
expect 1 "sim --gpu of a trace whose address is past the VA" -- "$pt" sim --trace "$tmp/high.trace" --policy direct --gpu h200
one_line "high.trace: request 1 (2097152 bytes): map of .*57-bit VA"
printf 'return { name = "page3", mechanism = "caching", params = {},\n  page_size = function(p, b) return 3 end }\n' >"$tmp/page3.lua"
expect 1 "sim --gpu with a policy's page size of 3 bytes" -- "$pt" sim --trace "$snap" --policy "$tmp/page3.lua" --gpu h200
one_line "page size 3 is not"

# --device on a native trace names the one device it holds, or is refused (not silently ignored)
printf 'pagetune-trace 1\n@device 0\na 1 512 0x0 1\nf 1 2\nend 2\n' >"$tmp/dev0.trace"
expect 0 "sim --device 0 of a device-0 trace" -- "$pt" sim --trace "$tmp/dev0.trace" --policy direct --device 0
expect 1 "sim --device 1 of a device-0 trace" -- "$pt" sim --trace "$tmp/dev0.trace" --policy direct --device 1
one_line "dev0.trace: @device: the trace holds device 0, not --device 1"
expect 1 "trace stats --device 1 of a device-0 trace" -- "$pt" trace stats "$tmp/dev0.trace" --device 1

# an initial block outside its segments: the record's position, and the block named once
printf 'pagetune-trace 1\nS 0x100000 2097152 0x0\nI 1 4096 0x0 0x900000\nend 2\n' >"$tmp/outside.trace"
expect 1 "sim of an initial block in no segment" -- "$pt" sim --trace "$tmp/outside.trace" --policy pytorch_native
one_line "outside.trace: record 2 (initial state): initial block at 0x900000 lies in no free part"
[ "$(grep -o 'initial block at' "$tmp/err" | wc -l)" -eq 1 ] || { echo "FAIL: the block named twice: $(cat "$tmp/err")"; fails=$((fails + 1)); }

# output that cannot be written (a full disk) is a failed run: one line, exit 1
if [ -w /dev/full ]; then
  for c in "sim --trace $top_srcdir/traces/varlen_infer.pickle.gz --policy pytorch_native --json" "sweep --help"; do
    # shellcheck disable=SC2086
    "$pt" $c >/dev/full 2>"$tmp/err"; rc=$?
    if [ $rc -ne 1 ]; then echo "FAIL: ${c%% *} > /dev/full: exit $rc, wanted 1"; fails=$((fails + 1))
    else one_line "standard output: write failed: No space left on device"; echo "ok: ${c%% *} > /dev/full: one line, exit 1"; fi
  done
fi
expect 1 "sim with a precompiled policy" -- "$pt" sim --trace "$snap" --policy "$pol/precompiled.lua"
one_line "precompiled.lua"

# the workbench: usage and hostile databases
expect 2 "sweep without --trace" -- "$pt" sweep --db "$tmp/w.db" --policy pytorch_native
expect 2 "sweep --grid of an undeclared parameter" -- "$pt" sweep --db "$tmp/w.db" --trace "$snap" --policy direct --grid nope=1,2
# a grid value out of range: named as the --grid it came in, before any run is stored
expect 2 "sweep --grid value out of range" -- "$pt" sweep --db "$tmp/g.db" --trace "$snap" --policy tunable_caching --grid max_split_size_mb=100,2
one_line "tunable_caching.lua: --grid max_split_size_mb=2: 2 lies outside the range"
[ -e "$tmp/g.db" ] && { echo "FAIL: a database made before the bad --grid value was seen"; fails=$((fails + 1)); }
expect 2 "tune --objective bogus" -- "$pt" tune --db "$tmp/w.db" --trace "$snap" --policy tunable_caching --objective fast
expect 2 "export without --format" -- "$pt" export --db "$tmp/w.db" --trace x
expect 0 "sweep" -- "$pt" sweep --db "$tmp/w.db" --trace "$snap" --policy pytorch_native --policy direct --json
grep -q '"stored":2' "$tmp/out" || { echo "FAIL: sweep stored"; cat "$tmp/out"; fails=$((fails + 1)); }
expect 0 "best" -- "$pt" best --db "$tmp/w.db" --trace synthetic_snapshot.pickle --objective memory --json
grep -q '"policy":"direct"' "$tmp/out" || { echo "FAIL: best by memory is not direct"; cat "$tmp/out"; fails=$((fails + 1)); }
expect 0 "export json" -- "$pt" export --db "$tmp/w.db" --trace synthetic_snapshot.pickle --format json
# --run names the run: an --objective beside it, which would choose another, is refused, not ignored
expect 2 "export --run with --objective" -- "$pt" export --db "$tmp/w.db" --trace synthetic_snapshot.pickle --run 1 --objective memory --format json
grep -q -- "--run names the run; --objective chooses one" "$tmp/err" || { echo "FAIL: export --run --objective: $(cat "$tmp/err")"; fails=$((fails + 1)); }
expect 2 "check --run with --objective" -- "$pt" check --db "$tmp/w.db" --trace synthetic_snapshot.pickle --run 1 --objective memory --baseline "" --max-peak-ratio 1
expect 2 "confirm --run with --objective" -- "$pt" confirm --db "$tmp/w.db" --trace synthetic_snapshot.pickle --run 1 --objective memory -- true
expect 0 "export --run alone" -- "$pt" export --db "$tmp/w.db" --trace synthetic_snapshot.pickle --run 1 --format json
expect 1 "best of an unknown trace" -- "$pt" best --db "$tmp/w.db" --trace nosuchtrace
one_line "no run of trace"
head -c 4096 /dev/urandom >"$tmp/corrupt.db"
cp "$tmp/corrupt.db" "$tmp/corrupt.orig"
expect 1 "sweep into a corrupt database" -- "$pt" sweep --db "$tmp/corrupt.db" --trace "$snap" --policy direct
one_line "corrupt.db: not a pagetune database"
cmp -s "$tmp/corrupt.db" "$tmp/corrupt.orig" || { echo "FAIL: the corrupt database was changed"; fails=$((fails + 1)); }
# a stale FILE.tmp, here a link to another file, is neither followed nor replaced: the page is written beside it
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/r.html.tmp"
expect 0 "report --html beside a planted r.html.tmp link" -- "$pt" report --db "$tmp/w.db" --html "$tmp/r.html"
[ "$(cat "$tmp/victim")" = precious ] || { echo "FAIL: report --html wrote through r.html.tmp"; fails=$((fails + 1)); }
[ -f "$tmp/r.html" ] && [ ! -L "$tmp/r.html" ] && grep -q '<html' "$tmp/r.html" ||
  { echo "FAIL: report --html: r.html is not the page"; fails=$((fails + 1)); }
expect 1 "report of a missing database" -- "$pt" report --db "$tmp/none.db"
one_line "none.db"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
