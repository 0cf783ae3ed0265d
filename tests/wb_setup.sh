# wb_setup.sh — sourced by the workbench's test scripts (check.sh, report_rec.sh, knobs.sh, store_views.sh, policies.sh, gpu_frees.sh, async_run.sh,
# readme_tour.sh): the build's program and bundled policies, a temporary folder
# removed at exit ($tmp), fail() counting into $fails, done_ok NAME to end with the
# verdict, and a skip (exit 77, automake's SKIP) without python3, which checks the JSON.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
done_ok() {
  [ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
  echo "$1: ok"
}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is missing"; exit 77; }
# bad_trace_line TRACE WHAT SED-SCRIPT EXPECTED-MESSAGE: TRACE edited by SED-SCRIPT is one error line naming the
# file and a line, with EXPECTED-MESSAGE, and exit 1 (trace stats)
bad_trace_line() {
  sed "$3" "$1" >"$tmp/bad.trace"
  "$pt" trace stats "$tmp/bad.trace" >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ $rc -eq 1 ] || fail "$2: exit $rc, not 1"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "$tmp/bad.trace: line [0-9]*: .*$4" "$tmp/e" || fail "$2: $(cat "$tmp/e")"
}
# bad_import WHAT EXPECTED-MESSAGE SRC OPTION... : `trace import SRC OPTION... -o T` fails with exit 1, one error
# line matching EXPECTED-MESSAGE, and no T
bad_import() {
  what=$1 msg=$2
  shift 2
  rm -f "$tmp/out.trace"
  "$pt" trace import "$@" -o "$tmp/out.trace" >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ $rc -eq 1 ] || fail "$what: exit $rc, not 1"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "$msg" "$tmp/e" || fail "$what: $(cat "$tmp/e")"
  [ -e "$tmp/out.trace" ] && fail "$what: the trace was written"
}
