#!/bin/sh
# import_stream.sh — snapshot import streams (issue 12, issue 13's gzip bomb):
# a gzip'd snapshot that inflates to far more than the memory the import is
# allowed (ulimit -v) imports whole, because nothing holds the input; stack
# frames survive import as +frame/+stack/+at lines, read back the same;
# --strip-frames leaves none of them and no source path, and the records the
# same.  Skips (77) without python3.
. "${top_srcdir:-.}/tests/py_setup.sh"

# The bomb: 3 allocations, then entries the importer drops (free_requested),
# 400 MB of them inflated, about 1 MB gzip'd.
python3 - "$tmp/bomb.pickle.gz" <<'PY' || { echo "cannot write the bomb"; exit 1; }
import gzip, pickle, sys
def e(action, addr, t):
    return {"action": action, "addr": addr, "size": 4096, "stream": 0, "time_us": t,
            "frames": [], "compile_context": "N/A", "user_metadata": ""}
head = [e("alloc", 0x1000 * (i + 1), i) for i in range(3)]
dropped = e("free_requested", 0x1000, 9)
one = pickle.dumps(dropped, protocol=4)[2:-1]  # the entry's opcodes, without PROTO and STOP
start = pickle.dumps({"segments": [], "device_traces": [head]}, protocol=4)
# device 0's list is written EMPTY_LIST MEMOIZE MARK ... APPENDS; more batches
# of 1000 (MARK ... APPENDS), as the pickler writes them, follow the first
cut = start.rindex(b"e") + 1  # after the APPENDS of device 0's first entries
with gzip.GzipFile(sys.argv[1], "wb", compresslevel=9, mtime=0) as f:
    f.write(start[:cut])
    batch = b"(" + one * 1000 + b"e"
    n = 0
    while n < 400_000_000:
        f.write(batch)
        n += len(batch)
    f.write(start[cut:])
PY
inflated=$(gzip -dc "$tmp/bomb.pickle.gz" | wc -c)
[ "$inflated" -gt 400000000 ] || fail "the bomb inflates to only $inflated bytes"
# 300 MB of address space: less than the inflated input alone (ASan reserves
# terabytes of address space: there the bomb runs without the limit)
vlim=300000
case ${SAN_FLAGS:-} in *address*) vlim=unlimited ;; esac
if (ulimit -v $vlim && "$pt" trace import "$tmp/bomb.pickle.gz" -o "$tmp/bomb.trace" >"$tmp/out" 2>"$tmp/err"); then
  grep -q "3 records (3 allocs" "$tmp/out" || fail "bomb: $(cat "$tmp/out")"
else
  fail "bomb under ulimit -v $vlim: $(cat "$tmp/err")"
fi
# a bomb past a limit says so in one line and exits 1: a 2 GiB string (past max_str 1 GiB) in 2 MB
python3 - "$tmp/str.pickle.gz" <<'PY'
import gzip, struct, sys
with gzip.GzipFile(sys.argv[1], "wb", compresslevel=9, mtime=0) as f:
    f.write(b"\x80\x04}\x94(\x8c\x08segments]\x8c\x04blob\x8e" + struct.pack("<Q", 2 << 30))
    z = bytes(1 << 20)
    for _ in range(2048):
        f.write(z)
    f.write(b"u.")
PY
(ulimit -v $vlim && "$pt" trace import "$tmp/str.pickle.gz" -o "$tmp/str.trace" >"$tmp/out" 2>"$tmp/err")
rc=$?
[ $rc -eq 1 ] || fail "2 GiB string: exit $rc, not 1"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "str.pickle.gz: byte .*: BINBYTES8 of 2147483648 bytes: longer than the limit" "$tmp/err" ||
  fail "2 GiB string: $(cat "$tmp/err")"
[ ! -e "$tmp/str.trace" ] || fail "2 GiB string: output left behind"

# a device past the 4096 a trace may name: one line, exit 1
python3 -c '
import pickle, sys
e = {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1, "frames": []}
pickle.dump({"segments": [], "device_traces": [[] for _ in range(5000)] + [[e]]}, open(sys.argv[1], "wb"), protocol=4)
' "$tmp/dev.pickle"
"$pt" trace import "$tmp/dev.pickle" -o "$tmp/dev.trace" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q 'device_traces\[5000\]: past the 4096 devices' "$tmp/err" || fail "device 5000: exit $rc, $(cat "$tmp/err")"

# Frames: imported, read back the same, stripped
snap=$top_srcdir/tests/data/frames.pickle
"$pt" trace import "$snap" -o "$tmp/f.trace" >/dev/null || fail "import $snap"
[ "$(grep -c '^+frame ' "$tmp/f.trace")" -eq 8 ] || fail "frames: $(grep -c '^+frame ' "$tmp/f.trace") +frame lines, not 8"
[ "$(grep -c '^+stack ' "$tmp/f.trace")" -eq 4 ] || fail "frames: not 4 +stack lines"
[ "$(grep -c '^+at ' "$tmp/f.trace")" -eq 4 ] || fail "frames: not one +at per allocation"
grep -q '^+frame 1 42 load_weights /home/user/project/model.py$' "$tmp/f.trace" || fail "frames: the first frame"
grep -q '^+stack 4 8 4 5 3$' "$tmp/f.trace" || fail "frames: a stack sharing frames"
"$pt" trace import "$tmp/f.trace" -o "$tmp/f2.trace" >/dev/null || fail "re-import"
cmp -s "$tmp/f.trace" "$tmp/f2.trace" || fail "frames: a native trace re-imported differs"
"$pt" trace import "$snap" -o "$tmp/s.trace" --strip-frames >/dev/null || fail "import --strip-frames"
grep -q '^+' "$tmp/s.trace" && fail "--strip-frames: extension lines left"
grep -q 'project' "$tmp/s.trace" && fail "--strip-frames: a source path left"
grep -v '^+' "$tmp/f.trace" | cmp -s - "$tmp/s.trace" || fail "--strip-frames: the records differ"
"$pt" trace import "$tmp/f.trace" -o "$tmp/s2.trace" --strip-frames >/dev/null && cmp -s "$tmp/s.trace" "$tmp/s2.trace" ||
  fail "--strip-frames on a native trace"
# from a pipe (cannot be read twice: one pass, every memo entry kept), the same trace
cat "$snap" | "$pt" trace import /dev/stdin -o "$tmp/p.trace" >/dev/null && cmp -s "$tmp/f.trace" "$tmp/p.trace" ||
  fail "import from a pipe"
gzip -c "$snap" | "$pt" trace import /dev/stdin -o "$tmp/pz.trace" >/dev/null && cmp -s "$tmp/f.trace" "$tmp/pz.trace" ||
  fail "import from a gzip'd pipe"
# escaped text: a space and a percent sign in a name come back as they went
printf 'pagetune-trace 1\n+frame 1 7 a%%20b%%25 /x%%0Ay.py\n+stack 1 1\n+at 1\na 1 512 0x0 1\nend 1\n' >"$tmp/e.trace"
"$pt" trace import "$tmp/e.trace" -o "$tmp/e2.trace" >/dev/null && grep -q '^+frame 1 7 a%20b%25 /x%0Ay.py$' "$tmp/e2.trace" ||
  fail "escaped frame text: $(cat "$tmp/e2.trace" 2>&1)"
# bad frame lines: one line naming the line, exit 1
for bad in '+at 2' '+stack 1 3' '+frame 3 1 g f.py' '+frame 2 7 f f.py' '+frame 2 1 f%2 f.py' '+stack 2 1' '+at 0'; do
  printf 'pagetune-trace 1\n+frame 1 7 f f.py\n+stack 1 1\n%s\na 1 512 0x0 1\nend 1\n' "$bad" >"$tmp/b.trace"
  "$pt" trace stats "$tmp/b.trace" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'b.trace: line 4: ' "$tmp/err" ||
    fail "bad line '$bad': exit $rc, $(cat "$tmp/err")"
done
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
