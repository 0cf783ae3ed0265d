#!/bin/sh
# host_speed.sh — times at one host speed (issue 11, bench/RESULTS.md "the host's speed"), without a GPU: a GPU
# description's host_clock_read_us line parsed and refused; `gpu fit --host-speed US` (or the base's line) brings
# each replay's times to that speed (each timed run by the clock read before it, where the replay has its runs),
# and writes the line; a replay without a clock read is refused; and, in a build with CUDA, `replay --mechanism
# --gpu` on the stand-in driver tests/fakecuda.c reports its total at the description's speed: each timed run by
# the clock read before it, the median of those.
. "${top_srcdir:-.}/tests/wb_setup.sh"
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$top_srcdir/sim/gpus}
json() { python3 -c "import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

cat >"$tmp/base.gpu" <<'G'
name b
mmu v3
sms 1
l1_tlb 1 1 0
l2_tlb 1 1 0
pwc 1 1
cost malloc 512:1 1073741824:100
G
# the line: read, and refused when it is not a number >= 0 (one line naming the file's line)
for bad in "host_clock_read_us -1" "host_clock_read_us x" "host_clock_read_us 0.03 0.04" "host_clock_read_us"; do
  { cat "$tmp/base.gpu"; echo "$bad"; } >"$tmp/bad.gpu"
  "$pt" sim --trace "$top_srcdir/traces/randn_loop.pickle.gz" --policy direct --gpu "$tmp/bad.gpu" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "bad.gpu:8: host_clock_read_us" "$tmp/err" ||
    fail "'$bad': exit $rc, $(cat "$tmp/err")"
done
grep -q '^host_clock_read_us 0.035$' "$top_srcdir/sim/gpus/h200.gpu" || fail "h200 does not say its host speed"

# two replays of the same 6 cudaMallocs of 12 MiB: one on a host reading its clock in 0.035 us (150 us), one at
# half that speed (0.070 us, 300 us): at 0.035 both are 25 us a call; as measured, 37.5
replay() { # FILE CLOCK US
  printf '{"gpu_mechanism_replay":{"mechanism":"direct","clock_read_us":0.05,"clock_read_us_median_run":%s,"measured_costs":{"calls":{"malloc":[[6,75497472,%s]]},"requests":[]}}}\n' "$2" "$3" >"$1"
}
replay "$tmp/fast.json" 0.035 150
replay "$tmp/slow.json" 0.070 300
point() { grep '^cost malloc' "$1" | tr ' ' '\n' | grep '^12582912:' | cut -d: -f2; }
"$pt" gpu fit --gpu "$tmp/base.gpu" -o "$tmp/raw.gpu" "$tmp/fast.json" "$tmp/slow.json" 2>"$tmp/err" || fail "fit: $(cat "$tmp/err")"
[ "$(point "$tmp/raw.gpu")" = 37.5000 ] || fail "as measured: $(grep '^cost malloc' "$tmp/raw.gpu")"
grep -q '^host_clock_read_us' "$tmp/raw.gpu" && fail "a fit as measured says a host speed"
"$pt" gpu fit --gpu "$tmp/base.gpu" --host-speed 0.035 -o "$tmp/at.gpu" "$tmp/fast.json" "$tmp/slow.json" 2>"$tmp/err" ||
  fail "fit --host-speed: $(cat "$tmp/err")"
[ "$(point "$tmp/at.gpu")" = 25.0000 ] || fail "at 0.035: $(grep '^cost malloc' "$tmp/at.gpu")"
[ "$(grep -c '^host_clock_read_us 0.035$' "$tmp/at.gpu")" = 1 ] || fail "the line: $(grep host_clock "$tmp/at.gpu")"
# the fitted description as the base: its line is the default speed, and is written once
"$pt" gpu fit --gpu "$tmp/at.gpu" -o "$tmp/again.gpu" "$tmp/slow.json" 2>"$tmp/err" || fail "fit on a base with the line: $(cat "$tmp/err")"
[ "$(point "$tmp/again.gpu")" = 25.0000 ] || fail "the base's speed: $(grep '^cost malloc' "$tmp/again.gpu")"
[ "$(grep -c '^host_clock_read_us' "$tmp/again.gpu")" = 1 ] || fail "the line twice: $(grep host_clock "$tmp/again.gpu")"
# --host-speed over the base's: at 0.07 the slow replay stands as measured
"$pt" gpu fit --gpu "$tmp/at.gpu" --host-speed 0.07 -o "$tmp/slow.gpu" "$tmp/slow.json" 2>/dev/null
[ "$(point "$tmp/slow.gpu")" = 50.0000 ] || fail "--host-speed 0.07: $(grep '^cost malloc' "$tmp/slow.gpu")"
# without clock_read_us_median_run, clock_read_us (0.05) scales it
sed 's/"clock_read_us_median_run":0.070,//' "$tmp/slow.json" >"$tmp/old.json"
"$pt" gpu fit --gpu "$tmp/base.gpu" --host-speed 0.035 -o "$tmp/old.gpu" "$tmp/old.json" 2>/dev/null
[ "$(point "$tmp/old.gpu")" = 35.0000 ] || fail "clock_read_us: $(grep '^cost malloc' "$tmp/old.gpu")"
# a replay with its timed runs: each run brought to the speed by the read before it, the median of those over the
# median run's total scales its times. Runs of 100, 200 and 150 us read at 0.035, 0.035 and 0.070: at 0.035 100, 200
# and 75, median 100; the median run (150, its calls 150 us) times 2/3: 16.6667 us a call (one read: 12.5)
printf '{"gpu_mechanism_replay":{"mechanism":"direct","clock_read_us":0.05,"clock_read_us_median_run":0.070,"measured_total_us":150,"measured_total_us_runs":[100,200,150],"clock_read_us_runs":[0.035,0.035,0.070],"measured_costs":{"calls":{"malloc":[[6,75497472,150]]},"requests":[]}}}\n' >"$tmp/runs.json"
"$pt" gpu fit --gpu "$tmp/base.gpu" --host-speed 0.035 -o "$tmp/runs.gpu" "$tmp/runs.json" 2>"$tmp/err" ||
  fail "fit of a replay with its runs: $(cat "$tmp/err")"
[ "$(point "$tmp/runs.gpu")" = 16.6667 ] || fail "each run at its own read: $(grep '^cost malloc' "$tmp/runs.gpu")"
# runs and reads of different counts: the read before the median run, as before
sed 's/"clock_read_us_runs":\[0.035,0.035,0.070\]/"clock_read_us_runs":[0.035,0.035]/' "$tmp/runs.json" >"$tmp/odd.json"
"$pt" gpu fit --gpu "$tmp/base.gpu" --host-speed 0.035 -o "$tmp/odd.gpu" "$tmp/odd.json" 2>/dev/null
[ "$(point "$tmp/odd.gpu")" = 12.5000 ] || fail "runs without their reads: $(grep '^cost malloc' "$tmp/odd.gpu")"
# --host-speed measured: as measured whatever the base says, and no line (the base's dropped)
"$pt" gpu fit --gpu "$tmp/at.gpu" --host-speed measured -o "$tmp/meas.gpu" "$tmp/fast.json" "$tmp/slow.json" 2>"$tmp/err" ||
  fail "--host-speed measured: $(cat "$tmp/err")"
[ "$(point "$tmp/meas.gpu")" = 37.5000 ] || fail "--host-speed measured: $(grep '^cost malloc' "$tmp/meas.gpu")"
grep -q '^host_clock_read_us' "$tmp/meas.gpu" && fail "--host-speed measured wrote a host speed"
# a base at another speed than the fit's: the written description says its kept lines are at the base's
grep -q "^# The lines kept from the base hold at its speed, 0.035 us a read" "$tmp/slow.gpu" ||
  fail "no word on the base's lines at another speed"
# refused: a replay with no clock read at all (one line, exit 1, no file); a speed that is not a number > 0 (usage)
sed 's/"clock_read_us":0.05,"clock_read_us_median_run":0.070,//' "$tmp/slow.json" >"$tmp/none.json"
"$pt" gpu fit --gpu "$tmp/at.gpu" -o "$tmp/x.gpu" "$tmp/none.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "none.json: no clock read" "$tmp/err" || fail "no clock read: exit $rc, $(cat "$tmp/err")"
[ -e "$tmp/x.gpu" ] && fail "no clock read: a file was left"
grep -q "host-speed measured" "$tmp/err" || fail "no clock read: the message does not say how to fit it as measured"
"$pt" gpu fit --gpu "$tmp/at.gpu" --host-speed measured -o "$tmp/x.gpu" "$tmp/none.json" 2>"$tmp/err" ||
  fail "no clock read, --host-speed measured: $(cat "$tmp/err")"
for v in 0 -1 x nan measure; do
  "$pt" gpu fit --gpu "$tmp/base.gpu" --host-speed "$v" -o "$tmp/x.gpu" "$tmp/fast.json" >/dev/null 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "--host-speed $v: exit $rc, not 2"
done

# the live path on the stand-in driver (a build with CUDA only)
if "$pt" --version | grep -q '^cuda: yes'; then
  mkdir "$tmp/lib"
  # shellcheck disable=SC2086
  ${CC:-cc} ${SAN_FLAGS:-} -shared -fPIC -o "$tmp/lib/libcuda.so.1" "$top_srcdir/tests/fakecuda.c" 2>"$tmp/err" ||
    fail "tests/fakecuda.c does not build: $(cat "$tmp/err")"
  { grep -v '^name' "$top_srcdir/sim/gpus/h200.gpu" | grep -v '^host_clock_read_us'; echo "name h2"; echo "host_clock_read_us 0.5"; } >"$tmp/h2.gpu"
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$pt" replay --mechanism --repeat 3 --json --gpu "$tmp/h2.gpu" \
    --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy pytorch_native >"$tmp/m.json" 2>"$tmp/err" ||
    fail "replay --mechanism on the stand-in driver: $(cat "$tmp/err")"
  python3 - "$tmp/m.json" <<'PY' || fail "replay --mechanism: the total at the description's host speed"
import json, sys
g = json.load(open(sys.argv[1]))["gpu_mechanism_replay"]
assert g["host_clock_read_us"] == 0.5, g
# each timed run by the read before it, the median of the three
want = sorted(t * 0.5 / c for t, c in zip(g["measured_total_us_runs"], g["clock_read_us_runs"]))[1]
assert len(g["measured_total_us_runs"]) == 3, g
assert abs(g["measured_total_us_at_host_speed"] / want - 1) < 1e-3, (g["measured_total_us_at_host_speed"], want)
print("ok: at the description's host speed: %.1f us (measured %.1f, clock reads %s us)" % (
    g["measured_total_us_at_host_speed"], g["measured_total_us"], g["clock_read_us_runs"]))
PY
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$pt" replay --mechanism --repeat 1 --json --gpu "$tmp/base.gpu" \
    --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy direct >"$tmp/n.json" 2>"$tmp/err" ||
    fail "replay --mechanism, a description without the line: $(cat "$tmp/err")"
  grep -q at_host_speed "$tmp/n.json" && fail "a total at a host speed no description named"
else
  echo "ok: a build without CUDA: the stand-in driver's replay not run"
fi

done_ok "host speed"
