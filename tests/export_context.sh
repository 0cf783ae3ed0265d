#!/bin/sh
# export_context.sh — `pagetune export --format dockerfile --context DIR`
# from the command line: for stitch (the library's policy) DIR/pagetune/
# holds the four files the COPY lines name (the library as built, the two
# Python files as in the sources, the JSON config); the Dockerfile lines are
# COPY/ENV/comments only; the config is one the library accepts when it loads
# (through the real libpagetune_alloc.so where built: with no GPU it gets as
# far as "no GPU").  A policy whose hooks became tables (large_page_threshold)
# gets a context too, with the tables in its config; one whose hooks cannot
# (should_collect) is refused with nothing written;
# --context goes with --format dockerfile only.  Skips (77) in a build
# without CUDA (no library to copy).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt=$top_builddir/pagetune
lib=$top_builddir/backend/.libs/libpagetune_alloc.so
[ -f "$lib" ] || { echo "SKIP: no libpagetune_alloc.so (a build without CUDA)"; exit 77; }
export PAGETUNE_POLICY_DIR="${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}" PAGETUNE_GPU_DIR="${PAGETUNE_GPU_DIR:-$top_srcdir/sim/gpus}"
unset PAGETUNE_ALLOC_LIB
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
snap=$top_srcdir/tests/data/synthetic_snapshot.pickle
"$pt" sweep --db "$tmp/w.db" --trace "$snap" --policy stitch --policy large_page_threshold \
  --policy "$top_srcdir/tests/data/policies/collect_hook.lua" --capacity 1G >/dev/null 2>"$tmp/err" ||
  { echo "FAIL: sweep: $(cat "$tmp/err")"; exit 1; }
run_of() { sqlite3 "$tmp/w.db" "select r.id from runs r join policies p on p.id = r.policy_id where p.name = '$1'" 2>/dev/null; }
stitch=$(run_of stitch) tables=$(run_of large_page_threshold) hooks=$(run_of collect_hook)
[ -n "$stitch" ] && [ -n "$tables" ] && [ -n "$hooks" ] || { echo "SKIP: sqlite3 cannot name the runs"; exit 77; }
ex() { "$pt" export --db "$tmp/w.db" --trace synthetic_snapshot.pickle "$@" >"$tmp/out" 2>"$tmp/err"; }

ex --run "$stitch" --format dockerfile --context "$tmp/ctx" || fail "export --context: $(cat "$tmp/err")"
cmp -s "$lib" "$tmp/ctx/pagetune/libpagetune_alloc.so" || fail "the library in the context is not the one built"
cmp -s "$top_srcdir/backend/python/pagetune_alloc.py" "$tmp/ctx/pagetune/pagetune_alloc.py" || fail "pagetune_alloc.py differs"
cmp -s "$top_srcdir/backend/python/pagetune_sitecustomize.py" "$tmp/ctx/pagetune/sitecustomize.py" || fail "sitecustomize.py differs"
# every line: a comment, COPY SRC DST with SRC in the context, or ENV NAME="VALUE"
while IFS= read -r line; do
  case $line in
    ''|'#'*) ;;
    'COPY '*) set -- $line
      [ $# -eq 3 ] || fail "COPY with $(($# - 1)) arguments: $line"
      [ -f "$tmp/ctx/$2" ] || fail "COPY source not in the context: $line"
      case $3 in /*) ;; *) fail "COPY destination not absolute: $line" ;; esac ;;
    'ENV '*) printf '%s\n' "$line" | grep -Eq '^ENV [A-Za-z_][A-Za-z0-9_]*="[^"\\]*"$' || fail "ENV not NAME=\"VALUE\": $line" ;;
    *) fail "not a Dockerfile instruction pagetune writes: $line" ;;
  esac
done <"$tmp/out"
grep -qx 'ENV PAGETUNE_CONFIG="/opt/pagetune/pagetune.json"' "$tmp/out" || fail "no PAGETUNE_CONFIG"
grep -qx 'COPY pagetune/pagetune.json /opt/pagetune/pagetune.json' "$tmp/out" || fail "the config is not copied where PAGETUNE_CONFIG says"
# the config the image reads is the one --format json prints
ex --run "$stitch" --format json && cmp -s "$tmp/out" "$tmp/ctx/pagetune/pagetune.json" || fail "the context's config is not the json export"
# the library accepts it when it loads (no GPU here: it stops at the driver, past the configuration)
if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null && [ -z "${SAN_FLAGS:-}" ]; then
  got=$(PAGETUNE_CONFIG="$tmp/ctx/pagetune/pagetune.json" python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
buf = ctypes.create_string_buffer(1024)
lib.pagetune_status(buf, len(buf))
print(buf.value.decode())' "$tmp/ctx/pagetune/libpagetune_alloc.so" 2>/dev/null)
  case $got in *"no GPU"*|*"libcuda"*) ;; *) fail "the library on the context's config: '$got'" ;; esac
fi
# hooks as tables: a context whose config carries them
ex --run "$tables" --format dockerfile --context "$tmp/ctx5" || fail "tables with --context: $(cat "$tmp/err")"
grep -q '"hook_tables": {"segment_size": \[\[1, ' "$tmp/ctx5/pagetune/pagetune.json" || fail "tables with --context: no hook_tables in the config"
# hooks that cannot be tables: refused, nothing written; --context with another format: usage
ex --run "$hooks" --format dockerfile --context "$tmp/ctx2"
rc=$?
[ $rc -eq 1 ] || fail "hooks with --context: exit $rc, wanted 1"
grep -q "should_collect cannot be made a table.*runs no Lua" "$tmp/err" || fail "hooks with --context: $(cat "$tmp/err")"
[ -e "$tmp/ctx2" ] && fail "hooks with --context: wrote $tmp/ctx2"
ex --run "$stitch" --format env --context "$tmp/ctx3"
[ $? -eq 2 ] || fail "--context with --format env is not a usage error"
[ -e "$tmp/ctx3" ] && fail "--format env --context wrote $tmp/ctx3"
# the library not found: one line naming where it was looked for
PAGETUNE_ALLOC_LIB=$tmp/none.so "$pt" export --db "$tmp/w.db" --trace synthetic_snapshot.pickle --run "$stitch" --format dockerfile \
  --context "$tmp/ctx4" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "PAGETUNE_ALLOC_LIB" "$tmp/err" || fail "no library: $(cat "$tmp/err")"

[ $fails -eq 0 ] && echo "ok: export --context writes what the COPY lines name, and the library reads its config"
[ $fails -eq 0 ]
