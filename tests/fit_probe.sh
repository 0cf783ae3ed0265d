#!/bin/sh
# fit_probe.sh — traces/capture/async_probe/fit.c (the driver's cudaMallocAsync runs replayed through the
# async_pool model, read from the shim's logs) still builds against the model it compiles in
# (sim/mech/asyncpool.c) and the libraries, and gives what docs/model.md says: weights_load's run reproduced
# call for call, two_streams' first events2 run departing at call 56 with the run's 256 MiB peak.
. "${top_srcdir:-.}/tests/wb_setup.sh"
inc=$(find "$top_srcdir/sim" -mindepth 1 -maxdepth 1 -type d -printf '-I %p ')
libs=$(find "$top_builddir/sim" -name 'libpt_*.a')
# shellcheck disable=SC2086
${CC:-cc} ${SAN_FLAGS:-} -O1 $inc -I "$top_builddir" -o "$tmp/fit" "$top_srcdir/traces/capture/async_probe/fit.c" \
  -Wl,--start-group $libs -Wl,--end-group -lm -lz 2>"$tmp/err" || { fail "fit.c does not build: $(head -5 "$tmp/err")"; done_ok fit_probe; }
run() { # LOG.gz -> fit's summary line
  zcat "$1" >"$tmp/raw" && python3 "$top_srcdir/traces/capture/async_probe/shim2log.py" "$tmp/raw" >"$tmp/log" &&
    "$tmp/fit" "$tmp/log" 0 | tail -1
}
got=$(run "$top_srcdir/traces/knobs/async_run/shimk_weights_load_1.log.gz")
[ "$got" = "L=0 offsets differ 0 of 1457 (first at 0, call 0), reserved differs 0, peak 1376 MiB" ] || fail "weights_load: $got"
got=$(run "$top_srcdir/traces/knobs/async_run/events2/shimk_two_streams_1.log.gz")
case $got in
*"(first at 120, call 56)"*"peak 256 MiB") ;;
*) fail "two_streams events2 run 1: $got" ;;
esac
done_ok fit_probe
