#!/bin/sh
# fit.sh — pagetune gpu fit: a GPU description from the measured costs of
# real-mechanism replays (their --json), checked without a GPU on replay
# objects written here: each class's point is its mean, the rest of the base
# description is kept, the output loads and predicts, bad input is refused
# in one line and leaves no file.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$top_srcdir/sim/gpus}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# two caching runs and one direct run: malloc at 2 MiB in both caching runs (means pooled),
# own work by request size class
cat >"$tmp/r.jsonl" <<'J'
{"gpu_mechanism_replay":{"clock_read_us":0.035,"mechanism":"caching","measured_costs":{"calls":{"malloc":[[2,4194304,60.0]],"free":[[1,2097152,40.0]]},"requests":[[100,51200,20.0],[10,20971520,3.0]],"requests_with_calls":[[10,20971520,4.0]],"failed_calls_us":0}}}
{"gpu_mechanism_replay":{"clock_read_us":0.035,"mechanism":"caching","measured_costs":{"calls":{"malloc":[[2,4194304,100.0]]},"requests":[[100,51200,30.0]],"failed_calls_us":0}}}
J
cat >"$tmp/d.json" <<'J'
{"gpu_mechanism_replay": {"clock_read_us": 0.035, "mechanism": "direct",
  "measured_costs": {"calls": {"malloc": [[4, 2048, 8.0]]}, "requests": [[8, 4096, 0.0]], "failed_calls_us": 0}}}
J
# a base of known points: malloc's beyond the sizes measured are kept, free's in their range dropped
cat >"$tmp/base.gpu" <<'G'
name base
mmu v3
sms 2
l1_tlb 16 8 0
l2_tlb 64 8 5
pwc 8 8
bookkeeping_us 1.0
bookkeeping_us stitch 1.5
cost malloc 256:1 2097152:30 1073741824:70
cost free 512:1 1048576:20 4194304:25
cost mem_create 2097152:7
source a test
G
"$pt" gpu fit --gpu "$tmp/base.gpu" -o "$tmp/f.gpu" "$tmp/r.jsonl" "$tmp/d.json" 2>"$tmp/err" || fail "fit: $(cat "$tmp/err")"
grep -q '^name base-fit$' "$tmp/f.gpu" || fail "the fitted description is not named base-fit"
[ "$(grep -c '^name ' "$tmp/f.gpu")" -eq 1 ] || fail "two name lines"
# malloc: 4 calls of 2 MiB in 160 us -> 2097152:40; 4 calls of 512 B in 8 us -> 512:2; the base's 256 B and 1 GiB
# points outside that range kept; free: one call of 2 MiB, the base's points below and above it kept
grep -q '^cost malloc 256:1.0000 512:2.0000 2097152:40.0000 1073741824:70.0000$' "$tmp/f.gpu" ||
  fail "malloc points: $(grep '^cost malloc' "$tmp/f.gpu")"
grep -q '^cost free 512:1.0000 1048576:20.0000 2097152:40.0000 4194304:25.0000$' "$tmp/f.gpu" ||
  fail "free points: $(grep '^cost free' "$tmp/f.gpu")"
# classes of 5 calls or more stand alone when a kind has any: 6 calls of 1 KiB and 1 of 64 KiB -> 1024 only
echo '{"gpu_mechanism_replay":{"clock_read_us":0.035,"mechanism":"caching","measured_costs":{"calls":{"malloc":[[6,6144,12.0],[1,65536,500.0]]},"requests":[[1,512,0.1]]}}}' >"$tmp/few.json"
"$pt" gpu fit --gpu "$tmp/base.gpu" -o "$tmp/few.gpu" "$tmp/few.json" 2>/dev/null || fail "fit of few"
grep -q '^cost malloc 256:1.0000 1024:2.0000 2097152:30.0000 1073741824:70.0000$' "$tmp/few.gpu" ||
  fail "a class of one call: $(grep '^cost malloc' "$tmp/few.gpu")"
# caching: 200 requests of 512 B in 50 us -> 512:0.25; 10 of 2 MiB in 3 us -> 2097152:0.3
grep -q '^bookkeeping_us caching 512:0.2500 2097152:0.3000$' "$tmp/f.gpu" || fail "caching: $(grep '^bookkeeping_us caching' "$tmp/f.gpu")"
grep -q '^bookkeeping_us direct 512:0.0010$' "$tmp/f.gpu" || fail "direct: $(grep '^bookkeeping_us direct' "$tmp/f.gpu")"
# requests that made calls apart: caching's run 1 had 10 of 2 MiB in 4 us -> 2097152:0.4; direct had none apart,
# so its plain points serve both
grep -q '^bookkeeping_call_us caching 2097152:0.4000$' "$tmp/f.gpu" || fail "caching with calls: $(grep '^bookkeeping_call_us caching' "$tmp/f.gpu")"
grep -q '^bookkeeping_call_us direct 512:0.0010$' "$tmp/f.gpu" || fail "direct with calls: $(grep '^bookkeeping_call_us direct' "$tmp/f.gpu")"
# kept from the base: the TLB lines, the calls not measured, the other mechanisms' bookkeeping
for k in '^l2_tlb ' '^cost mem_create 2097152:7$' '^bookkeeping_us stitch 1.5$' '^mmu v3'; do
  grep -q "$k" "$tmp/f.gpu" || fail "lost from the base: $k"
done
[ "$(grep -c '^cost malloc' "$tmp/f.gpu")" -eq 1 ] || fail "the base's malloc line kept beside the fitted one"
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native --gpu "$tmp/f.gpu" --json >"$tmp/s.json" 2>"$tmp/err" ||
  fail "the fitted description does not load: $(cat "$tmp/err")"
grep -q '"predicted_alloc_us":[0-9]' "$tmp/s.json" || fail "no prediction with the fitted description"
"$pt" gpu fit --name mine -o "$tmp/m.gpu" "$tmp/d.json" 2>/dev/null && grep -q '^name mine$' "$tmp/m.gpu" || fail "--name"
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/p.gpu.tmp" # a stale FILE.tmp link: not followed
"$pt" gpu fit -o "$tmp/p.gpu" "$tmp/d.json" 2>/dev/null && grep -q '^name h200-fit$' "$tmp/p.gpu" || fail "fit beside a p.gpu.tmp link"
[ "$(cat "$tmp/victim")" = precious ] || fail "gpu fit wrote through p.gpu.tmp"

"$pt" gpu fit -o "$tmp/h.gpu" "$tmp/d.json" 2>/dev/null && grep -q '^name h200-fit$' "$tmp/h.gpu" || fail "default base h200"
"$pt" gpu fit --gpu "$tmp/base.gpu" --bookkeeping-only -o "$tmp/b.gpu" "$tmp/r.jsonl" 2>/dev/null || fail "--bookkeeping-only"
grep -q '^bookkeeping_us caching 512:0.2500 2097152:0.3000$' "$tmp/b.gpu" || fail "--bookkeeping-only: no fitted bookkeeping"
grep -q '^cost malloc 256:1 2097152:30 1073741824:70$' "$tmp/b.gpu" || fail "--bookkeeping-only: the base's malloc points not kept"

# refused: one line, exit 1 (bad input) or 2 (usage), no file left
check() {
  want=$1; what=$2; shift 2
  "$@" >/dev/null 2>"$tmp/err"
  got=$?
  [ "$got" -eq "$want" ] || fail "$what: exit $got, wanted $want ($(cat "$tmp/err"))"
  lines=1; [ "$want" -eq 2 ] && lines=2 # usage: the message, then "(try ... --help)"
  [ "$(wc -l <"$tmp/err")" -eq "$lines" ] || fail "$what: not $lines line(s): $(cat "$tmp/err")"
  ls "$tmp"/x.gpu* >/dev/null 2>&1 && fail "$what: left a file"
  echo "ok: $what: $(head -1 "$tmp/err")"
}
echo '{"sim": 1}' >"$tmp/not.json"
echo '{"gpu_mechanism_replay":{"clock_read_us":0.035,"mechanism":"caching","measured_costs":{"calls":{"malloc":[[0,1,1]]},"requests":[]}}}' >"$tmp/zero.json"
echo '{"gpu_mechanism_replay":{"clock_read_us":0.035,"mechanism":"caching","measured_costs":{"calls":{"mmap":[[1,1,1]]},"requests":[]}}}' >"$tmp/call.json"
printf '{"gpu_mechanism_replay": \n' >"$tmp/broken.json"
: >"$tmp/empty.json"
check 1 "not a replay" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/not.json"
check 1 "a point of 0 calls" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/zero.json"
check 1 "an unknown call" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/call.json"
check 1 "broken JSON" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/broken.json"
check 1 "an empty file" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/empty.json"
check 1 "a missing file" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/nothing.json"
check 1 "an unknown base" "$pt" gpu fit --gpu nosuch -o "$tmp/x.gpu" "$tmp/d.json"
check 2 "no -o" "$pt" gpu fit "$tmp/d.json"
check 1 "a folder" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp"
grep -q ": read failed: Is a directory$" "$tmp/err" || fail "a folder: no reason: $(cat "$tmp/err")"
printf '\n  {"a": NaN}\n' >"$tmp/nan.jsonl"
check 1 "a bad line of JSON lines" "$pt" gpu fit -o "$tmp/x.gpu" "$tmp/nan.jsonl"
grep -q "nan.jsonl: line 2, column 9: unexpected 'N'" "$tmp/err" || fail "a bad line: not its line and column: $(cat "$tmp/err")"
check 2 "no input" "$pt" gpu fit -o "$tmp/x.gpu"
check 2 "a bad name" "$pt" gpu fit --name "a b" -o "$tmp/x.gpu" "$tmp/d.json"

# --work: replays of five caching configurations whose measured own work (each request's time less the calls
# made in it: measured_costs.requests) is exactly 0.01 x requests and frees + 0.02 x free-set operations +
# 0.003 x chunks + 0.0005 x visits, as simulated here (sim --json's work), recorded under a path that does not
# exist here; randn_loop's also with a call no request made (7 us: in the calls, in neither the total nor a
# request, as a pool's set-up is); and a direct run (no line of its own)
configs="randn_loop:pytorch_native cap_retry:pytorch_native llm_decode:large_page_threshold transformer_train:pytorch_native two_streams:pytorch_native"
for tp in $configs; do
  "$pt" sim --trace "$top_srcdir/traces/${tp%%:*}.pickle.gz" --policy "${tp#*:}" --gpu "$tmp/base.gpu" --json >"$tmp/w-${tp%%:*}.json" ||
    fail "sim of ${tp%%:*}"
done
python3 - "$tmp" $configs >"$tmp/w.jsonl" <<'P' || fail "writing the work replays"
import json, sys
tmp = sys.argv[1]
for t, pol in (c.split(":") for c in sys.argv[2:]):
    s = json.load(open("%s/w-%s.json" % (tmp, t)))
    w = s["work"]
    own = 0.01 * w["requests"] + 0.02 * w["set_ops"] + 0.003 * w["set_chunks"] + 0.0005 * w["visits"]
    calls = [[2, 4194304, 12.0]] if t == "randn_loop" else [[1, 2097152, 5.0]]
    print(json.dumps({"gpu_mechanism_replay": {"clock_read_us": 0.035, "mechanism": "caching", "trace": "/gone/%s.pickle.gz" % t, "policy": pol,
                      "requests": s["allocs"], "measured_total_us": own + 5.0,
                      "measured_costs": {"calls": {"malloc": calls}, "requests": [[w["requests"] - 1, 5120, own * 0.75]],
                                         "requests_with_calls": [[1, 2097152, own * 0.25]]}}}))
print(json.dumps({"gpu_mechanism_replay": {"clock_read_us": 0.035, "mechanism": "direct", "trace": "/gone/randn_loop.pickle.gz", "policy": "direct",
                  "requests": 1000, "measured_total_us": 100.0,
                  "measured_costs": {"calls": {"malloc": [[1000, 512000, 50.0]]}, "requests": [[2000, 1024000, 50.0]]}}}))
P
"$pt" gpu fit --gpu "$tmp/base.gpu" --work --traces "$top_srcdir/traces" -o "$tmp/w.gpu" "$tmp/w.jsonl" 2>"$tmp/err" ||
  fail "fit --work: $(cat "$tmp/err")"
python3 - "$tmp/w.gpu" <<'P' || fail "fit --work: the line: $(grep '^bookkeeping_work' "$tmp/w.gpu")"
import sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("bookkeeping_work ")]
assert len(lines) == 1 and lines[0][1] == "caching", lines  # direct keeps its lines
got = [float(x) for x in lines[0][2:]]
assert len(got) == 4 and all(abs(g / w - 1) < 1e-4 for g, w in zip(got, (0.01, 0.02, 0.003, 0.0005))), got
P
# the fitted line prices llm_decode's own work by its counts, in place of the bookkeeping lines
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy large_page_threshold --gpu "$tmp/w.gpu" --json >"$tmp/ws.json" ||
  fail "sim with the work line"
grep -v '^bookkeeping' "$tmp/w.gpu" >"$tmp/nobk.gpu"
"$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy large_page_threshold --gpu "$tmp/nobk.gpu" --json >"$tmp/wn.json" ||
  fail "sim without bookkeeping"
python3 - "$tmp" <<'P' || fail "the work line's prediction"
import json, sys
a, b = (json.load(open("%s/%s.json" % (sys.argv[1], n))) for n in ("ws", "wn"))
w = b["work"]
own = 0.01 * w["requests"] + 0.02 * w["set_ops"] + 0.003 * w["set_chunks"] + 0.0005 * w["visits"]
assert abs(a["predicted_alloc_us"] - b["predicted_alloc_us"] - own) < 1e-3 * own, (a["predicted_alloc_us"], b["predicted_alloc_us"], own)
P
sed 's/"requests": [0-9]*, "measured/"requests": 7, "measured/' "$tmp/w.jsonl" >"$tmp/wrong.jsonl"
check 1 "--work: a recorded trace not here" "$pt" gpu fit --gpu "$tmp/base.gpu" --work -o "$tmp/x.gpu" "$tmp/w.jsonl"
check 1 "--work: not the trace replayed" "$pt" gpu fit --gpu "$tmp/base.gpu" --work --traces "$top_srcdir/traces" -o "$tmp/x.gpu" "$tmp/wrong.jsonl"
check 1 "--work: a replay without its trace" "$pt" gpu fit --work -o "$tmp/x.gpu" "$tmp/r.jsonl"
check 2 "--traces without --work" "$pt" gpu fit --traces "$top_srcdir/traces" -o "$tmp/x.gpu" "$tmp/w.jsonl"
# the own work's points are checked where --work reads them (with by_class, fit_points reads the classes' points)
python3 - "$tmp" <<'P' || fail "writing the bad work replays"
import json, sys
t = sys.argv[1]
r = json.loads(open(t + "/w.jsonl").readline())
for name, v in (("wstr", "x"), ("wshort", [[10, 5120]]), ("wnan", [[10, 5120, None]])):
    r["gpu_mechanism_replay"]["measured_costs"]["requests"] = v
    r["gpu_mechanism_replay"]["measured_costs"]["by_class"] = {"other": {"calls": {}, "requests": [[1, 1, 1.0]]},
                                                               "repeat": {"calls": {}, "requests": []}}
    open("%s/%s.jsonl" % (t, name), "w").write(json.dumps(r) + "\n")
P
for b in wstr:"measured_costs.requests: a string, not an array" wshort:"measured_costs.requests: a point is" \
    wnan:"measured_costs.requests: a point is"; do
  check 1 "--work: ${b%%:*}" "$pt" gpu fit --gpu "$tmp/base.gpu" --work --traces "$top_srcdir/traces" -o "$tmp/x.gpu" "$tmp/${b%%:*}.jsonl"
  grep -q "${b#*:}" "$tmp/err" || fail "--work: ${b%%:*}: $(cat "$tmp/err")"
done

# --work with the base's bookkeeping_loop points (calibrate's cached loop): each a row of its mechanism's fit, its
# time a request plus one clock read (the base's 0.035).  Points priced by the same four costs leave the line as it
# was; a point priced at ten times them moves it, and --no-loop leaves it out; expandable's points (no replay of
# it) add no line; a base that names no host speed adds none and says so.
{ cat "$tmp/base.gpu"; echo "host_clock_read_us 0.035"
  # 0.01 + 0.02 x 2.5 + 0.003 + 0.0005 = 0.0635 a request, 0.0285 without the clock read; 0.04175 and 0.00675
  echo "bookkeeping_loop caching 512:0.0285:2.5:1:1 67108864:0.00675:1.5:0.5:0.5"
  echo "bookkeeping_loop expandable 512:0.03:3:1:2"; } >"$tmp/loop.gpu"
sed 's/^bookkeeping_loop caching .*/bookkeeping_loop caching 512:0.6:2.5:1:1/' "$tmp/loop.gpu" >"$tmp/loop10.gpu"
grep -v '^host_clock_read_us' "$tmp/loop10.gpu" >"$tmp/loopnoclock.gpu"
for b in loop loop10 loopnoclock; do
  "$pt" gpu fit --gpu "$tmp/$b.gpu" --work --traces "$top_srcdir/traces" -o "$tmp/w-$b.gpu" "$tmp/w.jsonl" 2>"$tmp/err" ||
    fail "fit --work on $b: $(cat "$tmp/err")"
done
"$pt" gpu fit --gpu "$tmp/loop10.gpu" --work --no-loop --traces "$top_srcdir/traces" -o "$tmp/w-noloop.gpu" "$tmp/w.jsonl" \
  2>"$tmp/err" || fail "fit --work --no-loop: $(cat "$tmp/err")"
python3 - "$tmp" <<'P' || fail "fit --work with bookkeeping_loop"
import sys
def line(name):
    ls = [l.split() for l in open("%s/w-%s.gpu" % (sys.argv[1], name)) if l.startswith("bookkeeping_work ")]
    assert len(ls) == 1 and ls[0][1] == "caching", (name, ls)  # expandable: loop points alone fit nothing
    return [float(x) for x in ls[0][2:]]
def exact(got):
    return all(abs(g / w - 1) < 1e-4 for g, w in zip(got, (0.01, 0.02, 0.003, 0.0005)))
assert exact(line("loop")), line("loop")
b = line("loop10")  # the loop's request dearer than the runs say: priced dearer than by the exact line
assert not exact(b) and 0.01 + 0.02 * 2.5 + 0.003 + 0.0005 < b[0] + b[1] * 2.5 + b[2] + b[3], b
assert exact(line("noloop")), line("noloop")
assert exact(line("loopnoclock")), line("loopnoclock")
text = lambda n: open("%s/w-%s.gpu" % (sys.argv[1], n)).read()
assert "and 2 of the base's bookkeeping_loop points" in text("loop"), text("loop")
assert "and 0 of the base's bookkeeping_loop points" in text("noloop")
assert "some left out: the base names no host speed" in text("loopnoclock")
assert "bookkeeping_loop caching 512:0.0285" in text("loop")  # kept: the fit's speed is the base's
P
# a fit at another host speed drops them: they hold at the base's
"$pt" gpu fit --gpu "$tmp/loop.gpu" --work --host-speed 0.05 --traces "$top_srcdir/traces" -o "$tmp/w-fast.gpu" "$tmp/w.jsonl" \
  2>"$tmp/err" || fail "fit --work --host-speed 0.05: $(cat "$tmp/err")"
grep -q '^bookkeeping_loop' "$tmp/w-fast.gpu" && fail "a fit at another host speed kept the base's bookkeeping_loop lines"
check 2 "--no-loop without --work" "$pt" gpu fit --no-loop -o "$tmp/x.gpu" "$tmp/w.jsonl"
for b in "caching 512:0.1:1:1" "caching 0:0.1:1:1:1" "caching 512:-1:1:1:1" "512:0.1:1:1:1" "caching"; do
  { cat "$tmp/base.gpu"; echo "bookkeeping_loop $b"; } >"$tmp/badloop.gpu"
  check 1 "bookkeeping_loop $b" "$pt" sim --trace "$top_srcdir/traces/randn_loop.pickle.gz" --policy pytorch_native \
    --gpu "$tmp/badloop.gpu"
  grep -q "badloop.gpu:[0-9]*: bookkeeping_loop" "$tmp/err" || fail "bookkeeping_loop $b: $(cat "$tmp/err")"
done

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "gpu fit: all checks passed"
