#!/bin/sh
# temp_signal.sh — an output written beside itself (PATH.tmp.XXXXXX, renamed into place when whole) is removed
# when SIGTERM, SIGINT or SIGHUP ends the command first: nothing is left, not the output, not the temporary, and
# the command ends as the signal says (128 + its number).  A long `trace gen` to a .gz is the command; each
# signal is sent once its temporary exists (polled).  SIGINT is not sent: a shell without job control starts a
# background command with SIGINT ignored, and a signal ignored at start stays ignored (file.h).  And a command
# that finishes leaves its output alone.
. "${top_srcdir:-.}/tests/wb_setup.sh"
gen() { exec "$pt" trace gen --kind long_decode --seed 1 --steps 1000000 -o "$1"; }
for sig in TERM:15 HUP:1; do
  num=${sig#*:} sig=${sig%:*}
  out="$tmp/$sig.trace.gz"
  (gen "$out") &
  pid=$!
  tries=0
  while ! ls "$out".tmp.* >/dev/null 2>&1 && [ "$tries" -lt 400 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.05
    tries=$((tries + 1))
  done
  ls "$out".tmp.* >/dev/null 2>&1 || { fail "$sig: no temporary appeared in 20 s"; kill -9 "$pid" 2>/dev/null; wait "$pid"; continue; }
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  want=$((128 + num))
  [ "$rc" = "$want" ] || fail "$sig: exit $rc, wanted $want"
  left=$(ls "$tmp" | grep "^$sig\." || true)
  [ -z "$left" ] || fail "$sig: left $left"
done
# finished: the output there, no temporary
"$pt" trace gen --kind kvcache --seed 1 --steps 8 -o "$tmp/done.trace" >/dev/null 2>&1 || fail "a short trace gen failed"
[ -s "$tmp/done.trace" ] || fail "a finished command's output is missing"
[ -z "$(ls "$tmp" | grep 'done.trace.tmp' || true)" ] || fail "a finished command left its temporary"
done_ok temp_signal
