#!/bin/sh
# cost_class.sh — the cost model's request-class axis (issue 11), without a GPU:
# the engine's classes on a trace whose answer is known (a request or free is a
# repeat when its size was freed among the last 6 frees), the prediction priced
# by the repeat lines of a description, a two-class `gpu fit` from synthetic
# replays (measured_costs.by_class), --one-class, and a refusal; then, in a
# build with CUDA, `replay --mechanism` on the stand-in driver tests/fakecuda.c
# (the engine's live path, timed): its by_class halves add up to its totals,
# its repeats are the model's, and `gpu fit` makes repeat lines from it.
. "${top_srcdir:-.}/tests/wb_setup.sh"
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$top_srcdir/sim/gpus}
json() { python3 -c "import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# (16 distances back counted, then none)
# a1 512 (none freed yet), f1 (nothing freed before), a2 512 (freed 1 back: repeat), f2 (repeat),
# a3 1024 (never freed), f3 (1024 not freed before): 2 repeats, 4 others
cat >"$tmp/t.trace" <<'T'
pagetune-trace 1
a 1 512 0 1
f 1 2
a 2 512 0 3
f 2 4
a 3 1024 0 5
f 3 6
end 6
T
cat >"$tmp/g.gpu" <<'G'
name classes
mmu v3
sms 1
l1_tlb 1 1 0
l2_tlb 1 1 0
pwc 1 1
bookkeeping_us caching 1.0
bookkeeping_repeat_us caching 0.25
cost malloc 512:10
cost_repeat malloc 512:4
cost free 512:8
G
grep -v _repeat "$tmp/g.gpu" | sed 's/^name classes/name plain/' >"$tmp/p.gpu"

"$pt" sim --trace "$tmp/t.trace" --policy pytorch_native --gpu "$tmp/g.gpu" --json >"$tmp/c.json" 2>"$tmp/err" ||
  fail "sim: $(cat "$tmp/err")"
[ "$(json "$tmp/c.json" 'o["request_classes"]["repeat_requests"]')" = 2 ] || fail "caching: repeats $(json "$tmp/c.json" 'o["request_classes"]')"
[ "$(json "$tmp/c.json" 'o["request_classes"]["by_free_distance"]')" = "[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]" ] ||
  fail "distances: $(json "$tmp/c.json" 'o["request_classes"]["by_free_distance"]')"
[ "$(json "$tmp/c.json" 'o["request_classes"]["repeat_window"]')" = 6 ] || fail "the window is not 6"
# the mechanism's outcomes: a1 carves a new segment (no hit), a2 and a3 split the free rest (2 hits, 2 splits);
# every free merges with the free rest of the segment
[ "$(json "$tmp/c.json" 'o["cache_hits"], o["request_classes"]["cache_hit_splits"], o["request_classes"]["free_merges"]')" = "(2, 2, 3)" ] ||
  fail "caching's outcomes: $(json "$tmp/c.json" 'o["request_classes"]')"
# one cudaMalloc (the first request's segment) at 10; 4 others at 1.0, 2 repeats at 0.25
[ "$(json "$tmp/c.json" '"%.4f" % o["predicted_alloc_us"]')" = 14.5000 ] ||
  fail "caching predicted $(json "$tmp/c.json" 'o["predicted_alloc_us"]'), wanted 14.5"
# the same description without its repeat lines: every request at the plain price
"$pt" sim --trace "$tmp/t.trace" --policy pytorch_native --gpu "$tmp/p.gpu" --json >"$tmp/p.json" 2>/dev/null
[ "$(json "$tmp/p.json" '"%.4f" % o["predicted_alloc_us"]')" = 16.0000 ] ||
  fail "plain predicted $(json "$tmp/p.json" 'o["predicted_alloc_us"]'), wanted 16"
# direct: a call a request; the repeat malloc at 4, the repeat free at cost free's 8 (no cost_repeat free)
"$pt" sim --trace "$tmp/t.trace" --policy direct --gpu "$tmp/g.gpu" --json >"$tmp/d.json" 2>/dev/null
[ "$(json "$tmp/d.json" '"%.4f" % o["predicted_alloc_us"]')" = 48.0000 ] ||
  fail "direct predicted $(json "$tmp/d.json" 'o["predicted_alloc_us"]'), wanted 10+8+4+8+10+8"
[ "$(json "$tmp/d.json" 'o["request_classes"]["repeat_driver_calls"]["malloc"], o["request_classes"]["repeat_driver_calls"]["free"], o["request_classes"]["repeat_requests_with_calls"]')" = "(1, 1, 2)" ] ||
  fail "direct's repeat calls: $(json "$tmp/d.json" 'o["request_classes"]')"
# no cost asked for: no classes
"$pt" sim --trace "$tmp/t.trace" --policy pytorch_native --json >"$tmp/n.json" 2>/dev/null
[ "$(json "$tmp/n.json" '"request_classes" in o')" = False ] || fail "classes without a GPU description"

# a two-class fit: caching's other requests 0.2 us, its repeats 0.05; malloc 40 us in the others, 10 in the repeats
cat >"$tmp/r.jsonl" <<'J'
{"gpu_mechanism_replay":{"mechanism":"caching","measured_costs":{"calls":{"malloc":[[10,20971520,250.0]]},"requests":[[200,102400,25.0]],"requests_with_calls":[],"repeat_window":6,"by_class":{"other":{"calls":{"malloc":[[5,10485760,200.0]]},"requests":[[100,51200,20.0]],"requests_with_calls":[]},"repeat":{"calls":{"malloc":[[5,10485760,50.0]]},"requests":[[100,51200,5.0]],"requests_with_calls":[]}}}}}
J
cat >"$tmp/base.gpu" <<'G'
name base
mmu v3
sms 1
l1_tlb 1 1 0
l2_tlb 1 1 0
pwc 1 1
cost malloc 256:1 2097152:30 1073741824:70
cost_repeat malloc 256:0.5
bookkeeping_repeat_us caching 9
G
"$pt" gpu fit --gpu "$tmp/base.gpu" -o "$tmp/f.gpu" "$tmp/r.jsonl" 2>"$tmp/err" || fail "fit: $(cat "$tmp/err")"
for want in '^cost malloc 256:1.0000 2097152:40.0000 1073741824:70.0000$' \
            '^cost_repeat malloc 256:1.0000 2097152:10.0000 1073741824:70.0000$' \
            '^bookkeeping_us caching 512:0.2000$' '^bookkeeping_call_us caching 512:0.2000$' \
            '^bookkeeping_repeat_us caching 512:0.0500$' '^bookkeeping_call_repeat_us caching 512:0.0500$'; do
  grep -q "$want" "$tmp/f.gpu" || fail "fit: no $want in: $(grep -E '^(cost|bookkeeping)' "$tmp/f.gpu" | tr '\n' '|')"
done
[ "$(grep -c '^cost_repeat malloc' "$tmp/f.gpu")" -eq 1 ] || fail "the base's cost_repeat malloc kept beside the fitted one"
[ "$(grep -c '^bookkeeping_repeat_us caching' "$tmp/f.gpu")" -eq 1 ] || fail "the base's repeat bookkeeping kept"
# the fitted description predicts the trace: the segment's cudaMalloc (2 MiB, another's) 40, 4 x 0.2 + 2 x 0.05
"$pt" sim --trace "$tmp/t.trace" --policy pytorch_native --gpu "$tmp/f.gpu" --json >"$tmp/fp.json" 2>/dev/null
[ "$(json "$tmp/fp.json" '"%.4f" % o["predicted_alloc_us"]')" = 40.9000 ] ||
  fail "fitted predicted $(json "$tmp/fp.json" 'o["predicted_alloc_us"]'), wanted 40.9"
# --one-class: the totals, as a replay without by_class; no repeat line, the base's dropped for what was measured
"$pt" gpu fit --gpu "$tmp/f.gpu" --one-class -o "$tmp/o.gpu" "$tmp/r.jsonl" 2>/dev/null || fail "fit --one-class"
grep -q '^cost malloc 256:1.0000 2097152:25.0000 1073741824:70.0000$' "$tmp/o.gpu" || fail "--one-class malloc: $(grep '^cost malloc' "$tmp/o.gpu")"
grep -q '^bookkeeping_us caching 512:0.1250$' "$tmp/o.gpu" || fail "--one-class bookkeeping: $(grep '^bookkeeping_us caching' "$tmp/o.gpu")"
grep -qE '^[a-z_]+_repeat' "$tmp/o.gpu" && fail "--one-class left repeat lines: $(grep -E '^[a-z_]+_repeat' "$tmp/o.gpu")"
# calls after a large one (calls_after_large, a subset of each class's calls): of the others' 10 frees of 512 B
# (20 us), 5 after a large call (15 us); of the repeats' 10 (10 us), 5 (10 us).  The class lines from the rest
# (others 1 us, repeats 0 us: 0.001), cost_after_large free from the 10 after (2.5 us); --no-after-large: as before
cat >"$tmp/a.jsonl" <<'J'
{"gpu_mechanism_replay":{"mechanism":"direct","measured_costs":{"calls":{"free":[[20,10240,30.0]]},"requests":[],"by_class":{"other":{"calls":{"free":[[10,5120,20.0]]},"calls_after_large":{"free":[[5,2560,15.0]]},"requests":[]},"repeat":{"calls":{"free":[[10,5120,10.0]]},"calls_after_large":{"free":[[5,2560,10.0]]},"requests":[]}}}}}
J
"$pt" gpu fit --gpu "$tmp/base.gpu" -o "$tmp/a.gpu" "$tmp/a.jsonl" 2>"$tmp/err" || fail "fit with calls after a large one: $(cat "$tmp/err")"
for want in '^cost free 512:1.0000$' '^cost_repeat free 512:0.0010$' '^cost_after_large free 512:2.5000$'; do
  grep -q "$want" "$tmp/a.gpu" || fail "after-large fit: no $want in: $(grep -E '^cost' "$tmp/a.gpu" | tr '\n' '|')"
done
grep -q "1 of calls after a large one" "$tmp/err" || fail "after-large fit: $(cat "$tmp/err")"
"$pt" gpu fit --gpu "$tmp/a.gpu" --no-after-large -o "$tmp/a0.gpu" "$tmp/a.jsonl" 2>/dev/null || fail "fit --no-after-large"
grep -q '^cost_after_large' "$tmp/a0.gpu" && fail "--no-after-large wrote (or kept the base's) cost_after_large"
grep -q '^cost free 512:2.0000$' "$tmp/a0.gpu" || fail "--no-after-large free: $(grep '^cost free' "$tmp/a0.gpu")"
# every free of the replay after a large one: the plain line and the after line from them, the base's replaced
echo '{"gpu_mechanism_replay":{"mechanism":"direct","measured_costs":{"calls":{"free":[[5,2560,10.0]]},"calls_after_large":{"free":[[5,2560,10.0]]},"requests":[]}}}' >"$tmp/all.json"
"$pt" gpu fit --gpu "$tmp/a.gpu" --one-class -o "$tmp/all.gpu" "$tmp/all.json" 2>"$tmp/err" || fail "fit, every call after: $(cat "$tmp/err")"
[ "$(grep -c '^cost free 512:2.0000$' "$tmp/all.gpu")" = 1 ] && [ "$(grep -c '^cost_after_large free' "$tmp/all.gpu")" = 1 ] &&
  grep -q '^cost_after_large free 512:2.0000$' "$tmp/all.gpu" || fail "fit, every call after: $(grep '^cost' "$tmp/all.gpu" | tr '\n' '|')"
# more calls after a large one than calls: refused, one line, exit 1, no file
echo '{"gpu_mechanism_replay":{"mechanism":"direct","measured_costs":{"calls":{"free":[[5,2560,10.0]]},"calls_after_large":{"free":[[6,3072,12.0]]},"requests":[]}}}' >"$tmp/over.json"
"$pt" gpu fit --host-speed measured -o "$tmp/over.gpu" "$tmp/over.json" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && [ ! -e "$tmp/over.gpu" ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "more calls after a large one (6) than calls (5)" "$tmp/err" ||
  fail "an after set larger than its calls: exit $rc, $(cat "$tmp/err")"
# and priced so: direct on a trace with a large call (a 2 MiB cudaMalloc, then 512 B: a2 other, f2 other, a3 and f3
# repeats, all four after it; f1 the large free, other).  a.gpu: f2 and f3 after (2.5 each), f1 by cost free (1);
# a0.gpu: f2 2, f3 1 (its repeat line), f1 2; the mallocs alike (the base's lines): 6 - 5 = 1 us apart
cat >"$tmp/big.trace" <<'T'
pagetune-trace 1
a 1 2097152 0 1
a 2 512 0 2
f 2 3
a 3 512 0 4
f 3 5
f 1 6
end 6
T
"$pt" sim --trace "$tmp/big.trace" --policy direct --gpu "$tmp/a.gpu" --json >"$tmp/ad.json" 2>"$tmp/err" || fail "sim a.gpu: $(cat "$tmp/err")"
"$pt" sim --trace "$tmp/big.trace" --policy direct --gpu "$tmp/a0.gpu" --json >"$tmp/ad0.json" 2>"$tmp/err" || fail "sim a0.gpu: $(cat "$tmp/err")"
python3 - "$tmp/ad.json" "$tmp/ad0.json" <<'PY' || fail "after-large pricing: $(head -c 300 "$tmp/ad.json")"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
after = a["after_large_driver_calls"]
assert (after["malloc"], after["free"]) == (2, 2), after
assert sum(after.values()) == 4, after
assert abs(a["predicted_alloc_us"] - b["predicted_alloc_us"] - 1.0) < 1e-9, (a["predicted_alloc_us"], b["predicted_alloc_us"])
PY
# a repeat point whose mean rounds to the plain line's point (2097151.8 and 2097152.4 bytes): one point, not two
echo '{"gpu_mechanism_replay":{"mechanism":"caching","measured_costs":{"calls":{},"requests":[],"by_class":{"other":{"calls":{"malloc":[[5,10485762,200.0]]},"requests":[]},"repeat":{"calls":{"malloc":[[5,10485759,50.0]]},"requests":[]}}}}}' >"$tmp/round.json"
"$pt" gpu fit --gpu "$tmp/base.gpu" -o "$tmp/round.gpu" "$tmp/round.json" 2>"$tmp/err" || fail "fit of rounding means: $(cat "$tmp/err")"
grep -q '^cost_repeat malloc 256:1.0000 2097152:10.0000 1073741824:70.0000$' "$tmp/round.gpu" ||
  fail "rounding means: $(grep '^cost_repeat' "$tmp/round.gpu" 2>/dev/null)"
# refused: by_class without its repeat half, one line, exit 1, no file
echo '{"gpu_mechanism_replay":{"mechanism":"caching","measured_costs":{"calls":{},"requests":[[1,512,0.1]],"by_class":{"other":{"calls":{},"requests":[[1,512,0.1]]}}}}}' >"$tmp/half.json"
"$pt" gpu fit -o "$tmp/x.gpu" "$tmp/half.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "by_class" "$tmp/err" || fail "half a by_class: exit $rc, $(cat "$tmp/err")"
[ -e "$tmp/x.gpu" ] && fail "half a by_class left a file"

# the live path on the stand-in driver (a build with CUDA only)
if "$pt" --version | grep -q '^cuda: yes'; then
  mkdir "$tmp/lib"
  # shellcheck disable=SC2086
  ${CC:-cc} ${SAN_FLAGS:-} -shared -fPIC -o "$tmp/lib/libcuda.so.1" "$top_srcdir/tests/fakecuda.c" 2>"$tmp/err" ||
    fail "tests/fakecuda.c does not build: $(cat "$tmp/err")"
  for p in pytorch_native direct; do
    LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$pt" replay --mechanism --repeat 1 --json \
      --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy "$p" >"$tmp/m-$p.json" 2>"$tmp/err" ||
      { fail "replay --mechanism $p on the stand-in driver: $(cat "$tmp/err")"; continue; }
    python3 - "$tmp/m-$p.json" <<'PY' || fail "replay --mechanism $p: the class axis"
import json, sys
o = json.load(open(sys.argv[1])); mc = o["gpu_mechanism_replay"]["measured_costs"]
assert mc["repeat_window"] == o["request_classes"]["repeat_window"] == 6, mc.get("repeat_window")
bc = mc["by_class"]
def summed(part, key=None):  # other + repeat, by size class
    sums = {}
    for cls in ("other", "repeat"):
        for n, b, us in (bc[cls][part] if key is None else bc[cls][part].get(key, [])):
            s = sums.setdefault(max(b // n, 1).bit_length() - 1, [0, 0, 0.0])
            s[0] += n; s[1] += b; s[2] += us
    return sorted((v[0], v[1]) for v in sums.values()), sum(v[2] for v in sums.values())
for part, key, whole in [(p, None, mc[p]) for p in ("requests", "requests_with_calls")] + [("calls", k, v) for k, v in mc["calls"].items()]:
    got, us = summed(part, key)
    assert got == sorted((n, b) for n, b, _ in whole), (part, key, got, whole)
    assert abs(us - sum(r[2] for r in whole)) < 1e-3 * len(whole) + 1e-2, (part, key, us)
rep = sum(r[0] for r in bc["repeat"]["requests"] + bc["repeat"]["requests_with_calls"])
assert rep == o["request_classes"]["repeat_requests"] > 0, (rep, o["request_classes"])
assert rep < o["allocs"] + o["frees"], rep
g = o["gpu_mechanism_replay"]  # the host's speed before each timed run, and the median run's
assert len(g["clock_read_us_runs"]) == g["repeat"] == len(g["measured_total_us_runs"]), g["clock_read_us_runs"]
assert all(0 < x < 100 for x in g["clock_read_us_runs"]) and g["clock_read_us_median_run"] in g["clock_read_us_runs"], g
print("ok: %s on the stand-in driver: %d repeats of %d" % (o["gpu_mechanism_replay"]["policy"], rep, o["allocs"] + o["frees"]))
PY
  done
  # --calls-out: every call of the median run in order, the same calls and time measured_costs sums (which holds
  # the set-up too), the pool's set-up marked apart (request 0: cuda_async on randn_loop allocates the blocks
  # alive at the start from its pool first, untimed: one reservation and one 32 MiB chunk made, mapped, opened;
  # its requests then need no call); the clock read before each run, the median run's at its place
  for tp in randn_loop:cuda_async transformer_train:stitch; do
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$pt" replay --mechanism --repeat 3 --json \
    --trace "$top_srcdir/traces/${tp%%:*}.pickle.gz" --policy "${tp#*:}" --calls-out "$tmp/calls.txt" >"$tmp/m-calls.json" 2>"$tmp/err" ||
    fail "replay --mechanism --calls-out $tp: $(cat "$tmp/err")"
  python3 - "$tmp/m-calls.json" "$tmp/calls.txt" "$tp" <<'PY' || fail "--calls-out $tp: not the calls measured_costs counts"
import json, sys
g = json.load(open(sys.argv[1]))["gpu_mechanism_replay"]
head = [l for l in open(sys.argv[2]) if l.startswith("#")]
rows = [l.split() for l in open(sys.argv[2]) if not l.startswith("#")]
assert len(head) == 2 and sys.argv[3].split(":")[1] in head[0], head
assert all(len(r) == 4 and r[3] in ("0", "1") for r in rows), rows[:3]
timed = [r for r in rows if r[3] == "1"]
for call, pts in g["measured_costs"]["calls"].items():  # by kind: counts, bytes and time
    mine = [r for r in rows if r[0] == call]
    assert len(mine) == sum(p[0] for p in pts) and sum(int(r[1]) for r in mine) == sum(p[1] for p in pts), call
    assert abs(sum(float(r[2]) for r in mine) - sum(p[2] for p in pts)) < 1e-3 * len(mine) + 0.05, call
assert {r[0] for r in rows} == set(g["measured_costs"]["calls"]), ({r[0] for r in rows}, list(g["measured_costs"]["calls"]))
setup = [(r[0], int(r[1])) for r in rows if r[3] == "0"]
if sys.argv[3] == "randn_loop:cuda_async":
    assert setup == [("address_reserve", 1 << 40), ("mem_create", 32 << 20), ("mem_map", 32 << 20), ("mem_set_access", 32 << 20)], setup
else:  # transformer_train begins with nothing alive: every call a request's
    assert not setup and len(timed) > 100, (setup, len(timed))
runs, reads = g["measured_total_us_runs"], g["clock_read_us_runs"]
assert reads[runs.index(sorted(runs)[len(runs) // 2])] == g["clock_read_us_median_run"], (runs, reads, g["clock_read_us_median_run"])
print("ok: --calls-out %s: %d calls, %d of them requests'; the median run's clock read at its place" % (sys.argv[3], len(rows), len(timed)))
PY
  done
  "$pt" replay --trace "$top_srcdir/traces/randn_loop.pickle.gz" --policy direct --calls-out "$tmp/c2.txt" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] && grep -q "calls-out needs --mechanism" "$tmp/err" || fail "--calls-out without --mechanism: exit $rc, $(cat "$tmp/err")"
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$pt" replay --mechanism --repeat 1 \
    --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy direct --calls-out "$tmp/no/such/dir/c.txt" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "c.txt: cannot create: No such file" "$tmp/err" || fail "--calls-out into nothing: exit $rc, $(cat "$tmp/err")"
  "$pt" gpu fit -o "$tmp/fake.gpu" "$tmp/m-pytorch_native.json" "$tmp/m-direct.json" 2>"$tmp/err" || fail "fit of the fake replays: $(cat "$tmp/err")"
  for want in '^cost_repeat malloc ' '^cost_repeat free ' '^bookkeeping_repeat_us caching ' '^bookkeeping_call_repeat_us direct '; do
    grep -q "$want" "$tmp/fake.gpu" || fail "fit of the fake replays: no $want"
  done
  "$pt" sim --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy direct --gpu "$tmp/fake.gpu" --json >/dev/null 2>"$tmp/err" ||
    fail "the fake replays' description does not predict: $(cat "$tmp/err")"
else
  echo "ok: a build without CUDA: the stand-in driver's replay not run"
fi

done_ok "request classes"
